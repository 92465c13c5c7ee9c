"""The online engine's memory map (driver_hooks/memory_map.hpp, bound as deepum._native.MemoryMap with
integer streams and discard events) against a plain reference model.

The property that matters: a discard (a move without a copy) is never issued on memory that is live,
nor on memory handed out again after the discard was chosen, nor before every stream that may still
use the memory is done (the choice names them); and an allocation in a block whose issued discard may
still be running waits for it. The worker issues taken discards without the lock: allocations elsewhere
go on meanwhile, and one in a block being issued is held until the discard's event exists. Handed to
discard threads instead, a choice is taken at hand-over and allocations wait for their progress. Two past
silent data corruptions came from this logic.

Portable numbering (a process-independent name for each block: segments laid out in the order they
were allocated) is checked against the model after every step, and across two layouts of the same
segments. While no engine is awake the map answers that nothing is dead and no address is allocated,
and records no fresh blocks; waking it restores every answer."""
from __future__ import annotations

import dataclasses
import threading

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from deepum._native import BLOCK_BYTES, MemoryMap

BASE_BLOCK = 512               # the model's memory starts at block 512 (1 GiB): no allocation at address 0
BLOCKS = 6                     # blocks BASE_BLOCK .. BASE_BLOCK + BLOCKS - 1
UNIT = BLOCK_BYTES // 4        # segments and allocations start on 512 KiB units: blocks are shared and cut
UNITS = BLOCKS * 4
BASE = BASE_BLOCK * BLOCK_BYTES


def address(unit: int) -> int:
    return BASE + unit * UNIT


