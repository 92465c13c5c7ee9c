"""Reports: plots, summary.md and results.json from replays of a tiny trace, and `deepum report`."""
import json
import math

import numpy as np
import pytest

from deepum.cli import main
from deepum.report import PLOT_FILES, after_first, format_comparison, run_policies, summary_markdown, to_json, \
    write_report

PNG = b"\x89PNG\r\n\x1a\n"
TINY = dict(layers=4, hidden=256, heads=4, seq=256, batch=8, vocab=512, iterations=3, seed=1)


@pytest.fixture(scope="module")
def trace():
    from deepum.synth import GENERATORS

    return GENERATORS["transformer"](**TINY)


@pytest.fixture(scope="module")
def results(trace):
    return run_policies(trace, trace.footprint_bytes() // 2)


def test_write_report_files(results, tmp_path):
    paths = write_report(results, tmp_path / "out", trace_name="tiny.npz")
    assert {p.name for p in paths} == {*PLOT_FILES, "summary.md", "results.json"}
    for name in PLOT_FILES:
        data = (tmp_path / "out" / name).read_bytes()
        assert data[:8] == PNG and len(data) > 5000, name
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["trace"] == "tiny.npz"
    assert list(saved["results"]) == ["um", "deepum", "oracle"]
    assert saved["results"]["deepum"]["faults"] == results["deepum"].faults


def test_summary_markdown_figures_and_ratios(results):
    md = summary_markdown(results, "tiny.npz")
    assert md.startswith("# deepum replay report: tiny.npz")
    header = next(line for line in md.splitlines() if line.startswith("| figure"))
    assert header == "| figure | um | deepum | oracle | deepum / um | deepum / oracle |"
    rows = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| ")}
    for label in ("simulated time", "faults", "faults after the first iteration", "time after the first iteration",
                  "host to device", "prefetch accuracy", "peak resident"):
        assert label in rows, label
    um, deepum = results["um"], results["deepum"]
    assert f"{deepum.time_s / um.time_s:.2f}x" in rows["simulated time"]
    assert f"{after_first(deepum.to_dict(), 'faults'):,}" in rows["faults after the first iteration"]
    for name in PLOT_FILES:
        assert f"]({name})" in md


def test_after_first_leaves_out_iteration_0(results):
    r = results["um"].to_dict()
    assert after_first(r, "faults") == sum(row["faults"] for row in r["per_iteration"] if row["iteration"] >= 1)
    assert after_first(r, "faults") < r["faults"]
    assert after_first({"per_iteration": [{"iteration": 0, "faults": 5}]}, "faults") is None


def test_format_comparison_has_a_row_per_policy(results):
    lines = format_comparison(results).splitlines()
    assert lines[0].split()[0] == "policy" and "speedup" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["um", "deepum", "oracle"]
    assert lines[2].rstrip().endswith("1.00x")  # um against itself


def test_to_json_is_strict():
    text = to_json({"a": float("nan"), "b": np.int64(3), "c": np.arange(2), "d": [math.inf, 1.5]})
    assert json.loads(text) == {"a": None, "b": 3, "c": [0, 1], "d": [None, 1.5]}


def test_report_command(capsys, trace, tmp_path):
    from deepum.trace import write_trace

    write_trace(trace, tmp_path / "tiny.npz")
    code = main(["report", str(tmp_path / "tiny.npz"), "--capacity", "0.5", "-o", str(tmp_path / "rep")])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in (*PLOT_FILES, "summary.md", "results.json"):
        assert (tmp_path / "rep" / name).is_file(), name
    assert "deepum" in out and "speedup vs um" in out
