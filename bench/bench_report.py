"""Report of the GPU training benchmark (bench/run_all.py): headline ratios, a markdown table and
plots from run records (the JSON bench/train.py writes, annotated by bench/physical_limit.py).

A record has at least run, status ("ok", "failed", "timeout", "skipped"), workload, mode and
budget_fraction (None: no budget); a successful one also workload_id, step_s_median (seconds),
footprint_bytes, peak_resident_bytes, capacity_bytes and, once annotated, in_memory_step_s,
working_set_bytes, physical_limit_s, ratio_to_physical_limit, ratio_to_in_memory and bounds
(bench/bounds.py); records of engines that measure it have link_busy_s_per_step.
Ratios compare runs of the same workload_id at the same budget. matplotlib loads only in plots().
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from modes import BUDGETED_MODES, GPU_MODES, UNBUDGETED_MODES

from deepum.units import format_bytes

MODE_ORDER = GPU_MODES
"""Order of the modes in tables and bar charts: that of bench/modes.py."""

HEADLINES = {
    # key: (numerator mode, denominator mode, budgets: "over" = below 1, "full" = unbudgeted, what it means)
    "deepum_speedup_over_um": ("um", "deepum", "over", "um step time / deepum step time"),
    "deepum_speedup_over_advise": ("advise", "deepum", "over", "advise step time / deepum step time"),
    "deepum_vs_in_memory": ("deepum", "none", "over", "deepum step time / in-memory (mode none) step time"),
    "um_vs_in_memory": ("um", "none", "over", "um step time / in-memory step time"),
    "save_on_cpu_vs_in_memory": ("save_on_cpu", "none", "full", "save_on_cpu step time / in-memory step time"),
    "deepum_overhead_unbudgeted": ("deepum", "none", "full", "deepum without a budget / in-memory step time"),
    "ablation_no_pre_evict": ("deepum-no-pre-evict", "deepum", "over",
                              "step time without pre-eviction / deepum step time"),
    "ablation_no_invalidate": ("deepum-no-invalidate", "deepum", "over",
                               "step time without invalidation / deepum step time"),
    "ablation_lru_eviction": ("deepum-lru", "deepum", "over",
                              "step time evicting least recently migrated blocks / deepum step time"),
}


def geomean(values) -> float | None:
    """Geometric mean of the positive numbers among `values` (None entries skipped); None if none."""
    logs = [math.log(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(logs) / len(logs)) if logs else None


def ok_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


def _find(records: list[dict], workload_id: str, mode: str, budget: float | None) -> dict | None:
    return next((r for r in ok_records(records) if r["workload_id"] == workload_id and r["mode"] == mode
                 and r.get("budget_fraction") == budget), None)


def paired_ratios(records: list[dict], numerator: str, denominator: str, budgets: str = "over",
                  key: str = "step_s_median") -> list[dict]:
    """numerator-mode value / denominator-mode value of `key` for the same workload at the same budget
    (a denominator that runs without a budget pairs with every budget). budgets: "over" = the runs
    with a budget below 1 (oversubscribed), "all" = every budget, "full" = the unbudgeted runs."""
    pairs = []
    for record in ok_records(records):
        budget = record.get("budget_fraction")
        if record["mode"] != numerator or not _budget_matches(budget, budgets):
            continue
        other = _find(records, record["workload_id"], denominator, None if denominator in UNBUDGETED_MODES else budget)
        if other and record.get(key) is not None and other.get(key):
            pairs.append({"workload": record["workload"], "workload_id": record["workload_id"], "budget": budget,
                          "ratio": record[key] / other[key]})
    return pairs


def _budget_matches(budget: float | None, budgets: str) -> bool:
    if budgets == "full":
        return budget is None
    if budgets == "all":
        return budget is not None
    if budgets == "over":
        return budget is not None and budget < 1
    raise ValueError(f"budgets must be 'over', 'all' or 'full', got {budgets!r}")


def headline(records: list[dict]) -> dict:
    """Geometric means of the HEADLINES ratios (with the pairs they come from), deepum against the
    physical limit, deepum's page faults as a share of um's, and the main ratios per budget."""
    out = {}
    for key, (numerator, denominator, budgets, meaning) in HEADLINES.items():
        pairs = paired_ratios(records, numerator, denominator, budgets)
        out[key] = {"geomean": geomean(p["ratio"] for p in pairs), "n": len(pairs), "meaning": meaning,
                    "pairs": pairs}
    limit = [r for r in ok_records(records)
             if r["mode"] == "deepum" and _budget_matches(r.get("budget_fraction"), "over")]
    out["deepum_vs_physical_limit"] = {
        "geomean": geomean(r.get("ratio_to_physical_limit") for r in limit),
        "n": sum(r.get("ratio_to_physical_limit") is not None for r in limit),
        "meaning": "deepum step time / physical limit (link-bound lower bound overlapped with compute)"}
    for bound, meaning in (("uvm_path", "one migration at a time at the UVM rates"),
                           ("pinned_copy", "both directions at once at the pinned-copy rates")):
        ratios = [(r.get("bounds") or {}).get(f"step_over_{bound}") for r in limit]
        out[f"deepum_vs_{bound}_bound"] = {
            "geomean": geomean(ratios), "n": sum(v is not None for v in ratios),
            "meaning": f"deepum step time / {bound.replace('_', '-')} bound (the bytes that must move, {meaning}, "
                       f"overlapped with compute)"}
    faults = paired_ratios(records, "deepum", "um", "over", key="faults_per_step")
    out["deepum_faults_vs_um"] = {"geomean": geomean(p["ratio"] for p in faults), "n": len(faults),
                                  "meaning": "deepum GPU page faults per step / um's", "pairs": faults}
    budgets = sorted({r["budget_fraction"] for r in ok_records(records) if r.get("budget_fraction") is not None},
                     reverse=True)
    out["per_budget"] = {f"{b:.2f}": {
        "deepum_speedup_over_um": geomean(p["ratio"] for p in paired_ratios(records, "um", "deepum", "all")
                                          if p["budget"] == b),
        "deepum_vs_in_memory": geomean(p["ratio"] for p in paired_ratios(records, "deepum", "none", "all")
                                       if p["budget"] == b),
        "deepum_vs_physical_limit": geomean(r.get("ratio_to_physical_limit") for r in ok_records(records)
                                            if r["mode"] == "deepum" and r.get("budget_fraction") == b),
    } for b in budgets}
    return out


def _x(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}x"


def headline_text(figures: dict) -> str:
    """The headline as lines of text (geometric means over workloads and budgets below 1)."""
    lines = []
    for key in ("deepum_speedup_over_um", "deepum_vs_in_memory", "deepum_vs_physical_limit",
                "deepum_vs_uvm_path_bound", "deepum_vs_pinned_copy_bound", "deepum_faults_vs_um",
                "ablation_no_pre_evict", "ablation_no_invalidate", "ablation_lru_eviction", "deepum_speedup_over_advise",
                "um_vs_in_memory", "save_on_cpu_vs_in_memory", "deepum_overhead_unbudgeted"):
        item = figures[key]
        lines.append(f"- `{key}`: {_x(item['geomean'], 3 if key == 'deepum_faults_vs_um' else 2)} "
                     f"(geomean of {item['n']}; {item['meaning']})")
    return "\n".join(lines)


def _budget_label(record: dict) -> str:
    budget = record.get("budget_fraction")
    if budget is not None:
        return f"{budget:.2f}"
    if record["mode"] == "none":
        return "in-memory"
    if record["mode"] == "save_on_cpu" and record.get("working_set_bytes") and record.get("peak_resident_bytes"):
        return f"own peak ({record['peak_resident_bytes'] / record['working_set_bytes']:.2f})"
    return "unbudgeted"


def _sort_key(record: dict, order: list[str]):
    budget = record.get("budget_fraction")
    mode = record.get("mode")
    return (order.index(record.get("workload_id") or record.get("workload")), budget is not None, -(budget or 0),
            MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER))


def _workload_order(records: list[dict]) -> list[str]:
    order = []
    for record in records:
        key = record.get("workload_id") or record.get("workload")
        if key not in order:
            order.append(key)
    return order


def _traffic(record: dict, key: str) -> float | None:
    """Bytes per step one way: the engine's count in UM modes, the offloaded bytes for save_on_cpu."""
    value = record.get(key)
    return record.get("offloaded_bytes_per_step") if value is None else value


