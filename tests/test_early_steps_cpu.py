"""bench/early_steps.py on the CPU, with a stand-in for bench/train.py: none first, then um and deepum
in alternation; per-step medians over the runs and their ratio against the do-no-harm target; the
summary rebuilt from the records; argument errors."""
import json

import pytest

from bench_scripts import load, use_stub_train

early_steps, run_all = load("early_steps", "run_all")

# deepum's second step is slower than um's (2.0 s) in its first run only: 2.5, then 1.5 s.
STUB = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference", "--capacity"):
    p.add_argument(flag)
a, rest = p.parse_known_args()
repeat = "_r" in os.path.basename(a.o)
steps = {"none": [0.5, 0.1, 0.1], "um": [2.0, 2.0, 2.0],
         "deepum": [1.0, 1.5 if repeat else 2.5, 0.5] if a.capacity else [0.6, 0.1, 0.1]}[a.mode]
json.dump({"status": "ok", "workload": a.workload, "workload_id": "gpt2 layers=2", "mode": a.mode,
           "step_s": steps[:int(a.steps)], "capacity_bytes": a.capacity and int(a.capacity),
           "parameter_sha256": "same", "footprint_bytes": 1000, "gpu_free_bytes_at_start": 10**9,
           "device": "stub", "argv": sys.argv[1:]}, open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def test_um_and_deepum_alternate_and_each_step_compares_the_medians(stub_train, tmp_path, capsys):
    out = tmp_path / "early"
    assert early_steps.main(["--out", str(out), "--workloads", "gpt2", "--repeats", "3"]) == 0
    printed = capsys.readouterr().out
    order = [line.split("]")[0][1:] for line in printed.splitlines() if line.startswith("[")]
    assert order == ["gpt2_none_full", "gpt2_deepum_full", "gpt2_um_b0.50", "gpt2_deepum_b0.50", "gpt2_um_b0.50_r1",
                     "gpt2_deepum_b0.50_r1", "gpt2_um_b0.50_r2", "gpt2_deepum_b0.50_r2"]
    record = json.loads((out / "early_steps.json").read_text())
    gpt2 = record["workloads"]["gpt2"]
    assert gpt2["capacity_bytes"] == 500  # half the probe's footprint
    assert gpt2["median_step_s"]["deepum"] == pytest.approx([1.0, 1.5, 0.5])
    assert gpt2["deepum_vs_um_by_step"] == pytest.approx([0.5, 0.75, 0.25])
    assert (gpt2["worst_step"], gpt2["never_slower_than_um"], gpt2["bitwise_equal"]) == (2, True, True)
    assert record["device"] == "stub" and record["budget_fraction"] == 0.5
    assert (out / "early_steps.png").stat().st_size > 0
    deepum = json.loads((out / "gpt2_deepum_b0.50.json").read_text())
    assert "--warm-start" not in deepum["argv"] and deepum["argv"][deepum["argv"].index("--warmup") + 1] == "0"


def test_one_run_each_shows_the_slower_step_and_the_report_is_rebuilt_from_the_records(stub_train, tmp_path):
    out = tmp_path / "early"
    assert early_steps.main(["--out", str(out), "--workloads", "gpt2", "--repeats", "1"]) == 0
    ran = json.loads((out / "early_steps.json").read_text())
    gpt2 = ran["workloads"]["gpt2"]
    assert (gpt2["worst_step"], gpt2["worst_ratio"], gpt2["never_slower_than_um"]) == (2, pytest.approx(1.25), False)
    assert early_steps.main(["--out", str(out), "--workloads", "gpt2", "--repeats", "1", "--report-only"]) == 0
    rebuilt = json.loads((out / "early_steps.json").read_text())
    assert rebuilt["workloads"] == ran["workloads"] and (rebuilt["command"], rebuilt["date"]) == (ran["command"], ran["date"])
    assert rebuilt["report_command"].endswith("--report-only")
    (out / "gpt2_deepum_b0.50.json").unlink()
    assert early_steps.main(["--out", str(out), "--workloads", "gpt2", "--repeats", "1", "--report-only"]) == 0
    incomplete = json.loads((out / "early_steps.json").read_text())["workloads"]["gpt2"]
    assert incomplete["status"] == "incomplete" and incomplete["run_status"]["deepum"] == ["missing"]
    (out / "early_steps.png").unlink()
    early_steps.plot({"gpt2": incomplete}, out / "early_steps.png")
    assert not (out / "early_steps.png").exists(), "a plot with no workload that ran"


@pytest.mark.parametrize("argv, message", [
    (["--budget", "0"], "--budget must be in (0, 1]"),
    (["--steps", "0"], "--steps must be at least 1"),
    (["--repeats", "11"], "--repeats must be from 1 to 10"),
    (["--workloads", "gpt3"], "unknown or no workload"),
])
def test_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        early_steps.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
