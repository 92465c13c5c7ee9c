"""The report's PNG plots and the tuning trade-off plot.

Plots use matplotlib's Agg canvas without pyplot, imported inside the plotting functions only.
"""
from __future__ import annotations

from pathlib import Path

from ..units import format_bytes

COLORS = {"um": "tab:red", "advise": "tab:orange", "deepum": "tab:blue", "oracle": "tab:green"}
# Each policy its own marker and line, drawn in this order: a later policy's markers stay visible where
# its values equal an earlier one's (deepum and oracle both at zero faults).
_STYLE = {"oracle": dict(marker="D", ls="--", markersize=10, markerfacecolor="none", zorder=2),
          "um": dict(marker="o", ls="-", markersize=6, zorder=3),
          "advise": dict(marker="v", ls="-", markersize=6, zorder=3),
          "deepum": dict(marker="s", ls="-", markersize=5, zorder=4)}


def _figure(rows: int = 1, height: float = 4.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _dicts(results: dict) -> dict:
    return {p: (r if isinstance(r, dict) else r.to_dict()) for p, r in results.items()}


def _drawing_order(policies) -> list:
    return sorted(policies, key=lambda p: list(_STYLE).index(p) if p in _STYLE else len(_STYLE))


def _capacity_words(result: dict) -> str:
    return (f"capacity {format_bytes(result['capacity_bytes'])} of a "
            f"{format_bytes(result['footprint_bytes'])} footprint")


def plot_faults_per_iteration(results: dict, path: Path) -> None:
    """Faults per iteration per policy (symmetric log y, so that zero stays visible)."""
    d = _dicts(results)
    fig = _figure()
    ax = fig.add_subplot()
    for p in _drawing_order(d):
        rows = sorted(d[p]["per_iteration"], key=lambda x: x["iteration"])
        ax.plot([x["iteration"] for x in rows], [x["faults"] for x in rows], label=p, color=COLORS.get(p),
                **_STYLE.get(p, dict(marker="o")))
    ax.set_yscale("symlog", linthresh=1)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("iteration")
    ax.set_ylabel("faults (4 KiB pages)")
    ax.set_title(f"Faults per iteration ({_capacity_words(next(iter(d.values())))})")
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(p) for p in d if p in labels]  # the legend in the results' order
    ax.legend([handles[i] for i in order], [labels[i] for i in order])
    fig.savefig(path, dpi=120)


def plot_timeline(results: dict, path: Path) -> None:
    """Per-kernel faults and prefetched MiB against simulated time, one panel per policy; every panel
    on the same fault and prefetch scales, and a panel says so where it has none of either."""
    fig = _figure(rows=len(results), height=2.6)
    axes = fig.subplots(len(results), 1, sharex=True, squeeze=False)[:, 0]
    timelines = {p: r.timeline for p, r in results.items()}
    fault_top = 1.05 * max(1, max(int(tl["kernel_faults"].max(initial=0)) for tl in timelines.values()))
    mib_top = 1.05 * max(1.0, max(float(tl["kernel_prefetch_bytes"].max(initial=0)) / 2**20
                                  for tl in timelines.values()))
    for ax, (p, tl) in zip(axes, timelines.items()):
        faults, prefetched = tl["kernel_faults"], tl["kernel_prefetch_bytes"] / 2**20
        ax.plot(tl["kernel_t_start_s"], faults, drawstyle="steps-post", color="tab:red", lw=0.8)
        ax.set_ylim(0, fault_top)
        ax.set_ylabel("faults", color="tab:red")
        pf = ax.twinx()
        pf.plot(tl["kernel_t_start_s"], prefetched, drawstyle="steps-post", color="tab:blue", lw=0.8)
        pf.set_ylim(0, mib_top)
        pf.set_ylabel("prefetched MiB", color="tab:blue")
        starts = tl["kernel_t_start_s"][1:][tl["kernel_iteration"][1:] != tl["kernel_iteration"][:-1]]
        for t in starts:
            ax.axvline(t, color="0.7", lw=0.6, ls="--")
        missing = [what for what, values in (("no faults", faults), ("no prefetches", prefetched))
                   if not values.any()]
        if missing:
            ax.text(0.5, 0.5, " and ".join(missing), transform=ax.transAxes, ha="center", va="center",
                    color="0.4", fontsize=11)
        ax.set_title(f"{p}: faults and prefetches per kernel (dashed: iteration start)", fontsize=10)
    axes[-1].set_xlabel("simulated time (s)")
    fig.savefig(path, dpi=120)


def plot_time_breakdown(results: dict, path: Path) -> None:
    """Stacked bars per policy: compute, fault stall, prefetch wait and host-map wait (s), which sum to
    the replay's time, each part and the total written on the bars; the title gives the capacity."""
    fig = _figure()
    ax = fig.add_subplot()
    d = _dicts(results)
    bottom = [0.0] * len(d)
    parts = (("compute_s", "compute", "tab:gray"), ("fault_stall_s", "fault stall", "tab:red"),
             ("prefetch_wait_s", "prefetch wait", "tab:blue"), ("host_map_wait_s", "host-map wait", "tab:purple"))
    top = max(sum(r[key] for key, _, _ in parts) for r in d.values())
    for key, label, color in parts:
        values = [r[key] for r in d.values()]
        bars = ax.bar(list(d), values, bottom=bottom, label=label, color=color)
        # A part too thin to hold its label goes unlabelled; the total above the bar still counts it.
        ax.bar_label(bars, labels=[f"{v:.3f}" if v > 0.06 * top else "" for v in values], label_type="center",
                     color="white", fontsize=8)
        bottom = [b + v for b, v in zip(bottom, values)]
    for x, total in enumerate(bottom):
        ax.text(x, total, f"{total:.3f} s", ha="center", va="bottom", fontsize=9)
    ax.set_ylim(0, 1.12 * max(bottom + [1e-9]))
    ax.set_ylabel("simulated time (s)")
    ax.set_title(f"Time breakdown ({_capacity_words(next(iter(d.values())))})")
    ax.legend()
    fig.savefig(path, dpi=120)


def plot_tradeoff(tune_result, path: Path) -> None:
    """Tuning trade-off: simulated time against table memory, Pareto frontier and the chosen config."""
    fig = _figure()
    ax = fig.add_subplot()
    sizes = [c.table_bytes for c in tune_result.candidates]
    unit, scale = next((u, f) for u, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
                       if max(sizes) >= f)
    ax.scatter([c.table_bytes / scale for c in tune_result.candidates], [c.time_s for c in tune_result.candidates],
               color="0.6", label="replayed")
    ax.plot([c.table_bytes / scale for c in tune_result.pareto], [c.time_s for c in tune_result.pareto],
            marker="o", color="tab:blue", label="Pareto frontier")
    best = tune_result.best
    ax.scatter([best.table_bytes / scale], [best.time_s], marker="*", s=250, color="tab:orange", zorder=3,
               label=f"chosen (lookahead {best.config.lookahead}, {best.config.block_rows}x{best.config.block_ways} "
                     f"rows x ways, {best.config.block_successors} succ., {best.config.exec_records} rec.)")
    if tune_result.budget_bytes is not None:
        ax.axvline(tune_result.budget_bytes / scale, color="tab:red", ls="--", label="budget")
    if max(sizes) > 10 * max(1, min(sizes)):
        ax.set_xscale("log")
    ax.set_xlabel(f"table memory ({unit})")
    ax.set_ylabel("simulated time (s)")
    ax.set_title(f"Tuning trade-off: time against table memory (capacity {format_bytes(tune_result.capacity_bytes)})")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
