"""The caching-allocator model: placement rules, reuse, coalescing, events and errors."""
import pytest
from hypothesis import given, settings, strategies as st

from deepum.offline.caching_allocator import DEFAULT_BASE_ADDRESS, CachingAllocator, round_size, segment_size
from deepum.offline.trace_format import MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE

MiB = 1 << 20


def recording():
    events = []
    return CachingAllocator(on_event=lambda *e: events.append(e)), events


def test_rounding_and_segment_sizes():
    assert round_size(1) == 512 and round_size(512) == 512 and round_size(513) == 1024
    assert segment_size(round_size(1)) == 2 * MiB
    assert segment_size(MiB) == 2 * MiB
    assert segment_size(MiB + 512) == 20 * MiB
    assert segment_size(10 * MiB - 512) == 20 * MiB
    assert segment_size(10 * MiB) == 10 * MiB
    assert segment_size(11 * MiB + 1) == 12 * MiB


def test_small_requests_share_a_2mib_segment():
    a, events = recording()
    x, y = a.malloc(100), a.malloc(1000)
    assert x == DEFAULT_BASE_ADDRESS and y == x + 512
    assert a.segments() == [(DEFAULT_BASE_ADDRESS, 2 * MiB)]
    assert a.allocated_bytes == 512 + 1024 and a.reserved_bytes == 2 * MiB
    assert events == [(MEM_SEGMENT_ALLOC, x, 2 * MiB), (MEM_ALLOC, x, 512), (MEM_ALLOC, y, 1024)]


def test_pools_are_separate_and_segments_ascend():
    a = CachingAllocator()
    small = a.malloc(4096)
    large = a.malloc(3 * MiB)
    huge = a.malloc(50 * MiB + 1)
    assert large == small + 2 * MiB and huge == large + 20 * MiB
    assert [s for _, s in a.segments()] == [2 * MiB, 20 * MiB, 52 * MiB]
    assert all(addr % (2 * MiB) == 0 for addr, _ in a.segments())
    assert a.malloc(3 * MiB) == large + 3 * MiB   # large remainder split off and reused


def test_large_remainder_of_at_most_1mib_is_not_split():
    a = CachingAllocator()
    x = a.malloc(19 * MiB)
    assert a.size_of(x) == 20 * MiB
    assert a.malloc(2 * MiB) != x + 19 * MiB


def test_best_fit_prefers_smallest_then_lowest_address():
    a = CachingAllocator()
    blocks = [a.malloc(s) for s in (4096, 512, 512, 2048, 512, 2048, 512)]
    for i in (1, 3, 5):            # free 512 B, 2 KiB, 2 KiB holes separated by live blocks
        a.free(blocks[i])
    assert a.malloc(1500) == blocks[3]
    assert a.malloc(1500) == blocks[5]
    assert a.malloc(300) == blocks[1]


def test_freed_block_is_reused_for_an_equal_request():
    a = CachingAllocator()
    for size in (700, 5 * MiB, 64 * MiB):
        x = a.malloc(size)
        a.malloc(size)
        a.free(x)
        reserved = a.reserved_bytes
        assert a.malloc(size) == x
        assert a.reserved_bytes == reserved


def test_segments_kept_until_empty_cache():
    a, events = recording()
    x, y = a.malloc(5 * MiB), a.malloc(100)
    a.free(x)
    assert a.reserved_bytes == 22 * MiB
    a.empty_cache()
    assert a.segments() == [(y, 2 * MiB)] and a.reserved_bytes == 2 * MiB
    assert events[-1] == (MEM_SEGMENT_FREE, x, 20 * MiB)
    z = a.malloc(5 * MiB)
    assert z > y             # a new segment goes above every earlier one
    assert a.peak_reserved_bytes == 22 * MiB


def test_errors_name_the_address():
    a = CachingAllocator()
    x = a.malloc(1000)
    with pytest.raises(ValueError, match="not the start of a block"):
        a.free(x + 512)
    with pytest.raises(ValueError, match="not the start of a block"):
        a.free(0x1234)
    a.free(x)
    with pytest.raises(ValueError, match="double free"):
        a.free(x)
    for bad in (0, -5, 1.5):
        with pytest.raises(ValueError, match="positive"):
            a.malloc(bad)
    with pytest.raises(ValueError, match="2 MiB"):
        CachingAllocator(base_address=12345)


sizes = st.one_of(st.integers(1, 4096), st.integers(1, 2 * MiB), st.integers(1, 80 * MiB))
ops = st.lists(st.tuples(st.booleans(), sizes, st.integers(0, 10**6)), min_size=1, max_size=120)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_random_sequences_keep_blocks_disjoint_and_coalesce(program):
    a, events = recording()
    live = {}                                   # address -> requested bytes
    for is_malloc, size, pick in program:
        if is_malloc or not live:
            address = a.malloc(size)
            assert address not in live
            assert a.size_of(address) >= size
            live[address] = size
        else:
            address = sorted(live)[pick % len(live)]
            a.free(address)
            del live[address]
        spans = sorted((addr, addr + a.size_of(addr)) for addr in live)
        assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:])), "live blocks overlap"
        assert a.allocated_bytes == sum(a.size_of(addr) for addr in live)
        assert a.reserved_bytes == sum(s for _, s in a.segments())
        segments = a.segments()
        for start, end in spans:               # every live block lies inside one segment
            assert any(s <= start and end <= s + n for s, n in segments)
    for address in list(live):
        a.free(address)
    assert a.allocated_bytes == 0
    assert a.blocks() == [(s, n, False) for s, n in a.segments()], "free blocks of a segment did not merge"
    allocs = sorted((addr, n) for act, addr, n in events if act == MEM_ALLOC)
    frees = sorted((addr, n) for act, addr, n in events if act == MEM_FREE)
    assert allocs == frees
    assert sum(n for act, _, n in events if act == MEM_SEGMENT_ALLOC) == a.reserved_bytes


def test_same_program_gives_same_addresses():
    def run():
        a = CachingAllocator()
        out = []
        keep = []
        for i in range(200):
            x = a.malloc((i * 7919) % (12 * MiB) + 1)
            out.append(x)
            if i % 3:
                a.free(x)
            else:
                keep.append(x)
        return out
    assert run() == run()
