"""Eviction by foreseen next use: the readable specification (deepum/specs/next_use.py) against the native
class the simulator and the online engine use, as a state machine driving both through iterations (of
several kinds, launched by execution ID), uses, arrivals, departures and victim choices in any order;
and the properties that make it Belady's choice on a repeating iteration or a cycle of them, and no
other than foresight from the last iteration when no remembered one matches."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deepum import _native
from deepum.specs.next_use import UNFORESEEN, NextUseEviction

BLOCKS = 12
EXEC_IDS = 6  # few, so that iterations of different kinds share launches
block_sets = st.frozensets(st.integers(0, BLOCKS - 1), max_size=5)
iterations = st.lists(st.tuples(st.integers(0, EXEC_IDS - 1),
                                st.frozensets(st.integers(0, BLOCKS - 1), min_size=1, max_size=4)),
                      min_size=1, max_size=8)


class NativeChoosesAsTheSpecification(RuleBasedStateMachine):
    """Launches numbered as the engine numbers them; iterations of a few kinds (as bucketed shapes make
    them), each a list of kernels (exec ID, blocks) and chosen anew at each iteration start, so that a
    remembered iteration matches the current one, for a while or throughout, or none does; departures
    from them; blocks arriving, leaving without being chosen (released) and chosen as victims, some
    pinned or dead, for demand (need_at 0) or for a prefetch ahead."""

    @initialize(kinds=st.lists(iterations, min_size=1, max_size=3), remembered=st.integers(1, 4),
                first=st.integers(0, 3))
    def start(self, kinds, remembered, first):
        note(f"iterations {[[(e, sorted(b)) for e, b in kind] for kind in kinds]}, remembered {remembered}, "
             f"first launch {first}")
        self.spec, self.native = NextUseEviction(remembered), _native.NextUseEviction(remembered)
        self.kinds, self.iteration, self.position = kinds, kinds[0], 0
        self.launch = first
        self.resident: set[int] = set()
        self.refused: set[int] = set()  # pinned so far in this launch: stays pinned (the native contract)

    def _next_launch(self, exec_id, gap=1):
        self.launch += gap
        self.refused = set()
        indexed = exec_id % 3 == 0  # a kernel is indexed or not, whenever it launches
        self.fill = exec_id % 4 == 1  # and a fill or not
        self.spec.launch(self.launch, exec_id, indexed)
        self.native.launch(self.launch, exec_id, indexed)

    def _use(self, block, fresh=False):
        """`fresh`: the block received memory allocated since the launch before."""
        resident = block in self.resident
        fill = getattr(self, "fill", False)
        for rule_ in (self.spec, self.native):
            rule_.use(block, self.launch, resident)
            rule_.count_use(block, self.launch, fresh, fill)

    def _arrive(self, block):
        self.resident.add(block)
        self.spec.arrive(block, self.launch)
        self.native.arrive(block, self.launch)

    @rule(bring_in=st.booleans(), kind=st.integers(0, 2), fresh=block_sets)
    def next_launch_of_the_iteration(self, bring_in, kind, fresh):
        """The iteration's next kernel launches (at its first, a new iteration of the given kind); it uses
        its blocks and, with bring_in, the missing ones arrive."""
        starts = self.position == 0
        if starts:
            self.iteration = self.kinds[kind % len(self.kinds)]
            self.spec.start_iteration(self.launch + 1)
            self.native.start_iteration(self.launch + 1)
        exec_id, blocks = self.iteration[self.position]
        self._next_launch(exec_id)
        blocks = sorted(blocks)
        self.position = (self.position + 1) % len(self.iteration)
        note(f"launch {self.launch}: kernel {exec_id} {blocks}"
             f"{f' (an iteration of kind {kind % len(self.kinds)} starts)' if starts else ''}"
             f"{', missing ones arrive' if bring_in else ''}{f', fresh {sorted(fresh)}' if fresh else ''}"
             f"{' (a fill)' if self.fill else ''}")
        for block in blocks:
            self._use(block, block in fresh)
        if bring_in:
            for block in blocks:
                if block not in self.resident:
                    self._arrive(block)

    @rule(gap=st.integers(1, 3), exec_id=st.integers(0, EXEC_IDS), blocks=block_sets)
    def a_launch_off_the_iteration(self, gap, exec_id, blocks):
        self._next_launch(exec_id, gap)
        note(f"launch {self.launch}: off the iteration, kernel {exec_id} uses {sorted(blocks)}")
        for block in sorted(blocks):
            self._use(block)

    @rule(exec_id=st.integers(0, EXEC_IDS))
    def an_iteration_starts_early(self, exec_id):
        note(f"launch {self.launch + 1}: an iteration starts with kernel {exec_id}")
        self.spec.start_iteration(self.launch + 1)
        self.native.start_iteration(self.launch + 1)
        self._next_launch(exec_id)

    @rule(block=st.integers(0, BLOCKS - 1))
    def use(self, block):
        note(f"use {block}{' (resident)' if block in self.resident else ''}")
        self._use(block)

    @precondition(lambda self: len(self.resident) < BLOCKS)
    @rule(data=st.data())
    def arrive(self, data):
        block = data.draw(st.sampled_from(sorted(set(range(BLOCKS)) - self.resident)), label="block")
        note(f"{block} arrives")
        self._arrive(block)

    @precondition(lambda self: self.resident)
    @rule(data=st.data())
    def leaves_unchosen(self, data):
        block = data.draw(st.sampled_from(sorted(self.resident)), label="block")
        note(f"{block} leaves (released)")
        self.resident.discard(block)

    @precondition(lambda self: self.resident)
    @rule(pinned=block_sets, dead=block_sets, dead_search=st.integers(0, 4), ahead=st.integers(0, 40))
    def victim(self, pinned, dead, dead_search, ahead):
        self.refused |= pinned
        need_at = self.launch + ahead if ahead else 0
        refused = frozenset(self.refused)
        calls = (self.launch, self.resident.__contains__, lambda b: b not in refused, dead.__contains__,
                 dead_search, need_at)
        chosen = self.spec.victim(*calls)
        got = self.native.victim(*calls)
        note(f"victim (refused {sorted(refused)}, dead {sorted(dead)}, dead_search {dead_search}, "
             f"need_at {need_at}) -> {got} (spec {chosen})")
        assert got == chosen
        if chosen is not None:
            assert chosen in self.resident and chosen not in refused
            self.resident.discard(chosen)

    @invariant()
    def every_block_is_foreseen_alike(self):
        if not hasattr(self, "spec"):
            return
        for block in range(BLOCKS):
            for seen_from in (self.launch, self.launch + 1, self.launch + 9):
                assert self.native.foresee(block, seen_from) == self.spec.foresee(block, seen_from), (block, seen_from)

    @invariant()
    def the_same_blocks_are_short_lived(self):
        """Host mapping's candidates: few uses in a short span, or few uses all by indexed kernels."""
        if not hasattr(self, "spec"):
            return
        for most_uses, span_percent, indexed_any_span in ((1, 100, False), (2, 30, False), (2, 30, True), (3, 1, True)):
            assert (self.native.short_lived(most_uses, span_percent, indexed_any_span)
                    == self.spec.short_lived(most_uses, span_percent, indexed_any_span))


    @invariant()
    def the_same_blocks_are_used_beside_the_chosen(self):
        """What host_map_keep_uses weighs: each block's counted uses, and the other blocks used within
        the span of a chosen set's uses (host mapping's candidates, and arbitrary sets)."""
        if not hasattr(self, "spec"):
            return
        assert [self.native.passes(b) for b in range(BLOCKS + 1)] == \
            [self.spec.passes(b) for b in range(BLOCKS + 1)]
        for chosen in (set(self.spec.short_lived(2, 30, False)), set(range(0, BLOCKS, 2)), {BLOCKS - 1}, set()):
            assert self.native.used_beside(chosen) == self.spec.used_beside(chosen), sorted(chosen)


