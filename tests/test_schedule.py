"""The schedule: the readable specification (deepum/specs/schedule.py) against the native class the policy
core follows (driver_hooks/schedule.hpp), as a state machine comparing the plan's moves at every launch;
and the properties that make it Belady's MIN: followed on the iteration it was made from, it keeps within
the capacity, never evicts a block the running kernel uses, prefetches no further ahead than asked, and
brings in the fewest blocks any plan could (found by exhaustive search)."""
from __future__ import annotations

import functools

import pytest
from hypothesis import given, note, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from deepum import _native
from deepum.specs.schedule import Schedule

BLOCKS = 10
EXEC_IDS = 5
kernels = st.tuples(st.integers(0, EXEC_IDS - 1), st.lists(st.integers(0, BLOCKS - 1), unique=True, min_size=1, max_size=3))
iterations = st.lists(kernels, min_size=1, max_size=8)


def _moves(result) -> list | None:
    return None if result is None else [tuple(m) for m in result]


class NativePlansAsTheSpecification(RuleBasedStateMachine):
    """Iterations of a few kinds taken in any order (as alternating addresses or bucketed shapes make
    them), launches off them, any blocks resident at each launch, records that overflow; the moves of
    every launch compared."""

    @initialize(kinds=st.lists(iterations, min_size=1, max_size=3), capacity=st.integers(1, 5),
                ahead=st.integers(1, 6), max_accesses=st.integers(1, 30), remembered=st.integers(1, 4))
    def start(self, kinds, capacity, ahead, max_accesses, remembered):
        note(f"kinds {kinds}, capacity {capacity}, ahead {ahead}, max accesses {max_accesses}, remembered {remembered}")
        self.spec = Schedule(capacity, ahead, max_accesses, remembered)
        self.native = _native.Schedule(capacity, ahead, max_accesses, remembered)
        self.kinds, self.kind, self.position = kinds, kinds[0], 0
        self.capacity = capacity

    def _launch(self, exec_id, blocks, resident):
        expected = _moves(self.spec.launch(exec_id, blocks, resident))
        got = _moves(self.native.launch(exec_id, blocks, sorted(resident)))
        note(f"launch {exec_id} {blocks} resident {sorted(resident)} -> {got}")
        assert got == expected

    @rule(data=st.data())
    def next_launch_of_the_iteration(self, data):
        exec_id, blocks = self.kind[self.position]
        resident = data.draw(st.sets(st.integers(0, BLOCKS - 1), max_size=self.capacity))
        self._launch(exec_id, blocks, resident)
        self.position += 1
        if self.position == len(self.kind):
            self.spec.start_iteration()
            self.native.start_iteration()
            self.kind, self.position = self.kinds[data.draw(st.integers(0, len(self.kinds) - 1))], 0

    @rule(k=kernels, resident=st.sets(st.integers(0, BLOCKS - 1), max_size=5))
    def a_launch_off_the_iteration(self, k, resident):
        self._launch(k[0], k[1], resident)

    @rule()
    def the_iteration_ends_early(self):
        self.spec.start_iteration()
        self.native.start_iteration()
        self.position = 0


NativePlansAsTheSpecification.TestCase.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)
test_native_plans_as_the_specification = NativePlansAsTheSpecification.TestCase


def fewest_fetches(launches: list[list[int]], resident: frozenset[int], capacity: int) -> int:
    """The fewest blocks brought in to run `launches` from `resident` within `capacity`: exhaustive search
    over which blocks to give up (bringing a block in only when a launch needs it loses nothing)."""

    @functools.lru_cache(maxsize=None)
    def best(position: int, held: frozenset[int]) -> int:
        if position == len(launches):
            return 0
        needed = set(launches[position])
        missing = needed - held
        keep = held | missing
        if len(keep) <= capacity:
            return len(missing) + best(position + 1, frozenset(keep))
        surplus = len(keep) - capacity
        choices = sorted(held - needed)
        results = []

        def drop(start: int, left: int, kept: frozenset[int]) -> None:
            if left == 0:
                results.append(best(position + 1, kept))
                return
            for i in range(start, len(choices)):
                drop(i + 1, left - 1, kept - {choices[i]})

        drop(0, surplus, frozenset(keep))
        return len(missing) + min(results)

    return best(0, resident)


