"""The trace paths made fast give the results of the plain formulations they replace: the compiled
extent_accesses, the batched duration jitter, the writer's row checks and the one-pass check that no
block repeats within a kernel."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.offline.synth_stream import JITTER_SIGMA, Stream, extent_accesses
from deepum.offline.trace_format import PAGES_PER_BLOCK, TraceError
from deepum.offline.trace_validation import validate_trace
from deepum.offline.trace_writer import TraceWriter

BLOCK = 2 << 20


def numpy_extent_accesses(address, nbytes, writes):
    """The vectorised numpy formulation extent_accesses had before it was compiled."""
    first = address >> 12
    last = (address + nbytes - 1) >> 12
    first_block = first // PAGES_PER_BLOCK
    counts = last // PAGES_PER_BLOCK - first_block + 1
    owner = np.repeat(np.arange(address.shape[0]), counts)
    block = first_block[owner] + np.arange(owner.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    low = np.maximum(first[owner], block * PAGES_PER_BLOCK)
    high = np.minimum(last[owner] + 1, (block + 1) * PAGES_PER_BLOCK)
    order = np.argsort(low, kind="stable")
    low, high, block, write = low[order], high[order], block[order], writes[owner][order]
    covered = np.concatenate(([0], np.maximum.accumulate(high)[:-1]))
    fresh = np.maximum(high - np.maximum(low, covered), 0)
    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    return (block[starts], np.add.reduceat(fresh, starts).astype(np.int16),
            np.logical_or.reduceat(write, starts))


extents = st.lists(st.tuples(st.integers(0, 6 * BLOCK), st.integers(1, 3 * BLOCK), st.booleans()),
                   min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(extents)
def test_compiled_extent_accesses_equal_the_numpy_formulation(spans):
    address = np.array([a for a, _, _ in spans], np.int64)
    nbytes = np.array([n for _, n, _ in spans], np.int64)
    writes = np.array([w for _, _, w in spans])
    got, want = extent_accesses(address, nbytes, writes), numpy_extent_accesses(address, nbytes, writes)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_extent_accesses_take_column_views_of_an_argument_table():
    args = np.array([[5 * BLOCK - 4096, 8192, 0], [5 * BLOCK, 3 * 4096, 1], [0x7F0000000000, 512, 2]], np.int64)
    blocks, pages, writes = extent_accesses(args[:, 0], args[:, 1], args[:, 2] != 0)
    assert blocks.tolist() == [4, 5, 0x7F0000000000 >> 21]
    assert pages.tolist() == [1, 3, 1] and writes.tolist() == [False, True, True]


def test_batched_jitter_is_the_sequence_of_one_draw_per_launch():
    stream = Stream(TraceWriter(), seed=7, dtype_bytes=2)
    rng = np.random.default_rng(7)
    count = 2 * 4096 + 3                      # across batch boundaries
    assert [stream._next_jitter() for _ in range(count)] == [rng.lognormal(0.0, JITTER_SIGMA) for _ in range(count)]


def test_a_refused_kernel_or_event_leaves_no_partial_row():
    writer = TraceWriter(record_memory_events=True)
    writer.add_kernel(1, "k", 10, [1], [1], [True])
    with pytest.raises(TraceError, match="kernel_duration_ns"):
        writer.add_kernel(2, "k", -1 << 70, [2], [1], [True])
    with pytest.raises(TraceError, match="mem_bytes"):
        writer.add_mem_event(0, 4096, -1)
    trace = writer.finish()
    assert trace.kernel_exec_id.tolist() == [1] and trace.access_block.tolist() == [1]
    assert trace.mem_kernel.size == 0


def test_writer_copies_the_access_arrays_it_is_given():
    writer = TraceWriter()
    blocks = np.array([3, 4], np.int64)
    writer.add_kernel(1, "k", 10, blocks, np.array([1, 2], np.int16), np.array([True, False]))
    blocks[:] = 9
    assert writer.finish().access_block.tolist() == [3, 4]


@st.composite
def kernels_blocks(draw):
    """Per kernel, a list of blocks (possibly empty, unsorted, with repeats)."""
    return draw(st.lists(st.lists(st.integers(0, 6), max_size=6), max_size=8))


@settings(max_examples=300, deadline=None)
@given(kernels_blocks())
def test_repeated_blocks_are_refused_exactly_when_a_kernel_repeats_one(per_kernel):
    writer = TraceWriter()
    for k, blocks in enumerate(per_kernel):
        writer.add_kernel(k + 1, "k", 1, np.array(blocks, np.int64), np.ones(len(blocks), np.int16),
                          np.zeros(len(blocks), bool))
    repeats = any(len(set(blocks)) < len(blocks) for blocks in per_kernel)
    if repeats:
        with pytest.raises(TraceError, match="access_block: a block may appear once per kernel"):
            writer.finish()
    else:
        validate_trace(writer.finish())
