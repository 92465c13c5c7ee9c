"""Eviction by foreseen next use: the readable specification (deepum/specs/next_use.py) against the native
class the simulator and the online engine use, and the properties that make it Belady's choice on a
repeating iteration."""
from hypothesis import given, settings, strategies as st

from deepum import _native
from deepum.specs.next_use import UNFORESEEN, NextUseEviction

BLOCKS = 12

operations = st.lists(st.one_of(
    st.tuples(st.just("launch"), st.integers(1, 3)),
    st.tuples(st.just("start"), st.just(0)),
    st.tuples(st.just("use"), st.integers(0, BLOCKS - 1)),
    st.tuples(st.just("arrive"), st.integers(0, BLOCKS - 1)),
    st.tuples(st.just("leave"), st.integers(0, BLOCKS - 1)),
    st.tuples(st.just("victim"), st.tuples(st.frozensets(st.integers(0, BLOCKS - 1)),
                                           st.frozensets(st.integers(0, BLOCKS - 1)),
                                           st.integers(0, 4), st.integers(0, 40))),
), max_size=120)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_native_chooses_as_the_specification(ops):
    spec, native = NextUseEviction(), _native.NextUseEviction()
    launch, resident, refused = 1, set(), set()  # refused: pinned so far in this launch (stays pinned)
    for op, arg in ops:
        if op == "launch":
            launch += arg
            refused = set()
        elif op == "start":
            launch += 1
            refused = set()
            spec.start_iteration(launch)
            native.start_iteration(launch)
        elif op == "use":
            spec.use(arg, launch, arg in resident)
            native.use(arg, launch, arg in resident)
        elif op == "arrive" and arg not in resident:
            resident.add(arg)
            spec.arrive(arg, launch)
            native.arrive(arg, launch)
        elif op == "leave":
            resident.discard(arg)
        elif op == "victim":
            pinned, dead, dead_search, ahead = arg
            refused |= pinned
            need_at = launch + ahead if ahead else 0
            calls = (launch, resident.__contains__, lambda b: b not in refused, dead.__contains__, dead_search, need_at)
            chosen = spec.victim(*calls)
            assert native.victim(*calls) == chosen
            if chosen is not None:
                assert chosen in resident and chosen not in refused
                resident.discard(chosen)
        for block in range(BLOCKS):
            assert native.foresee(block, launch) == spec.foresee(block, launch)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, BLOCKS - 1), min_size=1), min_size=2, max_size=20),
       st.integers(3, 5))
def test_a_repeating_iteration_is_foreseen_exactly(iteration, repeats):
    """Once an iteration has run, every block's foreseen launch is its true next use."""
    eviction = NextUseEviction()
    launches = [blocks for _ in range(repeats) for blocks in iteration]
    length = len(iteration)
    for launch, blocks in enumerate(launches):
        if launch % length == 0:
            eviction.start_iteration(launch)
        for block in blocks:
            eviction.use(block, launch, resident=False)
        if launch >= length:
            for block in range(BLOCKS):
                later = [k for k in range(launch + 1, len(launches)) if block in launches[k]]
                if later and later[0] < (launch // length + 1) * length + length:
                    assert eviction.foresee(block, launch) == later[0]
                elif not any(block in blocks for blocks in iteration):
                    assert eviction.foresee(block, launch) == UNFORESEEN


def test_the_victim_is_the_block_foreseen_last_and_a_prefetch_never_gives_up_a_sooner_one():
    eviction = NextUseEviction()
    eviction.start_iteration(0)
    for launch, blocks in enumerate([{0}, {1}, {2}, {3}]):
        for block in blocks:
            eviction.use(block, launch, resident=False)
    eviction.start_iteration(4)
    for block in (0, 1, 2, 3, 9):
        eviction.arrive(block, 4)  # seen from launch 4: 1 at 5, 2 at 6, 3 at 7, 0 at 8, 9 never
    assert [eviction.foresee(b, 4) for b in (0, 1, 2, 3, 9)] == [8, 5, 6, 7, UNFORESEEN]
    everyone = (4, lambda b: True, lambda b: True, lambda b: False)
    assert eviction.victim(*everyone, dead_search=8, need_at=0) == 9          # unforeseen goes first
    assert eviction.victim(*everyone, dead_search=8, need_at=0) == 0          # then the latest
    assert eviction.victim(*everyone, dead_search=8, need_at=7) is None       # 3 is needed at 7
    assert eviction.victim(4, lambda b: True, lambda b: b != 2, lambda b: b == 1, 8, 0) == 1  # dead first
    assert eviction.victim(*everyone, dead_search=8, need_at=0) == 3
