"""`deepum run` on the CPU: every bad argument refused in one line with status 2 before the script
starts; the script run as `python script.py ARGS` would run it (argv, __main__, its folder first on
sys.path) with its exit status passed through; deepum enabled before the script and disabled after;
the summary and the stats JSON. A unified-memory mode runs here against a stand-in for deepum.enable(),
stats() and disable(), and a stand-in for torch's optimizer step hook; mode none runs for real."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from deepum.cli import main
from deepum.cli import run as run_cli
from deepum.runtime import launcher, session

REPO = Path(__file__).resolve().parent.parent
GiB = 1 << 30

# A script that reports how it was run into the JSON file its first argument names, then exits with
# the status its second argument gives (none: falls off the end).
PROBE = """\
import json, sys
import sibling
json.dump({"argv": sys.argv, "name": __name__, "path0": sys.path[0], "sibling": sibling.VALUE,
           "file": __file__}, open(sys.argv[1], "w"))
if len(sys.argv) > 2:
    sys.exit(int(sys.argv[2]) if sys.argv[2].lstrip("-").isdigit() else sys.argv[2])
"""


@pytest.fixture
def probe(tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "sibling.py").write_text("VALUE = 'from the script folder'\n")
    script = folder / "probe.py"
    script.write_text(PROBE)
    yield script
    sys.modules.pop("sibling", None)


def deepum(capsys, *argv) -> tuple[int, str, str]:
    status = main(["run", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def refused(capsys, *argv, match: str) -> str:
    status, out, err = deepum(capsys, *argv)
    assert status == 2, (status, out, err)
    assert err.count("\n") == 1 and err.startswith("deepum"), err
    assert match in err, err
    return err


# --- argument errors: one line, status 2, nothing of the script run -----------------------------

def test_missing_script(capsys, tmp_path):
    refused(capsys, "--mode", "none", tmp_path / "absent.py", match="no such script:")
    refused(capsys, "--mode", "none", tmp_path, match="no such script:")  # a folder is no script
    refused(capsys, match="run needs the training script")


@pytest.mark.parametrize("option, match", [
    (["--capacity", "eight"], "bad --capacity 'eight': cannot read size"),
    (["--capacity", "0"], "bad --capacity '0': must be positive"),
    (["--capacity=-1GiB"], "bad --capacity '-1GiB': size must not be negative"),
    (["--max-managed-bytes", "lots"], "bad --max-managed-bytes 'lots': cannot read size"),
    (["--max-managed-bytes", "0"], "must be positive, or host"),
    (["--max-managed-bytes", "9999999TiB"], "more than 8 EiB"),
])
def test_bad_sizes(capsys, probe, tmp_path, option, match):
    refused(capsys, *option, probe, tmp_path / "out.json", match=match)
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("argv", [["--max-managed-bytes", "host"], ["--max-managed-bytes", "HOST"],
                                  ["--oversubscribe"], ["--oversubscribe", "--max-managed-bytes", "3TiB"]])
def test_the_guard_refuses_going_past_gpu_memory(capsys, probe, tmp_path, argv):
    err = refused(capsys, *argv, "--mode", "none", probe, tmp_path / "out.json",
                  match="DEEPUM_NO_OVERSUBSCRIBE=1 forbids that here")
    assert "Unset DEEPUM_NO_OVERSUBSCRIBE" in err
    assert not (tmp_path / "out.json").exists()


def test_stats_json_error_names_what_stands_in_the_way(capsys, probe, tmp_path):
    (tmp_path / "blocker").write_text("a file")
    refused(capsys, "--mode", "none", "--stats-json", tmp_path / "blocker" / "s.json", probe, tmp_path / "o.json",
            match="is a file, not a folder")
    refused(capsys, "--mode", "none", "--stats-json", tmp_path, probe, tmp_path / "o.json",
            match="a folder; give a file name")


def test_record_and_config_are_checked(capsys, probe, tmp_path):
    refused(capsys, "--mode", "um", "--record", tmp_path / "r.json", probe, match="--record")
    refused(capsys, "--mode", "none", "--record", tmp_path / "r.npz", probe, match="needs a unified-memory mode")
    refused(capsys, "--mode", "um", "--config", tmp_path / "c.json", probe, match="applies to mode deepum only")
    (tmp_path / "c.json").write_text("{not json")
    refused(capsys, "--mode", "deepum", "--config", tmp_path / "c.json", probe, match="c.json")


def test_unknown_mode(capsys, probe):
    refused(capsys, "--mode", "fast", probe, match="invalid choice: 'fast'")


def test_without_a_gpu_the_run_is_refused_in_one_line(capsys, probe, tmp_path, monkeypatch):
    monkeypatch.setattr(run_cli, "gpu_missing", lambda: "PyTorch is not installed (pip install 'deepum[gpu]')")
    refused(capsys, "--mode", "deepum", probe, tmp_path / "out.json",
            match="run in mode deepum needs a CUDA GPU, and here PyTorch is not installed")
    assert not (tmp_path / "out.json").exists()


def test_a_deepum_that_cannot_start_is_one_line_and_the_script_never_runs(capsys, probe, tmp_path, monkeypatch):
    monkeypatch.setattr(run_cli, "gpu_missing", lambda: None)

    def enable(**kwargs):
        raise ValueError("capacity=1.00 TiB is more than the GPU has free (80.00 GiB)")

    monkeypatch.setattr(session, "enable", enable)
    refused(capsys, "--mode", "um", "--capacity", "1TiB", probe, tmp_path / "out.json",
            match="cannot start deepum: capacity=1.00 TiB is more than the GPU has free")
    assert not (tmp_path / "out.json").exists()


# --- the script runs as `python script.py ARGS` would run it ------------------------------------

def test_script_sees_its_own_argv_name_and_folder(capsys, probe, tmp_path):
    out = tmp_path / "out.json"
    status, _, err = deepum(capsys, "--mode", "none", probe, out, "0", "--mode", "um", "--capacity", "x")
    assert status == 0, err
    seen = json.loads(out.read_text())
    assert seen["argv"] == [str(probe), str(out), "0", "--mode", "um", "--capacity", "x"]
    assert seen["name"] == "__main__" and seen["path0"] == str(probe.parent)
    assert seen["sibling"] == "from the script folder" and seen["file"] == str(probe)
    assert sys.argv[0] != str(probe) and str(probe.parent) not in sys.path  # restored afterwards
    assert "deepum run: probe.py exited with status 0" in err


@pytest.mark.parametrize("code, status", [("3", 3), ("0", 0), ("bye", 1)])
def test_exit_status_passes_through(capsys, probe, tmp_path, code, status):
    result, _, err = deepum(capsys, "--mode", "none", probe, tmp_path / "out.json", code)
    assert result == status
    if code == "bye":
        assert err.startswith("bye\n")  # as Python prints sys.exit("bye")
    assert f"exited with status {status}" in err


def test_an_error_of_the_script_is_reported_as_python_would(capsys, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("def inner():\n    raise KeyError('lost')\ninner()\n")
    status, _, err = deepum(capsys, "--mode", "none", script)
    assert status == 1
    assert err.startswith("Traceback (most recent call last):\n  File \"" + str(script))
    assert "runpy" not in err and "launcher.py" not in err and "KeyError: 'lost'" in err


def test_python_dash_m_deepum_run_keeps_the_exit_status(probe, tmp_path):
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "deepum", "run", "--mode", "none", str(probe), str(out), "7"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 7, done.stderr
    assert json.loads(out.read_text())["argv"][1:] == [str(out), "7"]


# --- a unified-memory mode against stand-ins: order, steps, summary, stats JSON -----------------

STATS = {"enabled": True, "mode": "deepum", "capacity_bytes": 2 * GiB, "max_managed_bytes": GiB,
         "oversubscribe": False, "gpu_page_faults": 1234, "fault_h2d_bytes": GiB, "prefetch_h2d_bytes": 3 * GiB,
         "other_h2d_bytes": 0, "d2h_bytes": 2 * GiB}


@pytest.fixture
def stand_ins(monkeypatch):
    """deepum.enable/stats/disable and torch's step-hook registration replaced by recorders. The
    script steps the 'optimizer' with `import fake_optimizer; fake_optimizer.step()`."""
    events, hooks = [], []
    monkeypatch.setattr(run_cli, "gpu_missing", lambda: None)
    monkeypatch.setattr(session, "enable", lambda **kwargs: events.append(("enable", kwargs)))
    monkeypatch.setattr(session, "stats", lambda: events.append(("stats",)) or dict(STATS))
    monkeypatch.setattr(session, "disable", lambda: events.append(("disable",)))

    def register(hook):
        hooks.append(hook)
        return types.SimpleNamespace(remove=lambda: hooks.remove(hook))

    monkeypatch.setattr(launcher, "step_hook_registrar", lambda: register)
    optimizer = types.ModuleType("fake_optimizer")
    optimizer.step = lambda: [hook(None, (), {}) for hook in list(hooks)]
    optimizer.events = events
    monkeypatch.setitem(sys.modules, "fake_optimizer", optimizer)
    return events, hooks


STEPPING = """\
import sys, time
import fake_optimizer
fake_optimizer.events.append(("script", sys.argv[1:]))
for _ in range(int(sys.argv[1])):
    time.sleep(0.01)
    fake_optimizer.step()
