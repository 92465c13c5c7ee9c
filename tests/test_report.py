"""Reports: plots, summary.md and results.json from replays of a tiny trace, and `deepum report`."""
import json
import math

import numpy as np
import pytest

from deepum.cli import main
from deepum.offline.report import PLOT_FILES, after_first, format_comparison, format_per_iteration, format_warmup, \
    from_iteration, run_policies, summary_markdown, to_json, warmup_ratios, write_report

PNG = b"\x89PNG\r\n\x1a\n"
TINY = dict(layers=4, hidden=256, heads=4, seq=256, batch=8, vocab=512, iterations=3, seed=1)


@pytest.fixture(scope="module")
def trace():
    from deepum.offline.synth import GENERATORS

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
                  "faults from the second iteration", "time from the second iteration", "host to device",
                  "prefetch accuracy", "peak resident", "deepum faults", "oracle time"):
        assert label in rows, label
    um, deepum, oracle = results["um"], results["deepum"], results["oracle"]
    assert f"{deepum.time_s / um.time_s:.2f}x" in rows["simulated time"]
    assert f"{after_first(deepum.to_dict(), 'faults'):,}" in rows["faults after the first iteration"]
    steady = from_iteration(deepum.to_dict(), "time_s", 2) / from_iteration(oracle.to_dict(), "time_s", 2)
    assert rows["time from the second iteration"].endswith(f" {steady:.2f}x |")
    assert rows["deepum faults"] == "| deepum faults | " + " | ".join(
        f"{r['faults']:,}" for r in deepum.per_iteration) + " |"
    assert "Warm-up: over iterations 1-2: " in md and "; over iteration 2: " in md
    for name in PLOT_FILES:
        assert f"]({name})" in md


def test_after_first_leaves_out_iteration_0(results):
    r = results["um"].to_dict()
    assert after_first(r, "faults") == sum(row["faults"] for row in r["per_iteration"] if row["iteration"] >= 1)
    assert after_first(r, "faults") < r["faults"]
    assert after_first({"per_iteration": [{"iteration": 0, "faults": 5}]}, "faults") is None


def test_from_iteration_sums_from_the_start_given():
    r = {"per_iteration": [{"iteration": i, "faults": 10 ** i} for i in range(4)]}
    assert [from_iteration(r, "faults", start) for start in range(5)] == [1111, 1110, 1100, 1000, None]


def test_warmup_ratios_after_first_and_from_second(results):
    d = {p: r.to_dict() for p, r in results.items()}
    rows = warmup_ratios(results)
    assert [row["from_iteration"] for row in rows] == [1, 2]
    assert {row["last_iteration"] for row in rows} == {2}
    for row in rows:
        start = row["from_iteration"]
        assert row["deepum_faults_vs_um"] == pytest.approx(
            from_iteration(d["deepum"], "faults", start) / from_iteration(d["um"], "faults", start))
        assert row["deepum_time_vs_oracle"] == pytest.approx(
            from_iteration(d["deepum"], "time_s", start) / from_iteration(d["oracle"], "time_s", start))
    # Under pressure a deepum kernel's missing blocks are prefetched just before it, so it never faults;
    # iteration 1 still learns (slower against the oracle), from iteration 2 on the tables know the loop.
    assert rows[0]["deepum_faults_vs_um"] == rows[1]["deepum_faults_vs_um"] == 0
    assert rows[1]["deepum_time_vs_oracle"] < rows[0]["deepum_time_vs_oracle"]


def test_warmup_ratios_missing_figures_are_none(results):
    assert all(row["deepum_time_vs_oracle"] is None for row in warmup_ratios({"um": results["um"],
                                                                               "deepum": results["deepum"]}))
    one = {"per_iteration": [{"iteration": 0, "faults": 5, "time_s": 1.0}]}
    rows = warmup_ratios({"um": one, "deepum": one, "oracle": one})
    assert all(row["deepum_faults_vs_um"] is None and row["deepum_time_vs_oracle"] is None for row in rows)
    assert format_warmup({"um": one, "deepum": one, "oracle": one}) == ""
    no_um_faults = {"per_iteration": [{"iteration": i, "faults": 0, "time_s": 1.0} for i in range(3)]}
    assert warmup_ratios({"um": no_um_faults, "deepum": no_um_faults})[0]["deepum_faults_vs_um"] is None


