"""The `deepum` command line end to end on a tiny synthetic trace."""
import functools
import json
import subprocess
import sys

import pytest

from deepum.cli import main
from deepum.config import DeepUMConfig

# A transformer small enough to replay in well under a second.
TINY = ["--layers", "4", "--hidden", "256", "--heads", "4", "--seq", "256", "--batch", "8", "--vocab", "512",
        "--iterations", "3", "--seed", "1"]
RESULT_KEYS = {"policy", "capacity_bytes", "footprint_bytes", "kernels", "iterations", "accesses", "faults",
               "fault_batches", "h2d_bytes", "d2h_bytes", "prefetch_bytes", "evicted_bytes", "discarded_bytes",
               "prefetch_accuracy", "prefetch_coverage", "peak_resident_bytes", "time_s", "compute_s",
               "fault_stall_s", "prefetch_wait_s", "table_bytes", "kernel_prediction_hits",
               "kernel_prediction_misses", "per_iteration", "config", "calibration"}
ITERATION_KEYS = {"iteration", "faults", "time_s", "h2d_bytes", "d2h_bytes", "prefetch_bytes"}


def run(capsys, *argv):
    """(exit status, stdout, stderr) of `deepum argv...`."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "tiny.npz"
    assert main(["synth", "transformer", "-o", str(path), *TINY]) == 0
    return path


@pytest.fixture(scope="module")
def trace(trace_path):
    from deepum.offline.trace_io import read_trace

    return read_trace(trace_path)


def replay(capsys, trace_path, policy, capacity="0.5", *extra):
    code, out, err = run(capsys, "replay", trace_path, "--policy", policy, "--capacity", capacity, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def after_first(result, key, start=1):
    return sum(r[key] for r in result["per_iteration"] if r["iteration"] >= start)


def test_synth_prints_one_line_summary(capsys, tmp_path):
    code, out, _ = run(capsys, "synth", "transformer", "-o", tmp_path / "t.npz", *TINY)
    assert code == 0
    assert (tmp_path / "t.npz").is_file()
    assert len(out.strip().splitlines()) == 1
    assert "kernels" in out and "3 iterations" in out


def test_synth_cnn(capsys, tmp_path):
    code, out, err = run(capsys, "synth", "cnn", "-o", tmp_path / "c.npz", "--iterations", "2", "--depth", "50",
                         "--width", "8", "--image", "32", "--batch", "1")
    assert code == 0, err
    assert "2 iterations" in out


def test_synth_bad_model_size_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "synth", "cnn", "-o", tmp_path / "c.npz", "--depth", "7")
    assert code == 2
    assert "depth" in err and "Traceback" not in err


def test_synth_requires_npz_name(capsys, tmp_path):
    code, _, err = run(capsys, "synth", "transformer", "-o", tmp_path / "t.trace", *TINY)
    assert code == 2
    assert ".npz" in err


def test_info(capsys, trace_path, trace):
    code, out, _ = run(capsys, "info", trace_path)
    assert code == 0
    assert out.strip()


@pytest.mark.parametrize("policy", ["um", "deepum", "oracle"])
def test_replay_json_has_every_key_and_adds_up(capsys, trace_path, trace, policy):
    r = replay(capsys, trace_path, policy)
    assert RESULT_KEYS <= set(r)
    assert r["policy"] == policy
    assert r["footprint_bytes"] == trace.footprint_bytes()
    assert r["capacity_bytes"] == int(0.5 * trace.footprint_bytes())
    assert r["kernels"] == trace.num_kernels
    assert r["accesses"] == trace.num_accesses
    assert r["iterations"] == trace.iterations == 3
    assert [row["iteration"] for row in r["per_iteration"]] == [0, 1, 2]
    assert all(ITERATION_KEYS <= set(row) for row in r["per_iteration"])
    # Set-up kernels before the first iteration count in the totals only.
    for key in ("faults", "h2d_bytes", "d2h_bytes", "prefetch_bytes", "time_s"):
        assert sum(row[key] for row in r["per_iteration"]) <= r[key] * (1 + 1e-12), key
    assert r["time_s"] == pytest.approx(r["compute_s"] + r["fault_stall_s"] + r["prefetch_wait_s"] + r["host_map_wait_s"],
                                        rel=1e-9)
    assert r["compute_s"] > 0
    assert r["peak_resident_bytes"] <= r["capacity_bytes"]
    assert r["lost_reads"] == 0  # nothing live was ever discarded
    if policy == "oracle":
        assert r["faults"] == 0 and r["prefetch_coverage"] == 1.0  # it prefetches every block in time
    else:
        assert r["faults"] > 0


def test_replay_policies_relate(capsys, trace_path):
    um, deepum, oracle = (replay(capsys, trace_path, p) for p in ("um", "deepum", "oracle"))
    assert um["prefetch_bytes"] == 0
    assert deepum["prefetch_bytes"] > 0
    assert after_first(um, "faults") >= after_first(deepum, "faults")
    assert oracle["time_s"] <= um["time_s"]
    assert deepum["time_s"] < um["time_s"]


def test_replay_ablation_switches(capsys, trace_path):
    r = replay(capsys, trace_path, "deepum", "0.5", "--no-prefetch", "--no-pre-evict", "--no-invalidate")
    assert r["prefetch_bytes"] == 0
    assert r["discarded_bytes"] == 0
    assert r["config"]["prefetch"] is False and r["config"]["pre_evict"] is False
    assert r["config"]["invalidate"] is False


def test_replay_with_config_file(capsys, trace_path, tmp_path):
    DeepUMConfig(lookahead=8, block_rows=64).save(tmp_path / "c.json")
    r = replay(capsys, trace_path, "deepum", "0.5", "--config", tmp_path / "c.json", "--calibration", "h200")
    assert r["config"]["lookahead"] == 8 and r["config"]["block_rows"] == 64


def test_replay_readable_table(capsys, trace_path):
    code, out, _ = run(capsys, "replay", trace_path, "--policy", "deepum", "--capacity", "0.5")
    assert code == 0
    assert "prefetch accuracy" in out and "iteration" in out


@pytest.mark.parametrize("capacity, expected", [("8GiB", 8 * 2**30), ("64MiB", 64 * 2**20), ("1", None),
                                                ("1.0", None), ("0.75", 0.75)])
def test_replay_capacity_forms(capsys, trace_path, trace, capacity, expected):
    r = replay(capsys, trace_path, "um", capacity)
    footprint = trace.footprint_bytes()
    want = footprint if expected is None else expected if expected > 1 else int(expected * footprint)
    assert r["capacity_bytes"] == want


@pytest.mark.parametrize("capacity, message", [("garbage", "'garbage'"), ("0", "'0'"), ("0.0", "'0.0'"),
                                               ("1.5", "'1.5'"), ("-1", "'-1'"), ("12", "less than one UM block")])
def test_bad_capacity_exits_2_naming_it(capsys, trace_path, capacity, message):
    code, out, err = run(capsys, "replay", trace_path, "--policy", "um", "--capacity", capacity)
    assert code == 2
    assert message in err and "--capacity" in err
    assert "Traceback" not in err and out == ""


def test_missing_trace_exits_2(capsys, tmp_path):
    for command in (["info"], ["replay", "--policy", "um", "--capacity", "0.5"]):
        code, _, err = run(capsys, *command, tmp_path / "absent.npz")
        assert code == 2
        assert "no such trace file" in err and "absent.npz" in err


def test_corrupt_trace_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip archive")
    code, _, err = run(capsys, "info", bad)
    assert code == 2
    assert "bad.npz" in err and "Traceback" not in err


@pytest.mark.parametrize("option, value, message", [("--config", "absent.json", "cannot read DeepUM config"),
                                                    ("--calibration", "no-such-gpu", "no-such-gpu")])
def test_bad_config_or_calibration_exits_2(capsys, trace_path, tmp_path, option, value, message):
    code, _, err = run(capsys, "replay", trace_path, "--policy", "deepum", "--capacity", "0.5", option,
                       tmp_path / value if value.endswith(".json") else value)
    assert code == 2
    assert message in err


def test_usage_errors_exit_2(capsys, trace_path):
    assert run(capsys, "replay", trace_path, "--policy", "lru", "--capacity", "0.5")[0] == 2
    assert run(capsys, "replay", trace_path, "--policy", "um")[0] == 2
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys, "--help")[0] == 0


def test_demo_on_a_tiny_default(capsys, tmp_path, monkeypatch):
    from deepum.offline import synth

    tiny = dict(layers=4, hidden=256, heads=4, seq=256, batch=8, vocab=512, iterations=3, seed=1)
    monkeypatch.setitem(synth.GENERATORS, "transformer", functools.partial(synth.GENERATORS["transformer"], **tiny))
    code, out, err = run(capsys, "demo", "-o", tmp_path / "demo")
    assert code == 0, err
    for policy in ("um", "deepum", "oracle"):
        assert policy in out
    assert "speedup vs um" in out
    for name in ("trace.npz", "summary.md", "results.json", "faults_per_iteration.png", "timeline.png",
                 "time_breakdown.png"):
        assert (tmp_path / "demo" / name).is_file(), name
    results = json.loads((tmp_path / "demo" / "results.json").read_text())["results"]
    # Per-iteration faults and time of every policy, as replayed.
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("per iteration"))
    assert header.split()[2:] == ["0", "1", "2"]
    for policy, r in results.items():
        faults = next(line for line in lines if line.startswith(f"{policy} faults"))
        assert faults.split()[2:] == [f"{row['faults']:,}" for row in r["per_iteration"]]
        times = next(line for line in lines if line.startswith(f"{policy} time"))
        assert times.split()[2::2] == [f"{row['time_s']:.4f}" for row in r["per_iteration"]]
    # The warm-up view: after the first iteration and from the second on.
    um, deepum, oracle = (results[p] for p in ("um", "deepum", "oracle"))
    for start, span in ((1, "iterations 1-2"), (2, "iteration 2")):
        line = next(line for line in lines if line.startswith(f"over {span}:"))
        faults = after_first(deepum, "faults", start) / after_first(um, "faults", start)
        time = after_first(deepum, "time_s", start) / after_first(oracle, "time_s", start)
        assert f"{100 * faults:.1f}% of um's faults" in line or f"{100 * faults:.2g}% of um's faults" in line
        assert f"{time:.2f}x oracle's time" in line
    assert "steady state" in out


def test_python_m_deepum_and_light_import(tmp_path):
    done = subprocess.run([sys.executable, "-m", "deepum", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and "deepum" in done.stdout
    probe = ("import sys, deepum; deepum.DeepUMConfig(); "
             "heavy = [m for m in sys.modules if m.startswith('matplotlib') or m == 'deepum._native']; "
             "assert not heavy, heavy")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).returncode == 0
