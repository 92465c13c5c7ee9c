"""bench/hook_cost.py and bench/no_pressure.py on the CPU: the launch loop and its per-launch figures
with a stand-in hook, the driver's cases and budget with a stand-in for its processes, the record,
the no-pressure check with a stand-in for bench/train.py, and argument errors."""
import json
import os
import types
from pathlib import Path

import pytest

from bench_scripts import load, use_stub_train

hook_cost, no_pressure, run_all = load("hook_cost", "no_pressure", "run_all")


# --- bench/hook_cost.py ---------------------------------------------------------------------------------

class FakeHook:
    """A torch whose add counts launches, and the stats a hook costing 250 ns per launch would give."""

    def __init__(self, torch):
        self.launches, self.marks = 0, 0
        self.torch = types.SimpleNamespace(ones=torch.ones, add=self.add)
        self.real_add = torch.add

    def add(self, *args, **kwargs):
        self.launches += 1
        return self.real_add(*args, **kwargs)

    def stats(self):
        return {"launches": self.launches, "hook_ns": 250 * self.launches,
                "per_iteration": [{"touched_bytes": 4096 * (i + 1)} for i in range(self.marks)]}

    def mark(self):
        self.marks += 1


def test_measure_launches_per_launch_figures():
    torch = pytest.importorskip("torch")
    hook = FakeHook(torch)
    figures = hook_cost.measure_launches(hook.torch, "cpu", launches=30, repeats=3, tensors=4, elements=8,
                                         stats=hook.stats, mark_iteration=hook.mark)
    assert hook.launches == 4 * 30 and hook.marks == 4                 # one untimed repeat, three timed
    assert figures["launches_seen"] == [30, 30, 30]
    assert figures["hook_ns_per_launch"] == [250, 250, 250] and figures["hook_ns_per_launch_median"] == 250
    assert len(figures["wall_ns_per_launch"]) == 3 and all(ns > 0 for ns in figures["wall_ns_per_launch"])
    assert figures["touched_bytes"] == 4 * 4096


def test_measure_launches_allocating_gives_each_launch_a_new_output():
    torch = pytest.importorskip("torch")
    hook = FakeHook(torch)
    seen = []
    hook.torch.add = lambda *args, **kwargs: seen.append(kwargs) or hook.real_add(*args)
    hook_cost.measure_launches(hook.torch, "cpu", 6, 1, 2, 4, stats=hook.stats, mark_iteration=hook.mark,
                               allocating=True)
    assert len(seen) == 12 and all("out" not in kwargs for kwargs in seen)


def test_measure_launches_without_a_hook():
    torch = pytest.importorskip("torch")
    figures = hook_cost.measure_launches(torch, "cpu", 10, 2, 2, 4, stats=dict, mark_iteration=lambda: None)
    assert figures["hook_ns_per_launch"] == [None, None] and figures["hook_ns_per_launch_median"] is None
    assert figures["launches_seen"] == [0, 0] and figures["touched_bytes"] is None


def test_driver_runs_each_case_in_its_process_with_the_budget_from_the_awake_touched_bytes(tmp_path, monkeypatch):
    calls = []

    def fake_run(command, check, env):
        case, output = command[command.index("--case") + 1], Path(command[command.index("-o") + 1])
        calls.append((case, command, env))
        touched = {"deepum_awake": 8 << 20, "deepum": None}.get(case, 1 << 20)  # asleep: nothing seen
        output.write_text(json.dumps({"case": case, "device": "stub", "touched_bytes": touched,
                                      "wall_ns_per_launch_median": {"none": 4000}.get(case, 5000),
                                      "hook_ns_per_launch_median": None if case == "none" else 700}))

    monkeypatch.setattr(hook_cost.subprocess, "run", fake_run)
    monkeypatch.delenv("DEEPUM_NO_OVERSUBSCRIBE", raising=False)
    out = tmp_path / "hook_cost.json"
    assert hook_cost.main(["-o", str(out), "--launches", "100", "--budget-fraction", "0.5"]) == 0
    assert [case for case, _, _ in calls] == ["none", "um", "deepum", "deepum_awake", "deepum_budget"]
    budgeted = calls[-1][1]
    assert budgeted[budgeted.index("--capacity") + 1] == str(4 << 20)          # half of the 8 MiB awake touched
    assert all("--capacity" not in command for _, command, _ in calls[:-1])
    assert all("--launches" in command and "100" in command for _, command, _ in calls)
    assert all(env["DEEPUM_NO_OVERSUBSCRIBE"] == "1" for _, _, env in calls)
    assert all("--allocating" not in command for _, command, _ in calls)
    record = json.loads(out.read_text())
    assert record["allocating"] is False
    assert record["command"] == f"python3 bench/hook_cost.py -o {out} --launches 100 --budget-fraction 0.5"
    assert record["device"] == "stub" and record["date"] and record["budget_fraction"] == 0.5
    assert record["cases"]["none"]["extra_wall_ns_per_launch"] == 0
    assert record["cases"]["deepum_budget"]["extra_wall_ns_per_launch"] == 1000


