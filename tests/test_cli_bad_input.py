"""Every bad input to the offline tools is refused in one line naming what is wrong, with exit status 2
and no traceback, before any long work starts; help texts list every command, policy and key."""
import dataclasses
import json
import re

import pytest

from deepum.cli import build_parser, main
from deepum.config import KNOBS

TINY = ["--layers", "2", "--hidden", "256", "--heads", "4", "--seq", "128", "--batch", "2", "--vocab", "512",
        "--iterations", "3", "--seed", "1"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv, match: str) -> str:
    """Runs `deepum argv...`, asserts one line on stderr matching `match`, status 2, nothing on stdout."""
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert re.search(match, lines[0]), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("bad") / "t.npz"
    assert main(["synth", "transformer", "-o", str(path), *TINY]) == 0
    return path


@pytest.fixture
def notes(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("a regular file\n")
    return path


# --- 1: sizes out of range -------------------------------------------------------------------------

@pytest.mark.parametrize("size", ["1e30", "2e25", "1234567890123456789012345678", "1e400"])
@pytest.mark.parametrize("command", [["replay", "--policy", "um"], ["tune"], ["report", "-o", "REPORT"]])
def test_sizes_past_8_eib_are_refused_in_one_line(capsys, trace_path, tmp_path, command, size):
    argv = [a if a != "REPORT" else tmp_path / "r" for a in command]
    refused(capsys, argv[0], trace_path, *argv[1:], "--capacity", size, match=rf"--capacity '{size}'.*more than 8 EiB")
    assert not (tmp_path / "r").exists()


def test_budget_past_8_eib_is_refused(capsys, trace_path, tmp_path):
    refused(capsys, "tune", trace_path, "--capacity", "0.9", "--budget-bytes", "1e400", "-o", tmp_path / "b.json",
            match="--budget-bytes '1e400'.*more than 8 EiB")


def test_a_capacity_past_the_footprint_replays_like_the_footprint(capsys, trace_path):
    code, out, _ = run(capsys, "replay", trace_path, "--policy", "um", "--capacity", "8000000TB", "--json")
    code_fp, out_fp, _ = run(capsys, "replay", trace_path, "--policy", "um", "--capacity", "1", "--json")
    assert code == code_fp == 0
    big, footprint = json.loads(out), json.loads(out_fp)
    assert big["capacity_bytes"] == 8 * 10**18
    assert big["woke_at_kernel"] is None  # the segments never come near such a capacity: the engine sleeps
    same = lambda result: {k: v for k, v in result.items() if k not in ("capacity_bytes", "woke_at_kernel")}  # noqa: E731
    assert same(big) == same(footprint)


# --- 3, 4: output paths, checked before the work --------------------------------------------------

def test_outputs_under_a_regular_file_are_refused_before_the_work(capsys, trace_path, notes):
    refused(capsys, "synth", "transformer", "-o", notes / "sub.npz", *TINY, match="notes.txt is a file, not a folder")
    refused(capsys, "tune", trace_path, "--capacity", "0.9", "-o", notes / "best.json",
            match="notes.txt is a file, not a folder")
    refused(capsys, "demo", "-o", notes / "sub", match="notes.txt is a file, not a folder")
    refused(capsys, "report", trace_path, "--capacity", "0.9", "-o", notes / "r", match="notes.txt is a file")
    refused(capsys, "timeline", trace_path, "-o", notes / "t.json", match="notes.txt is a file")


def test_a_folder_for_a_file_and_a_file_for_a_folder_are_refused(capsys, trace_path, notes, tmp_path):
    refused(capsys, "tune", trace_path, "--capacity", "0.9", "-o", tmp_path, match="a folder; give a file name")
    refused(capsys, "synth", "transformer", "-o", tmp_path / "t.trace", *TINY, match="must be a .npz file")
    (tmp_path / "d.npz").mkdir()
    refused(capsys, "synth", "transformer", "-o", tmp_path / "d.npz", *TINY, match="a folder; give a file name")
    refused(capsys, "report", trace_path, "--capacity", "0.9", "-o", notes, match="a file, not a folder")


def test_a_folder_that_cannot_be_created_is_refused(capsys, trace_path):
    refused(capsys, "report", trace_path, "--capacity", "0.9", "-o", "/proc/deepum/report",
            match="cannot write in /proc/deepum/report")
    refused(capsys, "tune", trace_path, "--capacity", "0.9", "-o", "/proc/deepum-best.json", match="cannot write in /proc")


def test_tune_keeps_its_json_apart_from_its_plot(capsys, trace_path, tmp_path):
    refused(capsys, "tune", trace_path, "--capacity", "0.9", "-o", tmp_path / "x.png", match="give a .json name")
    code, out, err = run(capsys, "tune", trace_path, "--capacity", "0.9", "-o", tmp_path / "x.json")
    assert code == 0, err
    assert json.loads((tmp_path / "x.json").read_text())["config"]
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {tmp_path / 'x.json'} and {tmp_path / 'x.png'}" in out


def test_output_folders_are_created(capsys, trace_path, tmp_path):
    code, _, err = run(capsys, "tune", trace_path, "--capacity", "0.9", "-o", tmp_path / "a" / "b" / "best.json")
    assert code == 0, err and (tmp_path / "a" / "b" / "best.png").is_file()


# --- 6: record without a GPU --------------------------------------------------------------------

def test_record_without_a_gpu_is_one_line(capsys, tmp_path, monkeypatch):
    from deepum.cli import traces

    monkeypatch.setattr(traces, "gpu_missing", lambda: "PyTorch sees no CUDA GPU")
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('must not run')\n")
    refused(capsys, "record", "-o", tmp_path / "r.npz", script, match="CUDA GPU.*PyTorch sees no CUDA GPU")
    refused(capsys, "record", "-o", tmp_path / "r.npz", "--capacity", "lots", script, match="--capacity 'lots'")
    refused(capsys, "record", "-o", tmp_path / "r.npz", "--mode", "um", "--config", tmp_path / "c.json", script,
            match="--config applies to mode deepum only")


def test_record_here_needs_what_this_machine_lacks(capsys, tmp_path):
    from deepum.cli.traces import gpu_missing

    if gpu_missing() is None:
        pytest.skip("this machine can record")
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    refused(capsys, "record", "-o", tmp_path / "r.npz", script, match="record runs the script on a CUDA GPU")


# --- 7: the smaller ones ------------------------------------------------------------------------

def test_files_that_are_no_traces(capsys, tmp_path):
    (tmp_path / "x.npz").write_bytes(bytes(range(256)) * 16)
    line = refused(capsys, "info", tmp_path / "x.npz", match=r"x\.npz: not a readable trace")
    assert "allow_pickle" not in line
    (tmp_path / "d.npz").mkdir()
    refused(capsys, "info", tmp_path / "d.npz", match=r"d\.npz: a directory, not a trace file")


@pytest.mark.parametrize("capacity, match", [("-1", "must be positive"), ("0", "must be positive"),
                                             ("1.5", r"fraction of the footprint, which lies in \(0, 1\]"),
                                             ("12", r"12 B is less than one UM block")])
def test_capacity_messages(capsys, trace_path, capacity, match):
    refused(capsys, "replay", trace_path, "--policy", "um", "--capacity", capacity,
            match=rf"--capacity '{re.escape(capacity)}'.*{match}")


def test_calibration_errors_name_the_file(capsys, trace_path, tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text("{not json")
    refused(capsys, "replay", trace_path, "--policy", "um", "--capacity", "0.9", "--calibration", bad,
            match=r"calibration file .*cal\.json is not valid JSON")
    from importlib import resources

    bundled = json.loads((resources.files("deepum.offline") / "calibrations" / "h200.json").read_text())
    bad.write_text(json.dumps({**bundled, "h2d_rate": 1}))
    refused(capsys, "replay", trace_path, "--policy", "um", "--capacity", "0.9", "--calibration", bad,
            match=r"cal\.json: unknown keys \['h2d_rate'\]")


def test_synth_names_the_option_it_refuses(capsys, tmp_path):
    refused(capsys, "synth", "transformer", "-o", tmp_path / "s.npz", "--seed", "-1", match="argument --seed")
    refused(capsys, "synth", "transformer", "-o", tmp_path / "s.npz", "--layers", "0", match="argument --layers")
    refused(capsys, "synth", "cnn", "-o", tmp_path / "s.npz", "--dtype-bytes", "3", match="argument --dtype-bytes")
    refused(capsys, "synth", "transformer", "-o", tmp_path / "s.npz", "--heads", "3", match="divisible by heads")


@pytest.mark.parametrize("policy", ["um", "advise", "oracle"])
@pytest.mark.parametrize("switch", ["--no-prefetch", "--no-pre-evict", "--no-invalidate"])
def test_ablation_switches_are_refused_where_they_mean_nothing(capsys, trace_path, policy, switch):
    refused(capsys, "replay", trace_path, "--policy", policy, "--capacity", "0.9", switch,
            match=f"{switch} applies to the deepum policy only, not to policy {policy}")


def test_counts_of_one_are_singular(capsys, tmp_path, trace_path):
    code, out, _ = run(capsys, "synth", "transformer", "-o", tmp_path / "one.npz", *TINY[:-4], "--iterations", "1")
    assert code == 0 and "1 iteration," in out and "1 iterations" not in out
    line = refused(capsys, "replay", trace_path, "--policy", "um", "--capacity", "2MiB", match="holds 1 block of")
    assert "1 blocks" not in line


def test_config_files_out_of_range_or_unknown_are_refused(capsys, trace_path, tmp_path):
    config = tmp_path / "c.json"
    for data, match in (({"lookahead": 10**9}, r"lookahead must be an integer in 1\.\.1,024"),
                        ({"block_successors": 1e9}, "block_successors must be an integer in"),
                        ({"lookahed": 8}, r"unknown DeepUMConfig keys \['lookahed'\]")):
        config.write_text(json.dumps(data))
        refused(capsys, "replay", trace_path, "--policy", "deepum", "--capacity", "0.9", "--config", config,
                match=rf"c\.json: .*{match}")


def test_a_lookahead_past_the_trace_is_said(capsys, trace_path, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"lookahead": 1024}))
    code, _, err = run(capsys, "replay", trace_path, "--policy", "oracle", "--capacity", "0.9", "--config",
                       tmp_path / "c.json")
    assert code == 0 and "lookahead 1024 is more than the trace's" in err


