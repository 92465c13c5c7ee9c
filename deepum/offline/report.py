"""Reports of replays: text tables, a markdown summary, results.json and PNG plots (report_plots)."""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..units import counted, format_bytes
from .report_plots import plot_faults_per_iteration, plot_time_breakdown, plot_timeline

POLICY_ORDER = ("um", "deepum", "oracle")
PLOT_FILES = ("faults_per_iteration.png", "timeline.png", "time_breakdown.png")


def run_policies(trace, capacity_bytes: int, *, config=None, calibration=None, progress: bool = False) -> dict:
    """Replays `trace` at `capacity_bytes` under um, deepum and oracle: {policy: result with timeline}."""
    from tqdm import tqdm

    from .simulator import simulate

    return {policy: simulate(trace, policy, capacity_bytes, config=config, calibration=calibration)
            for policy in tqdm(POLICY_ORDER, desc="replay", unit="policy", disable=not progress)}


def from_iteration(result: dict, key: str, start: int) -> float | None:
    """Sum of per-iteration `key` ("faults", "time_s", ...) over iterations `start`, `start` + 1, ...;
    None when the trace has no iteration numbered `start` or later."""
    values = [r[key] for r in result["per_iteration"] if r["iteration"] >= start]
    return sum(values) if values else None


def after_first(result: dict, key: str) -> float | None:
    """Sum of per-iteration `key` over every iteration but the first; None with one iteration."""
    return from_iteration(result, key, 1)


# Iterations from which the warm-up view counts: after the first (the tables learnt in iteration 0)
# and from the second on (a trace whose first iteration changes the memory layout, such as the
# optimizer state that PyTorch allocates in the first step, is relearnt during iteration 1).
WARMUP_STARTS = (1, 2)


def warmup_ratios(results: dict) -> list[dict]:
    """deepum against um and oracle once the tables have learnt, one row per start in WARMUP_STARTS.

    Each row: `from_iteration`, `last_iteration`, `deepum_faults_vs_um` (deepum's faults over those
    iterations / um's, a fraction) and `deepum_time_vs_oracle` (deepum's simulated time over those
    iterations / oracle's). A figure is None where it cannot be had: too few iterations, a policy not
    replayed, or a denominator of zero.
    """
    d = _dicts(results)
    last = max((r["iteration"] for res in d.values() for r in res["per_iteration"]), default=-1)

    def ratio(key: str, other: str, start: int) -> float | None:
        if "deepum" not in d or other not in d:
            return None
        return _ratio(from_iteration(d["deepum"], key, start), from_iteration(d[other], key, start))

    return [{"from_iteration": start, "last_iteration": last,
             "deepum_faults_vs_um": ratio("faults", "um", start),
             "deepum_time_vs_oracle": ratio("time_s", "oracle", start)} for start in WARMUP_STARTS]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _ratio(a, b) -> float | None:
    if _missing(a) or _missing(b) or b == 0:
        return None
    return a / b


def _fmt(value, kind: str) -> str:
    """Formats a figure: kind is "s" (seconds), "B" (bytes), "n" (count), "%" (fraction), "x" (ratio)."""
    if _missing(value):
        return "-"
    if kind == "s":
        return f"{value:.4f} s"
    if kind == "B":
        return format_bytes(value)
    if kind == "%":  # small non-zero fractions keep two significant digits
        return f"{100 * value:.1f}%" if value == 0 or abs(value) >= 0.001 else f"{100 * value:.2g}%"
    if kind == "x":
        return f"{value:.2f}x"
    return f"{int(value):,}"


def _table(header: list[str], rows: list[list[str]], markdown: bool = False) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row) -> str:  # first column left-aligned, numbers right-aligned
        return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


# Result fields shown for one replay: (key, label, kind).
_RESULT_FIELDS = (
    ("time_s", "simulated time", "s"),
    ("compute_s", "  compute", "s"),
    ("fault_stall_s", "  fault stall", "s"),
    ("prefetch_wait_s", "  prefetch wait", "s"),
    ("launch_wait_s", "  launch wait", "s"),
    ("faults", "faults (4 KiB pages)", "n"),
    ("fault_batches", "fault batches", "n"),
    ("h2d_bytes", "host to device", "B"),
    ("d2h_bytes", "device to host", "B"),
    ("prefetch_bytes", "prefetched", "B"),
    ("evicted_bytes", "evicted", "B"),
    ("discarded_bytes", "discarded (no copy)", "B"),
    ("prefetch_accuracy", "prefetch accuracy", "%"),
    ("prefetch_coverage", "prefetch coverage", "%"),
    ("peak_resident_bytes", "peak resident", "B"),
    ("table_bytes", "table memory", "B"),
    ("kernel_prediction_hits", "kernel predictions hit", "n"),
    ("kernel_prediction_misses", "kernel predictions missed", "n"),
)