def follow(schedule: Schedule, launches, resident: set[int], capacity: int, ahead: int) -> int:
    """Runs the iteration following the plan (demand for what it left missing), checking every move;
    returns the blocks brought in for the iteration's own launches."""
    held, fetched = set(resident), 0
    for position, (exec_id, blocks) in enumerate(launches):
        step = schedule.launch(exec_id, blocks, held)
        assert step is not None, "the iteration the plan was made from is followed throughout"
        missing = set(blocks) - held
        fetched += len(missing)
        held |= missing
        for move in step:
            assert move.lead <= ahead
            if move.victim is not None:
                assert move.victim in held and move.victim not in blocks, (position, move)
                held.discard(move.victim)
        for move in step:
            if move.lead > 0:
                assert move.block not in held, (position, move)
                held.add(move.block)
                fetched += position + move.lead < len(launches)
        assert len(held) <= capacity, (position, sorted(held))
    return fetched


@settings(max_examples=300, deadline=None)
@given(launches=st.lists(st.lists(st.integers(0, 5), unique=True, min_size=1, max_size=3), min_size=1, max_size=7),
       capacity=st.integers(3, 4), ahead=st.integers(1, 8), data=st.data())
def test_followed_it_brings_in_the_fewest_blocks(launches, capacity, ahead, data):
    resident = data.draw(st.sets(st.integers(0, 7), max_size=capacity))
    iteration = [(exec_id, blocks) for exec_id, blocks in enumerate(launches)]
    schedule = Schedule(capacity, ahead, max_accesses=100)
    for exec_id, blocks in iteration:
        schedule.launch(exec_id, blocks, set())
    schedule.start_iteration()
    fetched = follow(schedule, iteration, resident, capacity, ahead)
    assert fetched == fewest_fetches([b for _, b in iteration], frozenset(resident), capacity)


def test_the_plan_comes_from_the_remembered_iteration_that_starts_alike():
    """Two kinds of iteration alternate (as the caching allocator's alternating addresses make them): the
    plan for an iteration of kind A comes from the last A, two back, and is followed throughout."""
    kind_a = [(1, [0, 1]), (2, [2, 3]), (3, [4, 5]), (4, [0, 2])]
    kind_b = [(11, [0, 1]), (12, [2, 3]), (13, [4, 5]), (14, [0, 2])]
    schedule = Schedule(capacity=4, ahead=2, max_accesses=100, remembered=2)
    for kind in (kind_a, kind_b):
        for exec_id, blocks in kind:
            assert schedule.launch(exec_id, blocks, set()) is None
        schedule.start_iteration()
    assert follow(schedule, kind_a, {0, 1, 2, 3}, 4, 2) == fewest_fetches([b for _, b in kind_a], frozenset({0, 1, 2, 3}), 4)


def test_a_departure_ends_the_plan_for_the_iteration():
    iteration = [(1, [0, 1]), (2, [2, 3]), (3, [4, 5]), (4, [0, 2])]
    schedule = Schedule(capacity=4, ahead=2, max_accesses=100)
    for exec_id, blocks in iteration:
        schedule.launch(exec_id, blocks, set())
    schedule.start_iteration()
    assert schedule.launch(1, [0, 1], {0, 1, 2, 3}) is not None
    assert schedule.launch(9, [2, 3], {0, 1, 2, 3}) is None
    assert schedule.launch(3, [4, 5], {0, 1, 2, 3}) is None, "no re-joining within the iteration"


@pytest.mark.parametrize("make", [Schedule, _native.Schedule])
def test_an_iteration_past_the_bound_gets_no_plan(make):
    iteration = [(1, [0, 1]), (2, [2, 3]), (3, [4, 5])]
    for max_accesses, planned in ((6, True), (5, False)):
        schedule = make(2, 2, max_accesses, 1)
        for exec_id, blocks in iteration:
            schedule.launch(exec_id, blocks, [])
        schedule.start_iteration()
        assert (schedule.launch(1, [0, 1], []) is not None) == planned
