"""A recorded trace as Chrome-trace / Perfetto JSON: kernels, migrations by cause, and GPU page faults
on one time line (open it in ui.perfetto.dev or chrome://tracing). Times in microseconds."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .trace_format import Trace

CAUSES = {0: "unknown", 1: "prefetch", 2: "demand fault", 3: "driver prefetch", 4: "eviction", 5: "access counters"}
_KERNELS, _HOST_TO_DEVICE, _DEVICE_TO_HOST, _FAULTS = 1, 2, 3, 4
_TRACKS = {_KERNELS: "kernels", _HOST_TO_DEVICE: "host to device", _DEVICE_TO_HOST: "device to host",
           _FAULTS: "GPU page faults"}


def chrome_events(trace: Trace) -> list[dict]:
    """Trace-event dicts: a slice per kernel with a GPU time, a slice per migration (its length from
    the bytes at the measured rate is unknown, so it is drawn as an instant with its size), and an
    instant per fault. Needs GPU times: a synthetic trace has none."""
    timed = np.flatnonzero(trace.kernel_t_start_ns >= 0)
    if timed.size == 0:
        raise ValueError("the trace has no GPU kernel times (kernel_t_start_ns is -1 throughout): "
                         "a timeline needs a trace recorded on a GPU")
    origin = int(trace.kernel_t_start_ns[timed].min())
    us = lambda ns: (int(ns) - origin) / 1000.0  # noqa: E731
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}}
              for tid, name in _TRACKS.items()]
    names = trace.kernel_names[trace.kernel_name_idx]
    for k in timed:
        events.append({"ph": "X", "pid": 1, "tid": _KERNELS, "name": str(names[k]), "ts": us(trace.kernel_t_start_ns[k]),
                       "dur": (int(trace.kernel_t_end_ns[k]) - int(trace.kernel_t_start_ns[k])) / 1000.0,
                       "args": {"row": int(k), "iteration": int(trace.kernel_iteration[k]),
                                "exec_id": f"{int(trace.kernel_exec_id[k]):016x}",
                                "blocks": int(trace.access_offsets[k + 1] - trace.access_offsets[k])}})
    if trace.xfer_t_ns is not None:
        for t, address, nbytes, direction, cause in zip(trace.xfer_t_ns, trace.xfer_address, trace.xfer_bytes,
                                                        trace.xfer_dir, trace.xfer_cause):
            events.append({"ph": "i", "s": "t", "pid": 1, "tid": _HOST_TO_DEVICE if direction == 1 else _DEVICE_TO_HOST,
                           "name": CAUSES.get(int(cause), "unknown"), "ts": us(t),
                           "args": {"address": f"{int(address):#x}", "bytes": int(nbytes)}})
    if trace.fault_t_ns is not None:
        for t, address, kernel in zip(trace.fault_t_ns, trace.fault_address, trace.fault_kernel):
            events.append({"ph": "i", "s": "t", "pid": 1, "tid": _FAULTS, "name": "fault", "ts": us(t),
                           "args": {"address": f"{int(address):#x}", "kernel": int(kernel)}})
    return events


def write_chrome_trace(trace: Trace, path: str | Path) -> int:
    """Writes the JSON file; returns the number of events."""
    events = chrome_events(trace)
    Path(path).write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    return len(events)