def _bytes(value) -> str:
    return "–" if value is None else format_bytes(value)


def _number(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def system_line(records: list[dict]) -> str:
    """GPU, driver, CUDA, PyTorch and dates of the successful runs."""
    ok = ok_records(records)
    if not ok:
        return "no successful runs"
    values = {key: sorted({str(r.get(key)) for r in ok}) for key in ("device", "driver_version", "cuda_version",
                                                                     "torch_version")}
    dates = sorted(r["date"] for r in ok if r.get("date"))
    when = f"{dates[0]} to {dates[-1]}" if dates and dates[0] != dates[-1] else (dates[0] if dates else "unknown")
    return (f"GPU {', '.join(values['device'])}; driver {', '.join(values['driver_version'])}; "
            f"CUDA {', '.join(values['cuda_version'])}; PyTorch {', '.join(values['torch_version'])}; "
            f"runs {when} (UTC)")


def markdown(records: list[dict], command: str) -> str:
    """results.md: system, command, headline, per-budget summary, the table of every run, failures."""
    figures = headline(records)
    order = _workload_order(records)
    lines = ["# GPU training benchmark", "", system_line(records), "", f"Regenerate: `{command}`", "",
             "## Headline (geometric means over workloads, budgets below 1)", "", headline_text(figures), "",
             "## By budget (geometric means over workloads)", "",
             "| budget | deepum speed-up over um | deepum / in-memory | deepum / physical limit |",
             "| --- | --- | --- | --- |"]
    for budget, row in figures["per_budget"].items():
        lines.append(f"| {budget} | {_x(row['deepum_speedup_over_um'])} | {_x(row['deepum_vs_in_memory'])} | "
                     f"{_x(row['deepum_vs_physical_limit'])} |")
    lines += ["", "## Workloads", ""]
    for key in order:
        sample = next((r for r in ok_records(records) if r["workload_id"] == key), None)
        if sample:
            lines.append(f"- `{key}`: working set {_bytes(sample.get('working_set_bytes'))} per iteration, "
                         f"in-memory step {_number((sample.get('in_memory_step_s') or 0) * 1e3)} ms")
    link = next((r["link"] for r in ok_records(records) if r.get("link")), None)
    rates = (f" ({link['h2d_bytes_per_s'] / 1e9:g} GB/s in, {link['d2h_bytes_per_s'] / 1e9:g} GB/s out: the "
             f"managed-memory migration rates; pinned copies, as save_on_cpu makes, can go faster)" if link else "")
    lines += ["", "Budget = capacity as a fraction of the working set (bytes of managed blocks one iteration "
              "touches). Physical limit = max(in-memory step, bytes beyond the budget in at the link's "
              f"host-to-GPU rate, out at its GPU-to-host rate{rates}). Coverage = share of host-to-GPU bytes "
              "that arrived by prefetch. Params = none: bitwise-equal parameters to mode none after training.", "",
              "| workload | budget | mode | capacity | step ms (spread) | samples/s | faults/step | H2D/step | "
              "D2H/step | coverage | x in-memory | x limit | params = none |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for record in sorted(ok_records(records), key=lambda r: _sort_key(r, order)):
        reference = _find(records, record["workload_id"], "none", None)
        same = "–" if not reference else (
            "yes" if reference["parameter_sha256"] == record["parameter_sha256"] else "no")
        h2d, d2h = _traffic(record, "h2d_bytes_per_step"), _traffic(record, "d2h_bytes_per_step")
        coverage = record.get("prefetch_coverage")
        lines.append(
            f"| {record['workload']} | {_budget_label(record)} | {record['mode']} | "
            f"{_bytes(record.get('capacity_bytes'))} | "
            f"{_number(record['step_s_median'] * 1e3)} ({_number(record.get('step_s_spread', 0) * 1e3)}) | "
            f"{_number(record.get('samples_per_s'))} | {_number(record.get('faults_per_step'), 0)} | {_bytes(h2d)} | "
            f"{_bytes(d2h)} | {'–' if coverage is None else f'{coverage:.0%}'} | "
            f"{_x(record.get('ratio_to_in_memory'))} | {_x(record.get('ratio_to_physical_limit'))} | {same} |")
    lines += failed_runs_table(records)
    return "\n".join(lines) + "\n"


def failed_runs_table(records: list[dict]) -> list[str]:
    """Markdown lines listing the runs that did not finish, with the last line of each one's output;
    none when every run finished."""
    failed = [r for r in records if r.get("status") != "ok"]
    if not failed:
        return []
    lines = ["", "## Runs that did not finish", "", "| run | status | last line of its output |", "| --- | --- | --- |"]
    for record in failed:
        last = (record.get("error") or "").strip().splitlines()[-1:] or [""]
        lines.append(f"| {record.get('run')} | {record['status']} | {last[0].replace('|', '/')[:200]} |")
    return lines


def _groups(records: list[dict]) -> list[tuple[str, list[dict]]]:
    """(label, successful records) per workload, in order of appearance."""
    ok = ok_records(records)
    keys = _workload_order(ok)
    names = [next(r["workload"] for r in ok if r["workload_id"] == key) for key in keys]
    return [(name if names.count(name) == 1 else f"{name} #{i + 1}", [r for r in ok if r["workload_id"] == key])
            for i, (name, key) in enumerate(zip(names, keys))]


def _axes(count: int, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, count, figsize=(4.2 * count, 3.6), squeeze=False)
    fig.suptitle(title)
    return plt, fig, axes[0]


def _legends(axes) -> None:
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)


def _budget_lines(ax, group: list[dict], value, modes) -> None:
    for mode in modes:
        points = sorted((r["budget_fraction"], value(r)) for r in group
                        if r["mode"] == mode and r.get("budget_fraction") is not None and value(r) is not None)
        if points:
            ax.plot(*zip(*points), marker="o", label=mode)
    ax.set_xlabel("budget (fraction of working set)")
    ax.invert_xaxis()


def plot_steps_by_step(panels: dict[str, tuple[str, dict[str, tuple[list[float], str]]]], title: str,
                       path: Path) -> None:
    """Step time (s, log scale) by step, one panel per entry of `panels`: its title and its lines,
    label -> (step times, color)."""
    if not panels:
        return
    from matplotlib.ticker import FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter

    plt, fig, axes = _axes(len(panels), title)
    for ax, (panel_title, lines) in zip(axes, panels.values()):
        for label, (steps, color) in lines.items():
            ax.plot(range(1, len(steps) + 1), steps, marker="o", ms=3, label=label, color=color)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(panel_title, fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("step time (s)")
        ax.grid(True, which="both", alpha=0.3)
    _legends(axes[:1])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_step_time(records: list[dict], path: Path) -> None:
    """Step time against budget per mode, one panel per workload, with the in-memory time, the
    physical limit and save_on_cpu at its own peak memory."""
    groups = _groups(records)
    plt, fig, axes = _axes(len(groups), "Step time against GPU memory budget")
    for ax, (label, group) in zip(axes, groups):
        _budget_lines(ax, group, lambda r: r["step_s_median"] * 1e3, BUDGETED_MODES)
        limit = sorted({(r["budget_fraction"], r["physical_limit_s"] * 1e3) for r in group
                        if r.get("budget_fraction") is not None and r.get("physical_limit_s") is not None})
        if limit:
            ax.plot(*zip(*limit), "k:", label="physical limit")
        for r in group:
            if r["mode"] == "none" and r.get("budget_fraction") is None:
                ax.axhline(r["step_s_median"] * 1e3, color="gray", linestyle="--", label="in-memory")
            if r["mode"] == "save_on_cpu" and r.get("working_set_bytes"):
                ax.plot([r["peak_resident_bytes"] / r["working_set_bytes"]], [r["step_s_median"] * 1e3], "k*",
                        markersize=10, label="save_on_cpu (own peak)")
        ax.set_title(label)
        ax.set_ylabel("step time (ms)")
        ax.set_ylim(bottom=0)
    _legends(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_faults(records: list[dict], path: Path) -> None:
    """GPU page faults per step against budget per unified-memory mode, one panel per workload."""
    groups = _groups(records)
    plt, fig, axes = _axes(len(groups), "GPU page faults per step")
    for ax, (label, group) in zip(axes, groups):
        _budget_lines(ax, group, lambda r: r.get("faults_per_step"), BUDGETED_MODES)
        ax.set_yscale("symlog", linthresh=10)
        ax.set_title(label)
        ax.set_ylabel("faults per step")
    _legends(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_breakdown(records: list[dict], path: Path) -> None:
    """At each workload's smallest budget, per mode: the step time split into in-memory compute and
    the rest (waiting on memory), beside the time the link needs for the bytes the mode moved at the
    calibrated bandwidths (host to GPU and back, stacked); a black tick marks the physical limit."""
    groups = _groups(records)
    plt, fig, axes = _axes(len(groups), "Time breakdown at the smallest budget (left bar: step; right bar: link)")
    for ax, (label, group) in zip(axes, groups):
        budgets = [r["budget_fraction"] for r in group if r.get("budget_fraction") is not None]
        smallest = min(budgets) if budgets else None
        rows = [r for r in group if r.get("budget_fraction") == smallest and smallest is not None]
        rows += [r for r in group if r["mode"] == "save_on_cpu"]
        rows.sort(key=lambda r: MODE_ORDER.index(r["mode"]) if r["mode"] in MODE_ORDER else len(MODE_ORDER))
        for i, r in enumerate(rows):
            step = r["step_s_median"] * 1e3
            compute = min(step, (r.get("in_memory_step_s") or 0) * 1e3)
            link = r.get("link") or {}
            h2d, d2h = _traffic(r, "h2d_bytes_per_step") or 0, _traffic(r, "d2h_bytes_per_step") or 0
            h2d_ms = h2d / link["h2d_bytes_per_s"] * 1e3 if link else 0
            d2h_ms = d2h / link["d2h_bytes_per_s"] * 1e3 if link else 0
            ax.bar(i - 0.2, compute, 0.38, color="tab:green", label="compute" if i == 0 else None)
            ax.bar(i - 0.2, step - compute, 0.38, bottom=compute, color="tab:red", label="waiting" if i == 0 else None)
            ax.bar(i + 0.2, h2d_ms, 0.38, color="tab:blue", label="link in" if i == 0 else None)
            ax.bar(i + 0.2, d2h_ms, 0.38, bottom=h2d_ms, color="tab:cyan", label="link out" if i == 0 else None)
            if r.get("physical_limit_s") is not None:
                ax.hlines(r["physical_limit_s"] * 1e3, i - 0.4, i + 0.4, color="black")
        ax.set_xticks(range(len(rows)), [r["mode"] for r in rows], rotation=35, ha="right", fontsize=7)
        ax.set_title(f"{label} at {smallest:.2f}" if smallest is not None else label)
        ax.set_ylabel("ms per step")
    _legends(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def time_split(record: dict) -> dict:
    """Seconds per step of a successful run: compute (the in-memory step, at most the step), h2d and
    d2h (the link's measured busy time each way; 0 where the record has none), other (the step less
    the three, at least 0) and step. The parts overlap in time; where they did, their sum exceeds
    the step and other is 0."""
    step = record["step_s_median"]
    compute = min(step, (record.get("bounds") or {}).get("in_memory_step_s") or 0.0)
    busy = record.get("link_busy_s_per_step") or {}
    h2d, d2h = busy.get("h2d") or 0.0, busy.get("d2h") or 0.0
    return {"compute": compute, "h2d": h2d, "d2h": d2h, "other": max(0.0, step - compute - h2d - d2h), "step": step}


TIME_PARTS = (("compute", "tab:green", "compute (in-memory step)"), ("h2d", "tab:blue", "link busy host to GPU"),
              ("d2h", "tab:cyan", "link busy GPU to host"), ("other", "tab:red", "other"))
"""The stacked parts of plot_time_accounting: key of time_split, colour, legend."""


def gpu_split(record: dict) -> dict | None:
    """The step as the GPU spent it, in seconds, for records with the GPU's busy time (engines awake
    under a budget): compute (the in-memory step, at most the busy time), slower kernels (the busy
    time beyond it: faults and host-mapped accesses inside kernels), idle (the step less the busy time:
    the GPU waiting on migrations or on the launching thread); they sum to the step. None without it."""
    busy = record.get("gpu_busy_s_per_step")
    if busy is None:
        return None
    step = record["step_s_median"]
    busy = min(busy, step)
    compute = min(busy, (record.get("bounds") or {}).get("in_memory_step_s") or 0.0)
    return {"compute": compute, "slower_kernels": busy - compute, "idle": step - busy}


GPU_PARTS = (("compute", "tab:green", None), ("slower_kernels", "tab:olive", "GPU: kernels beyond the in-memory step"),
             ("idle", "0.75", "GPU idle (waiting on migrations or the CPU)"))
"""The parts of gpu_split drawn in a narrow bar beside each run's: key, colour, legend (None: compute's
is TIME_PARTS')."""


CLIP_OVER = 1.6
"""plot_time_accounting: a panel's axis ends at this many times its tallest run other than um's (or
bound), so deepum's bars stay legible beside um's many times taller ones, which are cut and labelled."""


def accounting_top(rows: list[dict]) -> float | None:
    """Seconds where a time-accounting panel's axis ends: CLIP_OVER times the largest step or bound of
    its runs other than um's, or None (the axis fits every bar) when nothing would be cut."""
    others = [r for r in rows if r["mode"] != "um"]
    tallest = max((value for r in others for value in (r["step_s_median"], *((r.get("bounds") or {}).get(key)
                   for key in ("uvm_path_s", "pinned_copy_s"))) if value is not None), default=None)
    if tallest is None:
        return None
    top = CLIP_OVER * tallest
    return top if any(r["step_s_median"] > top for r in rows) else None


def plot_time_accounting(records: list[dict], path: Path) -> None:
    """Per workload, one stacked bar per run under a budget below 1 (by budget, then mode): its step
    split by time_split, a black tick at the step time, and across the bar the UVM-path bound (solid)
    and the pinned-copy bound (dashed) of bench/bounds.py; beside it, where the record has the GPU's
    busy time, a narrow bar of gpu_split. Bars past accounting_top are cut there and labelled with
    their step; one legend below the panels."""
    groups = _groups(records)
    plt, fig, axes = _axes(len(groups), "Where the step goes (bars) against the bounds (lines)")
    for ax, (label, group) in zip(axes, groups):
        rows = sorted((r for r in group if _budget_matches(r.get("budget_fraction"), "over")),
                      key=lambda r: (-r["budget_fraction"], MODE_ORDER.index(r["mode"])))
        labelled = set()

        def once(legend):  # each legend entry on its panel's first bar that draws it
            fresh = legend not in labelled
            labelled.add(legend)
            return legend if fresh else None

        for i, r in enumerate(rows):
            split, bottom = time_split(r), 0.0
            for key, colour, legend in TIME_PARTS:
                ax.bar(i, split[key] * 1e3, 0.7, bottom=bottom, color=colour, label=once(legend))
                bottom += split[key] * 1e3
            ax.hlines(split["step"] * 1e3, i - 0.4, i + 0.4, color="black", linewidth=2, label=once("step"))
            gpu, bottom = gpu_split(r), 0.0
            for key, colour, legend in GPU_PARTS if gpu else ():
                ax.bar(i + 0.42, gpu[key] * 1e3, 0.14, bottom=bottom, color=colour, label=legend and once(legend))
                bottom += gpu[key] * 1e3
            bounds = r.get("bounds") or {}
            for key, style, legend in (("uvm_path_s", "-", "UVM-path bound"),
                                       ("pinned_copy_s", "--", "pinned-copy bound")):
                if bounds.get(key) is not None:
                    ax.hlines(bounds[key] * 1e3, i - 0.45, i + 0.45, color="magenta", linestyles=style,
                              label=once(legend))
        top = accounting_top(rows)
        if top is not None:
            ax.set_ylim(0, top * 1e3)
            for i, r in enumerate(rows):
                if r["step_s_median"] > top:
                    ax.text(i, top * 1e3 * 0.97, f"{r['step_s_median'] * 1e3:,.0f} ms ↑", ha="center", va="top",
                            fontsize=7, rotation=90, color="white", fontweight="bold")
        ax.set_xticks(range(len(rows)), [f"{r['mode']} {r['budget_fraction']:.2f}" for r in rows], rotation=35,
                      ha="right", fontsize=7)
        ax.set_title(label)
        ax.set_ylabel("ms per step")
    entries = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(text, handle)
    if entries:
        fig.legend(entries.values(), entries.keys(), loc="lower center", ncol=min(5, len(entries)), fontsize=8)
    fig.tight_layout(rect=(0, 0.16 if entries else 0, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


PLOTS = {"step_time_vs_budget.png": plot_step_time, "faults_per_step.png": plot_faults,
         "time_breakdown.png": plot_breakdown, "time_accounting.png": plot_time_accounting}


def write_report(records: list[dict], folder: Path, command: str) -> list[Path]:
    """Writes results.json (command, system, headline, records), results.md and the PLOTS into
    `folder` (plots only when some run succeeded); returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"command": command, "system": system_line(records), "headline": headline(records), "records": records}
    paths = [folder / "results.json", folder / "results.md"]
    paths[0].write_text(json.dumps(summary, indent=1, default=str))
    paths[1].write_text(markdown(records, command))
    if ok_records(records):
        for name, plot in PLOTS.items():
            plot(records, folder / name)
            paths.append(folder / name)
    return paths
