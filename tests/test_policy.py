"""The policy core (driver_hooks/policy.hpp, bound as deepum._native.Policy) against its readable
specification (deepum.specs.policy): the same decisions on every launch, and worked traces that pin
victim choice, window protection and the prefetch's look-ahead."""
from __future__ import annotations

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deepum import _native
from deepum.config import DeepUMConfig
from deepum.specs.policy import CONFIDENCE_LAUNCHES, Policy

UNIVERSE = 12  # UM blocks 0..11


class Pair:
    """The spec and the native core fed the same events, with one set of dead blocks."""

    def __init__(self, mode: str, capacity: int, config: DeepUMConfig, in_machine: bool = False):
        self.in_machine = in_machine
        self.dead: set[int] = set()
        self.absent: set[int] = set()
        self.spec = Policy(mode, capacity, config, self.dead.__contains__, lambda b: b not in self.absent)
        self.native = _native.Policy(mode, capacity, config.to_dict())

    def launch(self, exec_id: int, blocks, indexed: bool = False, fill: bool = False, fresh=()) -> tuple[bool, list]:
        expected = self.spec.on_launch(exec_id, blocks, indexed, fill, set(fresh))
        demand_prefetch, moves = self.native.on_launch(exec_id, list(blocks), indexed, fill, sorted(fresh))
        if self.in_machine:
            note(f"launch {exec_id} {list(blocks)}{' indexed' if indexed else ''}{' fill' if fill else ''}"
                 f"{f' fresh {sorted(fresh)}' if fresh else ''} -> {moves} (demand prefetch {demand_prefetch})")
        assert (demand_prefetch, [tuple(m) for m in moves]) == (expected.demand_prefetch, expected.moves)
        return demand_prefetch, expected.moves

    def wake(self, blocks) -> None:
        self.spec.wake(blocks)
        self.native.wake(list(blocks))

    def set_dead(self, block: int, dead: bool) -> None:
        (self.dead.add if dead else self.dead.discard)(block)
        self.native.set_dead(block, dead)

    def set_absent(self, block: int, absent: bool) -> None:
        (self.absent.add if absent else self.absent.discard)(block)
        self.native.set_absent(block, absent)


configs = st.builds(DeepUMConfig, lookahead=st.integers(1, 6), prefetch_batch=st.integers(1, 4),
                    recall_iterations=st.integers(0, 3), exec_ids=st.integers(1, 16), exec_records=st.integers(1, 4),
                    block_rows=st.integers(1, 8), block_ways=st.integers(1, 2),
                    block_successors=st.integers(1, 4), learn_from=st.sampled_from(["accesses", "faults"]),
                    eviction=st.sampled_from(["lru", "next_use"]), foresight_iterations=st.integers(1, 4),
                    far_prefetches=st.sampled_from(["evict", "dead_only", "skip"]),
                    schedule=st.booleans(), schedule_ahead=st.integers(1, 6), schedule_accesses=st.integers(1, 40),
                    repeat_plans_percent=st.sampled_from([0, 50, 90, 100]),
                    confident_hits=st.integers(0, 3), host_map_uses=st.sampled_from([0, 0, 1, 2, 3]),
                    host_map_span_percent=st.integers(1, 100), host_map_indexed=st.booleans(),
                    host_map_keep_uses=st.sampled_from([0, 0, 1, 2, 3]), prefetch=st.booleans(),
                    pre_evict=st.booleans(), invalidate=st.booleans())
kernel = st.tuples(st.integers(0, 7), st.lists(st.integers(0, UNIVERSE - 1), unique=True, min_size=1, max_size=4))