def format_result(result: dict) -> str:
    """Readable report of one replay (a `result.to_dict()`)."""
    head = (f"policy {result['policy']}, capacity {format_bytes(result['capacity_bytes'])} of footprint "
            f"{format_bytes(result['footprint_bytes'])}; {counted(result['kernels'], 'kernel')}, "
            f"{counted(result['iterations'], 'iteration')}, {counted(result['accesses'], 'block access', 'block accesses')}")
    rows = [[label, _fmt(result[key], kind)] for key, label, kind in _RESULT_FIELDS]
    per_iter = [[str(r["iteration"]), _fmt(r["faults"], "n"), _fmt(r["time_s"], "s"), _fmt(r["h2d_bytes"], "B"),
                 _fmt(r["d2h_bytes"], "B"), _fmt(r["prefetch_bytes"], "B")]
                for r in sorted(result["per_iteration"], key=lambda r: r["iteration"])]
    return "\n\n".join([
        head,
        _table(["figure", "value"], rows),
        _table(["iteration", "faults", "time", "H2D", "D2H", "prefetched"], per_iter),
    ])


def _dicts(results: dict) -> dict:
    return {p: (r if isinstance(r, dict) else r.to_dict()) for p, r in results.items()}


def comparison_rows(results: dict) -> list[dict]:
    """One row per policy with the main figures and the speedup over um (um time / policy time)."""
    d = _dicts(results)
    um_time = d["um"]["time_s"] if "um" in d else None
    return [{
        "policy": p,
        "time_s": r["time_s"],
        "faults": r["faults"],
        "faults_after_first": after_first(r, "faults"),
        "h2d_bytes": r["h2d_bytes"],
        "d2h_bytes": r["d2h_bytes"],
        "prefetch_accuracy": r["prefetch_accuracy"],
        "prefetch_coverage": r["prefetch_coverage"],
        "peak_resident_bytes": r["peak_resident_bytes"],
        "speedup_vs_um": _ratio(um_time, r["time_s"]),
    } for p, r in d.items()]


def format_comparison(results: dict) -> str:
    """Text table comparing policies: time, faults (total, after the first iteration), traffic, prefetch quality."""
    header = ["policy", "time", "faults", "faults after 1st it.", "H2D", "D2H", "pf accuracy", "pf coverage",
              "peak resident", "speedup vs um"]
    columns = (("time_s", "s"), ("faults", "n"), ("faults_after_first", "n"), ("h2d_bytes", "B"),
               ("d2h_bytes", "B"), ("prefetch_accuracy", "%"), ("prefetch_coverage", "%"),
               ("peak_resident_bytes", "B"), ("speedup_vs_um", "x"))
    rows = [[row["policy"], *(_fmt(row[key], kind) for key, kind in columns)] for row in comparison_rows(results)]
    return _table(header, rows)


def _per_iteration_rows(results: dict) -> tuple[list[str], list[list[str]]]:
    d = _dicts(results)
    iterations = sorted({r["iteration"] for res in d.values() for r in res["per_iteration"]})
    header = ["per iteration", *map(str, iterations)]
    rows = []
    for key, label, kind in (("faults", "faults", "n"), ("time_s", "time", "s")):
        for p, res in d.items():
            by_iteration = {r["iteration"]: r[key] for r in res["per_iteration"]}
            rows.append([f"{p} {label}", *(_fmt(by_iteration.get(i), kind) for i in iterations)])
    return header, rows


def format_per_iteration(results: dict) -> str:
    """Text table of each policy's faults and simulated time per iteration (shows the warm-up)."""
    return _table(*_per_iteration_rows(results))


def _warmup_sentences(results: dict) -> list[str]:
    sentences = []
    for row in warmup_ratios(results):
        start, last = row["from_iteration"], row["last_iteration"]
        if start > last:
            continue
        span = f"iteration {start}" if start == last else f"iterations {start}-{last}"
        sentences.append(f"over {span}: deepum takes {_fmt(row['deepum_faults_vs_um'], '%')} of um's faults "
                         f"and {_fmt(row['deepum_time_vs_oracle'], 'x')} oracle's time")
    return sentences


def format_warmup(results: dict) -> str:
    """deepum's faults against um's and time against oracle's from iteration 1 on and from 2 on, one line each."""
    return "\n".join(_warmup_sentences(results))


# Figures in summary.md: (label, kind, getter over a result dict).
_SUMMARY_FIELDS = (
    ("simulated time", "s", lambda r: r["time_s"]),
    ("time after the first iteration", "s", lambda r: after_first(r, "time_s")),
    ("time from the second iteration", "s", lambda r: from_iteration(r, "time_s", 2)),
    ("faults", "n", lambda r: r["faults"]),
    ("faults after the first iteration", "n", lambda r: after_first(r, "faults")),
    ("faults from the second iteration", "n", lambda r: from_iteration(r, "faults", 2)),
    ("fault stall", "s", lambda r: r["fault_stall_s"]),
    ("prefetch wait", "s", lambda r: r["prefetch_wait_s"]),
    ("host to device", "B", lambda r: r["h2d_bytes"]),
    ("host to device after the first iteration", "B", lambda r: after_first(r, "h2d_bytes")),
    ("device to host", "B", lambda r: r["d2h_bytes"]),
    ("prefetched", "B", lambda r: r["prefetch_bytes"]),
    ("evicted", "B", lambda r: r["evicted_bytes"]),
    ("discarded", "B", lambda r: r["discarded_bytes"]),
    ("prefetch accuracy", "%", lambda r: r["prefetch_accuracy"]),
    ("prefetch coverage", "%", lambda r: r["prefetch_coverage"]),
    ("peak resident", "B", lambda r: r["peak_resident_bytes"]),
)


