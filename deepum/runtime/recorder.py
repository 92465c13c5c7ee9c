"""Turns what the online engine recorded on the GPU into a trace (docs/trace-format.md v1).

The engine hands over, as NumPy arrays: launches in order (CUPTI correlation ID, execution ID, kernel
name, accesses from the kernel's arguments), the caching allocator's events, the launch count at
each mark_iteration(), CUPTI kernel records (correlation ID, GPU start and end), GPU page faults and
unified-memory migrations. This module joins kernel times to launches, attributes faults to the
kernel running when they were taken, orders everything as the format requires, and validates.
"""
from __future__ import annotations

import numpy as np

from ..offline.trace_format import BLOCK_BYTES, FORMAT_NAME, FORMAT_VERSION, PAGE_BYTES, Trace
from ..offline.trace_validation import normalize_trace
from .fault_attribution import kernel_at, kernel_times


def trace_from_recording(raw: dict, device: str | None, capacity_bytes: int | None, notes: str = "",
                         extra_meta: dict | None = None) -> Trace:
    """The validated trace of one recording. Kernels with no GPU record get duration 0 and
    unknown times; kernels after the last mark_iteration() belong to no iteration."""
    launches = raw["launch_correlation"].astype(np.int64)
    kernels = launches.shape[0]
    t_start, t_end = kernel_times(launches, raw["activity_correlation"], raw["activity_start_ns"],
                                   raw["activity_end_ns"])
    ends = raw["iteration_end_launch"].astype(np.int64)
    ends = ends[ends > np.append(0, ends[:-1])] if ends.size else ends  # marks with no kernels add nothing
    first = np.append(0, ends[:-1]) if ends.size else np.zeros(0, np.int64)
    iteration = np.full(kernels, -1, np.int32)
    for i, (lo, hi) in enumerate(zip(first, ends)):
        iteration[lo:hi] = i
    fault_order = np.argsort(raw["fault_t_ns"], kind="stable")
    fault_t = raw["fault_t_ns"][fault_order].astype(np.int64)
    xfer_order = np.argsort(raw["xfer_t_ns"], kind="stable")
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "block_bytes": BLOCK_BYTES, "page_bytes": PAGE_BYTES,
            "source": "gpu",
            "device": device, "capacity_bytes": capacity_bytes, "iterations": int(ends.size), "notes": notes,
            **(extra_meta or {})}
    trace = Trace(
        meta=meta,
        kernel_exec_id=raw["kernel_exec_id"],
        kernel_name_idx=raw["kernel_name_idx"].astype(np.int32),
        kernel_names=np.array(raw["kernel_names"], dtype=str) if raw["kernel_names"] else np.zeros(0, str),
        kernel_iteration=iteration,
        kernel_duration_ns=np.where(t_start >= 0, t_end - t_start, 0),
        kernel_t_start_ns=t_start,
        kernel_t_end_ns=t_end,
        access_offsets=raw["access_offsets"],
        access_block=raw["access_block"],
        access_pages=raw["access_pages"],
        access_write=raw["access_write"].astype(bool),
        iteration_first_kernel=first,
        fault_t_ns=fault_t,
        fault_address=raw["fault_address"][fault_order],
        fault_kernel=kernel_at(fault_t, t_start, t_end),
        fault_kind=raw["fault_kind"][fault_order],
        mem_kernel=raw["mem_kernel"],
        mem_action=raw["mem_action"],
        mem_address=raw["mem_address"],
        mem_bytes=raw["mem_bytes"],
        xfer_t_ns=raw["xfer_t_ns"][xfer_order].astype(np.int64),
        xfer_address=raw["xfer_address"][xfer_order],
        xfer_bytes=raw["xfer_bytes"][xfer_order],
        xfer_dir=raw["xfer_dir"][xfer_order],
        xfer_cause=raw["xfer_cause"][xfer_order],
    )
    return normalize_trace(trace)
