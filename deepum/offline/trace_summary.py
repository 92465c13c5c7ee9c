"""Headline numbers of a trace, and the readable summary `deepum info` prints."""
from __future__ import annotations

import json

import numpy as np

from ..units import counted, format_bytes
from .trace_format import META_KEYS, OPTIONAL_GROUPS, PAGE_BYTES, Trace


def summarize(trace: Trace) -> dict:
    """Headline numbers of a trace (sizes in bytes).

    accessed_bytes_per_iteration: pages x 4096 summed over the accesses of each iteration's kernels
    (by kernel_iteration), mean over iterations; None without iterations. written_fraction: share of
    access rows that write; None without accesses. optional_groups: rows of each present group.
    """
    iterations = trace.iterations
    per_access_iteration = np.repeat(trace.kernel_iteration, np.diff(trace.access_offsets))
    in_iteration = per_access_iteration >= 0
    accessed = np.bincount(per_access_iteration[in_iteration], minlength=iterations,
                           weights=trace.access_pages[in_iteration].astype(np.float64) * PAGE_BYTES)
    used_names = trace.kernel_names[np.unique(trace.kernel_name_idx)]
    groups = {group: int(getattr(trace, members[0]).shape[0])
              for group, members in OPTIONAL_GROUPS.items() if getattr(trace, members[0]) is not None}
    return {
        "kernels": trace.num_kernels,
        "exec_ids": int(np.unique(trace.kernel_exec_id).shape[0]),
        "kernel_names": int(np.unique(used_names).shape[0]),
        "iterations": iterations,
        "accesses": trace.num_accesses,
        "blocks": int(np.unique(trace.access_block).shape[0]),
        "footprint_bytes": trace.footprint_bytes(),
        "accessed_bytes_per_iteration": float(accessed.mean()) if iterations else None,
        "written_fraction": float(trace.access_write.mean()) if trace.num_accesses else None,
        "optional_groups": groups,
        "meta": dict(trace.meta),
    }


def format_summary(trace: Trace) -> str:
    """`summarize(trace)` as readable lines (what `deepum info TRACE` prints)."""
    s = summarize(trace)
    meta = s["meta"]
    capacity = "-" if meta["capacity_bytes"] is None else format_bytes(meta["capacity_bytes"])
    per_iteration = ("-" if s["accessed_bytes_per_iteration"] is None
                     else format_bytes(s["accessed_bytes_per_iteration"]))
    written = "-" if s["written_fraction"] is None else f"{s['written_fraction']:.1%}"
    groups = ", ".join(f"{group} {rows:,}" for group, rows in s["optional_groups"].items()) or "none"
    lines = [
        f"{meta['format']} v{meta['version']}, source {meta['source']}, device {meta['device'] or '-'}, "
        f"capacity {capacity}",
        f"kernels     {counted(s['kernels'], 'launch', 'launches')}, {counted(s['exec_ids'], 'exec ID')}, "
        f"{counted(s['kernel_names'], 'name')}, {counted(s['iterations'], 'iteration')}",
        f"accesses    {counted(s['accesses'], 'row')}, {counted(s['blocks'], 'block')}, "
        f"footprint {format_bytes(s['footprint_bytes'])}",
        f"per iter    {per_iteration} accessed (mean), {written} of accesses write",
        f"recorded    {groups}",
    ]
    if meta["notes"]:
        lines.append(f"notes       {meta['notes']}")
    extra = {key: value for key, value in meta.items() if key not in META_KEYS}
    lines += [f"meta        {key} = {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines)