def blocks_of(addr: int, size: int) -> range:
    return range(addr // BLOCK_BYTES, (addr + size - 1) // BLOCK_BYTES + 1)


@dataclasses.dataclass
class Choice:
    block: int
    ticket: int
    made_after: int  # allocations made when it was chosen (the model's own count)


class Model:
    """What the memory map must know, kept the plain way."""

    def __init__(self):
        self.segments: dict[int, int] = {}        # start -> size
        self.live: dict[int, tuple[int, int, int]] = {}  # start -> (size, allocation number, stream)
        self.last_users: dict[int, set[int]] = {}   # block -> allocation streams of the frees in it
        self.allocations = 0
        self.last_allocation_in: dict[int, int] = {}  # block -> number of the latest allocation touching it
        self.issued: dict[int, int] = {}            # block -> event of its latest issued discard nobody waited on
        self.completed: set[int] = set()            # events of discards that have returned
        self.cancelled = 0
        self.waits = 0
        self.released: list[int] = []               # portable numbers of released blocks
        self.place: dict[int, int] = {}             # live segment start -> portable number of its first block
        self.next_place = 0

    def place_segment(self, start: int, size: int):
        self.segments[start] = size
        self.place[start] = self.next_place
        self.next_place += -(-size // BLOCK_BYTES) + 1

    def numbering_segment(self, block: int) -> int | None:
        """The segment holding the block's lowest managed byte (None: no managed byte)."""
        lo, hi = block * BLOCK_BYTES, (block + 1) * BLOCK_BYTES
        overlapping = [s for s, n in self.segments.items() if s < hi and lo < s + n]
        return min(overlapping, key=lambda s: max(s, lo)) if overlapping else None

    def portable(self, block: int) -> int:
        segment = self.numbering_segment(block)
        return -1 if segment is None else self.place[segment] + block - segment // BLOCK_BYTES

    def dead(self, block: int) -> bool:
        lo, hi = block * BLOCK_BYTES, (block + 1) * BLOCK_BYTES
        inside = any(start <= lo and hi <= start + size for start, size in self.segments.items())
        overlapped = any(start < hi and lo < start + size for start, (size, _, _) in self.live.items())
        return inside and not overlapped

    def allocated_since(self, choice: Choice) -> bool:
        return self.last_allocation_in.get(choice.block, 0) > choice.made_after

    def holding(self, pointer: int) -> tuple[int, int]:
        for start, (size, _, _) in self.live.items():
            if start <= pointer < start + size:
                return start, size
        return 0, 0


class MemoryMapMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.map = MemoryMap()
        self.map.track_releases(True)  # as while an engine runs
        self.awake = True
        self.fresh: set[int] = set()   # blocks allocated in since the last take_fresh, while awake
        self.model = Model()
        self.held: list[Choice] = []   # choices the engine made that the worker has not taken
        self.batch_open = False        # the worker has taken choices and is issuing them (without the lock)
        self.taken: list[int] = []     # blocks taken in the open batch, to be issued
        self.next_event = 1

    # -- helpers -------------------------------------------------------------------------------
    def segment_units(self) -> set[int]:
        return {u for start, size in self.model.segments.items()
                for u in range((start - BASE) // UNIT, (start - BASE + size) // UNIT)}

    def live_units(self) -> set[int]:
        return {u for start, (size, _, _) in self.model.live.items()
                for u in range((start - BASE) // UNIT, (start - BASE + size + UNIT - 1) // UNIT)}

    def free_units_in_segments(self) -> list[int]:
        return sorted(self.segment_units() - self.live_units())

    def empty_segments(self) -> list[int]:
        return [start for start, size in self.model.segments.items()
                if not any(start <= a < start + size for a in self.model.live)]

    def segment_of(self, unit: int) -> tuple[int, int]:
        a = address(unit)
        return next((s, n) for s, n in self.model.segments.items() if s <= a < s + n)

    # -- the caching allocator -----------------------------------------------------------------
    @precondition(lambda self: not self.batch_open and len(self.model.segments) < 3
                  and len(self.segment_units()) < UNITS)
    @rule(data=st.data())
    def segment_alloc(self, data):
        taken = self.segment_units()
        free = sorted(set(range(UNITS)) - taken)
        block_starts = [u for u in free if u % 4 == 0]
        first = data.draw(st.sampled_from(block_starts) if block_starts and data.draw(st.booleans(), label="aligned")
                          else st.sampled_from(free), label="first unit")
        room = next((u for u in range(first, UNITS) if u in taken), UNITS) - first
        whole_blocks = [n for n in (4, 8, 12) if n <= room]
        any_size = st.integers(1, min(room, 12))
        units = data.draw(st.one_of(st.sampled_from(whole_blocks), any_size) if whole_blocks else any_size,
                          label="units")
        note(f"segment alloc [{address(first):#x}, +{units} units)")
        self.map.on_segment_alloc(address(first), units * UNIT)
        self.model.place_segment(address(first), units * UNIT)

    @precondition(lambda self: not self.batch_open and self.empty_segments())
    @rule(data=st.data())
    def segment_free(self, data):
        start = data.draw(st.sampled_from(self.empty_segments()), label="segment")
        size = self.model.segments[start]
        note(f"segment free {start:#x}")
        self.map.on_segment_free(start, size)
        for b in blocks_of(start, size):  # the free waits for all work: whole blocks have no users left
            if start <= b * BLOCK_BYTES and (b + 1) * BLOCK_BYTES <= start + size:
                self.model.last_users.pop(b, None)
        self.model.released.extend(self.model.portable(b) for b in blocks_of(start, size)
                                   if self.model.numbering_segment(b) == start)
        del self.model.segments[start], self.model.place[start]

    @precondition(lambda self: self.free_units_in_segments())
    @rule(data=st.data())
    def alloc(self, data):
        free = self.free_units_in_segments()
        watched = {c.block for c in self.held} | set(self.model.issued)  # where cancellations and waits happen
        near = [u for u in free if address(u) // BLOCK_BYTES in watched]
        first = data.draw(st.sampled_from(near) if near and data.draw(st.booleans(), label="near a discard")
                          else st.sampled_from(free), label="first unit")
        seg_start, seg_size = self.segment_of(first)
        room = 0
        while first + room in free and address(first + room) < seg_start + seg_size:
            room += 1
        units = data.draw(st.integers(1, min(room, 6)), label="units")
        size = units * UNIT - data.draw(st.sampled_from([0, 4096, UNIT // 2]), label="short by")
        stream = data.draw(st.integers(0, 2), label="stream")
        addr = address(first)
        assume(not set(blocks_of(addr, size)) & set(self.taken))  # that one is held: a worked test below
        model = self.model
        model.allocations += 1
        expected_waits = []
        for b in blocks_of(addr, size):
            if b in model.issued:
                event = model.issued.pop(b)  # waited for, or returned: later allocations need no wait
                if event not in model.completed:
                    expected_waits.append((stream, event))
            if any(c.block == b for c in self.held):
                model.cancelled += 1
            model.last_allocation_in[b] = model.allocations
        model.waits += len(expected_waits)
        model.live[addr] = (size, model.allocations, stream)
        if self.awake:
            self.fresh.update(blocks_of(addr, size))
        note(f"alloc #{model.allocations} [{addr:#x}, +{size:#x}) on stream {stream}; waits {expected_waits}")
        assert self.map.on_alloc(addr, size, stream) is True
        assert self.map.take_waits() == expected_waits
        assert self.map.born(addr) == model.allocations

    @precondition(lambda self: self.model.live)
    @rule(data=st.data())
    def free_completed(self, data):
        addr = data.draw(st.sampled_from(sorted(self.model.live)), label="allocation")
        note(f"free completed {addr:#x}")
        assert self.map.on_free_completed(addr) is True
        size, _, stream = self.model.live.pop(addr)
        for b in blocks_of(addr, size):
            self.model.last_users.setdefault(b, set()).add(stream)
        self.map.on_free_completed(addr)
        assert self.map.born(addr) == 0

    # -- the engine chooses, the worker takes and issues ---------------------------------------
    def dead_blocks(self) -> list[int]:
        return [b for b in range(BASE_BLOCK, BASE_BLOCK + BLOCKS) if self.model.dead(b)]

    @precondition(lambda self: self.awake and self.dead_blocks())
    @rule(data=st.data())
    def choose_discard(self, data):
        block = data.draw(st.sampled_from(self.dead_blocks()), label="block")
        ticket, users = self.map.choose_discard(block)
        note(f"choose discard of {block}: ticket {ticket}, after streams {users}")
        assert ticket == self.model.allocations
        assert len(users) == len(set(users)) and set(users) == self.model.last_users.get(block, set())
        self.held.append(Choice(block, ticket, self.model.allocations))

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def take_pending(self, data):
        choice = self.held.pop(data.draw(st.integers(0, len(self.held) - 1), label="choice"))
        self.batch_open = True
        taken = self.map.take_pending(choice.block, choice.ticket)
        note(f"take {choice}: {taken}")
        if taken:  # the property: never on live memory, never on memory handed out since the choice
            assert self.model.dead(choice.block), "discard taken on a block that holds live data"
            assert not self.model.allocated_since(choice), "discard taken after the memory was allocated again"
            self.taken.append(choice.block)
        assert taken == (self.model.dead(choice.block) and not self.model.allocated_since(choice))

    @precondition(lambda self: self.held and not self.batch_open)
    @rule(data=st.data())
    def take_handed(self, data):
        """Discard threads: the worker takes the choice as it hands the command over, and every
        allocation in the block from then on waits for the threads' progress reaching it."""
        choice = self.held.pop(data.draw(st.integers(0, len(self.held) - 1), label="choice"))
        event = self.next_event
        self.next_event += 1
        taken = self.map.take_handed(choice.block, choice.ticket, event)
        note(f"hand over {choice} with event {event}: {taken}")
        assert taken == (self.model.dead(choice.block) and not self.model.allocated_since(choice))
        if taken:
            self.model.issued[choice.block] = event

    @precondition(lambda self: self.batch_open)
    @rule()
    def discard_issued(self):
        event = self.next_event
        self.next_event += 1
        note(f"issue {self.taken} with event {event}")
        for b in self.taken:
            self.map.discard_finished(b, event)
            self.model.issued[b] = event
        self.taken.clear()
        self.batch_open = False

    @precondition(lambda self: set(self.model.issued.values()) - self.model.completed)
    @rule(data=st.data())
    def discard_returned(self, data):
        """A discard returns: an allocation in its block from then on makes no wait."""
        event = data.draw(st.sampled_from(sorted(set(self.model.issued.values()) - self.model.completed)), label="event")
        note(f"discard of event {event} returned")
        self.map.complete(event)
        self.model.completed.add(event)

    @precondition(lambda self: self.batch_open)
    @rule()
    def issue_failed(self):
        note(f"issuing {self.taken} failed: nothing issued")
        for b in self.taken:
            self.map.discard_finished(b, None)
        self.taken.clear()
        self.batch_open = False

    # -- the engine sleeps (only before it first wakes, or once stopped: nothing held) and wakes --
    @precondition(lambda self: self.awake and not self.held and not self.batch_open)
    @rule()
    def sleep(self):
        note("asleep")
        self.map.set_awake(False)
        self.awake = False

    @precondition(lambda self: not self.awake)
    @rule()
    def wake(self):
        note("awake")
        self.map.set_awake(True)
        self.awake = True

    @rule()
    def take_fresh(self):
        assert self.map.take_fresh() == sorted(self.fresh)
        self.fresh.clear()

    # -- the engine's other questions ----------------------------------------------------------
    @precondition(lambda self: self.model.released)
    @rule()
    def take_released(self):
        released = self.map.take_released()
        note(f"released {released}")
        assert released == self.model.released
        self.model.released.clear()

    @invariant()
    def dead_blocks_agree(self):
        for b in range(BASE_BLOCK, BASE_BLOCK + BLOCKS):
            assert self.map.dead(b) == (self.awake and self.model.dead(b)), f"block {b}"
            if not self.map.dead(b):  # nothing is chosen (nor queued) on a block that is not dead
                assert self.map.choose_discard(b) is None, f"block {b}"

    @invariant()
    def allocations_found_by_pointer(self):
        pointers = [0, BASE - 1, BASE + BLOCKS * BLOCK_BYTES, 2**64 - 1]  # below and past the memory too
        for start, (size, _, _) in self.model.live.items():
            pointers += [start - 1, start, start + size - 1, start + size]
        for pointer in pointers:
            expected = self.model.holding(pointer) if self.awake else (0, 0)
            assert tuple(self.map.allocation(pointer)) == expected, hex(pointer)

    @invariant()
    def portable_numbers_agree(self):
        for b in range(BASE_BLOCK - 1, BASE_BLOCK + BLOCKS + 1):
            p = self.model.portable(b)
            assert self.map.portable(b) == p, f"block {b}"
            if p >= 0:
                assert self.map.um_block(p) == b, f"portable {p}"
        live_places = {self.model.place[s] + i: b for s, n in self.model.segments.items()
                       for i, b in enumerate(blocks_of(s, n))}
        for p in range(self.model.next_place + 1):
            assert self.map.um_block(p) == live_places.get(p, -1), f"portable {p}"
        for start, size in self.model.segments.items():
            for pointer in (start, start + size - 1):
                expected = self.model.place[start] * BLOCK_BYTES + pointer - start
                assert self.map.portable_address(pointer) == expected, hex(pointer)

    @invariant()
    def counters_agree(self):
        assert self.map.allocations == self.model.allocations
        assert self.map.discards_cancelled == self.model.cancelled
        assert self.map.allocation_waits == self.model.waits
        assert self.map.allocation_holds == 0


MemoryMapMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None,
                                              suppress_health_check=[HealthCheck.too_slow])
TestMemoryMapMachine = MemoryMapMachine.TestCase


# -- worked examples ---------------------------------------------------------------------------
B = BASE_BLOCK


def block_address(block: int, offset: int = 0) -> int:
    return block * BLOCK_BYTES + offset


@pytest.fixture
def memory():
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), 4 * BLOCK_BYTES)  # blocks B .. B + 3
    return m


def ticket_of(memory, block: int) -> int:
    ticket, _users = memory.choose_discard(block)
    return ticket


def test_allocation_cancels_a_choice_made_before_it(memory):
    ticket = ticket_of(memory, B)
    memory.on_alloc(block_address(B, 4096), 4096, 1)
    memory.on_free_completed(block_address(B, 4096))
    assert memory.dead(B)  # dead again, but its memory was handed out since the choice
    assert memory.take_pending(B, ticket) is False
    assert memory.discards_cancelled == 1


def test_a_choice_made_after_the_allocation_stands(memory):
    memory.on_alloc(block_address(B), 4096, 1)
    memory.on_free_completed(block_address(B))
    ticket = ticket_of(memory, B)
    assert ticket == 1
    assert memory.take_pending(B, ticket) is True


def test_of_two_choices_only_the_one_after_the_allocation_stands(memory):
    early = ticket_of(memory, B)
    memory.on_alloc(block_address(B), 4096, 1)
    memory.on_free_completed(block_address(B))
    late = ticket_of(memory, B)
    assert memory.take_pending(B, early) is False
    assert memory.take_pending(B, late) is True


def test_an_allocation_waits_for_the_issued_discard_once(memory):
    ticket = ticket_of(memory, B + 1)
    assert memory.take_pending(B + 1, ticket)
    memory.discard_finished(B + 1, 7)
    memory.on_alloc(block_address(B + 1, 8192), 4096, 3)
    assert memory.take_waits() == [(3, 7)]
    memory.on_alloc(block_address(B + 1, 65536), 4096, 3)  # same stream: already ordered after it
    assert memory.take_waits() == []
    assert memory.allocation_waits == 1


def _alloc_in_thread(memory, addr: int, size: int, stream: int) -> threading.Thread:
    thread = threading.Thread(target=memory.on_alloc, args=(addr, size, stream), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("event", [9, None])
def test_an_allocation_in_a_block_being_issued_is_held_until_the_worker_is_done(memory, event):
    """The worker issues without the lock: an allocation in a block it has taken must not return
    before the discard's event exists (or the worker gave the discard up), then waits for it."""
    assert memory.take_pending(B + 1, ticket_of(memory, B + 1))
    memory.on_alloc(block_address(B + 2), 4096, 1)  # another block: not held
    held = _alloc_in_thread(memory, block_address(B + 1, 4096), 4096, 3)
    held.join(timeout=0.3)
    assert held.is_alive(), "the allocation returned while its block's discard was being issued"
    assert memory.take_waits() == []
    memory.discard_finished(B + 1, event)
    held.join(timeout=10)
    assert not held.is_alive()
    assert memory.take_waits() == ([(3, event)] if event is not None else [])
    assert memory.allocation_holds == 1


def test_a_handed_over_discard_is_waited_for_without_holding_the_allocation(memory):
    ticket = ticket_of(memory, B)
    assert memory.take_handed(B, ticket, 9) is True
    memory.on_alloc(block_address(B), 4096, 2)
    assert memory.take_waits() == [(2, 9)] and memory.allocation_holds == 0
    ticket = ticket_of(memory, B + 1)
    memory.on_alloc(block_address(B + 1), 4096, 2)  # the block is handed out again first: not taken
    memory.on_free_completed(block_address(B + 1))
    assert memory.take_handed(B + 1, ticket, 10) is False
    memory.on_alloc(block_address(B + 1, 8192), 4096, 2)
    assert memory.take_waits() == []


def test_an_allocation_across_blocks_waits_for_each_blocks_discard(memory):
    for block, event in ((B, 5), (B + 1, 6)):
        assert memory.take_pending(block, ticket_of(memory, block))
        memory.discard_finished(block, event)
    memory.on_alloc(block_address(B, BLOCK_BYTES - 4096), 8192, 2)
    assert memory.take_waits() == [(2, 5), (2, 6)]


def test_live_memory_is_never_chosen(memory):
    memory.on_alloc(block_address(B + 2, BLOCK_BYTES - 4096), 4096, 0)  # the last page of the block
    assert not memory.dead(B + 2)
    assert memory.choose_discard(B + 2) is None
    assert memory.dead(B + 3)


def test_a_block_a_segment_boundary_cuts_is_never_dead():
    m = MemoryMap()
    middle_of_b = block_address(B, BLOCK_BYTES // 2)
    m.on_segment_alloc(middle_of_b, BLOCK_BYTES)  # half of B, half of B + 1
    m.on_segment_alloc(block_address(B + 1, BLOCK_BYTES // 2), BLOCK_BYTES // 2)  # the rest of B + 1
    assert m.managed_part(B) == (middle_of_b, BLOCK_BYTES // 2, middle_of_b)
    assert not m.dead(B) and not m.dead(B + 1)
    assert m.choose_discard(B + 1) is None


def test_a_freed_segment_is_no_longer_dead_and_its_choice_is_not_taken(memory):
    ticket = ticket_of(memory, B)
    memory.on_segment_free(block_address(B), 4 * BLOCK_BYTES)
    assert memory.take_pending(B, ticket) is False
    assert memory.discards_cancelled == 0


def test_a_freed_segment_releases_the_blocks_it_covers():
    m = MemoryMap()
    m.track_releases(True)
    m.on_segment_alloc(block_address(B, BLOCK_BYTES // 2), 2 * BLOCK_BYTES)
    m.on_segment_free(block_address(B, BLOCK_BYTES // 2), 2 * BLOCK_BYTES)
    assert m.take_released() == [0, 1, 2]  # portable numbers
    assert m.take_released() == []


def test_the_blocks_allocations_were_made_in_are_taken_once_while_an_engine_runs():
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), 4 * BLOCK_BYTES)
    m.on_alloc(block_address(B), 100, 1)
    assert m.take_fresh() == []  # no engine: nothing queued
    m.track_releases(True)
    m.on_alloc(block_address(B + 1, BLOCK_BYTES // 2), BLOCK_BYTES, 1)  # spans blocks B+1 and B+2
    m.on_alloc(block_address(B + 1), 64, 1)
    m.on_alloc(block_address(B + 9), 64, 1)  # outside the segments: not tracked
    assert m.take_fresh() == [B + 1, B + 2]
    assert m.take_fresh() == []
    m.on_alloc(block_address(B + 3), 64, 1)
    m.track_releases(False)
    assert m.take_fresh() == []


@given(sizes=st.lists(st.integers(1, 5 * BLOCK_BYTES), min_size=1, max_size=5), aligned=st.booleans(),
       data=st.data())
@settings(max_examples=100, deadline=None)
def test_portable_names_do_not_depend_on_where_segments_lie(sizes, aligned, data):
    """Two processes allocate the same segments in the same order at unrelated addresses: every pointer
    gets the same portable address in both and, where segments start on block boundaries (managed
    allocations do), every block the same portable number."""
    gap = BLOCK_BYTES if aligned else 65536
    layouts = []
    for _ in range(2):
        m, starts, cursor = MemoryMap(), [], BASE
        for size in sizes:
            cursor += data.draw(st.integers(0 if starts else 1, 64), label="gap") * gap
            starts.append(cursor)
            m.on_segment_alloc(cursor, size)
            cursor = (cursor + size + BLOCK_BYTES - 1) // BLOCK_BYTES * BLOCK_BYTES if aligned else cursor + size
        layouts.append((m, starts))
    (m1, starts1), (m2, starts2) = layouts
    for size, s1, s2 in zip(sizes, starts1, starts2):
        for offset in (0, size // 2, size - 1):
            assert m1.portable_address(s1 + offset) == m2.portable_address(s2 + offset)
            if aligned:
                p1, p2 = m1.portable((s1 + offset) // BLOCK_BYTES), m2.portable((s2 + offset) // BLOCK_BYTES)
                assert p1 == p2 == m1.portable_address(s1 + offset) // BLOCK_BYTES


def test_a_segment_in_a_freed_segments_place_gets_new_portable_numbers():
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), 2 * BLOCK_BYTES)
    assert [m.portable(B), m.portable(B + 1)] == [0, 1]
    m.on_segment_free(block_address(B), 2 * BLOCK_BYTES)
    assert m.portable(B) == -1 and m.um_block(0) == -1
    m.on_segment_alloc(block_address(B), BLOCK_BYTES)
    assert m.portable(B) == 3 and m.um_block(3) == B and m.um_block(4) == -1


def test_a_segment_announced_again_at_the_same_start_is_placed_anew():
    """Its free was not seen: the later size holds, in a new place."""
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), BLOCK_BYTES)
    m.on_segment_alloc(block_address(B), 3 * BLOCK_BYTES)
    assert [m.portable(B + i) for i in range(3)] == [2, 3, 4]
    assert m.um_block(0) == -1 and m.um_block(4) == B + 2


def test_without_an_engine_freed_segments_are_not_queued():
    """Between engines nothing drains the queue: it must not grow."""
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), BLOCK_BYTES)
    m.on_segment_free(block_address(B), BLOCK_BYTES)
    assert m.take_released() == []
    m.track_releases(True)
    m.on_segment_alloc(block_address(B), BLOCK_BYTES)
    m.on_segment_free(block_address(B), BLOCK_BYTES)
    m.track_releases(False)
    assert m.take_released() == []


def test_contiguous_ranges_join_parts_of_one_segment_only():
    m = MemoryMap()
    m.on_segment_alloc(block_address(B), 2 * BLOCK_BYTES)
    m.on_segment_alloc(block_address(B + 2), BLOCK_BYTES)  # adjacent, but another segment
    assert m.contiguous_ranges([B, B + 1, B + 2, B + 5]) == [(block_address(B), 2 * BLOCK_BYTES),
                                                            (block_address(B + 2), BLOCK_BYTES)]


def test_a_discard_waits_for_the_streams_that_last_used_the_block(memory):
    """A tensor allocated on a side stream and freed there at once (its kernels may still be queued):
    a discard of its block chosen on another stream must also wait for the side stream."""
    side, other_side = 5, 6
    memory.on_alloc(block_address(B), 4096, side)
    memory.on_alloc(block_address(B, 8192), 4096, other_side)
    memory.on_free_completed(block_address(B))
    memory.on_free_completed(block_address(B, 8192))
    ticket, users = memory.choose_discard(B)
    assert sorted(users) == [side, other_side]
    assert memory.choose_discard(B + 1) == (ticket, [])  # untouched by either
    memory.on_segment_free(block_address(B), 4 * BLOCK_BYTES)  # the free waited for all work
    memory.on_segment_alloc(block_address(B), 4 * BLOCK_BYTES)
    assert memory.choose_discard(B)[1] == []


def test_allocations_outside_managed_segments_are_not_tracked(memory):
    """Other pools and devices: their allocations never enter the model, nor their segments' frees."""
    outside = block_address(B + 8)
    assert memory.on_alloc(outside, 4096, 0) is False
    assert memory.allocation(outside) == (0, 0) and memory.allocations == 0
    assert memory.on_free_completed(outside) is False
    memory.track_releases(True)
    memory.on_segment_free(outside, BLOCK_BYTES)
    assert memory.take_released() == []



def test_the_blocks_of_the_live_segments_are_what_the_engine_wakes_with():
    """Each block a live segment spans, once, ascending; a freed segment's blocks are gone, and only
    a managed segment's free says so."""
    memory, mib = MemoryMap(), 1 << 20
    memory.on_segment_alloc(6 * mib, 2 * mib)        # blocks 3
    memory.on_segment_alloc(mib, 2 * mib)            # blocks 0, 1
    memory.on_segment_alloc(3 * mib, 2 * mib)        # blocks 1, 2
    assert memory.segment_blocks() == [0, 1, 2, 3]
    assert memory.on_segment_free(mib, 2 * mib) is True
    assert memory.on_segment_free(40 * mib, 2 * mib) is False
    assert memory.segment_blocks() == [1, 2, 3]