NativeChoosesAsTheSpecification.TestCase.settings = settings(
    max_examples=500, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TestNativeChoosesAsTheSpecification = NativeChoosesAsTheSpecification.TestCase


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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.frozensets(st.integers(0, BLOCKS - 1), min_size=1), min_size=1, max_size=12),
                min_size=1, max_size=4),
       st.integers(0, 3), st.integers(2, 4))
def test_a_cycle_of_iterations_is_foreseen_exactly_when_remembered(kinds, extra, cycles):
    """Iterations of a few kinds taken in turn (each kind's launches with their own exec IDs): once a
    cycle has run, every block is foreseen at its true next use, this iteration or the next, when at
    least a cycle of iterations is remembered."""
    eviction = NextUseEviction(len(kinds) + extra)
    order = [k for _ in range(cycles) for k in range(len(kinds))]
    launches = [(100 * k + i, blocks) for k in order for i, blocks in enumerate(kinds[k])]
    starts = set(np.cumsum([0] + [len(kinds[k]) for k in order]).tolist())
    cycle = sum(len(kind) for kind in kinds)
    for launch, (exec_id, blocks) in enumerate(launches):
        if launch in starts:
            eviction.start_iteration(launch)
        eviction.launch(launch, exec_id, False)
        for block in blocks:
            eviction.use(block, launch, resident=False)
        if launch >= cycle:
            following = min(s for s in starts if s > launch)
            horizon = min((s for s in starts if s > following), default=len(launches))
            for block in range(BLOCKS):
                later = [k for k in range(launch + 1, horizon) if block in launches[k][1]]
                if later:
                    assert eviction.foresee(block, launch) == later[0], (block, launch)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.frozensets(st.integers(0, BLOCKS - 1), max_size=4), min_size=1, max_size=8),
                min_size=1, max_size=8),
       st.integers(2, 16))