def config_markdown(results: dict, config_source: str | None = None) -> str:
    """The paragraph of summary.md that says which config and calibration the replays used."""
    d = _dicts(results)
    lines = []
    if "deepum" in d and d["deepum"].get("config"):
        knobs = ", ".join(f"{key} {json.dumps(value)}" for key, value in d["deepum"]["config"].items())
        lines.append(f"deepum's config ({config_source or 'as given'}): {knobs}.")
    if "oracle" in d and d["oracle"].get("config"):
        lines.append(f"oracle looks {d['oracle']['config']['lookahead']} kernels ahead: the config's lookahead.")
    calibrations = sorted({r["calibration"] for r in d.values()})
    lines.append(f"Costs from the calibration of {', '.join(calibrations)}.")
    return " ".join(lines)


def summary_markdown(results: dict, trace_name: str | None = None, config_source: str | None = None) -> str:
    """summary.md: the main figures per policy, the ratios deepum/um and deepum/oracle, and the config."""
    d = _dicts(results)
    any_result = next(iter(d.values()))
    header = ["figure", *d, "deepum / um", "deepum / oracle"]
    rows = []
    for label, kind, get in _SUMMARY_FIELDS:
        values = {p: get(r) for p, r in d.items()}
        ratios = [_ratio(values.get("deepum"), values.get(other)) for other in ("um", "oracle")]
        rows.append([label, *(_fmt(v, kind) for v in values.values()),
                     *(_fmt(x, "x") if kind != "%" else "-" for x in ratios)])
    speedups = comparison_rows(d)
    title = f"# deepum replay report{f': {trace_name}' if trace_name else ''}"
    intro = (f"Capacity {format_bytes(any_result['capacity_bytes'])} for a footprint of "
             f"{format_bytes(any_result['footprint_bytes'])}; {counted(any_result['kernels'], 'kernel')} over "
             f"{counted(any_result['iterations'], 'iteration')}. Speedup over um: "
             + ", ".join(f"{r['policy']} {_fmt(r['speedup_vs_um'], 'x')}" for r in speedups) + ".")
    notes = ("Ratios are deepum's figure divided by the other policy's (below 1 means deepum needs less). "
             "\"After the first iteration\" counts the later iterations only: it leaves out the set-up kernels "
             "and the first iteration, in which the tables are still learning. \"From the second iteration\" "
             "also leaves out iteration 1, in which the tables relearn what the first iteration changed (such as "
             "the addresses that move once the optimizer state is allocated in the first step).")
    sentences = _warmup_sentences(results)
    warmup = f"Warm-up: {'; '.join(sentences)}." if sentences else ""
    per_iteration = _table(*_per_iteration_rows(results), markdown=True)
    plots = "\n".join(f"![{name[:-4]}]({name})" for name in PLOT_FILES)
    parts = [title, intro, config_markdown(results, config_source), _table(header, rows, markdown=True), notes,
             per_iteration, warmup, plots]
    return "\n\n".join(part for part in parts if part) + "\n"


def format_tradeoff(tune_result) -> str:
    """Text table of the Pareto frontier, the chosen configuration marked with *."""
    rows = [["*" if c is tune_result.best else "", str(c.config.lookahead), str(c.config.block_rows),
             str(c.config.block_ways), str(c.config.block_successors), str(c.config.exec_records),
             _fmt(c.table_bytes, "B"), _fmt(c.time_s, "s"), _fmt(c.faults, "n")]
            for c in tune_result.pareto]
    return _table(["", "lookahead", "rows", "ways", "successors", "exec records", "table memory", "time",
                   "faults"], rows)


def write_report(results: dict, out_dir: str | Path, trace_name: str | None = None,
                 config_source: str | None = None) -> list[Path]:
    """Writes the three plots, summary.md and results.json into out_dir; returns the paths written.

    `results` maps policy to a simulator result replayed with timeline=True; `config_source` says where
    the config came from ("the defaults", "--config best.json").
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in PLOT_FILES]
    plot_faults_per_iteration(results, paths[0])
    plot_timeline(results, paths[1])
    plot_time_breakdown(results, paths[2])
    (out / "summary.md").write_text(summary_markdown(results, trace_name, config_source))
    (out / "results.json").write_text(to_json({"trace": trace_name, "config_source": config_source,
                                               "results": _dicts(results)}, indent=2) + "\n")
    return [*paths, out / "summary.md", out / "results.json"]


def _plain(value):
    """`value` with numpy scalars and arrays as Python numbers and lists, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json(value, indent: int | None = None) -> str:
    """Strict JSON text of a result (numpy values converted, NaN written as null)."""
    return json.dumps(_plain(value), indent=indent, allow_nan=False)
