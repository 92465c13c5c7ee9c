"""UVM driver model and policies: invariants on random training-like workloads, and the DeepUM targets."""
from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from deepum.offline.calibration import Calibration
from deepum.config import EVICTION, DeepUMConfig
from deepum.offline.synth_transformer import synth_transformer
from deepum.offline.simulator import POLICIES, simulate
from deepum.offline.trace_io import read_trace
from deepum.offline.trace_format import BLOCK_BYTES, MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE
from deepum.offline.trace_writer import TraceWriter

pytest.importorskip("deepum._native", reason="the native core is not built (pip install .)")

BASE = 1 << 20  # block number of the first persistent block
TEMP_BASE = 1 << 22  # block number of the first temporary block
UNIT = BLOCK_BYTES // 4  # temporaries start on 512 KiB units: several share a block, some straddle two


class CachingAllocator:
    """A deterministic stand-in for PyTorch's caching allocator that records its events: segments of
    whole blocks at the lowest free addresses from TEMP_BASE (MEM_SEGMENT_ALLOC), allocations first-fit
    on UNIT boundaries inside them (MEM_ALLOC, MEM_FREE), empty segments released (MEM_SEGMENT_FREE)."""

    def __init__(self, writer: TraceWriter, segment_blocks: int):
        self.writer = writer
        self.segment_blocks = segment_blocks    # the fewest blocks a new segment gets
        self.segments: dict[int, int] = {}      # first block -> blocks
        self.live: dict[int, int] = {}          # address -> bytes

    def _units_taken(self) -> set[int]:
        return {u for address, size in self.live.items() for u in range(address // UNIT, -(-(address + size) // UNIT))}

    def alloc(self, units: int, short: int) -> int:
        """An allocation of `units` units less `short` bytes; returns its address."""
        taken = self._units_taken()
        first = None
        for start, blocks in sorted(self.segments.items()):
            lo, hi = start * 4, (start + blocks) * 4
            first = next((u for u in range(lo, hi - units + 1) if not taken & set(range(u, u + units))), None)
            if first is not None:
                break
        if first is None:
            blocks = max(-(-units // 4), self.segment_blocks)
            start = TEMP_BASE
            for other, size in sorted(self.segments.items()):
                if other >= start + blocks:
                    break
                start = max(start, other + size)
            self.segments[start] = blocks
            self.writer.add_mem_event(MEM_SEGMENT_ALLOC, start * BLOCK_BYTES, blocks * BLOCK_BYTES)
            first = start * 4
        address, size = first * UNIT, units * UNIT - short
        self.live[address] = size
        self.writer.add_mem_event(MEM_ALLOC, address, size)
        return address

    def free(self, address: int) -> None:
        self.writer.add_mem_event(MEM_FREE, address, self.live.pop(address))

    def release_empty_segments(self) -> None:
        for start, blocks in sorted(self.segments.items()):
            lo, hi = start * BLOCK_BYTES, (start + blocks) * BLOCK_BYTES
            if not any(lo <= address < hi for address in self.live):
                del self.segments[start]
                self.writer.add_mem_event(MEM_SEGMENT_FREE, lo, hi - lo)

    def blocks_of(self, address: int) -> range:
        return range(address // BLOCK_BYTES, (address + self.live[address] - 1) // BLOCK_BYTES + 1)


def training_like_trace(seed: int, persistent: int = 12, kernels: int = 8, iterations: int = 3,
                        release: bool = True):
    """A periodic training-like trace: persistent blocks (parameters, state) read and written by
    kernels, and temporaries of 256 KiB to 3 MiB from a CachingAllocator, written whole by the kernel
    after their allocation, read by some of the up to four kernels after it and then freed. Blocks hold
    several temporaries (a block dies when the last of them is freed; one no kernel reads for a while
    may leave the GPU while others in it are still to be read) and temporaries straddle blocks. With
    `release`, empty segments are released after some kernels or at the end of each iteration (as
    torch.cuda.empty_cache does), so their blocks leave the GPU and come back. The program never reads
    memory it has not written since its allocation."""
    rng = np.random.default_rng(seed)
    plan = []
    for k in range(kernels):
        reads = rng.choice(persistent, size=rng.integers(1, min(persistent, 6) + 1), replace=False)
        temps = []  # (units, bytes short of them, for each later kernel while it lives: whether it reads it)
        for _ in range(rng.integers(0, 4)):
            temps.append((int(rng.integers(1, 7)), int(rng.choice([0, 4096, UNIT // 2])),
                          [bool(r) for r in rng.random(int(rng.integers(1, 5))) < 0.6]))
        plan.append((k, sorted(int(b) for b in reads), rng.random(len(reads)) < 0.3, temps))
    release_after_kernel = float(rng.choice([0.0, 0.3])) if release else 0.0
    empty_cache = release and bool(rng.random() < 0.5)
    writer = TraceWriter(record_memory_events=True)
    allocator = CachingAllocator(writer, segment_blocks=int(rng.integers(1, 4)))
    for _ in range(iterations):
        writer.begin_iteration()
        live: list[tuple[int, list[bool]]] = []  # (address, whether each next kernel reads it until it is freed)
        for k, reads, writes, temp_plans in plan:
            temps = [(allocator.alloc(units, short), readers) for units, short, readers in temp_plans]
            access = {BASE + b: (512, bool(w)) for b, w in zip(reads, writes)}
            for address, readers in live:
                if readers[0]:
                    for block in allocator.blocks_of(address):
                        access.setdefault(block, (int(rng.integers(1, 513)), False))
            for address, _ in temps:  # written whole before anything reads them
                access.update((block, (512, True)) for block in allocator.blocks_of(address))
            writer.add_kernel(exec_id=1000 + k, name=f"k{k}", duration_ns=int(rng.integers(5_000, 200_000)),
                              blocks=list(access), pages=[p for p, _ in access.values()],
                              writes=[w for _, w in access.values()])
            still = []
            for address, readers in live:
                if len(readers) == 1:
                    allocator.free(address)
                else:
                    still.append((address, readers[1:]))
            live = still + temps
            if rng.random() < release_after_kernel:
                allocator.release_empty_segments()
        for address, _ in live:
            allocator.free(address)
        if empty_cache:
            allocator.release_empty_segments()
    return writer.finish()


workloads = st.builds(training_like_trace, seed=st.integers(0, 2**32 - 1), persistent=st.integers(2, 24),
                      kernels=st.integers(2, 12), iterations=st.integers(2, 4))
steady_workloads = st.builds(training_like_trace, seed=st.integers(0, 2**32 - 1), persistent=st.integers(2, 24),
                             kernels=st.integers(2, 12), iterations=st.integers(2, 4), release=st.just(False))


def _capacity(trace, fraction: float) -> int:
    widest = int(np.diff(trace.access_offsets).max())
    blocks = max(widest, int(fraction * trace.footprint_bytes() / BLOCK_BYTES))
    return blocks * BLOCK_BYTES


fractions = st.sampled_from([0.3, 0.5, 0.8, 1.0])
small_tables = st.builds(DeepUMConfig, lookahead=st.integers(1, 8), exec_ids=st.integers(1, 32),
                         block_rows=st.integers(1, 16), block_ways=st.integers(1, 2),
                         block_successors=st.integers(1, 4), eviction=st.sampled_from(EVICTION))


@settings(max_examples=300, deadline=None)
@given(workloads, fractions, st.sampled_from(POLICIES), small_tables)
def test_capacity_bytes_and_data_are_conserved(trace, fraction, policy, config):
    """On blocks shared by temporaries and freed segments: dead blocks dropped (invalidated) or given
    fresh pages, released blocks gone with their segment, and still no live byte lost."""
    capacity = _capacity(trace, fraction)
    r = simulate(trace, policy, capacity, config)
    assert r.peak_resident_bytes <= capacity
    # Every byte that came in either left (copied or dropped dead) or is still resident.
    assert r.final_resident_bytes == (r.h2d_bytes + r.populated_bytes + r.segment_populated_bytes - r.d2h_bytes
                                      - r.discarded_bytes - r.released_bytes)
    assert r.d2h_bytes == r.evicted_bytes
    assert r.h2d_bytes >= r.faults * 4096 + r.prefetch_bytes
    # Live data is never dropped: no block is read after its contents were discarded.
    assert r.lost_reads == 0
    assert r.time_s == pytest.approx(r.compute_s + r.fault_stall_s + r.prefetch_wait_s + r.host_map_wait_s)
    assert sum(row["faults"] for row in r.per_iteration) == r.faults
    assert 0.0 <= r.prefetch_accuracy <= 1.0 and 0.0 <= r.prefetch_coverage <= 1.0
    if policy == "um":
        assert r.prefetch_bytes == 0 and r.discarded_bytes == 0


def _program_that_reads_freed_memory():
    """Kernel 0 writes a temporary, kernel 1 reads it and it is freed, kernels 2..9 fill the GPU,
    kernel 10 reads the freed temporary again (a broken program)."""
    temp = TEMP_BASE
    writer = TraceWriter(record_memory_events=True)
    writer.begin_iteration()
    writer.add_mem_event(0, temp * BLOCK_BYTES, BLOCK_BYTES)
    writer.add_kernel(1, "produce", 1000, [temp], [512], [True])
    writer.add_kernel(2, "consume", 1000, [temp], [512], [False])
    writer.add_mem_event(1, temp * BLOCK_BYTES, BLOCK_BYTES)
    for k in range(8):
        writer.add_kernel(10 + k, "fill", 1000, [BASE + k], [512], [True])
    writer.add_kernel(3, "reads_freed", 1000, [temp], [512], [False])
    return writer.finish()


@pytest.mark.parametrize("policy", ["deepum", "oracle"])
def test_reading_discarded_memory_is_reported(policy):
    """The lost-read check is live: dropping a freed block and reading it again is caught, and only
    invalidation drops it (without invalidation the block is copied out and comes back intact)."""
    trace = _program_that_reads_freed_memory()
    dropped = simulate(trace, policy, 4 * BLOCK_BYTES)
    assert dropped.discarded_bytes == BLOCK_BYTES and dropped.lost_reads == 1
    kept = simulate(trace, "deepum", 4 * BLOCK_BYTES, DeepUMConfig(invalidate=False))
    assert kept.discarded_bytes == 0 and kept.lost_reads == 0


@settings(max_examples=40, deadline=None)
@given(workloads, fractions)
@example(training_like_trace(seed=4888, persistent=8, kernels=4, iterations=4), 0.3)  # plans repeated: not the driver's
def test_deepum_with_every_part_off_is_the_driver_alone(trace, fraction):
    capacity = _capacity(trace, fraction)
    off = DeepUMConfig(prefetch=False, pre_evict=False, invalidate=False, populate_segments=False)
    a, b = simulate(trace, "um", capacity), simulate(trace, "deepum", capacity, off)
    for key in ("faults", "fault_batches", "h2d_bytes", "d2h_bytes", "time_s", "peak_resident_bytes"):
        assert getattr(a, key) == getattr(b, key), key


@settings(max_examples=40, deadline=None)
@given(steady_workloads)
def test_with_room_for_everything_only_cold_misses_fault(trace):
    """(No segment is released: a block that comes back after a release is not a cold miss.)"""
    capacity = _capacity(trace, 1.0)
    um = simulate(trace, "um", capacity)
    assert um.d2h_bytes == 0 and um.evicted_bytes == 0
    assert all(row["faults"] == 0 for row in um.per_iteration[1:])
    oracle = simulate(trace, "oracle", capacity)
    assert oracle.faults == 0
    deepum = simulate(trace, "deepum", capacity)
    assert all(row["faults"] == 0 for row in deepum.per_iteration[1:])


@settings(max_examples=30, deadline=None)
@given(workloads, fractions, st.sampled_from(POLICIES))
def test_replay_is_deterministic(trace, fraction, policy):
    capacity = _capacity(trace, fraction)
    a, b = simulate(trace, policy, capacity), simulate(trace, policy, capacity)
    assert a.to_dict() == b.to_dict()


@settings(max_examples=40, deadline=None)
@given(workloads, st.sampled_from([0.3, 0.5, 0.8]))
def test_oracle_never_faults_more_than_the_driver(trace, fraction):
    capacity = _capacity(trace, fraction)
    assert simulate(trace, "oracle", capacity).faults <= simulate(trace, "um", capacity).faults


def test_bad_requests_name_the_problem():
    trace = training_like_trace(seed=7)
    with pytest.raises(ValueError, match="unknown policy 'lru'"):
        simulate(trace, "lru", 2**30)
    with pytest.raises(ValueError, match="touches .* blocks at once"):
        simulate(trace, "um", BLOCK_BYTES // 2)


def test_result_carries_the_configuration_it_ran_with():
    trace = training_like_trace(seed=7)
    config = DeepUMConfig(lookahead=7, invalidate=False)
    r = simulate(trace, "deepum", _capacity(trace, 0.5), config)
    assert r.config == dataclasses.asdict(config)
    assert simulate(trace, "oracle", _capacity(trace, 0.5), config).config == {
        "lookahead": 7, "host_map_uses": 4, "host_map_span_percent": 25, "host_map_indexed": True, "host_map_keep_uses": 3,
        "foresight_iterations": 4}
    assert simulate(trace, "um", _capacity(trace, 0.5), config).config is None


def test_eviction_by_next_use_moves_what_oracle_moves_once_the_loop_repeats():
    """From iteration 2 of the default transformer at half its footprint, eviction by foreseen next
    use brings in what oracle (Belady on the true future) brings, less than LRU, fault-free (the
    window and the rule alone, without the schedule): the same bytes without host mapping, within 5%
    with it in both (a block chosen for mapping while resident leaves when its rule first picks a
    victim, so the two rules map it at different times)."""
    trace = synth_transformer()
    capacity = _capacity(trace, 0.5)
    for host_map_uses, within in ((0, 1.01), (4, 1.05)):
        steady = {name: simulate(trace, policy, capacity, DeepUMConfig(**config, host_map_uses=host_map_uses)).per_iteration[2:]
                  for name, policy, config in (("next_use", "deepum", {"eviction": "next_use", "schedule": False}),
                                               ("lru", "deepum", {"eviction": "lru", "schedule": False}),
                                               ("oracle", "oracle", {}))}
        h2d = {name: sum(row["h2d_bytes"] for row in rows) for name, rows in steady.items()}
        assert all(row["faults"] == 0 for row in steady["next_use"])
        assert h2d["next_use"] <= within * h2d["oracle"] and h2d["next_use"] < h2d["lru"]


def test_the_oracle_maps_from_the_host_as_deepum_does():
    """With host_map_uses the oracle maps the optimizer-like blocks deepum maps (counted as deepum's
    next-use rule counts them), and brings in less than without it; host_map_uses 0 maps nothing."""
    trace = synth_transformer()
    capacity = _capacity(trace, 0.5)
    mapping, without = (simulate(trace, "oracle", capacity, DeepUMConfig(host_map_uses=uses)) for uses in (4, 0))
    deepum = simulate(trace, "deepum", capacity, DeepUMConfig(schedule=False))
    assert without.host_mapped_bytes == 0 and deepum.host_mapped_bytes > 0
    assert 0.9 * deepum.host_mapped_bytes <= mapping.host_mapped_bytes <= 1.1 * deepum.host_mapped_bytes
    steady_h2d = lambda result: sum(row["h2d_bytes"] for row in result.per_iteration[2:])  # noqa: E731
    assert steady_h2d(mapping) < steady_h2d(without)
    assert mapping.lost_reads == 0


def test_dead_blocks_come_back_with_fresh_pages_at_the_populate_rate():
    """With invalidation, a prefetch of a dead block gets fresh pages instead of a copy: not host-to-GPU
    bytes, charged at the calibration's populate rate (as a copy when it has none); never without
    invalidation, and never a lost read."""
    trace = synth_transformer()
    capacity = _capacity(trace, 0.5)
    calibration = Calibration.load("h200")
    fresh = simulate(trace, "deepum", capacity, calibration=calibration)
    as_copy = simulate(trace, "deepum", capacity,
                       calibration=dataclasses.replace(calibration, populate_bytes_per_s=None))
    kept = simulate(trace, "deepum", capacity, DeepUMConfig(invalidate=False), calibration)
    assert fresh.populated_bytes > 0 and fresh.populated_bytes == as_copy.populated_bytes
    assert fresh.h2d_bytes == as_copy.h2d_bytes and fresh.time_s < as_copy.time_s
    assert kept.populated_bytes == 0 and kept.h2d_bytes > fresh.h2d_bytes
    assert fresh.lost_reads == 0


@settings(max_examples=25, deadline=None)
@given(workloads, fractions)
def test_only_a_policys_pre_evictions_go_at_the_eviction_threads_rate(trace, fraction):
    """The calibration's threaded eviction rate is charged for the evictions of deepum (eviction threads
    and pre-eviction on) and of the oracle (eviction threads on: the same machinery, the future known);
    um's and advise's evictions, and deepum's without threads or without pre-eviction, stand for the
    driver's own and go one at a time. The rate changes when bytes move, never which."""
    capacity = _capacity(trace, fraction)
    calibration = Calibration.load("h200")
    fast = dataclasses.replace(calibration, threaded_evict_d2h_bytes_per_s=100 * calibration.evict_d2h_bytes_per_s)
    for policy, config in (("um", None), ("advise", None), ("deepum", DeepUMConfig(eviction_threads=0)),
                           ("deepum", DeepUMConfig(pre_evict=False)), ("oracle", DeepUMConfig(eviction_threads=0))):
        a, b = (simulate(trace, policy, capacity, config, c) for c in (fast, calibration))
        assert _moves(a) == _moves(b) and a.time_s == b.time_s, (policy, config)
    for policy in ("deepum", "oracle"):
        threaded, one_at_a_time = (simulate(trace, policy, capacity, calibration=c) for c in (fast, calibration))
        assert _moves(threaded) == _moves(one_at_a_time), policy
        assert threaded.time_s <= one_at_a_time.time_s, policy


def _moves(result) -> tuple:
    """What a replay moved: faults and bytes in and out, in all and per iteration."""
    return (result.faults, result.h2d_bytes, result.d2h_bytes, result.evicted_bytes,
            [(row["faults"], row["h2d_bytes"], row["d2h_bytes"]) for row in result.per_iteration])


@pytest.mark.parametrize("policy", ["deepum", "oracle"])
def test_eviction_threads_shorten_the_replay_of_the_transformer(policy):
    """The default transformer at half its footprint: deepum's and the oracle's evictions from threads at
    twice the rate of one at a time shorten the replay; with the rates equal it is the same replay."""
    trace = synth_transformer()
    capacity = _capacity(trace, 0.5)
    calibration = Calibration.load("h200")
    rate = calibration.evict_d2h_bytes_per_s
    same, twice = (simulate(trace, policy, capacity, calibration=dataclasses.replace(
        calibration, threaded_evict_d2h_bytes_per_s=r)) for r in (rate, 2 * rate))
    off = simulate(trace, policy, capacity, DeepUMConfig(eviction_threads=0), calibration)
    assert same.evicted_bytes > 0 and same.time_s == off.time_s
    assert twice.time_s < same.time_s


def test_host_mapped_blocks_cross_the_link_at_the_host_map_rate():
    """Host mapping on the default transformer at half its footprint: the blocks only its optimizer uses
    are used over the link instead of migrated, so less goes out; their kernels wait for the link at the
    calibration's host-map rate (ten times slower: the same bytes, a longer replay)."""
    trace = synth_transformer()
    capacity = _capacity(trace, 0.5)
    calibration = Calibration.load("h200")
    mapped = simulate(trace, "deepum", capacity, calibration=calibration)
    slow = simulate(trace, "deepum", capacity, calibration=dataclasses.replace(
        calibration, host_map_bytes_per_s=calibration.host_map_bytes_per_s / 10))
    migrated = simulate(trace, "deepum", capacity, DeepUMConfig(host_map_uses=0), calibration)
    assert mapped.host_mapped_bytes > 0 and migrated.host_mapped_bytes == 0
    assert slow.host_mapped_bytes == mapped.host_mapped_bytes
    assert slow.host_map_wait_s > mapped.host_map_wait_s and slow.time_s > mapped.time_s
    assert mapped.d2h_bytes < migrated.d2h_bytes and mapped.lost_reads == 0


def test_host_mapped_accesses_run_beside_the_migrations():
    """The 24-layer GPT-2 in bf16, recorded on the GPU without a budget, at half its footprint: its fused
    AdamW reads and writes the moments over the link while the evictions and prefetches decided before it
    are still moving (the GPU's own accesses, not the driver's copies), so no kernel waits for its
    host-mapped accesses longer than their bytes take at the host-map rate."""
    path = Path(__file__).resolve().parents[1] / "bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz"
    calibration = Calibration.load("h200")
    r = simulate(read_trace(path), "deepum", 6_138_363_904, calibration=calibration)
    assert r.host_mapped_bytes > 0 and r.evicted_bytes > 0 and r.prefetch_bytes > 0
    assert 0 < r.host_map_wait_s <= r.host_mapped_bytes / calibration.host_map_bytes_per_s


def _recommender(iterations: int = 4):
    """A DLRM-like trace: 8 embedding tables of 16 blocks each, looked up (a few pages of every block)
    by indexed kernels at each iteration's start and updated sparsely by indexed kernels at its end,
    around dense kernels over 6 blocks of MLP weights and activations."""
    writer = TraceWriter()
    tables = [list(range(100 + 16 * t, 116 + 16 * t)) for t in range(8)]
    for _ in range(iterations):
        writer.begin_iteration()
        for t, blocks in enumerate(tables):
            writer.add_kernel(10 + t, "EmbeddingBag_updateOutputKernel_sum_mean", 20_000, blocks, [64] * 16, [False] * 16)
        for k in range(12):
            blocks = [k % 6, (k + 1) % 6]
            writer.add_kernel(30 + k, "sm90_xmma_gemm", 50_000, blocks, [512, 512], [False, True])
        for t, blocks in enumerate(tables):
            writer.add_kernel(50 + t, "indexing_backward_kernel", 20_000, blocks, [64] * 16, [True] * 16)
    return writer.finish()


def test_embedding_tables_are_used_over_the_link_instead_of_migrated():
    """Host mapping of blocks only indexed kernels use: a DLRM-like step at a third of its footprint maps
    its tables (each used twice, across the whole iteration: the span rule alone maps none), so nothing
    migrates in steady state and the replay is faster than migrating them; switched off, nothing is
    mapped."""
    trace = _recommender()
    capacity = _capacity(trace, 0.3)
    mapped = simulate(trace, "deepum", capacity)
    migrated = simulate(trace, "deepum", capacity, DeepUMConfig(host_map_indexed=False))
    assert migrated.host_mapped_bytes == 0 and mapped.host_mapped_bytes > 0
    last = mapped.per_iteration[-1]
    assert last["h2d_bytes"] == 0 and last["d2h_bytes"] == 0 and last["faults"] == 0
    assert mapped.time_s < migrated.time_s and mapped.lost_reads == 0


@pytest.mark.parametrize("text, message", [
    ("{not json", r"calibration file .*c\.json is not valid JSON"),
    ("[1]", r"c\.json must hold a JSON object"),
    ('{"device": "x", "prefetch_h2d_bytes_per_s": 1e9, "pcie_gen": 5}', r"c\.json lacks"),
])
def test_calibration_errors_name_the_file(tmp_path, text, message):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        Calibration.load(path)


def test_calibration_unknown_keys_and_bad_values_are_refused(tmp_path):
    bundled = json.loads((resources.files("deepum.offline") / "calibrations" / "h200.json").read_text())
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**bundled, "prefetch_h2d_bytes_per_sec": 1e9}))
    with pytest.raises(ValueError, match=r"c\.json: unknown keys \['prefetch_h2d_bytes_per_sec'\]"):
        Calibration.load(path)
    for key, value in (("fault_batch_pages", 256.5), ("driver_prefetch_threshold", 1.5),
                       ("evict_d2h_bytes_per_s", True), ("demand_fault_startup_s", -1), ("device", 3)):
        path.write_text(json.dumps({**bundled, key: value}))
        with pytest.raises(ValueError, match=rf"c\.json: {key}"):
            Calibration.load(path)


def _same_replay(a, b) -> bool:
    skip = {"capacity_bytes", "config", "timeline", "learned_state"}  # a learned state's header holds its sizes
    return ({k: v for k, v in dataclasses.asdict(a).items() if k not in skip}
            == {k: v for k, v in dataclasses.asdict(b).items() if k not in skip})


@settings(max_examples=25, deadline=None)
@given(workloads, fractions, st.sampled_from(["deepum", "oracle"]))
def test_sizes_bounded_by_the_trace_replay_as_given(trace, fraction, policy):
    """Ways, successors, records, chains and exec IDs past what the trace can use, and a capacity past its
    blocks, change nothing; the replay only stops allocating for them."""
    import deepum.offline.simulator as simulator

    config = DeepUMConfig(block_ways=16, block_successors=16, exec_records=1024, chain_blocks=65536,
                          exec_ids=2**20, lookahead=trace.num_kernels if policy == "oracle" else 4)
    bounded = simulate(trace, policy, _capacity(trace, fraction), config)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(simulator, "bounded_by_trace", lambda c, kernels, blocks: c)
        given_as_is = simulate(trace, policy, _capacity(trace, fraction), config)
    assert _same_replay(bounded, given_as_is)
    if policy == "oracle":
        assert _same_replay(simulate(trace, policy, 2**62, DeepUMConfig(lookahead=1024)),
                            simulate(trace, policy, trace.footprint_bytes(), DeepUMConfig(lookahead=trace.num_kernels)))


def _program_with_a_segment_made_late():
    """Each iteration: kernels on blocks 0 and 1 (a segment made before the run), then a segment holding
    block 2 is made, used by one kernel and freed."""
    writer = TraceWriter(record_memory_events=True)
    writer.add_mem_event(2, 0, 2 * BLOCK_BYTES)
    for _ in range(4):
        writer.begin_iteration()
        writer.add_kernel(1, "a", 100_000, [0], [512], [False])
        writer.add_kernel(2, "b", 100_000, [1], [512], [False])
        writer.add_mem_event(2, 2 * BLOCK_BYTES, BLOCK_BYTES)
        writer.add_mem_event(0, 2 * BLOCK_BYTES, BLOCK_BYTES)
        writer.add_kernel(3, "c", 100_000, [2], [512], [True])
        writer.add_mem_event(1, 2 * BLOCK_BYTES, BLOCK_BYTES)
        writer.add_mem_event(3, 2 * BLOCK_BYTES, BLOCK_BYTES)
    return writer.finish()


def test_a_block_is_not_prefetched_before_its_segment_exists():
    """Block 2 follows kernel b every iteration, but its segment is made only after b. A replay
    warm-started from one that learned this under pressure trusts the prediction from the first launch,
    and with room for all three blocks only block 2 can ever be missing: it is never prefetched, only
    demanded, once per iteration."""
    trace = _program_with_a_segment_made_late()
    config = DeepUMConfig(confident_hits=0, host_map_uses=0)
    state = simulate(trace, "deepum", 2 * BLOCK_BYTES, config).learned_state
    result = simulate(trace, "deepum", 3 * BLOCK_BYTES, config, warm_state=state)
    assert result.warm_start["state"] == "kept"
    assert [row["prefetch_bytes"] for row in result.per_iteration] == [0, 0, 0, 0]
    assert result.demand_prefetch_bytes == 4 * BLOCK_BYTES


def _first_optimizer_step(iterations: int = 3):
    """A training loop whose optimizer state (blocks 20-23) is created in the first iteration, in memory
    that activations of that iteration used earlier (launches 0-2), then zero-filled by a fill kernel
    and updated by two launches at the iteration's end; later iterations only update it. Dense kernels
    over 8 weight blocks (0-7) keep the policy under pressure at a capacity of 6 blocks."""
    writer = TraceWriter()
    segment = 0x7F40_0000_0000
    state = [segment // BLOCK_BYTES + 20 + i for i in range(4)]
    weights = [segment // BLOCK_BYTES + i for i in range(8)]
    writer.add_mem_event(MEM_SEGMENT_ALLOC, segment, 32 * BLOCK_BYTES)
    writer.add_mem_event(MEM_ALLOC, segment, 8 * BLOCK_BYTES)
    for iteration in range(iterations):
        writer.begin_iteration()
        if iteration == 0:
            writer.add_mem_event(MEM_ALLOC, state[0] * BLOCK_BYTES, 4 * BLOCK_BYTES)  # activations
            for k in range(3):
                writer.add_kernel(1 + k, "activation", 20_000, state, [512] * 4, [k == 0] * 4)
            writer.add_mem_event(MEM_FREE, state[0] * BLOCK_BYTES, 4 * BLOCK_BYTES)
        for k in range(30):
            blocks = [weights[k % 8], weights[(k + 3) % 8]]
            writer.add_kernel(10 + k, "sm90_xmma_gemm", 50_000, sorted(blocks), [512, 512], [False, False])
        if iteration == 0:
            writer.add_mem_event(MEM_ALLOC, state[0] * BLOCK_BYTES, 4 * BLOCK_BYTES)  # the optimizer's state
            writer.add_kernel(50, "vectorized_elementwise_kernel<FillFunctor<float>>", 10_000, state, [512] * 4,
                              [True] * 4)
            for k in range(5):
                writer.add_kernel(60 + k, "sm90_xmma_gemm", 50_000, weights[k:k + 2], [512, 512], [False, False])
        for k in range(2):
            writer.add_kernel(70 + k, "multi_tensor_apply_kernel", 30_000, state, [512] * 4, [False] * 4)
    return writer.finish()


def test_state_created_in_the_first_step_is_mapped_from_the_second():
    """Host mapping counts a block's uses since it last received an allocation, fill launches not
    counted: the state is used twice at the first iteration's end (the activations before it and its
    zero-fill do not count), so both its updates in each later iteration use it over the link."""
    replay = simulate(_first_optimizer_step(iterations=3), "deepum", 6 * BLOCK_BYTES)
    assert replay.host_mapped_bytes == 2 * 2 * 4 * BLOCK_BYTES  # 2 iterations, 2 launches, 4 blocks
    assert replay.lost_reads == 0


def _launch_bound(kernels: int = 5, iterations: int = 2, duration_ns: int = 10_000):
    """Kernels that touch one resident block each and run `duration_ns`: all compute, no movement."""
    writer = TraceWriter()
    for _ in range(iterations):
        writer.begin_iteration()
        for k in range(kernels):
            writer.add_kernel(exec_id=k + 1, name=f"k{k}", duration_ns=duration_ns, blocks=[BASE], pages=[512],
                              writes=[False])
    return writer.finish()


def test_a_slow_launching_thread_sets_the_pace_and_each_step_starts_after_the_last():
    """Hand-worked: 5 kernels of 10 us an iteration, launched 100 us apart. The first kernel starts
    at its launch and faults its block in (longer than the next four launches), so the first step ends
    at 100 us + the fault + 5 kernels; the second starts launching then (the step's synchronization)
    and ends 5 launches and 1 kernel later."""
    trace = _launch_bound()
    calibration = Calibration.load("h200")
    free = simulate(trace, "um", 1 << 30, calibration=calibration)
    paced = simulate(trace, "um", 1 << 30, calibration=dataclasses.replace(calibration, launch_cpu_s=100e-6))
    fault = free.fault_stall_s
    assert free.launch_wait_s == 0 and fault > 4 * 100e-6 and free.time_s == pytest.approx(fault + 10 * 10e-6)
    first_step = 100e-6 + fault + 5 * 10e-6
    assert paced.time_s == pytest.approx(first_step + 5 * 100e-6 + 10e-6)
    assert paced.launch_wait_s == pytest.approx(2 * 100e-6 + 4 * (100e-6 - 10e-6))  # each step's first waits a launch
    assert _moves(paced) == _moves(free)


@settings(max_examples=25, deadline=None)
@given(workloads, fractions, st.sampled_from(["um", "deepum", "oracle"]))
def test_the_launching_thread_delays_kernels_and_never_what_moves(trace, fraction, policy):
    """A launching thread of launch_cpu_s a launch (here ten times the longest kernel's time) paces
    every policy's replay: each iteration takes at least its launches' time after its first, nothing is
    faster than unpaced, and the policy moves the same bytes (its decisions do not depend on time)."""
    capacity = _capacity(trace, fraction)
    calibration = Calibration.load("h200")
    launch_s = 10 * float(trace.kernel_duration_ns.max()) * 1e-9
    free = simulate(trace, policy, capacity, calibration=calibration)
    paced = simulate(trace, policy, capacity, calibration=dataclasses.replace(calibration, launch_cpu_s=launch_s))
    assert free.launch_wait_s == 0 and paced.launch_wait_s > 0
    assert _moves(paced) == _moves(free)
    for r in (free, paced):  # every simulated second is one of the parts
        assert r.time_s == pytest.approx(r.compute_s + r.fault_stall_s + r.prefetch_wait_s + r.host_map_wait_s +
                                         r.launch_wait_s, rel=1e-9, abs=1e-12)
    assert paced.time_s >= free.time_s - 1e-12
    assert paced.time_s >= trace.num_kernels * launch_s - 1e-12
    first = list(trace.iteration_first_kernel) + [trace.num_kernels]
    for row, lo, hi in zip(paced.per_iteration, first, first[1:]):  # from its first kernel's start
        assert row["time_s"] >= (hi - lo - 1) * launch_s - 1e-12


def test_the_hook_is_charged_to_deepum_alone_and_only_while_it_sees_launches():
    """hook_cpu_s is deepum's launch hook: the default transformer at half its footprint replays alike
    under um and the oracle with it or without, and longer under deepum; at full capacity the engine
    sleeps throughout (no hook), so deepum replays alike too."""
    trace = synth_transformer()
    calibration = Calibration.load("h200")
    hooked = dataclasses.replace(calibration, hook_cpu_s=50e-6)
    capacity = _capacity(trace, 0.5)
    for policy in ("um", "oracle"):
        a, b = (simulate(trace, policy, capacity, calibration=c) for c in (hooked, calibration))
        assert a.time_s == b.time_s and a.launch_wait_s == 0, policy
    a, b = (simulate(trace, "deepum", capacity, calibration=c) for c in (hooked, calibration))
    assert a.time_s > b.time_s and a.launch_wait_s > 0 and _moves(a) == _moves(b)
    roomy = 4 * trace.footprint_bytes()
    a, b = (simulate(trace, "deepum", roomy, calibration=c) for c in (hooked, calibration))
    assert a.woke_at_kernel is None and a.time_s == b.time_s


def test_launch_costs_may_be_zero_but_not_negative(tmp_path):
    bundled = json.loads((resources.files("deepum.offline") / "calibrations" / "h200.json").read_text())
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**bundled, "launch_cpu_s": 0, "hook_cpu_s": 2e-5}))
    assert (Calibration.load(path).launch_cpu_s, Calibration.load(path).hook_cpu_s) == (0, 2e-5)
    for key in ("launch_cpu_s", "hook_cpu_s"):
        for value in (-1e-6, "fast"):
            path.write_text(json.dumps({**bundled, key: value}))
            with pytest.raises(ValueError, match=rf"c\.json: {key} must be a number, zero or more"):
                Calibration.load(path)