def test_when_no_remembered_iteration_matches_the_last_one_is_foreseen_from(steps, remembered):
    """Routing that changes every step: no launch repeats an earlier iteration's at its place, and
    remembering more foresees as foresight from the last iteration alone does."""
    alone, remembering = NextUseEviction(1), NextUseEviction(remembered)
    launch = 0
    for step, kernels in enumerate(steps):
        for eviction in (alone, remembering):
            eviction.start_iteration(launch)
        for place, blocks in enumerate(kernels):
            for eviction in (alone, remembering):
                eviction.launch(launch, 1000 * step + place, False)
                for block in sorted(blocks):
                    eviction.use(block, launch, resident=False)
            for block in range(BLOCKS):
                assert remembering.foresee(block, launch) == alone.foresee(block, launch)
            launch += 1


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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, BLOCKS - 1), min_size=2, max_size=5), min_size=30, max_size=80),
       st.sets(st.integers(0, BLOCKS - 1)), st.integers(1, 3))
def test_long_iterations_of_resident_uses_choose_as_the_specification(iteration, resident, dead_search):
    """Many uses of resident blocks between iteration starts leave the native heap mostly stale entries,
    which it drops by rebuilding itself from the queued blocks; a victim after each launch (brought back
    at once) is the specification's all the same, a resident block that no launch uses (foreseen
    nowhere) included."""
    resident = resident | {BLOCKS}
    spec, native = NextUseEviction(), _native.NextUseEviction()
    for block in sorted(resident):
        spec.arrive(block, 0)
        native.arrive(block, 0)
    launch = 0
    for _ in range(3):
        for rule_ in (spec, native):
            rule_.start_iteration(launch)
        for place, blocks in enumerate(iteration):
            for rule_ in (spec, native):
                rule_.launch(launch, place, False)
                for block in sorted(blocks):
                    rule_.use(block, launch, block in resident)
            calls = (launch, resident.__contains__, lambda b: True, lambda b: False, dead_search, 0)
            chosen = spec.victim(*calls)
            assert native.victim(*calls) == chosen, launch
            if chosen is not None:
                spec.arrive(chosen, launch)
                native.arrive(chosen, launch)
            launch += 1