def test_allocating_reaches_every_case_process():
    args = hook_cost.parse_args(["-o", "x.json", "--allocating"])
    command = hook_cost.case_command(args, "deepum", Path("case.json"), None)
    assert "--allocating" in command and hook_cost.parse_args(command[2:]).allocating


def test_only_the_chosen_cases_run_in_their_order(tmp_path, monkeypatch):
    ran = []

    def fake_run(command, check, env):
        case, output = command[command.index("--case") + 1], Path(command[command.index("-o") + 1])
        ran.append(case)
        output.write_text(json.dumps({"case": case, "device": "stub", "touched_bytes": None,
                                      "wall_ns_per_launch_median": 1000, "hook_ns_per_launch_median": None}))

    monkeypatch.setattr(hook_cost.subprocess, "run", fake_run)
    assert hook_cost.main(["-o", str(tmp_path / "r.json"), "--cases", "deepum,none"]) == 0
    assert ran == ["none", "deepum"]
    assert sorted(json.loads((tmp_path / "r.json").read_text())["cases"]) == ["deepum", "none"]


def test_budget_capacity():
    assert hook_cost.budget_capacity(1000, 0.75) == 750
    with pytest.raises(RuntimeError, match="no touched bytes"):
        hook_cost.budget_capacity(None, 1.0)


