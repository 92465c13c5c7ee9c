"""Offline replay: a trace against a prefetch policy on the UVM driver model, with its metrics.

The driver model and the policies are native (driver_hooks/uvm_model.hpp); this module prepares the
trace, checks the request and turns the raw counters into the reported figures.

Every decision comes from the policy core the GPU engine runs (driver_hooks/policy.hpp; its readable
specification is deepum.specs.policy); the model only charges what the decisions cost.

Policies:
- ``um``: the driver alone: demand faults in batches, its in-block prefetcher, eviction of the least
  recently migrated block.
- ``advise``: ``um`` plus, under budget pressure, each kernel's missing blocks prefetched just before it.
- ``deepum``: correlation prefetch of the predicted next kernels' blocks, pre-eviction of blocks the
  prediction window does not need, invalidation (no copy) of blocks the caching allocator has freed;
  each part switchable off through DeepUMConfig for ablation.
- ``oracle``: knows the future: prefetches exactly the next ``lookahead`` kernels' blocks and evicts the
  block used furthest in the future (dead ones without a copy), and maps from the host the blocks
  ``deepum``'s host mapping maps (``host_map_uses``, counted as deepum counts them): a reference for
  ``deepum``'s copies, not a bound on its time (Belady's rule saves copies, not waiting).
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .calibration import Calibration
from ..config import DeepUMConfig
from ..specs.fill_kernels import is_fill
from ..specs.indexed_kernels import is_indexed
from .trace_format import BLOCK_BYTES, Trace
from ..units import counted, format_bytes

POLICIES = ("um", "advise", "deepum", "oracle")

ORACLE_SETTINGS = ("lookahead", "host_map_uses", "host_map_span_percent", "host_map_indexed", "host_map_keep_uses",
                   "foresight_iterations")
"""The DeepUMConfig settings the oracle follows (its window's length and deepum's host mapping)."""

_TIMELINE_KEYS = ("kernel_t_start_s", "kernel_t_end_s", "kernel_faults", "kernel_prefetch_bytes",
                  "kernel_evict_bytes", "kernel_discard_bytes", "kernel_fault_stall_s", "kernel_prefetch_wait_s",
                  "kernel_h2d_bytes", "kernel_d2h_bytes")


@dataclasses.dataclass
class SimResult:
    """Figures of one replay. Sizes in bytes, times in simulated seconds, faults in 4 KiB pages.

    prefetch_bytes: bytes the window's prefetches copied to the GPU; demand_prefetch_bytes: bytes of
        kernels' missing blocks prefetched just before them (both in h2d_bytes).
    prefetch_accuracy: prefetched bytes used before eviction / prefetched bytes.
    prefetch_coverage: misses turned into hits / misses without prefetch, counted in (kernel, block)
        accesses: first uses of prefetched blocks / (those + demand-faulted accesses).
    populated_bytes: dead blocks a prefetch gave fresh GPU pages instead of a copy (not in h2d_bytes).
    segment_populated_bytes: new managed segments given fresh GPU pages as they were made while the
        engine slept (deepum.specs.sleep; not in h2d_bytes).
    host_mapped_bytes: bytes kernels read or wrote of host-mapped blocks over the link (not in h2d_bytes
        or d2h_bytes); host_map_wait_s: the time kernels ran past their compute waiting for them.
    launch_wait_s: the time the GPU waited for the launching thread (the calibration's launch_cpu_s
        a launch, and hook_cpu_s more under policy deepum while awake; 0 when both are 0).
    lost_reads: reads of a block whose contents were dropped and not rewritten since (must be 0).
    woke_at_kernel: the first kernel the policy saw (deepum.specs.sleep: the engine sleeps until the
        managed segments pass wake_percent of the capacity; 0 when it never slept), None when it slept
        throughout (the policy decided nothing; kernels faulted on what they lacked).
    warm_start: the trial of warm_state ("state": cold (a bad one), kept or forgotten; "iterations":
        judged; "launched": distinct exec IDs of the last judged; "known": those the state knew); None
        without warm_state.
    repeated_plan_launches: launches of repeated iterations that launched what the remembered iteration
        launched at their place (repeat_plans_percent).
    timeline: per-kernel arrays (see _TIMELINE_KEYS) plus kernel_iteration; not part of to_dict().
    learned_state: what the deepum policy learned by the end (deepum.specs.warm_state's layout), to
        warm-start another replay; None for other policies; not part of to_dict().
    """

    policy: str
    capacity_bytes: int
    footprint_bytes: int
    kernels: int
    iterations: int
    accesses: int
    faults: int
    fault_batches: int
    h2d_bytes: int
    d2h_bytes: int
    prefetch_bytes: int
    demand_prefetch_bytes: int
    evicted_bytes: int
    discarded_bytes: int
    populated_bytes: int
    segment_populated_bytes: int
    host_mapped_bytes: int
    released_bytes: int
    lost_reads: int
    prefetch_accuracy: float
    prefetch_coverage: float
    peak_resident_bytes: int
    final_resident_bytes: int
    time_s: float
    compute_s: float
    fault_stall_s: float
    prefetch_wait_s: float
    host_map_wait_s: float
    launch_wait_s: float
    table_bytes: int
    kernel_prediction_hits: int
    kernel_prediction_misses: int
    per_iteration: list
    config: dict | None
    calibration: str
    woke_at_kernel: int | None = None
    warm_start: dict | None = None
    repeated_plan_launches: int = 0
    timeline: dict = dataclasses.field(repr=False, default_factory=dict)
    learned_state: bytes | None = dataclasses.field(repr=False, default=None)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        del out["timeline"], out["learned_state"]
        return out



def simulate(trace: Trace, policy: str, capacity_bytes: int, config: DeepUMConfig | None = None,
             calibration: Calibration | None = None, warm_state: bytes | None = None) -> SimResult:
    """Replays `trace` under `policy` on a GPU holding `capacity_bytes` of UM blocks.

    warm_state (policy deepum): a learned state (an earlier replay's SimResult.learned_state) loaded
    before the first kernel; a corrupt one, or one saved under other settings, is one warning and the
    replay starts cold; one that knows too few of the exec IDs of its trial iterations is forgotten
    (a warning) and the policy learns afresh."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if warm_state is not None and policy != "deepum":
        raise ValueError(f"a warm state applies to policy deepum, not {policy}")
    config = config or DeepUMConfig()
    calibration = calibration or Calibration.load()
    if trace.num_kernels == 0:
        raise ValueError("the trace has no kernels to replay")
    capacity_blocks = int(capacity_bytes) // BLOCK_BYTES
    _check_capacity(trace, capacity_bytes, capacity_blocks)

    from .. import _native

    block_number, dense = np.unique(trace.access_block, return_inverse=True)
    # A capacity past every block of the trace replays like one that holds them all.
    capacity_blocks = min(capacity_blocks, max(1, block_number.size))
    has_mem = trace.has_memory_events
    raw = _native.simulate(
        policy, capacity_blocks, int(capacity_bytes), trace.kernel_exec_id, kernel_kinds(trace),
        trace.kernel_duration_ns, trace.access_offsets,
        dense.astype(np.int32), trace.access_pages, trace.access_write.view(np.uint8), block_number,
        trace.mem_kernel if has_mem else np.zeros(0, np.int64),
        trace.mem_action if has_mem else np.zeros(0, np.int8),
        trace.mem_address if has_mem else np.zeros(0, np.uint64),
        trace.mem_bytes if has_mem else np.zeros(0, np.uint64),
        trace.iteration_first_kernel, dataclasses.asdict(calibration),
        bounded_by_trace(config, trace.num_kernels, block_number.size).to_dict(), warm_state)
    if raw["warm_state_error"]:
        warnings.warn(f"deepum: warm state ignored, the replay starts cold: {raw['warm_state_error']}", stacklevel=2)
    warm_start = raw["warm_start"] if warm_state is not None else None
    if warm_start and warm_start["state"] == "forgotten":
        warnings.warn(f"deepum: warm state forgotten after its trial: in each of the first {warm_start['iterations']} "
                      f"iterations it knew too few of the exec IDs launched (last: {warm_start['known']} of "
                      f"{warm_start['launched']}; another model or memory layout)", stacklevel=2)
    timeline = {key: raw[key] for key in _TIMELINE_KEYS}
    timeline["kernel_iteration"] = trace.kernel_iteration
    prefetched = raw["prefetch_bytes"]
    first_uses = raw["prefetch_hit_blocks"]
    return SimResult(
        policy=policy,
        capacity_bytes=int(capacity_bytes),
        footprint_bytes=trace.footprint_bytes(),
        kernels=trace.num_kernels,
        iterations=trace.iterations,
        accesses=trace.num_accesses,
        faults=raw["faults"],
        fault_batches=raw["fault_batches"],
        h2d_bytes=raw["h2d_bytes"],
        d2h_bytes=raw["d2h_bytes"],
        prefetch_bytes=prefetched,
        demand_prefetch_bytes=raw["demand_prefetch_bytes"],
        evicted_bytes=raw["evicted_bytes"],
        discarded_bytes=raw["discarded_bytes"],
        populated_bytes=raw["populated_bytes"],
        segment_populated_bytes=raw["segment_populated_bytes"],
        host_mapped_bytes=raw["host_mapped_bytes"],
        released_bytes=raw["released_bytes"],
        lost_reads=raw["lost_reads"],
        prefetch_accuracy=raw["prefetch_used_bytes"] / prefetched if prefetched else 0.0,
        prefetch_coverage=first_uses / (first_uses + raw["fault_blocks"]) if first_uses + raw["fault_blocks"] else 0.0,
        peak_resident_bytes=raw["peak_resident_blocks"] * BLOCK_BYTES,
        final_resident_bytes=raw["final_resident_bytes"],
        time_s=raw["time_s"],
        compute_s=raw["compute_s"],
        fault_stall_s=raw["fault_stall_s"],
        prefetch_wait_s=raw["prefetch_wait_s"],
        launch_wait_s=raw["launch_wait_s"],
        host_map_wait_s=raw["host_map_wait_s"],
        table_bytes=raw["table_bytes"],
        kernel_prediction_hits=raw["kernel_prediction_hits"],
        kernel_prediction_misses=raw["kernel_prediction_misses"],
        repeated_plan_launches=raw["repeated_plan_launches"],
        per_iteration=_per_iteration(trace, timeline),
        config=_reported_config(policy, config),
        calibration=calibration.device,
        woke_at_kernel=raw["woke_at_kernel"],
        warm_start=warm_start,
        timeline=timeline,
        learned_state=raw["learned_state"],
    )


INDEXED_KERNEL, FILL_KERNEL = 1, 2
"""Bits of a kernel's kind (driver_hooks/trace_view.hpp)."""


def kernel_kinds(trace: Trace) -> np.ndarray:
    """Per kernel row, as uint8: INDEXED_KERNEL where its kernel is indexed
    (deepum.specs.indexed_kernels), plus FILL_KERNEL where it is a fill (deepum.specs.fill_kernels)."""
    by_name = np.array([INDEXED_KERNEL * is_indexed(str(name)) + FILL_KERNEL * is_fill(str(name))
                        for name in trace.kernel_names], np.uint8)
    return by_name[trace.kernel_name_idx] if by_name.size else np.zeros(trace.num_kernels, np.uint8)


def bounded_by_trace(config: DeepUMConfig, kernels: int, blocks: int) -> DeepUMConfig:
    """`config` with each size no larger than the trace can use, so that a replay's memory and work
    follow the trace: a row never holds more ways, a way more successors and a chain more blocks than
    the trace has blocks, and an entry never gathers more records than there are launches. Only the
    lookahead can change a result: a window longer than the trace predicts kernels it never launches."""
    kernels, blocks = max(1, kernels), max(1, blocks)
    return dataclasses.replace(
        config, lookahead=min(config.lookahead, kernels), exec_ids=min(config.exec_ids, kernels),
        exec_records=min(config.exec_records, kernels), block_ways=min(config.block_ways, blocks),
        block_successors=min(config.block_successors, blocks), chain_blocks=min(config.chain_blocks, blocks))


def _check_capacity(trace: Trace, capacity_bytes: int, capacity_blocks: int) -> None:
    blocks_per_kernel = np.diff(trace.access_offsets)
    widest = int(np.argmax(blocks_per_kernel))
    if capacity_blocks < max(1, int(blocks_per_kernel[widest])):
        name = str(trace.kernel_names[trace.kernel_name_idx[widest]])
        raise ValueError(
            f"capacity {format_bytes(capacity_bytes)} holds {counted(capacity_blocks, 'block')} of 2 MiB, but "
            f"kernel {widest} ({name}) touches {counted(int(blocks_per_kernel[widest]), 'block')} at once; give "
            f"at least {format_bytes(int(blocks_per_kernel[widest]) * BLOCK_BYTES)}")


def _per_iteration(trace: Trace, timeline: dict) -> list[dict]:
    first = trace.iteration_first_kernel.astype(np.int64)
    if first.size == 0:
        return []
    last = np.append(first[1:], trace.num_kernels) - 1
    rows = []
    for i, (lo, hi) in enumerate(zip(first, last)):
        span = slice(int(lo), int(hi) + 1)
        rows.append({
            "iteration": i,
            "faults": int(timeline["kernel_faults"][span].sum()),
            "time_s": float(timeline["kernel_t_end_s"][hi] - timeline["kernel_t_start_s"][lo]),
            "h2d_bytes": int(timeline["kernel_h2d_bytes"][span].sum()),
            "d2h_bytes": int(timeline["kernel_d2h_bytes"][span].sum()),
            "prefetch_bytes": int(timeline["kernel_prefetch_bytes"][span].sum()),
        })
    return rows


def _reported_config(policy: str, config: DeepUMConfig) -> dict | None:
    if policy == "deepum":
        return config.to_dict()
    if policy == "oracle":
        return {key: getattr(config, key) for key in ORACLE_SETTINGS}
    return None
