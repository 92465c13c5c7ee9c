"""Report of bench/peers.py: for each workload and peer (a plain-PyTorch way to lower peak GPU
memory), the peer's step beside um's and deepum's at its peak as their capacity, in a markdown table
(peers.md), JSON (peers.json) and a bar chart (peers.png).

A record is a bench/train.py record with run, status, workload, mode and peer (the peer it is compared
at; None for mode none), and, where successful, workload_id, step_s_median (seconds),
peak_resident_bytes, capacity_bytes, memory_method and bitwise_equal_to_none; shared_host (optional)
is true for a run made while another job used the same host. matplotlib loads only in plot().
"""
from __future__ import annotations

import json
from pathlib import Path

from bench_report import _axes, _bytes, _legends, _number, _x, failed_runs_table, ok_records, system_line

COMPARED = ("um", "deepum")
"""Unified-memory modes set beside each peer."""


def comparisons(records: list[dict]) -> list[dict]:
    """One row per workload and peer, in order of appearance: peer, memory_method, peak_bytes (the
    peer's peak, the others' capacity), step_s ({peer, um, deepum, none}: step_s_median, None where
    a run did not succeed), bitwise_equal_to_none (per run likewise), deepum_over_peer and
    um_over_peer (step ratios; None without both), fastest (the mode of the least step), shared_host
    (the modes whose run shared the host with another job)."""
    ok = ok_records(records)
    rows = []
    for peer_record in (r for r in ok if r.get("peer") and r["mode"] == r["peer"]):
        key, peer = peer_record["workload_id"], peer_record["peer"]
        runs = {peer: peer_record, **{r["mode"]: r for r in ok if r["workload_id"] == key and r.get("peer") == peer
                                      and r["mode"] in COMPARED}}
        none = next((r for r in ok if r["workload_id"] == key and r["mode"] == "none"), None)
        step = {mode: (runs[mode]["step_s_median"] if mode in runs else None) for mode in (peer, *COMPARED)}
        step["none"] = none["step_s_median"] if none else None
        fastest = min((mode for mode in (peer, *COMPARED) if step[mode] is not None), key=step.get)
        rows.append({
            "workload": peer_record["workload"], "workload_id": key, "peer": peer,
            "memory_method": peer_record.get("memory_method") or peer,
            "peak_bytes": peer_record.get("peak_resident_bytes"),
            "none_peak_bytes": none.get("peak_resident_bytes") if none else None,
            "step_s": step,
            "bitwise_equal_to_none": {mode: run.get("bitwise_equal_to_none") for mode, run in runs.items()},
            "deepum_over_peer": _ratio(step["deepum"], step[peer]),
            "um_over_peer": _ratio(step["um"], step[peer]),
            "fastest": fastest,
            "shared_host": [mode for mode, run in runs.items() if run.get("shared_host")],
        })
    return rows


def _ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def _ms(seconds) -> str:
    return "–" if seconds is None else _number(seconds * 1e3)


def _same(value) -> str:
    return {True: "yes", False: "no"}.get(value, "–")


SHARED_MARK = "†"
SHARED_NOTE = (f"{SHARED_MARK}: run while another job used the same host (its CPUs, memory and PCIe root); "
               "steps that move data through host memory ran slower than alone.")


def markdown_table(rows: list[dict]) -> str:
    """The comparison table: one line per workload and peer; a step marked SHARED_MARK was taken while
    another job shared the host."""
    lines = ["| workload | peer | peak (in-memory peak) | in-memory ms | peer ms | um ms | deepum ms | um / peer | "
             "deepum / peer | fastest | params = none (peer, um, deepum) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        step, same, peer = row["step_s"], row["bitwise_equal_to_none"], row["peer"]
        ms = {mode: _ms(step[mode]) + (SHARED_MARK if mode in row.get("shared_host", ()) else "")
              for mode in (peer, *COMPARED)}
        lines.append(
            f"| {row['workload']} | {row['memory_method']} | {_bytes(row['peak_bytes'])} "
            f"({_bytes(row['none_peak_bytes'])}) | {_ms(step['none'])} | {ms[peer]} | {ms['um']} | "
            f"{ms['deepum']} | {_x(row['um_over_peer'])} | {_x(row['deepum_over_peer'])} | {row['fastest']} | "
            f"{', '.join(_same(same.get(mode)) for mode in (peer, *COMPARED))} |")
    return "\n".join(lines)


def markdown(records: list[dict], command: str) -> str:
    """peers.md: system, command, the comparison table, and the runs that did not finish."""
    rows = comparisons(records)
    lines = ["# Unified memory against the peers at equal peak GPU memory", "", system_line(records), "",
             f"Regenerate: `{command}`", "",
             "Each peer runs without a budget; um and deepum run with the peer's peak GPU memory "
             "(torch.cuda.max_memory_reserved(), or allocated with --peak allocated) as their capacity. "
             "x / peer: step time over the peer's; below 1 the unified-memory mode is faster at the same "
             "memory. Params = none: bitwise-equal parameters to plain PyTorch after training.", "",
             markdown_table(rows)]
    if any(row["shared_host"] for row in rows):
        lines += ["", SHARED_NOTE]
    lines += failed_runs_table(records)
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    """One panel per workload: per peer, its step beside um's and deepum's at its peak (bars, ms;
    hatched where the run shared the host with another job), the in-memory step as a dashed line;
    each peer's peak under its name."""
    workloads = list(dict.fromkeys(row["workload_id"] for row in rows))
    plt, fig, axes = _axes(len(workloads), "Step time at each peer's peak GPU memory")
    colours = {"peer": "tab:gray", "um": "tab:orange", "deepum": "tab:blue"}
    for ax, key in zip(axes, workloads):
        group = [row for row in rows if row["workload_id"] == key]
        for i, row in enumerate(group):
            for offset, (mode, legend) in zip((-0.27, 0, 0.27), ((row["peer"], "peer"), ("um", "um"),
                                                                  ("deepum", "deepum"))):
                seconds = row["step_s"][mode]
                if seconds is not None:
                    ax.bar(i + offset, seconds * 1e3, 0.26, color=colours[legend],
                           hatch="//" if mode in row.get("shared_host", ()) else None,
                           label=legend if i == 0 else None)
        none = group[0]["step_s"]["none"]
        if none is not None:
            ax.axhline(none * 1e3, color="black", linestyle="--", label="in-memory")
        ax.set_xticks(range(len(group)), [f"{row['peer']}\n{_bytes(row['peak_bytes'])}" for row in group], fontsize=7)
        ax.set_title(group[0]["workload"])
        ax.set_ylabel("step time (ms)")
    _legends(axes)
    if any(row.get("shared_host") for row in rows):
        fig.text(0.5, 0.005, "hatched: " + SHARED_NOTE.split(": ", 1)[1], ha="center", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(records: list[dict], folder: Path, command: str) -> list[Path]:
    """Writes peers.json (command, system, comparisons, records), peers.md and, when some comparison
    exists, peers.png into `folder`; returns the paths written."""
    folder = Path(folder)
    rows = comparisons(records)
    paths = [folder / "peers.json", folder / "peers.md"]
    paths[0].write_text(json.dumps({"command": command, "system": system_line(records), "comparisons": rows,
                                    "records": records}, indent=1, default=str))
    paths[1].write_text(markdown(records, command))
    if rows:
        plot(rows, folder / "peers.png")
        paths.append(folder / "peers.png")
    return paths