class SpecAndNativeDecideAlike(RuleBasedStateMachine):
    """Training-like launches (iterations of one to three kinds taken in turn, as bucketed shapes make
    them, with departures from them), allocations dying and coming back, segments released and faults
    learned, in any order."""

    @initialize(mode=st.sampled_from(["um", "advise", "deepum", "deepum", "deepum"]), capacity=st.integers(2, 6),
                config=configs, programs=st.lists(st.lists(kernel, min_size=2, max_size=10), min_size=1, max_size=3),
                indexed_kernels=st.integers(0, 8))
    def start(self, mode, capacity, config, programs, indexed_kernels):
        """Kernels with exec IDs below `indexed_kernels` are indexed."""
        self.capacity = capacity
        self.indexed_kernels = indexed_kernels
        self.pair = Pair(mode, capacity, config, in_machine=True)
        self.programs = [[(e, sorted(b)[:capacity]) for e, b in program] for program in programs]
        self.iterations = 0
        self.program = self.programs[0]
        self.position = 0
        self.last_blocks: list[int] = []
        self.reborn: set[int] = set()  # allocated again since the last launch: fresh at their next use
        self.woke = self.over_capacity_until_a_launch = False

    def _launch(self, exec_id, blocks):
        self.over_capacity_until_a_launch = False
        for b in set(blocks) & self.pair.absent:  # a kernel's blocks are memory
            self.pair.set_absent(b, False)
        fresh = self.reborn & set(blocks)
        self.reborn = set()
        _, moves = self.pair.launch(exec_id, blocks, exec_id < self.indexed_kernels, exec_id % 4 == 1, fresh)
        left = {b for move, b in moves if move in ("evict", "discard")}
        assert not left & set(blocks), "a block the running kernel uses was evicted"
        self.last_blocks = blocks

    @rule()
    def next_kernel_of_the_iteration(self):
        exec_id, blocks = self.program[self.position]
        self._launch(exec_id, blocks)
        self.position += 1
        if self.position == len(self.program):
            self.position = 0
            self.iterations += 1
            self.program = self.programs[self.iterations % len(self.programs)]
            assert self.pair.spec.next_iteration() == self.pair.native.next_iteration()

    @rule()
    def the_rest_of_the_iteration(self):
        """Whole iterations in a row, as training runs them: where their plans repeat, they are repeated."""
        iterations = self.iterations
        while self.iterations == iterations:
            self.next_kernel_of_the_iteration()

    @rule(k=kernel)
    def a_kernel_off_the_iteration(self, k):
        self._launch(k[0], sorted(k[1])[:self.capacity])

    @precondition(lambda self: not self.woke)
    @rule(blocks=st.lists(st.integers(0, UNIVERSE - 1), unique=True, max_size=UNIVERSE))
    def the_engine_wakes(self, blocks):
        """Once, usually before any launch: the blocks of the live segments become resident."""
        self.woke = self.over_capacity_until_a_launch = True
        for b in set(blocks) & self.pair.absent:  # the blocks of live segments are memory
            self.pair.set_absent(b, False)
        self.pair.wake(sorted(blocks))

    @rule(block=st.integers(0, UNIVERSE - 1), dead=st.booleans())
    def allocation_dies_or_is_reborn(self, block, dead):
        self.pair.set_dead(block, dead)
        if not dead:
            self.reborn.add(block)

    @rule(block=st.integers(0, UNIVERSE - 1))
    def segment_released(self, block):
        self.pair.spec.release(block)
        self.pair.native.release(block)

    @rule(block=st.integers(0, UNIVERSE - 1), absent=st.booleans())
    def segment_freed_or_allocated(self, block, absent):
        """A block stops being memory (its segment freed: released) or becomes memory again."""
        if absent:
            self.segment_released(block)
        self.pair.set_absent(block, absent)

    @invariant()
    def absent_blocks_are_not_resident(self):
        if hasattr(self, "pair"):
            assert not any(self.pair.spec.resident(b) for b in self.pair.absent)

    @precondition(lambda self: self.last_blocks)
    @rule(data=st.data())
    def the_last_kernel_faulted(self, data):
        block = data.draw(st.sampled_from(self.last_blocks))
        self.pair.spec.learn_fault(block)
        self.pair.native.learn_fault(block)

    @invariant()
    def a_block_is_resident_or_mapped_from_the_host_never_both(self):
        if not hasattr(self, "pair"):
            return
        spec, native = self.pair.spec, self.pair.native
        mapped = [spec.host_mapped(b) for b in range(UNIVERSE)]
        assert mapped == [native.host_mapped(b) for b in range(UNIVERSE)]
        assert not any(m and spec.resident(b) for b, m in enumerate(mapped))

    @invariant()
    def residency_agrees_and_fits(self):
        if not hasattr(self, "pair"):
            return
        spec, native = self.pair.spec, self.pair.native
        assert [spec.resident(b) for b in range(UNIVERSE)] == [native.resident(b) for b in range(UNIVERSE)]
        assert spec.resident_blocks == native.resident_blocks
        assert spec.resident_blocks <= self.capacity or self.over_capacity_until_a_launch
        assert spec.peak_resident_blocks == native.peak_resident_blocks


SpecAndNativeDecideAlike.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_spec_and_native_decide_alike = SpecAndNativeDecideAlike.TestCase


# ----------------------------------------------------------------------------------- worked traces
def _both(mode: str, capacity: int, **config):
    """Each worked trace pins one rule; host mapping, which would map the few-use blocks of these short
    iterations, is off unless a trace asks for it."""
    config.setdefault("host_map_uses", 0)
    return Pair(mode, capacity, DeepUMConfig(**config))


def _iterate(pair: Pair, iteration) -> list[list]:
    """Each launch's moves of one iteration through both, which then end it."""
    moves = [pair.launch(exec_id, blocks)[1] for exec_id, blocks in iteration]
    pair.spec.next_iteration()
    pair.native.next_iteration()
    return moves


def _teach(pair: Pair, iteration, times: int = 2) -> None:
    for _ in range(times):
        _iterate(pair, iteration)


def test_the_running_kernel_never_loses_its_blocks():
    """Block 0 is the least recently migrated, but the kernel that needs room uses it: 1 goes."""
    pair = _both("um", 3)
    pair.launch(1, [0, 1, 2])
    _, moves = pair.launch(2, [0, 3])
    assert moves == [("demand", 3), ("evict", 1)]


@pytest.mark.parametrize("eviction", ["lru", "next_use"])
def test_lru_takes_a_dead_block_before_an_older_live_one(eviction):
    """LRU order 0, 1; block 1 is dead: it goes, without a copy, although 0 is older. (Next use takes
    the block foreseen last, here the never-seen-again block 0, dead or not.)"""
    pair = _both("deepum", 2, eviction=eviction)
    pair.launch(1, [0])
    pair.launch(2, [1])
    pair.set_dead(1, True)
    _, moves = pair.launch(3, [2])
    assert moves[0] == ("demand", 2)
    assert moves[1] == (("discard", 1) if eviction == "lru" else ("evict", 0))


def test_without_invalidation_a_dead_block_is_copied_out_in_lru_order():
    pair = _both("deepum", 2, eviction="lru", invalidate=False)
    pair.launch(1, [0])
    pair.launch(2, [1])
    pair.set_dead(1, True)
    assert pair.launch(3, [2])[1][1] == ("evict", 0)


# An iteration of four kernels over six blocks, on a GPU of four: 0 and 1 are the "weights" every
# kernel after the first reads, 2..5 the activations.
ITERATION = [(10, [0, 1, 2]), (11, [0, 3]), (12, [1, 4]), (13, [0, 5])]