def test_format_per_iteration_and_warmup(results):
    lines = format_per_iteration(results).splitlines()
    assert lines[0].split() == ["per", "iteration", "0", "1", "2"]
    assert [" ".join(line.split()[:2]) for line in lines[2:]] == [
        f"{p} {figure}" for figure in ("faults", "time") for p in ("um", "deepum", "oracle")]
    text = format_warmup(results).splitlines()
    assert [line.split(":")[0] for line in text] == ["over iterations 1-2", "over iteration 2"]
    assert all("of um's faults" in line and "oracle's time" in line for line in text)


def test_format_comparison_has_a_row_per_policy(results):
    lines = format_comparison(results).splitlines()
    assert lines[0].split()[0] == "policy" and "speedup" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["um", "deepum", "oracle"]
    assert lines[2].rstrip().endswith("1.00x")  # um against itself


def test_to_json_is_strict():
    text = to_json({"a": float("nan"), "b": np.int64(3), "c": np.arange(2), "d": [math.inf, 1.5]})
    assert json.loads(text) == {"a": None, "b": 3, "c": [0, 1], "d": [None, 1.5]}


def test_report_command(capsys, trace, tmp_path):
    from deepum.offline.trace_io import write_trace

    write_trace(trace, tmp_path / "tiny.npz")
    code = main(["report", str(tmp_path / "tiny.npz"), "--capacity", "0.5", "-o", str(tmp_path / "rep")])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in (*PLOT_FILES, "summary.md", "results.json"):
        assert (tmp_path / "rep" / name).is_file(), name
    assert "deepum" in out and "speedup vs um" in out
    assert "deepum faults" in out and "over iterations 1-2:" in out and "over iteration 2:" in out


def test_summary_says_which_config_and_calibration_the_replays_used(results, tmp_path):
    md = summary_markdown(results, "tiny.npz", config_source="--config best.json")
    assert "deepum's config (--config best.json): lookahead 32, exec_ids 16384" in md
    assert "oracle looks 32 kernels ahead: the config's lookahead." in md
    assert "Costs from the calibration of NVIDIA H200" in md
    write_report(results, tmp_path, trace_name="tiny.npz", config_source="the defaults")
    assert json.loads((tmp_path / "results.json").read_text())["config_source"] == "the defaults"
    assert "deepum's config (the defaults)" in (tmp_path / "summary.md").read_text()


def _drawn(monkeypatch, plot, *args):
    """The matplotlib Figure `plot` draws (savefig intercepted)."""
    from matplotlib.figure import Figure

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figures.append(self))
    plot(*args)
    return figures[0]


def test_plots_show_every_policy_and_state_the_capacity(results, monkeypatch):
    from deepum.offline import report_plots

    fig = _drawn(monkeypatch, report_plots.plot_faults_per_iteration, results, "x.png")
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    # deepum is drawn above oracle with a different marker, so that both show where they meet at zero.
    assert lines["deepum"].get_zorder() > lines["oracle"].get_zorder()
    assert lines["deepum"].get_marker() != lines["oracle"].get_marker()
    assert "capacity" in fig.axes[0].get_title()

    fig = _drawn(monkeypatch, report_plots.plot_timeline, results, "x.png")
    for label in ("faults", "prefetched MiB"):  # one scale of each for every panel
        panels = [a for a in fig.axes if a.get_ylabel() == label]
        assert len(panels) == 3 and len({a.get_ylim() for a in panels}) == 1
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert any("no faults" in t for t in texts)  # oracle's panel says it has none
    assert any("no prefetches" in t for t in texts)  # and um's

    fig = _drawn(monkeypatch, report_plots.plot_time_breakdown, results, "x.png")
    ax = fig.axes[0]
    assert "capacity" in ax.get_title()
    totals = [t.get_text() for t in ax.texts]
    assert f"{results['um'].time_s:.3f} s" in totals and f"{results['deepum'].time_s:.3f} s" in totals
