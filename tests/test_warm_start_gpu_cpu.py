"""bench/warm_start_gpu.py on the CPU, with a stand-in for bench/train.py: the runs in order (none, um,
deepum cold writing the state file, deepum warm reading it), the two ratios against their targets,
the footprint taken from a sweep record, and argument errors."""
import json

import pytest

from bench_scripts import load, use_stub_train

warm_start_gpu, run_all, workloads = load("warm_start_gpu", "run_all", "workloads")

STUB = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference", "--capacity", "--warm-start"):
    p.add_argument(flag)
a, rest = p.parse_known_args()
steps = {"none": [0.5, 0.1, 0.1, 0.1, 0.1, 0.1],
         "um": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
         "cold": [1.5, 2.5, 1.0, 0.5, 0.5, 0.5],
         "warm": [0.6, 0.5, 0.5, 0.5, 0.5, 0.5]}
run = a.mode
trial = None
if a.mode == "deepum" and a.warm_start is None:  # the footprint probe
    run = "cold"
elif a.mode == "deepum":
    run = "warm" if os.path.exists(a.warm_start) else "cold"
    trial = {"state": "kept" if run == "warm" else "cold", "iterations": 1, "launched": 10, "known": 9}
    open(a.warm_start, "w").write("state")
json.dump({"status": "ok", "workload": a.workload, "workload_id": "gpt2 layers=2", "mode": a.mode,
           "step_s": steps[run][:int(a.steps)], "capacity_bytes": a.capacity and int(a.capacity),
           "parameter_sha256": "same", "footprint_bytes": 1000, "gpu_free_bytes_at_start": 10**9,
           "device": "stub", "stats": {"warm_start": trial}, "argv": sys.argv[1:]}, open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def test_cold_then_warm_beside_um_and_none(stub_train, tmp_path, capsys):
    out = tmp_path / "warm"
    assert warm_start_gpu.main(["--out", str(out), "--workloads", "gpt2", "--steps", "6"]) == 0
    record = json.loads((out / "warm_start_gpu.json").read_text())
    gpt2 = record["workloads"]["gpt2"]
    assert gpt2["status"] == "ok" and gpt2["capacity_bytes"] == 500  # half the probe's footprint
    assert gpt2["warm_first_vs_steady"] == pytest.approx(1.2) and gpt2["warm_within_target"] is True
    assert gpt2["cold_first_vs_steady"] == pytest.approx(3.0)
    # none's first step costs 0.4 s more than its steady step: past that start-up, 0.2 / 0.5
    assert gpt2["start_up_s"] == pytest.approx(0.4)
    assert gpt2["warm_first_vs_steady_past_start_up"] == pytest.approx(0.4)
    # none's first step (0.5 s) over the warm run's steady step (0.5 s)
    assert gpt2["in_memory_first_vs_warm_steady"] == pytest.approx(1.0) and gpt2["target_reachable"] is True
    assert gpt2["warm_vs_cold_by_step"] == pytest.approx([0.4, 0.2, 0.5, 1.0, 1.0, 1.0])
    assert gpt2["cold_worst_vs_um"] == pytest.approx(1.25) and gpt2["cold_never_slower_than_um"] is False
    assert gpt2["warm_trial"]["state"] == "kept" and gpt2["bitwise_equal"] is True
    cold = json.loads((out / "gpt2_deepum-cold_b0.50.json").read_text())
    assert cold["argv"][cold["argv"].index("--warm-start") + 1] == str(out / "gpt2.deepum-warm")
    assert record["device"] == "stub" and record["command"].startswith("python3 bench/warm_start_gpu.py --out")
    assert "kept" in capsys.readouterr().out


def test_the_floor_is_plain_pytorchs_first_step_over_the_warm_steady_step():
    none = [1.0, 0.1, 0.1, 0.1, 0.1]
    warm = [1.5, 0.9, 0.7, 0.5, 0.5]
    figures = warm_start_gpu.first_step_figures(none, warm)
    assert figures["warm_first_vs_steady"] == pytest.approx(3.0) and figures["warm_within_target"] is False
    assert figures["warm_first_vs_steady_past_start_up"] == pytest.approx(1.2)
    assert figures["in_memory_first_vs_warm_steady"] == pytest.approx(2.0)
    assert figures["target_reachable"] is False
    assert warm_start_gpu.first_step_figures([0.6, *none[1:]], warm)["target_reachable"] is True


def test_report_only_rebuilds_the_summary_from_the_records(stub_train, tmp_path, capsys):
    out = tmp_path / "warm"
    assert warm_start_gpu.main(["--out", str(out), "--workloads", "gpt2", "--steps", "6"]) == 0
    ran = json.loads((out / "warm_start_gpu.json").read_text())
    assert warm_start_gpu.main(["--out", str(out), "--workloads", "gpt2", "--report-only"]) == 0
    rebuilt = json.loads((out / "warm_start_gpu.json").read_text())
    assert rebuilt["workloads"] == ran["workloads"]
    assert (rebuilt["command"], rebuilt["date"]) == (ran["command"], ran["date"])
    assert rebuilt["report_command"].endswith("--report-only")
    assert (out / "warm_start_gpu.png").stat().st_size > 0
    (out / "gpt2_deepum-warm_b0.50.json").unlink()
    assert warm_start_gpu.main(["--out", str(out), "--workloads", "gpt2", "--report-only"]) == 0
    failed = json.loads((out / "warm_start_gpu.json").read_text())["workloads"]["gpt2"]
    assert failed == {"status": "failed", "failed_runs": ["warm"]}


def test_footprint_from_a_sweep_record_must_be_of_the_same_size(stub_train, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    args = warm_start_gpu.parse_args(["--workloads", "gpt2", "--footprint-from", str(sweep)])
    record = {"workload_id": workloads.workload_id(run_all.sized_args(args, "gpt2")), "footprint_bytes": 4096}
    (sweep / "gpt2_deepum_full.json").write_text(json.dumps(record))
    assert run_all.footprint(args, "gpt2") == 4096
    (sweep / "gpt2_deepum_full.json").write_text(json.dumps(dict(record, workload_id="gpt2 layers=99")))
    with pytest.raises(SystemExit, match="another size"):
        run_all.footprint(args, "gpt2")


@pytest.mark.parametrize("argv, message", [
    (["--budget", "0"], "--budget must be in (0, 1]"),
    (["--budget", "1.5"], "--budget must be in (0, 1]"),
    (["--steps", "3"], "--steps must exceed 3"),
    (["--workloads", "gpt3"], "unknown or no workload"),
])
def test_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        warm_start_gpu.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