@pytest.mark.parametrize("argv, message", [
    (["--launches", "0"], "--launches must be at least 1"),
    (["--budget-fraction", "1.5"], "--budget-fraction must be in (0, 1]"),
    (["--case", "deepum_budget"], "--capacity goes with --case deepum_budget"),
    (["--case", "um", "--capacity", "5"], "--capacity goes with --case deepum_budget"),
    (["--case", "fast"], "invalid choice"),
    (["--cases", "none,fast"], "--cases takes names among"),
    (["--cases", "deepum"], "--cases takes names among"),
    (["--cases", "none,deepum_budget"], "deepum_budget takes its capacity from deepum_awake"),
])
def test_hook_cost_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        hook_cost.parse_args(["-o", "x.json", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# --- bench/no_pressure.py -------------------------------------------------------------------------------

STUB = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference"):
    p.add_argument(flag)
a, rest = p.parse_known_args()
if a.workload == os.environ.get("STUB_FAIL"):
    sys.exit("broke")
step = {"gpt2": {"none": 0.100, "deepum": 0.102}, "dlrm": {"none": 0.100, "deepum": 0.110}}[a.workload][a.mode]
step *= 1.5 if a.o.endswith("_r1.json") else 1.0  # the GPU slowed down during the second repetition
with open(os.path.join(os.path.dirname(a.o), "order.txt"), "a") as order:
    order.write(os.path.basename(a.o) + os.linesep)
json.dump({"status": "ok", "workload": a.workload, "workload_id": a.workload, "mode": a.mode, "step_s_median": step,
           "measured_steps": int(a.steps) - int(a.warmup), "parameter_sha256": "same",
           "hook_s_per_step": 0.001 if a.mode == "deepum" else None, "device": "stub", "argv": sys.argv[1:],
           "stats": {"device_memory": a.workload == "gpt2"} if a.mode == "deepum" else {},
           "cpus": sorted(os.sched_getaffinity(0))},
          open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def test_no_pressure_check_side_by_side(stub_train, tmp_path, capsys):
    out = tmp_path / "np"
    assert no_pressure.main(["--out", str(out), "--workloads", "gpt2,dlrm"]) == 0
    record = json.loads((out / "no_pressure.json").read_text())
    gpt2, dlrm = record["workloads"]["gpt2"], record["workloads"]["dlrm"]
    assert gpt2["ratio"] == pytest.approx(1.02) and gpt2["within_tolerance"] is True
    assert dlrm["ratio"] == pytest.approx(1.10) and dlrm["within_tolerance"] is False
    assert gpt2["measured_steps"] == 10 and gpt2["deepum_hook_s_per_step"] == 0.001 and gpt2["bitwise_equal"]
    assert record["all_within_tolerance"] is False and record["tolerance"] == 0.03 and record["device"] == "stub"
    assert record["command"] == f"python3 bench/no_pressure.py --out {out} --workloads gpt2,dlrm" and record["date"]
    deepum_run = json.loads((out / "gpt2_deepum_full.json").read_text())
    assert deepum_run["argv"][deepum_run["argv"].index("--reference") + 1] == str(out / "gpt2_none_full.json")
    assert gpt2["pair_ratios"] == pytest.approx([1.02]) and gpt2["pair_interval_confidence"] == 0.0
    assert gpt2["verdict"] == "within" and dlrm["verdict"] == "outside"
    assert "dlrm: deepum / none = 1.100 (NOT within 3%); pairs' median 1.100, 1.100–1.100 (0% confidence): " \
        "outside; deepum on managed memory" in capsys.readouterr().out
    assert gpt2["deepum_memory"] == "device" and dlrm["deepum_memory"] == "managed"


def test_no_pressure_at_a_capacity_budgets_deepums_runs_alone(stub_train, tmp_path):
    out = tmp_path / "np"
    assert no_pressure.main(["--out", str(out), "--workloads", "gpt2,dlrm", "--capacity", "dlrm=3GiB"]) == 0
    record = json.loads((out / "no_pressure.json").read_text())["workloads"]
    assert record["dlrm"]["deepum_capacity_bytes"] == 3 << 30 and record["gpt2"]["deepum_capacity_bytes"] is None
    budgeted = json.loads((out / f"dlrm_deepum_c{3 << 30}.json").read_text())
    assert budgeted["argv"][budgeted["argv"].index("--capacity") + 1] == str(3 << 30)
    assert budgeted["argv"][budgeted["argv"].index("--reference") + 1] == str(out / "dlrm_none_full.json")
    assert "--capacity" not in json.loads((out / "gpt2_deepum_full.json").read_text())["argv"]
    assert "--capacity" not in json.loads((out / "dlrm_none_full.json").read_text())["argv"]


@pytest.mark.parametrize("item, message", [("bert=3GiB", "with a workload of --workloads, got 'bert=3GiB'"),
                                           ("gpt2", "wants WORKLOAD=SIZE"),
                                           ("gpt2=lots", "--capacity gpt2=lots: cannot read size 'lots'")])
def test_no_pressure_refuses_a_bad_capacity(item, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        no_pressure.parse_args(["--out", str(tmp_path), "--workloads", "gpt2", "--capacity", item])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_no_pressure_keeps_the_workloads_finished_before_a_call_is_cut_short(stub_train, tmp_path, monkeypatch,
                                                                            capsys):
    run_one = run_all.run_one

    def cut_short(args, workload, *rest):
        if workload == "dlrm":
            raise KeyboardInterrupt  # the call's time limit, say
        return run_one(args, workload, *rest)

    monkeypatch.setattr(run_all, "run_one", cut_short)
    out = tmp_path / "np"
    with pytest.raises(KeyboardInterrupt):
        no_pressure.main(["--out", str(out), "--workloads", "gpt2,dlrm"])
    record = json.loads((out / "no_pressure.json").read_text())
    assert list(record["workloads"]) == ["gpt2"] and record["workloads"]["gpt2"]["ratio"] == pytest.approx(1.02)
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("gpt2: deepum / none = 1.020 (within 3%)")


def test_no_pressure_repeats_alternate_and_compare_medians_of_runs(stub_train, tmp_path):
    out = tmp_path / "np"
    assert no_pressure.main(["--out", str(out), "--workloads", "gpt2", "--repeats", "3"]) == 0
    assert (out / "order.txt").read_text().split() == [
        "gpt2_none_full.json", "gpt2_deepum_full.json", "gpt2_none_full_r1.json", "gpt2_deepum_full_r1.json",
        "gpt2_none_full_r2.json", "gpt2_deepum_full_r2.json"]
    gpt2 = json.loads((out / "no_pressure.json").read_text())["workloads"]["gpt2"]
    assert gpt2["runs"] == 3 and gpt2["none_run_medians"] == pytest.approx([0.100, 0.150, 0.100])
    assert gpt2["none_step_s_median"] == pytest.approx(0.100) and gpt2["deepum_step_s_median"] == pytest.approx(0.102)
    assert gpt2["ratio"] == pytest.approx(1.02) and gpt2["within_tolerance"] is True and gpt2["bitwise_equal"]
    assert gpt2["pair_ratios"] == pytest.approx([1.02, 1.02, 1.02]) and gpt2["pair_interval_confidence"] == 0.75
    assert gpt2["pair_median"] == pytest.approx(1.02)


@pytest.mark.parametrize("pairs, verdict", [
    ([0.98, 1.01, 1.03], "within"),        # the largest pair exactly at the tolerance
    ([0.90, 1.00, 1.031], "undecided"),    # the pairs straddle it
    ([1.031, 1.20, 1.10], "outside"),      # the smallest above it
    ([1.20, 0.80], "undecided"),
])
def test_pair_verdict_reads_the_interval_of_the_pairs(pairs, verdict):
    result = no_pressure.pair_verdict(pairs, 0.03)
    assert result["verdict"] == verdict
    assert result["pair_interval"] == [min(pairs), max(pairs)]
    assert result["pair_interval_confidence"] == pytest.approx(1 - 2 * 0.5 ** len(pairs))


@pytest.mark.parametrize("n, k, confidence", [
    (4, 1, 0.875), (5, 1, 0.9375), (8, 2, 1 - 18 / 256), (10, 2, 1 - 22 / 1024), (20, 6, 1 - 2 * 21700 / 2**20),
])
def test_pair_verdict_drops_extreme_pairs_while_the_confidence_stays_high(n, k, confidence):
    pairs = [1.0 + i / 1000 for i in range(n)]  # ascending: the k-th from each end is pairs[k - 1], pairs[n - k]
    result = no_pressure.pair_verdict(list(reversed(pairs)), 0.03)
    assert result["pair_interval"] == [pairs[k - 1], pairs[n - k]]
    assert result["pair_interval_confidence"] == pytest.approx(confidence)
    assert result["pair_interval_confidence"] >= no_pressure.PAIR_CONFIDENCE or k == 1
    # one more dropped on each side would fall short
    assert k == n // 2 or no_pressure.interval_confidence(n, k + 1) < no_pressure.PAIR_CONFIDENCE


def test_the_pairs_median_is_the_middle_pair_not_the_interval():
    assert no_pressure.pair_verdict([1.10, 0.90, 1.01, 1.30, 0.99], 0.03)["pair_median"] == 1.01


@pytest.mark.parametrize("kinds, memory", [
    ([True, True], "device"), ([False, False], "managed"), ([True, False], "mixed"), ([True, None], None),
])
def test_deepum_memory_says_where_every_run_had_its_segments(kinds, memory):
    runs = [{"stats": {"device_memory": kind}} if kind is not None else {} for kind in kinds]
    assert no_pressure.deepum_memory(runs) == memory


def test_pair_verdict_of_eight_pairs_sets_one_outlier_aside():
    assert no_pressure.pair_verdict([0.99, 1.00, 1.01, 1.02, 0.98, 1.00, 1.25, 0.70], 0.03)["verdict"] == "within"
    assert no_pressure.pair_verdict([0.99, 1.00, 1.01, 1.02, 0.98, 1.00, 1.25, 1.04], 0.03)["verdict"] == "undecided"


def test_no_pressure_pins_its_runs_to_the_cpus_named(stub_train, tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[:1]
    out = tmp_path / "np"
    try:
        assert no_pressure.main(["--out", str(out), "--workloads", "gpt2", "--cpus", str(chosen[0])]) == 0
        assert sorted(os.sched_getaffinity(0)) == chosen
    finally:
        os.sched_setaffinity(0, allowed)
    assert json.loads((out / "no_pressure.json").read_text())["cpus"] == chosen
    assert json.loads((out / "gpt2_deepum_full.json").read_text())["cpus"] == chosen  # the runs inherit it
    assert no_pressure.parse_args(["--cpus", f"{allowed[0]}-{allowed[0]},{allowed[0]}"]).cpus == chosen
    assert no_pressure.parse_args([]).cpus is None


def test_no_pressure_with_a_failed_run(stub_train, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FAIL", "dlrm")
    assert no_pressure.main(["--out", str(tmp_path), "--workloads", "dlrm", "--tolerance", "0.2"]) == 0
    record = json.loads((tmp_path / "no_pressure.json").read_text())
    assert record["workloads"]["dlrm"] == {"status": "incomplete", "none_status": ["failed"],
                                           "deepum_status": ["failed"], "ratio": None, "within_tolerance": False,
                                           "deepum_capacity_bytes": None}
    assert record["all_within_tolerance"] is False


@pytest.mark.parametrize("argv, message", [
    (["--steps", "11", "--warmup", "2"], "at least 10 measured steps"),
    (["--steps", "12", "--warmup", "-1"], "at least 10 measured steps"),
    (["--tolerance", "-0.1"], "--tolerance must be at least 0"),
    (["--repeats", "0"], "--repeats must be from 1 to 10"),
    (["--workloads", "gpt3"], "unknown or no workload"),
    (["--size", "dlrm=--layers 2"], "--layers not used by workload dlrm"),
    (["--cpus", "9-2"], "--cpus must list CPUs"),
    (["--cpus", "a"], "--cpus must list CPUs"),
    (["--cpus", "1,"], "--cpus must list CPUs"),
    (["--cpus", "100000"], "--cpus names CPUs (100000) this process may not run on"),
    (["--cpus", "0-99999999999999"], "--cpus names CPUs (0-99999999999999) this process may not run on"),
])
def test_no_pressure_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        no_pressure.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