sys.exit(int(sys.argv[2]))
"""


def test_enable_before_the_script_disable_after_with_every_option(capsys, tmp_path, stand_ins):
    events, hooks = stand_ins
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    (tmp_path / "best.json").write_text("{}")
    status, _, err = deepum(capsys, "--mode", "deepum", "--capacity", "2GiB", "--max-managed-bytes", "1GiB",
                            "--config", tmp_path / "best.json", "--record", tmp_path / "r.npz", script, "4", "5")
    assert status == 5, err
    assert [event[0] for event in events] == ["enable", "script", "stats", "disable"]
    assert events[0][1] == {"mode": "deepum", "capacity": "2GiB", "max_managed_bytes": "1GiB", "oversubscribe": False,
                            "config": str(tmp_path / "best.json"), "record": str(tmp_path / "r.npz"),
                            "warm_start": str(tmp_path / "train.py.deepum-warm")}
    assert events[1] == ("script", ["4", "5"]) and hooks == []  # the step hook is removed at the end
    lines = err.strip().splitlines()
    assert lines[0].startswith("deepum run: train.py exited with status 5 after 4 optimizer steps, median step 0.0")
    assert "mode deepum, capacity 2.00 GiB, managed memory cap 1.00 GiB" in lines[0]
    assert lines[1] == ("deepum run: 1,234 GPU page faults; to the GPU 4.00 GiB (1.00 GiB on faults, 3.00 GiB "
                        "prefetched), to the host 2.00 GiB; prefetch coverage 75.0%")


def test_stats_json_holds_the_stats_and_the_run(capsys, tmp_path, stand_ins):
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    out = tmp_path / "deep" / "stats.json"
    status, _, err = deepum(capsys, "--stats-json", out, script, "3", "0")
    assert status == 0, err
    document = json.loads(out.read_text())
    assert {key: document[key] for key in STATS} == STATS
    run = document["run"]
    assert run["script"] == str(script) and run["argv"] == [str(script), "3", "0"] and run["exit_status"] == 0
    assert run["optimizer_steps"] == 3 and len(run["step_s"]) == 2 and run["step_s_median"] >= 0.005
    assert run["prefetch_coverage"] == 0.75


def test_the_summary_is_printed_and_deepum_disabled_when_the_script_fails(capsys, tmp_path, stand_ins):
    events, _ = stand_ins
    script = tmp_path / "train.py"
    script.write_text("import fake_optimizer\nfake_optimizer.step()\nraise RuntimeError('CUDA error')\n")
    status, _, err = deepum(capsys, "--stats-json", tmp_path / "s.json", script)
    assert status == 1 and events[-1] == ("disable",)
    assert "RuntimeError: CUDA error" in err and "exited with status 1 after 1 optimizer step;" in err
    assert json.loads((tmp_path / "s.json").read_text())["run"]["exit_status"] == 1


def test_coverage_without_movement_and_a_single_step(capsys, tmp_path, stand_ins, monkeypatch):
    monkeypatch.setattr(session, "stats", lambda: {**STATS, "fault_h2d_bytes": 0, "prefetch_h2d_bytes": 0})
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    status, _, err = deepum(capsys, script, "1", "0")
    assert status == 0
    assert "after 1 optimizer step;" in err and "median step" not in err
    assert "prefetch coverage n/a (nothing moved to the GPU)" in err


def test_a_failure_to_stop_deepum_is_one_line_and_fails_a_clean_run(capsys, tmp_path, stand_ins, monkeypatch):
    def disable():
        raise RuntimeError("device-side assert triggered")

    monkeypatch.setattr(session, "disable", disable)
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    status, _, err = deepum(capsys, script, "0", "0")
    assert status == 1 and "deepum run: error: deepum did not stop cleanly: device-side assert triggered" in err


def test_launcher_helpers():
    assert launcher.exit_status(None) == 0 and launcher.exit_status(4) == 4
    assert launcher.median_step_s([]) is None and launcher.median_step_s([1.0]) is None
    assert launcher.median_step_s([0.0, 1.0, 3.0, 4.0]) == 1.0
    assert launcher.prefetch_coverage(None) is None and launcher.prefetch_coverage(STATS) == 0.75


def test_enable_marks_iterations_at_optimizer_steps():
    """The launcher relies on enable() marking an iteration after every optimizer step."""
    source = Path(session.__file__).read_text()
    assert "register_optimizer_step_post_hook(lambda optimizer, args, kwargs: mark_iteration())" in source


def test_help_describes_the_run(capsys):
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for phrase in ("--max-managed-bytes SIZE|host", "--stats-json FILE", "python -m deepum run",
                   "DEEPUM_NO_OVERSUBSCRIBE=1 refuses both", "The exit status is the script's"):
        assert phrase in " ".join(text.split()), phrase


@pytest.mark.parametrize("options, expected", [
    ((), "train.py.deepum-warm"),  # by default beside the script
    (("--no-warm-start",), None),
    (("--warm-start", "state.bin"), "state.bin"),
    (("--mode", "um"), None),  # only deepum learns
])
def test_warm_start_is_beside_the_script_by_default_with_a_way_out(capsys, tmp_path, stand_ins, options, expected):
    events, _ = stand_ins
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    options = tuple(str(tmp_path / o) if o == "state.bin" else o for o in options)
    status, _, err = deepum(capsys, *options, script, "1", "0")
    assert status == 0, err
    assert events[0][1]["warm_start"] == (expected and str(tmp_path / expected))


def test_warm_start_options_are_checked(capsys, probe, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    status, _, err = deepum(capsys, "--mode", "um", "--warm-start", tmp_path / "w", script)
    assert status == 2 and err.strip().splitlines()[-1].endswith("--warm-start applies to mode deepum only, not to mode um")
    status, _, err = deepum(capsys, "--warm-start", tmp_path / "w", "--no-warm-start", script)
    assert status == 2 and "not allowed with argument" in err


def test_the_summary_says_when_the_engine_slept_throughout():
    stats = {"mode": "deepum", "capacity_bytes": 1 << 30, "max_managed_bytes": 1 << 30, "asleep": True}
    lines = launcher.summary("train.py", launcher.Outcome(status=0, step_times=[0.0, 1.0], stats=stats))
    assert lines[-1].endswith("the engine slept throughout (managed memory never came near the capacity)")
    awake = launcher.summary("train.py", launcher.Outcome(status=0, step_times=[0.0, 1.0], stats={**stats, "asleep": False}))
    assert "slept" not in awake[-1]
    on_device = launcher.summary("train.py", launcher.Outcome(status=0, step_times=[0.0, 1.0],
                                                              stats={**stats, "device_memory": True}))
    assert on_device[-1].endswith("segments in device memory, the engine asleep (the managed memory cap cannot "
                                  "pass the capacity, so nothing could ever have to move)")
