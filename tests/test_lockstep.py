"""bench/lockstep.py and bench/no_pressure.py --lockstep on the CPU, with stand-in processes: the
turns alternate and never overlap, a process that exits early or hangs ends the turns for all, and
the no-pressure check pairs the runs step by step."""
import json
import os
import sys
from pathlib import Path

import pytest

from bench_scripts import BENCH, load, use_stub_train

lockstep, no_pressure, run_all = load("lockstep", "no_pressure", "run_all")

PLAYER = f"""
import os, sys, time
sys.path.insert(0, {str(BENCH)!r})
from lockstep import LockstepEnded, Turns
name, steps, sink, hang = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "hang"
turns = Turns.parse(sys.argv[sys.argv.index("--turns") + 1])
if hang:
    time.sleep(60)
try:
    for step in range(steps):
        turns.take()
        with open(sink, "a") as out:
            out.write(f"{{name}} start {{step}}\\n")
        time.sleep(0.002)
        with open(sink, "a") as out:
            out.write(f"{{name}} end {{step}}\\n")
        turns.give()
except LockstepEnded as exc:
    sys.exit(f"{{name}}: {{exc}}")
"""


@pytest.fixture
def player(tmp_path):
    script = tmp_path / "player.py"
    script.write_text(PLAYER)
    sink = tmp_path / "steps.txt"

    def command(name, steps, hang=False):
        return [sys.executable, str(script), name, str(steps), str(sink), "hang" if hang else "run"]
    return command, sink


def play(tmp_path, commands, timeout=60):
    logs = [tmp_path / f"log{i}.txt" for i in range(len(commands))]
    codes, rounds = lockstep.run_in_lockstep(commands, logs, dict(os.environ), timeout)
    return codes, rounds, [log.read_text() for log in logs]


def test_turns_alternate_and_never_overlap(player, tmp_path):
    command, sink = player
    codes, rounds, _ = play(tmp_path, [command("A", 5), command("B", 5)])
    assert codes == [0, 0] and rounds == 5
    expected = []
    for step in range(5):
        for name in ("A", "B") if step % 2 == 0 else ("B", "A"):
            expected += [f"{name} start {step}", f"{name} end {step}"]
    assert sink.read_text().splitlines() == expected


def test_a_process_that_exits_early_ends_the_turns_of_the_others(player, tmp_path):
    command, sink = player
    codes, rounds, logs = play(tmp_path, [command("A", 2), command("B", 4)])
    assert rounds == 2 and codes[0] == 0 and codes[1] != 0
    assert "B: the turns ended before this step" in logs[1]
    assert sink.read_text().count("end") == 4                      # two rounds, each step done whole


def test_a_hanging_process_is_killed_with_the_others_at_the_timeout(player, tmp_path):
    command, _ = player
    codes, rounds, _ = play(tmp_path, [command("A", 3), command("B", 3, hang=True)], timeout=2)
    assert codes == [None, None] and rounds == 0


# --- bench/no_pressure.py --lockstep -------------------------------------------------------------------

