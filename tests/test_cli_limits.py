"""The offline tools within limits: inputs that would take more memory than a 4 GiB address space are
refused in one line before they take it; a closed stdout ends the printing quietly and the files are
still written; synth shows its progress on a terminal; the build and the benchmark keep their
housekeeping."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deepum.cli import main

ROOT = Path(__file__).resolve().parent.parent
SMALL = dict(layers=4, hidden=256, heads=4, seq=256, batch=8, vocab=512, iterations=3, seed=1)
TINY_ARGS = [f"--{k}={v}" for k, v in SMALL.items()]
# Runs `deepum ARGS...` under a 4 GiB address-space limit.
LIMITED = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)); "
           "from deepum.cli import main; sys.exit(main(sys.argv[1:]))")
# Runs `deepum ARGS...` with the default transformer made small.
SMALL_DEFAULT = ("import functools, sys; from deepum.offline import synth; "
                 f"synth.GENERATORS['transformer'] = functools.partial(synth.GENERATORS['transformer'], **{SMALL!r}); "
                 "from deepum.cli import main; sys.exit(main(sys.argv[1:]))")


def limited(*argv, timeout=120):
    return subprocess.run([sys.executable, "-c", LIMITED, *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout)


def one_line_refusal(done, match: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr and match in lines[0], done.stderr
    assert done.stdout == ""


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits") / "t.npz"
    assert main(["synth", "transformer", "-o", str(path), *TINY_ARGS]) == 0
    return path


# --- 2 and 8 under a 4 GiB address space ---------------------------------------------------------

@pytest.mark.parametrize("key, value", [("lookahead", 1000000000), ("block_successors", 1e9),
                                        ("exec_records", 1000000000), ("block_ways", 1000000000)])
def test_unbounded_config_values_are_refused_within_4_gib(trace_path, tmp_path, key, value):
    (tmp_path / "c.json").write_text(json.dumps({key: value}))
    done = limited("replay", trace_path, "--policy", "deepum", "--capacity", "0.5", "--config", tmp_path / "c.json")
    one_line_refusal(done, f"DeepUMConfig.{key} must be an integer in 1..")


def test_every_knob_at_its_maximum_replays_within_4_gib(trace_path, tmp_path):
    from deepum.config import KNOBS

    biggest = {name: knob.maximum for name, knob in KNOBS.items() if knob.choices is None}
    (tmp_path / "c.json").write_text(json.dumps(biggest))
    for policy in ("deepum", "oracle"):
        done = limited("replay", trace_path, "--policy", policy, "--capacity", "0.5", "--config", tmp_path / "c.json",
                       "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["policy"] == policy
        assert "is more than the trace's" in done.stderr  # the lookahead, stopped at the trace's end


def test_huge_sizes_are_refused_within_4_gib(trace_path, tmp_path):
    one_line_refusal(limited("replay", trace_path, "--policy", "um", "--capacity", "1e30"), "more than 8 EiB")
    done = limited("synth", "transformer", "-o", tmp_path / "big.npz", "--layers", "100000", timeout=60)
    one_line_refusal(done, "give smaller sizes than --layers 100000")
    assert "GiB is available" in done.stderr and not (tmp_path / "big.npz").exists()


def test_synth_shows_progress_on_a_terminal(capsys, tmp_path, monkeypatch):
    from deepum.cli import common
    from deepum.offline import synth_stream

    monkeypatch.setattr(common, "progress", lambda: True)
    monkeypatch.setattr(synth_stream, "MONITOR_EVERY", 64)
    assert main(["synth", "transformer", "-o", str(tmp_path / "p.npz"), *TINY_ARGS]) == 0
    err = capsys.readouterr().err
    assert "synth transformer" in err and "kernel" in err and "100%" in err


def test_synth_draws_no_bar_off_a_terminal(capsys, tmp_path):
    assert main(["synth", "transformer", "-o", str(tmp_path / "p.npz"), *TINY_ARGS]) == 0
    assert capsys.readouterr().err == ""


# --- 5: a closed stdout ---------------------------------------------------------------------------

def piped(argv: list, reader: str) -> subprocess.CompletedProcess:
    """`deepum argv | reader` (with the small default transformer), and deepum's own exit status."""
    command = f'"$PYTHON" -c "$CODE" {" ".join(map(str, argv))} | {reader}; echo "status=${{PIPESTATUS[0]}}" >&2'
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHON": sys.executable, "CODE": SMALL_DEFAULT})


def test_demo_into_head_exits_quietly_with_a_complete_folder(tmp_path):
    done = piped(["demo", "-o", tmp_path / "demo"], "head -1")
    assert done.stderr.strip() == "status=0", done.stderr
    assert done.stdout.startswith("default transformer trace:") and done.stdout.count("\n") == 1
    for name in ("trace.npz", "summary.md", "results.json", "faults_per_iteration.png", "timeline.png",
                 "time_breakdown.png"):
        assert (tmp_path / "demo" / name).is_file(), name


def test_report_into_head_exits_quietly(tmp_path, trace_path):
    done = piped(["report", trace_path, "--capacity", "0.5", "-o", tmp_path / "r"], "head -5")
    assert done.stderr.strip() == "status=0", done.stderr
    assert len(done.stdout.splitlines()) == 5
    assert (tmp_path / "r" / "summary.md").is_file() and (tmp_path / "r" / "results.json").is_file()


def test_a_reader_that_leaves_mid_run_silences_stdout_only():
    from deepum.cli import _ReaderGone

    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "w", buffering=1)
    try:
        guarded = _ReaderGone(stream)
        guarded.write("first line\n")  # line-buffered: written at once, into a pipe nobody reads
        assert guarded.gone
        guarded.write("more\n")
        guarded.flush()
    finally:
        stream.close()


# --- 10: housekeeping -----------------------------------------------------------------------------

def test_build_and_packaging_housekeeping():
    setup = (ROOT / "setup.py").read_text()
    assert "ParallelCompile(" in setup and ".install()" in setup
    # An SPDX expression, not the deprecated table.
    assert re.search(r'^license = "Apache-2.0"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert "deepum-demo/" in (ROOT / ".gitignore").read_text().splitlines()


def test_replay_throughput_writes_where_it_is_told(tmp_path, monkeypatch):
    import functools

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import replay_throughput
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert replay_throughput.DEFAULT_OUTPUT == "replay_throughput.json"
    small = functools.partial(replay_throughput.GENERATORS["transformer"], **SMALL)
    monkeypatch.setattr(replay_throughput, "GENERATORS", {"transformer": small})
    committed = ROOT / "bench" / "results" / "replay_throughput.json"
    before = committed.read_bytes() if committed.exists() else None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["replay_throughput.py", "--repeats", "1"])
    replay_throughput.main()
    assert json.loads((tmp_path / "replay_throughput.json").read_text())["repeats"] == 1
    monkeypatch.setattr(sys, "argv", ["replay_throughput.py", "--repeats", "1", "-o", str(tmp_path / "x" / "r.json")])
    replay_throughput.main()
    assert (tmp_path / "x" / "r.json").is_file()
    assert (committed.read_bytes() if committed.exists() else None) == before