def test_usage_errors_are_one_line(capsys, trace_path):
    refused(capsys, "replay", trace_path, "--policy", "um", match="required: --capacity.*deepum replay --help")
    refused(capsys, "frobnicate", match="invalid choice")


# --- 9: help ------------------------------------------------------------------------------------

def _subparsers(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_help_lists_every_command_and_each_command_describes_itself(capsys):
    commands = _subparsers(build_parser())
    assert set(commands) == {"synth", "info", "replay", "tune", "report", "demo", "record", "timeline", "run"}
    code, out, _ = run(capsys, "--help")
    assert code == 0 and all(re.search(rf"^\s+{name}\s", out, re.M) for name in commands)
    for name, parser in commands.items():
        assert parser.description, name
        for action in parser._actions:
            if action.option_strings or action.dest not in ("model",):
                assert action.help, (name, action.dest)


def test_replay_help_describes_policies_config_keys_and_json_keys(capsys):
    from deepum.offline.simulator import POLICIES, SimResult

    code, out, _ = run(capsys, "replay", "--help")
    assert code == 0
    for policy in POLICIES:
        assert re.search(rf"^\s+{policy}: \S", out, re.M), policy
    for key in KNOBS:
        assert re.search(rf"^\s+{key} \(default ", out, re.M), key
    text = " ".join(out.split())
    for field in dataclasses.fields(SimResult):
        if field.name != "timeline":
            assert field.name in text, field.name
    for command in ("tune", "report"):
        _, out, _ = run(capsys, command, "--help")
        assert all(f"  {key} (default " in out for key in KNOBS), command


def test_report_summary_names_its_config(capsys, trace_path, tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"lookahead": 8}))
    code, _, err = run(capsys, "report", trace_path, "--capacity", "0.9", "-o", tmp_path / "r", "--config",
                       tmp_path / "c.json", "--no-pre-evict")
    assert code == 0, err
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert f"deepum's config (--config {tmp_path / 'c.json'} with --no-pre-evict): lookahead 8," in summary
    assert "oracle looks 8 kernels ahead: the config's lookahead." in summary
