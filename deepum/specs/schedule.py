"""The schedule: the readable specification of driver_hooks/schedule.hpp, which the policy core follows
(DeepUMConfig.schedule) in the simulator and the online engine alike.

Training repeats its iterations, so the launches of an earlier one (each launch's execution ID and the
blocks it used, as the policy recorded them) foretell the next. The schedule remembers the last
`remembered` iterations (DeepUMConfig.foresight_iterations). At an iteration's first launch it plans the
iteration from the latest remembered one whose first launch had the same execution ID (the caching
allocator may alternate addresses, and so execution IDs, from one step to the next; bucketed shapes
repeat a cycle back), followed by the iteration that came after that one (the last is followed by
itself): Belady's MIN over those launches from the blocks resident now, under the capacity, moves the
fewest blocks. MIN takes the launches in order and, for each block a launch uses that is not resident,
gives up the resident block whose next use comes last (ties: the lowest block number; a block not used
again goes first), or takes a free slot while there is one. MIN runs on for min(ahead, length of the
follower) launches into the follower, so that the end of one iteration prefetches for the start of the
next.

Each of MIN's fetches becomes a move: the block fetched for the launch at position `need` (launches
counted from the iteration's first), with its victim (None for a free slot), made at position
k = max(the victim's last use before `need` + 1, need - ahead) (a free slot: max(0, need - ahead)). The
victim is idle from its last use on, so the swap can be made as early as the launch after it; `ahead`
(DeepUMConfig.schedule_ahead) bounds how far ahead of its need a block arrives. A move made at k < need
is a prefetch; at k == need the block comes on demand and only the eviction is planned. Only moves made
within the iteration (k < n) are kept.

The policy follows the plan while the iteration's launches match the planned ones, position by
position, by execution ID; from the first launch that does not, it falls back to the correlation tables
for the rest of the iteration. The record is bounded: an iteration that uses more than `max_accesses`
blocks (counted once per launch that uses them; DeepUMConfig.schedule_accesses) is remembered empty,
and no plan is made from it.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Iterable, NamedTuple

from .warm_state import StateReader, StateWriter

NEVER = 2**64 - 1
"""Next use of a block that the planned launches do not use again."""


class Move(NamedTuple):
    victim: int | None  # the block given up at this launch (None: a free slot)
    block: int          # the block fetched for a later launch (lead > 0) or this one (lead 0, on demand)
    lead: int           # launches from this one to the one that needs `block`


class _Iteration(NamedTuple):
    execs: list[int]                # execution IDs of its launches, in order (empty: not recorded)
    blocks: list[tuple[int, ...]]   # the blocks of each


class Schedule:
    """Records iterations' launches and plans each iteration from a remembered one; blocks are any
    integers ordered as the caller's UM block numbers."""

    def __init__(self, capacity: int, ahead: int, max_accesses: int, remembered: int = 1):
        if min(capacity, ahead, max_accesses, remembered) < 1:
            raise ValueError("capacity, ahead, max_accesses and remembered must be at least 1")
        self._capacity, self._ahead, self._max_accesses = capacity, ahead, max_accesses
        self._remembered = remembered
        self._history: list[_Iteration] = []      # the remembered iterations, oldest first
        self._recording = _Iteration([], [])
        self._accesses = 0
        self._overflowed = False
        self._plan_execs: list[int] = []          # the launches the plan is for
        self._steps: dict[int, list[Move]] = {}   # position -> its moves, by (lead, block)
        self._position = 0                        # of the next launch in this iteration
        self._following = False                   # every launch of this iteration so far matched the plan

    def launch(self, exec_id: int, blocks: Iterable[int], resident: Iterable[int]) -> list[Move] | None:
        """A kernel launches using `blocks`, with the blocks `resident` before its decisions: it is
        recorded; returns the plan's moves for it (possibly none) while the iteration follows the plan,
        else None. The iteration's first launch makes the plan."""
        blocks = tuple(blocks)
        position, self._position = self._position, self._position + 1
        if position == 0:
            self._make_plan(exec_id, set(resident))
        self._record(exec_id, blocks)
        self._following = (self._following and position < len(self._plan_execs)
                           and self._plan_execs[position] == exec_id)
        return self._steps.get(position, []) if self._following else None

    def start_iteration(self) -> None:
        """The iteration recorded so far ends and is remembered; the next launch is an iteration's first."""
        self._history.append(_Iteration([], []) if self._overflowed else self._recording)
        del self._history[:-self._remembered]
        self._recording, self._accesses, self._overflowed = _Iteration([], []), 0, False
        self._position = 0

    def save(self, w: StateWriter) -> None:
        """The learned state: the remembered iterations, oldest first, each as its launches (none: not
        recorded), each launch's execution ID and its blocks in launch order."""
        w.word(len(self._history))
        for iteration in self._history:
            w.word(len(iteration.execs))
            for exec_id, blocks in zip(iteration.execs, iteration.blocks):
                w.word(exec_id)
                w.sequence(blocks)

    def load(self, r: StateReader) -> None:
        """Into a schedule that has seen no launch."""
        for _ in range(r.count(self._remembered, 1, "remembered iterations")):
            iteration, accesses = _Iteration([], []), 0
            for _ in range(r.count(None, 2, "launches")):
                iteration.execs.append(r.word())
                blocks = tuple(r.block() for _ in range(r.count(self._max_accesses - accesses, 1, "block uses")))
                accesses += len(blocks)
                iteration.blocks.append(blocks)
            self._history.append(iteration)

    def _record(self, exec_id: int, blocks: tuple[int, ...]) -> None:
        if self._overflowed:
            return
        if self._accesses + len(blocks) > self._max_accesses:
            self._overflowed = True
            self._recording = _Iteration([], [])
            return
        self._accesses += len(blocks)
        self._recording.execs.append(exec_id)
        self._recording.blocks.append(blocks)

    def _make_plan(self, exec_id: int, resident: set[int]) -> None:
        self._plan_execs, self._steps, self._following = [], {}, False
        for at in reversed(range(len(self._history))):
            chosen = self._history[at]
            if chosen.execs and chosen.execs[0] == exec_id:
                follower = self._history[at + 1] if at + 1 < len(self._history) else chosen
                self._steps = self._plan(chosen.blocks, follower.blocks, resident)
                self._plan_execs, self._following = chosen.execs, True
                return

    def _plan(self, planned: list[tuple[int, ...]], follower: list[tuple[int, ...]],
              resident: set[int]) -> dict[int, list[Move]]:
        n = len(planned)
        launches = planned + follower
        uses: dict[int, list[int]] = defaultdict(list)
        for position, blocks in enumerate(launches):
            for b in blocks:
                uses[b].append(position)

        def next_use(b: int, position: int) -> int:
            positions = uses.get(b, [])
            at = bisect.bisect_right(positions, position)
            return positions[at] if at < len(positions) else NEVER

        next_of = {b: next_use(b, -1) for b in resident}
        last_of = {b: -1 for b in resident}
        steps: dict[int, list[Move]] = defaultdict(list)
        for need in range(n + min(self._ahead, len(follower))):
            blocks = launches[need]
            for b in blocks:
                if b in next_of:
                    continue
                candidates = [v for v in next_of if next_of[v] > need]
                full = len(next_of) >= self._capacity
                victim = max(candidates, key=lambda v: (next_of[v], -v)) if full and candidates else None
                if victim is None:
                    at = need if full else max(0, need - self._ahead)
                else:
                    at = max(last_of[victim] + 1, need - self._ahead)
                    del next_of[victim], last_of[victim]
                next_of[b] = need
                if at < n and (victim is not None or at < need):
                    steps[at].append(Move(victim, b, need - at))
            for b in blocks:
                last_of[b], next_of[b] = need, next_use(b, need)
        return {at: sorted(moves, key=lambda m: (m.lead, m.block)) for at, moves in steps.items()}