@pytest.mark.parametrize("eviction", ["lru", "next_use"])
def test_pre_eviction_spares_the_blocks_the_window_needs(eviction):
    """Once learned, every block a prefetch or a demand eviction gives up is one no predicted kernel
    in the window needs, while an unneeded resident block remains."""
    pair = _both("deepum", 4, eviction=eviction, lookahead=2, confident_hits=0)
    _teach(pair, ITERATION)
    for exec_id, blocks in ITERATION:
        position = [e for e, _ in ITERATION].index(exec_id)
        _, moves = pair.launch(exec_id, blocks)
        window = {b for _, later in ITERATION[position + 1:position + 3] for b in later}
        for move, block in moves:
            if move in ("evict", "discard"):
                assert block not in window, (exec_id, moves)


def test_a_prefetch_does_not_evict_a_block_needed_before_the_kernel_it_is_for():
    """Three kernels of two blocks each on a GPU of four, a window of one kernel ahead.
    - 20: its blocks come on demand; 21's are in the window (protected), so 22's go.
    - 21: bringing 22's blocks would push out 20's, foreseen at the launch right after 22: the
      prefetch waits.
    - 22: its blocks come on demand; 20's are now in the window, so 21's go."""
    iteration = [(20, [0, 1]), (21, [2, 3]), (22, [4, 5])]
    pair = _both("deepum", 4, eviction="next_use", lookahead=1, confident_hits=0)
    _teach(pair, iteration, times=3)
    assert pair.launch(20, [0, 1]) == (True, [("demand", 0), ("demand", 1), ("evict", 4), ("evict", 5)])
    assert pair.launch(21, [2, 3]) == (True, [])
    assert pair.launch(22, [4, 5]) == (True, [("demand", 4), ("demand", 5), ("evict", 2), ("evict", 3)])


# Twelve kernels of one block each, on a GPU of six blocks.
ONE_BLOCK_KERNELS = [(30 + k, [k]) for k in range(12)]


def _steady_moves(lookahead: int, batch: int) -> list[list]:
    """The moves of two learned iterations of ONE_BLOCK_KERNELS, launch by launch."""
    pair = _both("deepum", 6, eviction="next_use", lookahead=lookahead, confident_hits=0, prefetch_batch=batch)
    _teach(pair, ONE_BLOCK_KERNELS, times=3)
    return _iterate(pair, ONE_BLOCK_KERNELS) + _iterate(pair, ONE_BLOCK_KERNELS)


def test_a_prefetch_batch_hands_several_launches_predictions_over_at_once_and_none_late():
    """A window of four kernels ahead. Learned, a batch of 1 prefetches the window's new entry at almost
    every launch; a batch of 3 lets entries wait until the nearest not yet prefetched is needed within
    two launches, so that the full window's prefetches come every third launch, several kernels' at
    once, and still no block comes on demand."""

    def prefetching(moves: list[list]) -> list[int]:
        return [i for i, m in enumerate(moves) if any(move == "prefetch" for move, _ in m)]

    every, batched = _steady_moves(4, 1), _steady_moves(4, 3)
    assert not any(move == "demand" for m in every + batched for move, _ in m)
    assert len(prefetching(batched)) <= 2 * len(prefetching(every)) // 3
    gaps = [b - a for a, b in zip(prefetching(batched), prefetching(batched)[1:])]
    assert gaps[:4] == [3, 3, 3, 3], prefetching(batched)
    assert max(sum(move == "prefetch" for move, _ in m) for m in batched) == 3


def test_a_prefetch_batch_beyond_the_lookahead_is_the_lookahead():
    """A window of two kernels ahead cannot wait for eight launches' predictions: a batch of 8 decides
    as a batch of 2 does, and once learned no block comes on demand."""
    beyond = _steady_moves(2, 8)
    assert beyond == _steady_moves(2, 2)
    assert any(move == "prefetch" for m in beyond for move, _ in m)
    assert not any(move == "demand" for m in beyond for move, _ in m)


def test_on_a_repeated_iteration_the_schedule_moves_fewer_blocks_than_the_window():
    """A long skip: block 0 is written first and read last, between them a stream of blocks on a GPU of
    three. The plan, made from the iteration before, keeps 0 resident across the stream (it is used next
    before any streamed block is used again), and brings in the fewest blocks, one per streamed block;
    the window and next-use eviction alone move 0 out and back in every iteration."""
    from test_schedule import fewest_fetches

    iteration = [(1, [0, 1])] + [(2 + i, [2 + i]) for i in range(5)] + [(9, [0, 7])]
    moved = {}
    for schedule in (False, True):
        pair = _both("deepum", 3, lookahead=2, schedule=schedule, schedule_ahead=2)
        _teach(pair, iteration, times=3)
        moves = [m for exec_id, blocks in iteration for m in pair.launch(exec_id, blocks)[1]]
        moved[schedule] = sum(move in ("demand", "prefetch", "populate") for move, _ in moves)
    resident = frozenset({0, 6, 7})  # as the iteration before left them
    assert moved[True] == fewest_fetches([b for _, b in iteration], resident, 3) < moved[False]