STUB = f"""
import argparse, json, os, sys
sys.path.insert(0, {str(BENCH)!r})
from lockstep import Turns
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference", "--turns"):
    p.add_argument(flag)
a, rest = p.parse_known_args()
turns = Turns.parse(a.turns)
# none steps 1, 3, 1, 3, ... s; deepum the same steps 2% slower: the ratio of the run medians reads
# 1.02 too, but the step pairs' ratios read it exactly only where each step meets its partner
slow = {{"none": 1.0, "deepum": 1.02}}[a.mode] * (1.5 if a.o.endswith("_r1.json") else 1.0)
steps = []
for step in range(int(a.steps)):
    turns.take()
    steps.append(slow * (1.0 if step % 2 == 0 else 3.0) * (0.5 if a.mode == "deepum" and step == 1 else 1.0))
    turns.give()
json.dump({{"status": "ok", "workload": a.workload, "workload_id": a.workload, "mode": a.mode,
           "step_s": steps, "warmup": int(a.warmup), "step_s_median": sorted(steps[int(a.warmup):])[len(steps[int(a.warmup):]) // 2],
           "measured_steps": int(a.steps) - int(a.warmup), "parameter_sha256": "same", "hook_s_per_step": None,
           "device": "stub", "argv": sys.argv[1:]}}, open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def test_no_pressure_in_lockstep_pairs_the_runs_step_by_step(stub_train, tmp_path):
    out = tmp_path / "np"
    argv = ["--out", str(out), "--workloads", "gpt2", "--repeats", "2", "--lockstep", "--steps", "13", "--warmup", "1"]
    assert no_pressure.main(argv) == 0
    record = json.loads((out / "no_pressure.json").read_text())
    gpt2 = record["workloads"]["gpt2"]
    assert record["lockstep"] is True and gpt2["lockstep"] is True and gpt2["runs"] == 2
    # measured steps 1..12: deepum's step 1 is half its partner's, every other one 1.02x
    assert gpt2["pair_ratios"] == pytest.approx([1.02, 1.02]) and gpt2["verdict"] == "within"
    for name in ("gpt2_none_full", "gpt2_deepum_full_r1"):
        run = json.loads((out / f"{name}.json").read_text())
        assert run["lockstep_rounds"] == 13 and "--reference" not in run["argv"]


def test_no_pressure_in_lockstep_gives_deepum_alone_the_capacity(stub_train, tmp_path, capsys):
    out = tmp_path / "np"
    argv = ["--out", str(out), "--workloads", "gpt2", "--lockstep", "--steps", "11", "--warmup", "1",
            "--capacity", "gpt2=6GiB", "--tolerance", "1.5"]
    assert no_pressure.main(argv) == 0
    gpt2 = json.loads((out / "no_pressure.json").read_text())["workloads"]["gpt2"]
    assert gpt2["deepum_capacity_bytes"] == 6 << 30 and gpt2["verdict"] == "within"
    assert "(within 2.50x)" in capsys.readouterr().out                  # a bound past 50% reads as a ratio
    assert (out / "no_pressure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the pairs, plotted
    none = json.loads((out / "gpt2_none_full.json").read_text())
    deepum = json.loads((out / f"gpt2_deepum_c{6 << 30}.json").read_text())
    assert "--capacity" not in none["argv"]
    assert deepum["argv"][deepum["argv"].index("--capacity") + 1] == str(6 << 30)


def test_no_pressure_gives_deepums_runs_alone_the_config(stub_train, tmp_path):
    config = tmp_path / "lookahead.json"
    config.write_text(json.dumps({"lookahead": 16}))
    out = tmp_path / "np"
    argv = ["--out", str(out), "--workloads", "gpt2", "--lockstep", "--steps", "11", "--warmup", "1",
            "--capacity", "gpt2=6GiB", "--tolerance", "1.5", "--deepum-config", str(config)]
    assert no_pressure.main(argv) == 0
    assert json.loads((out / "no_pressure.json").read_text())["deepum_config"]["lookahead"] == 16
    deepum = json.loads((out / f"gpt2_deepum_c{6 << 30}.json").read_text())
    assert deepum["argv"][deepum["argv"].index("--config") + 1] == str(config)
    assert "--config" not in json.loads((out / "gpt2_none_full.json").read_text())["argv"]


@pytest.mark.parametrize("text, message", [('{"lookahead": 0}', "lookahead"), ('{"looks": 1}', "unknown DeepUMConfig keys"),
                                           ("[1]", "must hold a JSON object")])
def test_no_pressure_refuses_a_bad_deepum_config(text, message, tmp_path, capsys):
    config = tmp_path / "bad.json"
    config.write_text(text)
    with pytest.raises(SystemExit) as exc:
        no_pressure.parse_args(["--out", str(tmp_path), "--workloads", "gpt2", "--deepum-config", str(config)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--deepum-config" in err and message in err and "Traceback" not in err


def test_lockstep_pair_ratio_is_the_median_of_step_ratios_not_a_ratio_of_medians():
    none = {"warmup": 1, "step_s": [9.0, 1.0, 3.0, 1.0, 3.0, 1.0]}
    deepum = {"warmup": 2, "step_s": [9.0, 9.0, 1.5, 3.0, 1.5, 3.0]}    # the fast and slow steps swapped
    assert no_pressure.step_pair_ratio(none, deepum) == pytest.approx(0.5 * (3.0 + 0.5))
    assert no_pressure.step_pair_ratio(none, none) == 1.0


def test_no_pressure_in_lockstep_with_a_failed_run(stub_train, tmp_path, monkeypatch):
    real = run_all.train_command
    monkeypatch.setattr(run_all, "train_command", lambda *a: real(*a) + (["--steps", "2"] if a[2] == "deepum" else []))
    out = tmp_path / "np"
    assert no_pressure.main(["--out", str(out), "--workloads", "dlrm", "--lockstep"]) == 0
    result = json.loads((out / "no_pressure.json").read_text())["workloads"]["dlrm"]
    assert result["status"] == "incomplete" and result["none_status"] == ["failed"]
    assert json.loads((out / "dlrm_none_full.json").read_text())["lockstep_rounds"] == 2