def test_at_least_one_iteration_is_remembered():
    for make in (NextUseEviction, _native.NextUseEviction):
        with pytest.raises(ValueError, match="at least one iteration is remembered"):
            make(0)


@pytest.mark.parametrize("make", [NextUseEviction, _native.NextUseEviction])
def test_host_mapping_counts_the_uses_of_a_blocks_latest_data_and_no_fill(make):
    """An optimizer's state in its first step: its block held an activation early in the iteration
    (launches 1-3), received the state at launch 40 (fresh, a fill), was filled again at 41 and updated
    at 90 and 95 of 100 launches. Only 90 and 95 count: few uses in a short span."""
    eviction = make(1)
    eviction.start_iteration(0)
    uses = [(1, False, False), (2, False, False), (3, False, False), (40, True, True), (41, False, True),
            (90, False, False), (95, False, False)]
    for launch, fresh, fill in uses:
        eviction.use(7, launch, False)
        eviction.count_use(7, launch, fresh, fill)
    # block 8: filled once at 50 (not fresh: its memory was allocated earlier) and used at 10 and 96
    for launch, fill in ((10, False), (50, True), (96, False)):
        eviction.use(8, launch, False)
        eviction.count_use(8, launch, False, fill)
    eviction.start_iteration(100)
    assert eviction.short_lived(2, 10, False) == [7]       # 90..95: 6% of the iteration
    assert eviction.short_lived(4, 100, False) == [7, 8]   # block 8: 10 and 96 count, the fill does not
    assert eviction.short_lived(1, 100, False) == []


@pytest.mark.parametrize("make", [NextUseEviction, _native.NextUseEviction])
def test_a_run_of_consecutive_launches_is_one_pass_over_a_block(make):
    """Block 7 is used at launches 1, 2, 3, 10, 12 and 13 of 20: three passes (1-3, 10, 12-13); block 8
    once, block 9 never."""
    eviction = make(1)
    eviction.start_iteration(0)
    for launch in (1, 2, 3, 10, 12, 13):
        eviction.use(7, launch, False)
        eviction.count_use(7, launch, False, False)
    eviction.use(8, 5, False)
    eviction.count_use(8, 5, False, False)
    eviction.start_iteration(20)
    assert [eviction.passes(b) for b in (7, 8, 9)] == [3, 1, 0]


@pytest.mark.parametrize("make", [NextUseEviction, _native.NextUseEviction])
def test_the_blocks_used_beside_a_chosen_set_are_those_used_within_its_span(make):
    """Of 100 launches, block 7 is used at 90 and 95, block 8 at 10 and 96, block 9 at 92 and block 10
    at 95 and 99: beside {7} (90..95), 9 and 10 are used; beside {7, 8} (10..96), 9 and 10 too; beside
    {9} (92), none."""
    eviction = make(1)
    eviction.start_iteration(0)
    for block, launches in ((7, (90, 95)), (8, (10, 96)), (9, (92,)), (10, (95, 99))):
        for launch in launches:
            eviction.use(block, launch, False)
            eviction.count_use(block, launch, False, False)
    eviction.start_iteration(100)
    assert [eviction.passes(b) for b in (7, 8, 9, 10, 11)] == [2, 2, 1, 2, 0]
    assert eviction.used_beside({7}) == 2
    assert eviction.used_beside({7, 8}) == 2
    assert eviction.used_beside({9}) == 0
    assert eviction.used_beside({11}) == 0, "a set never used has no span"