def test_until_confident_only_the_kernels_own_blocks_are_prefetched():
    """Under pressure with learned tables, the window is neither prefetched nor protected until
    confident_hits of the last CONFIDENCE_LAUNCHES launches were kernel hits; the kernel's own missing
    blocks are still prefetched just before it. Once confident, the window's blocks are prefetched."""
    def speculative_moves(pair):
        plans = [pair.launch(exec_id, blocks) for exec_id, blocks in ITERATION]
        assert all(demand_prefetch for demand_prefetch, _ in plans)
        return [m for _, moves in plans for m in moves if m[0] in ("prefetch", "populate")]

    pair = _both("deepum", 4, lookahead=2, confident_hits=CONFIDENCE_LAUNCHES)
    _teach(pair, ITERATION, times=CONFIDENCE_LAUNCHES // len(ITERATION))
    assert pair.native.kernel_hits > 0 and speculative_moves(pair) == []
    _teach(pair, ITERATION, times=2)
    assert speculative_moves(pair) != []


def test_no_prediction_before_pressure():
    """Until the blocks touched exceed the capacity, nothing is learned or prefetched."""
    pair = _both("deepum", 8)
    _teach(pair, ITERATION, times=3)
    assert pair.native.kernel_hits == pair.native.kernel_misses == 0
    for exec_id, blocks in ITERATION:
        demand_prefetch, moves = pair.launch(exec_id, blocks)
        assert not demand_prefetch and moves == []


def test_advise_prefetches_missing_blocks_only_under_pressure():
    pair = _both("advise", 2)
    assert pair.launch(1, [0])[0] is False
    assert pair.launch(2, [1])[0] is False
    assert pair.launch(3, [2]) == (True, [("demand", 2), ("evict", 0)])


def test_a_released_block_comes_back_on_demand():
    pair = _both("um", 2)
    pair.launch(1, [0])
    pair.spec.release(0)
    pair.native.release(0)
    assert pair.launch(2, [0])[1] == [("demand", 0)]


def test_known_block_answers_without_numbering_a_block():
    native = _native.Policy("deepum", 4, DeepUMConfig().to_dict())
    native.on_launch(1, [5, 9])
    assert [native.known_block(5), native.known_block(9)] == [0, 1]
    assert native.known_block(7) == -1 and native.known_block(7) == -1
    native.on_launch(2, [7])
    assert native.known_block(7) == 2


def test_unknown_modes_are_refused():
    with pytest.raises(ValueError):
        Policy("oracle", 2, DeepUMConfig(), lambda b: False)
    with pytest.raises(ValueError):
        _native.Policy("oracle", 2, DeepUMConfig().to_dict())
    with pytest.raises(ValueError):
        _native.Policy("sometimes", 2, DeepUMConfig().to_dict())


def test_without_iteration_marks_both_start_their_own_iterations():
    """Past LONGEST_ITERATION launches with no mark, the replacement rule starts an iteration itself,
    in the spec and natively alike (the same decisions on either side of the boundary)."""
    from deepum.specs.policy import LONGEST_ITERATION

    pair = _both("deepum", 4, eviction="next_use", lookahead=2)
    program = [(10, [0, 1]), (11, [2, 3]), (12, [4, 5]), (13, [0, 6])]
    for launch in range(LONGEST_ITERATION + 500):
        exec_id, blocks = program[launch % len(program)]
        pair.launch(exec_id, blocks)


def test_native_bookkeeping_stays_flat_without_iteration_marks():
    """Inference or a custom optimizer never marks an iteration: once the iterations next-use eviction
    remembers are filled (each LONGEST_ITERATION launches), the policy's memory must not grow with the
    number of launches."""
    from deepum.specs.policy import LONGEST_ITERATION

    def resident_kib() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * 4

    config = DeepUMConfig(lookahead=4)
    native = _native.Policy("deepum", 8, config.to_dict())
    program = [(100 + k, [(3 * k + j) % 24 for j in range(4)]) for k in range(16)]
    for launch in range((config.foresight_iterations + 1) * LONGEST_ITERATION + 20_000):
        native.on_launch(*program[launch % len(program)])
    before = resident_kib()
    for launch in range(450_000):
        native.on_launch(*program[launch % len(program)])
    assert resident_kib() - before < 4096


def test_after_waking_the_next_launch_evicts_down_to_the_capacity():
    """Woken blocks are resident without a move; the next launch takes only its missing block and
    evicts the least recently arrived woken blocks (ascending) down to the capacity; a woken block
    still resident is not demanded again."""
    pair = _both("um", 3)
    pair.wake(range(6))
    assert pair.spec.resident_blocks == pair.native.resident_blocks == 6
    _, moves = pair.launch(1, [6])
    assert moves == [("demand", 6), ("evict", 0), ("evict", 1), ("evict", 2), ("evict", 3)]
    _, moves = pair.launch(2, [5])
    assert moves == []


def test_woken_blocks_count_toward_pressure():
    """deepum predicts from the first launch after a wake that makes more blocks resident than the
    capacity holds, and not before pressure without one."""
    woken, cold = _both("deepum", 2), _both("deepum", 2)
    woken.wake([0, 1, 2])
    assert woken.launch(1, [3])[0] is True   # under pressure: the kernel's blocks prefetched before it
    assert cold.launch(1, [3])[0] is False


def test_blocks_woken_between_iterations_are_foreseen_from_the_next_launch():
    """A wake right after an iteration mark: the woken block arrives as of the next launch, in the new
    iteration, so that next-use eviction foresees it alike in the spec and the native core."""
    pair = _both("deepum", 2, lookahead=1, exec_ids=1, exec_records=1, block_rows=1, block_ways=1,
                 block_successors=1, eviction="next_use", foresight_iterations=1, prefetch=False, invalidate=False)
    for blocks in ([0], [0], [1]):
        pair.launch(0, blocks)
    assert pair.spec.next_iteration() == pair.native.next_iteration()
    pair.spec.release(0)
    pair.native.release(0)
    pair.wake([0])
    _, moves = pair.launch(0, [2])
    assert moves[0] == ("demand", 2) and len(moves) == 2


# An iteration of ten launches over six blocks: 0..3 are used throughout, 4 and 5 only by its last two
# launches (the optimizer's state: two uses within 20% of the iteration).
BRIEF = [(20 + i, [i % 4, (i + 1) % 4]) for i in range(8)] + [(28, [4]), (29, [4, 5])]


def _launches(pair: Pair, launches) -> list:
    """Each of `launches`, exec IDs from INDEXED on indexed; the moves of all, in order."""
    return [move for exec_id, blocks in launches for move in pair.launch(exec_id, blocks, exec_id >= INDEXED)[1]]


def test_blocks_used_briefly_are_mapped_from_the_host_and_migrate_again_once_their_uses_spread():
    pair = _both("deepum", 3, host_map_uses=2, host_map_span_percent=20)
    _teach(pair, BRIEF, times=1)
    # 4 and 5 are resident when chosen: they are the victims that make room for 1, then 2 (ascending),
    # each mapped as it leaves.
    moves = _launches(pair, BRIEF[:2])
    assert [m for m in moves if m[1] in (4, 5)] == [("map_host", 4), ("map_host", 5)]
    assert not pair.spec.resident(4) and pair.spec.host_mapped(4) and pair.native.host_mapped(5)
    for exec_id, blocks in BRIEF[2:]:
        _, moves = pair.launch(exec_id, blocks)
        assert not {b for _, b in moves} & {4, 5}, "a host-mapped block was demanded or prefetched"
    pair.spec.next_iteration()
    pair.native.next_iteration()
    # Block 4 is now used at the iteration's first launch and its last, two uses as before, but
    # spanning all of it.
    spread = [(30, [0, 4])] + BRIEF[1:8] + [(28, [1]), (29, [4, 5])]
    _, moves = pair.launch(*spread[0])
    assert ("demand", 4) not in moves, "still mapped: the kernel uses block 4 over the link"
    for exec_id, blocks in spread[1:]:
        pair.launch(exec_id, blocks)
    pair.spec.next_iteration()
    pair.native.next_iteration()
    _, moves = pair.launch(*spread[0])
    assert moves[0] == ("map_gpu", 4) and ("demand", 4) in moves
    assert pair.spec.host_mapped(5) and not pair.spec.host_mapped(4)


def test_a_resident_block_chosen_for_host_mapping_moves_only_when_room_is_needed():
    """After an iteration under pressure, a shorter one (a smaller bucket of sequence lengths) fits:
    blocks 4 and 5, chosen for mapping, stay resident and nothing moves; a launch that then needs room
    maps its victim among them in place of evicting it."""
    pair = _both("deepum", 5, host_map_uses=2, host_map_span_percent=20)
    _teach(pair, BRIEF, times=1)
    assert _launches(pair, [(21, [1, 2]), (22, [2, 3]), (28, [4]), (29, [4, 5])]) == []
    for policy in (pair.spec, pair.native):
        assert policy.resident(4) and policy.resident(5) and not policy.host_mapped(4) and not policy.host_mapped(5)
    assert _launches(pair, [(20, [0, 1])]) == [("demand", 0), ("map_host", 4)]
    assert pair.spec.host_mapped(4) and pair.native.host_mapped(4) and not pair.spec.host_mapped(5)


@pytest.mark.parametrize("dead", [False, True])
def test_a_dead_victim_leaves_before_a_block_waiting_to_be_mapped(dead):
    """Block 7 (woken, used nowhere) is the replacement rule's victim: dead, it goes first without a
    copy; live, the blocks waiting to be mapped (4, 5) go before it."""
    pair = _both("deepum", 5, host_map_uses=2, host_map_span_percent=20)
    _teach(pair, BRIEF, times=1)
    _launches(pair, [(21, [1, 2]), (22, [2, 3]), (28, [4]), (29, [4, 5])])
    pair.wake([7])
    pair.set_dead(7, dead)
    victims = [("discard", 7), ("map_host", 4)] if dead else [("map_host", 4), ("map_host", 5)]
    assert _launches(pair, [(20, [0, 1])]) == [("demand", 0)] + victims


def test_a_block_chosen_for_host_mapping_that_dies_while_resident_is_evicted_without_a_mapping():
    pair = _both("deepum", 5, host_map_uses=2, host_map_span_percent=20)
    _teach(pair, BRIEF, times=1)
    _launches(pair, [(21, [1, 2]), (22, [2, 3])])
    pair.set_dead(4, True)
    pair.set_dead(5, True)
    moves = _launches(pair, [(20, [0, 1])])
    assert moves[0] == ("demand", 0) and moves[1] in (("discard", 4), ("discard", 5))
    assert not pair.spec.host_mapped(moves[1][1]) and not pair.native.host_mapped(moves[1][1])


# An embedding table (block 6) looked up by the iteration's first launch and updated sparsely by its
# last, both indexed kernels, around dense launches over blocks 0..3: two uses spanning all of it.
INDEXED = 40
TABLE = [(INDEXED, [6])] + [(20 + i, [i % 4, (i + 1) % 4]) for i in range(8)] + [(INDEXED + 1, [6, 5])]


def _launch_all(pair: Pair, iteration) -> list:
    """The whole of `iteration` (see _launches), then the next one starts."""
    moves = _launches(pair, iteration)
    pair.spec.next_iteration()
    pair.native.next_iteration()
    return moves


@pytest.mark.parametrize("dense_use", [False, True])
def test_a_block_only_indexed_kernels_use_is_mapped_whatever_its_span(dense_use):
    iteration = [(k, b + [6] if dense_use and k == 23 else b) for k, b in TABLE]
    pair = _both("deepum", 3, host_map_uses=3, host_map_span_percent=20, host_map_indexed=True)
    _launch_all(pair, iteration)
    moves = _launch_all(pair, iteration) + _launch_all(pair, iteration)
    # Block 5 is used by the last launch alone (brief, mapped either way); block 6 by two indexed
    # kernels ten launches apart, and, with dense_use, by a dense kernel between them too. Both are
    # resident when chosen, and mapped once evicted.
    assert pair.spec.host_mapped(5) and pair.native.host_mapped(5)
    assert pair.spec.host_mapped(6) == pair.native.host_mapped(6) == (not dense_use)
    assert (("map_host", 6) in moves) == (not dense_use)
    if not dense_use:
        assert ("demand", 6) not in _launch_all(pair, iteration), "a host-mapped table was demanded"


def test_indexed_kernels_map_nothing_beyond_the_span_rule_with_the_knob_off():
    pair = _both("deepum", 3, host_map_uses=3, host_map_span_percent=20, host_map_indexed=False)
    for _ in range(3):
        _launch_all(pair, TABLE)
    assert pair.spec.host_mapped(5) and not pair.spec.host_mapped(6) and not pair.native.host_mapped(6)


def test_a_block_mapped_from_the_host_stays_mapped_when_the_engine_wakes():
    """Host mapping takes block 3, used once per iteration; a wake naming it leaves it mapped, not
    resident, in the spec and the native core alike."""
    config = DeepUMConfig(lookahead=1, exec_ids=1, exec_records=1, block_rows=1, block_ways=1, block_successors=1,
                          foresight_iterations=1, confident_hits=0, host_map_uses=1, host_map_span_percent=34,
                          host_map_indexed=False, prefetch=False, invalidate=False)
    pair = Pair("deepum", 2, config)
    for blocks in ([3], [0], None, [3], [0], None, [3], [1], [0], None, [3]):
        if blocks is None:  # an iteration ends
            assert pair.spec.next_iteration() == pair.native.next_iteration()
        else:
            pair.launch(0, blocks)
    assert pair.spec.host_mapped(3) and pair.native.host_mapped(3)
    pair.wake([3])
    assert pair.spec.host_mapped(3) and pair.native.host_mapped(3)
    assert not pair.spec.resident(3) and not pair.native.resident(3)


def test_a_block_that_is_not_memory_now_is_neither_mapped_nor_prefetched():
    """As after a warm start, whose state names blocks this run has not allocated yet: block 5 (used
    briefly last iteration) is not memory at the next iteration's start, so only block 4 is mapped;
    once memory again, 5 is mapped at the start after that."""
    pair = _both("deepum", 3, host_map_uses=2, host_map_span_percent=20)
    _teach(pair, BRIEF, times=1)
    pair.set_absent(5, True)
    moves = _launches(pair, BRIEF[:2])
    assert ("map_host", 4) in moves and ("map_host", 5) not in moves
    for exec_id, blocks in BRIEF[2:]:
        _, moves = pair.launch(exec_id, [b for b in blocks if b != 5])
        assert ("prefetch", 5) not in moves and ("populate", 5) not in moves
    pair.spec.next_iteration()
    pair.native.next_iteration()
    pair.set_absent(5, False)
    _teach(pair, BRIEF, times=1)
    assert ("map_host", 5) in _launches(pair, BRIEF[:2])


# A run's first iteration: the optimizer's state (blocks 4 and 5) is allocated and initialized in it
# (exec IDs 30 and 31) before its update, so neither is used briefly there.
FIRST = BRIEF[:6] + [(30, [4]), (31, [5])] + BRIEF[8:]


@pytest.mark.parametrize("foreign", [False, True])
def test_a_kept_warm_start_maps_the_blocks_its_state_had_mapped_a_start_earlier_than_a_cold_run(foreign):
    """The state names the blocks mapped when it was saved (4 and 5); the new run's first iteration
    does not show them as brief, so a cold run maps nothing at the next start, a kept warm start maps
    them there, and a state still on trial (foreign exec IDs) maps nothing of its own."""
    config = dict(host_map_uses=2, host_map_span_percent=20, host_map_indexed=False)
    learned = _both("deepum", 3, **config)
    _teach(learned, BRIEF, times=2)
    state = learned.native.save_state()
    assert learned.spec.save_state() == state
    first = [(exec_id + 100, blocks) for exec_id, blocks in FIRST] if foreign else FIRST
    starts = {}
    for name in ("cold", "warm"):
        pair = _both("deepum", 3, **config)
        if name == "warm":
            pair.spec.load_state(state)
            pair.native.load_state(state)
        _launch_all(pair, first)
        starts[name] = [m for m in _launches(pair, BRIEF[:2]) if m[0] == "map_host" and m[1] in (4, 5)]
        assert pair.spec.save_state() == pair.native.save_state()
    assert starts["cold"] == []
    assert starts["warm"] == ([] if foreign else [("map_host", 4), ("map_host", 5)])


# As BRIEF, but the optimizer's state (4 and 5) is gone over in two passes, each beside a block used
# throughout (0, then 1), with a launch over block 0 between them: two other blocks are used within the
# state's span. In ONE_PASS the two launches over the state follow each other: one pass.
BESIDE = BRIEF[:8] + [(28, [4, 5, 0]), (30, [0]), (29, [4, 5, 1])]
ONE_PASS = BRIEF[:8] + [(28, [4, 5, 0]), (29, [4, 5, 1])]


@pytest.mark.parametrize("program, capacity, least, kept", [
    (BESIDE, 3, 2, {4}), (BESIDE, 4, 2, {4, 5}), (BESIDE, 4, 3, set()), (BESIDE, 4, 0, set()),
    (ONE_PASS, 4, 2, set()), (ONE_PASS, 4, 1, {4, 5})])
def test_a_block_host_mapping_chose_stays_migrated_where_it_has_the_passes_and_the_room(program, capacity, least,
                                                                                      kept):
    """With host_map_keep_uses 2, blocks 4 and 5 (two passes each) stay migrated as far as the capacity
    holds them beside blocks 0 and 1: one (the lower) in three blocks, both in four; the others are
    mapped. With 3, or 0, both are mapped. Gone over in one pass of two launches, they stay migrated
    with 1, not with 2."""
    pair = _both("deepum", capacity, host_map_uses=2, host_map_span_percent=30, host_map_keep_uses=least)
    _teach(pair, program, times=2)
    moves = _launch_all(pair, program)
    for block in (4, 5):
        assert pair.spec.host_mapped(block) == pair.native.host_mapped(block) == (block not in kept)
        migrated = {m for m in moves if m[1] == block and m[0] in ("demand", "prefetch", "populate")}
        assert bool(migrated) == (block in kept), (block, moves)


def test_nothing_is_mapped_from_the_host_without_pressure_or_with_the_knob_at_zero():
    roomy = _both("deepum", 6, host_map_uses=2, host_map_span_percent=20)
    off = _both("deepum", 3, host_map_uses=0)
    for pair in (roomy, off):
        _teach(pair, BRIEF, times=2)
        _, moves = pair.launch(*BRIEF[0])
        assert not [m for m in moves if m[0].startswith("map_")]


# ----------------------------------------------------------------------------------- repeated plans
STEADY = [(1, [0, 1]), (2, [2, 3]), (3, [4, 5]), (4, [6, 7]), (5, [0, 2]), (6, [8, 9]), (7, [0, 1, 4])]


def _run_iterations(pair: Pair, programs, count: int) -> tuple[list[list], list[int]]:
    """`count` iterations taking `programs` in turn: each iteration's moves per launch, and the launches
    repeated so far after each (both the spec's and the native core's)."""
    moves, repeated = [], []
    for i in range(count):
        moves.append([pair.launch(exec_id, blocks)[1] for exec_id, blocks in programs[i % len(programs)]])
        assert pair.spec.next_iteration() == pair.native.next_iteration()
        assert pair.spec.repeated_launches == pair.native.repeated_launches
        repeated.append(pair.native.repeated_launches)
    return moves, repeated


def _repeating_pair(**config) -> Pair:
    return _both("deepum", 4, eviction="next_use", lookahead=2, confident_hits=0, **config)


@pytest.mark.parametrize("programs", [[STEADY], [STEADY, [(10 + e, b[::-1]) for e, b in STEADY]],
                                      [STEADY, [(10 + e, b[::-1]) for e, b in STEADY], [(20 + e, b) for e, b in STEADY]]],
                         ids=["every iteration alike", "iterations alternating", "iterations in a cycle of three"])
def test_repeated_plans_decide_steady_iterations_as_in_full_without_the_predictors_work(programs):
    full = _repeating_pair(repeat_plans_percent=0)
    in_full, _ = _run_iterations(full, programs, 15)
    pair = _repeating_pair(repeat_plans_percent=100)
    repeating, repeated = _run_iterations(pair, programs, 15)
    assert repeating == in_full
    assert repeated[-1] >= 2 * len(STEADY), repeated  # the last iterations are all repeated
    assert repeated[-1] - repeated[-2] == len(STEADY)
    assert pair.native.kernel_hits < full.native.kernel_hits  # the predictor sat the repeated launches out


def test_a_plan_decided_in_an_iteration_off_its_cycle_is_not_repeated():
    """Iterations alternate P and Q, but the third Q launched other kernels at four of its seven places
    (as a step whose tensors the caching allocator placed elsewhere). The P after it is alike the P
    before, yet the off-cycle Q is not alike the Q before it, so its plan is not repeated for the next Q
    (which would then carry the off-cycle plan over for good): the iterations are decided in full until
    both halves of the cycle have settled, and repeated iterations decide as in full."""
    q = [(10 + e, b[::-1]) for e, b in STEADY]
    off_cycle = [(30 + e, b) if place in (1, 3, 4, 6) else (e, b) for place, (e, b) in enumerate(q)]
    iterations = [STEADY, q, STEADY, q, STEADY, off_cycle] + [STEADY, q] * 4
    full, repeating = _repeating_pair(repeat_plans_percent=0), _repeating_pair(repeat_plans_percent=50)
    for programs in iterations:
        in_full = [full.launch(exec_id, blocks)[1] for exec_id, blocks in programs]
        assert [repeating.launch(exec_id, blocks)[1] for exec_id, blocks in programs] == in_full
        for pair in (full, repeating):
            assert pair.spec.next_iteration() == pair.native.next_iteration()
    assert repeating.spec.repeated_launches == repeating.native.repeated_launches
    assert repeating.native.repeated_launches == 4 * len(STEADY)  # the last four, once P and Q have settled


def test_a_launch_off_the_repeated_iteration_still_makes_the_remembered_moves_and_the_next_iteration_is_decided_in_full():
    pair = _repeating_pair(repeat_plans_percent=100)
    _, repeated = _run_iterations(pair, [STEADY], 8)
    before = repeated[-1]
    assert before > 0
    for exec_id, blocks in STEADY[:2]:
        pair.launch(exec_id, blocks)
    assert pair.native.repeated_launches == before + 2
    _, moves = pair.launch(99, STEADY[2][1])  # another kernel than the one remembered here, on its blocks
    assert moves == [("evict", 3), ("prefetch", 6)]  # the moves remembered at this place
    assert pair.native.repeated_launches == before + 2
    for exec_id, blocks in STEADY[3:]:
        pair.launch(exec_id, blocks)
    assert pair.spec.next_iteration() == pair.native.next_iteration()
    during = pair.native.repeated_launches
    _run_iterations(pair, [STEADY], 1)  # one place of seven differed: at 100 percent, not repeated
    assert pair.native.repeated_launches == during


def test_a_launch_past_the_remembered_ones_only_demands_its_blocks_and_keeps_the_capacity():
    pair = _repeating_pair(repeat_plans_percent=100)
    _run_iterations(pair, [STEADY], 8)
    for exec_id, blocks in STEADY:
        pair.launch(exec_id, blocks)
    _, moves = pair.launch(99, [3, 9])  # an eighth launch: the remembered iteration has seven
    assert ("demand", 9) in moves and {move for move, _ in moves} <= {"demand", "evict", "discard"}


def test_a_repeated_eviction_moves_without_a_copy_where_its_block_is_dead_now():
    pair = _repeating_pair(repeat_plans_percent=100)
    _run_iterations(pair, [STEADY], 8)
    before = pair.native.repeated_launches
    pair.launch(*STEADY[0])
    pair.set_dead(1, True)  # the next launch's remembered plan evicts block 1
    _, moves = pair.launch(*STEADY[1])
    assert ("discard", 1) in moves and ("evict", 1) not in moves
    assert pair.native.repeated_launches == before + 2


def test_a_remembered_move_that_no_longer_applies_is_left_out_and_the_rest_made():
    pair = _repeating_pair(repeat_plans_percent=100)
    _run_iterations(pair, [STEADY], 8)
    before = pair.native.repeated_launches
    pair.launch(*STEADY[0])
    pair.set_absent(5, True)  # the next launch's remembered plan prefetches block 5, no longer memory
    pair.spec.release(5)
    pair.native.release(5)
    _, moves = pair.launch(*STEADY[1])  # remembered: demand 3, evict 1 and 0, prefetch 5
    assert moves == [("demand", 3), ("evict", 1), ("evict", 0)]
    assert pair.native.repeated_launches == before + 2


def test_a_repeated_launch_demands_its_block_that_left_since():
    pair = _repeating_pair(repeat_plans_percent=100)
    _run_iterations(pair, [STEADY], 8)
    before = pair.native.repeated_launches
    for absent in (True, False):  # block 0's segment freed, and memory again
        if absent:
            pair.spec.release(0)
            pair.native.release(0)
        pair.set_absent(0, absent)
    _, moves = pair.launch(*STEADY[0])  # its remembered plan moves nothing
    assert moves[0] == ("demand", 0) and {move for move, _ in moves[1:]} <= {"evict", "discard"}
    assert pair.native.repeated_launches == before + 1


def test_a_repeated_plan_carries_over_whole_when_one_of_its_moves_could_not_be_made():
    pair = _repeating_pair(repeat_plans_percent=50)
    _run_iterations(pair, [STEADY], 8)
    pair.launch(*STEADY[0])
    pair.spec.release(5)  # block 5's segment freed: the remembered prefetch of block 5 cannot be made
    pair.native.release(5)
    pair.set_absent(5, True)
    _, moves = pair.launch(*STEADY[1])
    assert moves == [("demand", 3), ("evict", 1), ("evict", 0)]
    pair.set_absent(5, False)  # memory again before the launch that uses it
    for exec_id, blocks in STEADY[2:]:
        pair.launch(exec_id, blocks)
    assert pair.spec.next_iteration() == pair.native.next_iteration()
    before = pair.native.repeated_launches
    pair.launch(*STEADY[0])
    _, moves = pair.launch(*STEADY[1])  # the next iteration repeats the whole plan, prefetch of 5 included
    assert moves == [("demand", 3), ("evict", 1), ("evict", 0), ("prefetch", 5)]
    assert pair.native.repeated_launches == before + 2


# Two programs that share their first two kernels, taken in turn, on a GPU of three blocks.
PROGRAM_A = [(10, [0]), (11, [1]), (12, [2]), (13, [3]), (14, [4])]
PROGRAM_B = [(10, [0]), (11, [1]), (15, [5]), (16, [6]), (17, [7])]


def _alternating_moves(far_prefetches: str | None) -> list[tuple[str, int]]:
    """The moves of an A and a B iteration after three learned rounds of both, with next-use foresight
    following the iteration two back (the same program) and a window of two kernels; far_prefetches
    None: DeepUMConfig's default."""
    setting = {} if far_prefetches is None else {"far_prefetches": far_prefetches}
    pair = _both("deepum", 3, eviction="next_use", lookahead=2, confident_hits=0, foresight_iterations=2,
                 **setting)
    for _ in range(3):
        _teach(pair, PROGRAM_A, times=1)
        _teach(pair, PROGRAM_B, times=1)
    return _launch_all(pair, PROGRAM_A) + _launch_all(pair, PROGRAM_B)


@pytest.mark.parametrize("far_prefetches", ["dead_only", "skip"])
def test_blocks_needed_only_beyond_the_window_take_no_live_blocks_place(far_prefetches):
    """After the shared kernels the window follows the program the tables saw last, whose blocks
    foresight (from the same program two iterations back) needs only in the next iteration. Prefetched
    as any other ('evict'), they push out the next blocks in turn, block 0 too, which every iteration
    starts with; held back, the branch's first blocks (2 and 5) come on demand, block 0 never leaves,
    and fewer blocks come in."""
    evicting = _alternating_moves("evict")
    held = _alternating_moves(far_prefetches)
    came_in = lambda moves: sum(move in ("prefetch", "populate", "demand") for move, _ in moves)  # noqa: E731
    assert ("evict", 0) in evicting and not any(move == "demand" for move, _ in evicting)
    assert ("evict", 0) not in held
    assert {2, 5} <= {b for move, b in held if move == "demand"}
    assert came_in(held) == 8 < came_in(evicting) == 10


def test_by_default_a_block_needed_only_beyond_the_window_takes_only_a_dead_blocks_place():
    """The default holds such blocks back as 'dead_only' does: no live block leaves for them."""
    assert _alternating_moves(None) == _alternating_moves("dead_only") != _alternating_moves("evict")
