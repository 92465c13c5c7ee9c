"""Eviction by foreseen next use: the readable specification of driver_hooks/next_use.hpp, which the
simulator's deepum policy and the online engine use (DeepUMConfig.eviction = "next_use").

Training repeats its iterations, so the launches at which a block was used in an earlier iteration
foretell when it is used next. Not always the last iteration: with sequence lengths bucketed, the one
that repeats the current shapes may be two or more back. So the rule remembers the last `remembered`
iterations (DeepUMConfig.foresight_iterations) with the execution IDs of their launches, and foresees
from the most recent one whose launches so far match the current iteration's, launch by launch, by
execution ID; when none matches (routing that changes every step), from the last one.

A block used at positions u1 < u2 < ... of the iteration foreseen from (launches counted from the
iteration's first) is foreseen, at position p of the current one, at the first ui past p; past its last
use, at its first use in the iteration that followed the one foreseen from (the last iteration follows
itself), which is taken to start one foreseen-from length after the current one, or just past p if the
current iteration already ran longer. The victim is the resident block foreseen last: Belady's choice on
the foreseen future. Blocks foreseen nowhere go first, least recently arrived first. With remembered = 1
this is foresight from the last iteration alone.

A block's foreseen launch is taken when it arrives, when it is used while resident, at each iteration
start and whenever the iteration foreseen from changes, not at every launch: the native version keeps
blocks in a heap by that figure.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Callable

from .warm_state import StateReader, StateWriter, fail

UNFORESEEN = 2**64 - 1
"""Foreseen launch of a block that no iteration foreseen from uses."""


@dataclasses.dataclass
class _Block:
    uses: dict[int, list[int]] = dataclasses.field(default_factory=dict)  # remembered iteration -> positions
    now: list[int] = dataclasses.field(default_factory=list)              # positions of its uses, this iteration
    next_use: int = UNFORESEEN  # foreseen launch, as last taken
    age: int = 0                # number of its latest arrival
    queued: bool = False        # a candidate while resident (False once given up, until it arrives or is used)
    counted: list[int] = dataclasses.field(default_factory=list)       # this iteration's uses host mapping counts
    last_counted: list[int] = dataclasses.field(default_factory=list)  # the last ended iteration's


@dataclasses.dataclass
class _Iteration:
    execs: list[int]  # execution IDs of its launches, in order
    length: int       # launches from its first to the next iteration's first
    indexed: set[int] = dataclasses.field(default_factory=set)  # positions (as of uses) of its indexed launches


class NextUseEviction:
    """Foresees each block's next use and picks victims; launches are numbered by the caller in
    launch order (the simulator: kernel rows; the engine: 1, 2, ... across iterations)."""

    def __init__(self, remembered: int = 1):
        if remembered < 1:
            raise ValueError("at least one iteration is remembered")
        self._remembered = remembered
        self._blocks: dict[int, _Block] = {}
        self._history: dict[int, _Iteration] = {}  # the remembered iterations by number (0, 1, ...)
        self._iterations = 0   # iterations ended so far
        self._start = 0        # first launch of the current iteration
        self._execs: list[int] = []     # execution IDs of the current iteration's launches so far
        self._indexed: set[int] = set()  # positions of the current iteration's indexed launches so far
        self._matching: list[int] = []  # remembered iterations whose launches match those, latest first
        self._foreseen_from: int | None = None  # the iteration foreseen from (None: none ended yet)
        self._arrivals = 0

    def start_iteration(self, first: int) -> None:
        """The iteration starting at launch `first` begins; the one that ends is remembered."""
        ended = self._iterations
        self._history[ended] = _Iteration(self._execs, first - self._start, self._indexed)
        self._history.pop(ended - self._remembered, None)
        for block in self._blocks.values():
            block.uses[ended], block.now = block.now, []
            block.uses.pop(ended - self._remembered, None)
            block.last_counted, block.counted = block.counted, []
        self._iterations += 1
        self._start, self._execs, self._indexed = first, [], set()
        self._matching = sorted(self._history, reverse=True)
        self._foreseen_from = ended
        self._foresee_queued(first)

    def launch(self, launch: int, exec_id: int, indexed: bool) -> None:
        """A kernel with `exec_id` launches (before its uses), indexed or not
        (deepum.specs.indexed_kernels): iterations whose launch at this place of theirs had another
        execution ID no longer match; the latest that still does is foreseen from."""
        place = len(self._execs)
        self._execs.append(exec_id)
        if indexed:
            self._indexed.add(launch - self._start)
        self._matching = [i for i in self._matching
                          if place < len(self._history[i].execs) and self._history[i].execs[place] == exec_id]
        chosen = self._matching[0] if self._matching else self._iterations - 1
        if self._iterations and chosen != self._foreseen_from:
            self._foreseen_from = chosen
            self._foresee_queued(launch)

    def use(self, block: int, launch: int, resident: bool) -> None:
        """The kernel of `launch` uses `block`; a resident block is foreseen anew."""
        b = self._blocks.setdefault(block, _Block())
        position = launch - self._start
        if not b.now or b.now[-1] != position:
            b.now.append(position)
        if resident:
            b.next_use, b.queued = self._foresee(b, launch), True

    def count_use(self, block: int, launch: int, fresh: bool, fill: bool) -> None:
        """The use of `block` at `launch` as host mapping counts it: `fresh`, the block received memory
        allocated since the launch before, so the uses before are of other data and are dropped; a
        `fill` launch (deepum.specs.fill_kernels) initializes and is not counted."""
        b = self._blocks.setdefault(block, _Block())
        if fresh:
            b.counted = []
        position = launch - self._start
        if not fill and (not b.counted or b.counted[-1] != position):
            b.counted.append(position)

    def arrive(self, block: int, launch: int) -> None:
        """`block` became resident at `launch`."""
        b = self._blocks.setdefault(block, _Block())
        self._arrivals += 1
        b.age, b.next_use, b.queued = self._arrivals, self._foresee(b, launch), True

    def foresee(self, block: int, launch: int) -> int:
        """The launch at which `block` is foreseen to be used next, seen from `launch`."""
        b = self._blocks.get(block)
        return UNFORESEEN if b is None else self._foresee(b, launch)

    def save(self, w: StateWriter) -> None:
        """The learned state: the remembered iterations, oldest first, each with its length, the
        execution IDs of its launches, the positions of its indexed launches (ascending) and, for each
        block it used (ascending), its positions of use."""
        remembered = sorted(self._history)
        w.word(len(remembered))
        for i in remembered:
            iteration = self._history[i]
            w.word(iteration.length)
            w.sequence(iteration.execs)
            w.sequence(sorted(iteration.indexed))
            used = sorted((block, b.uses[i]) for block, b in self._blocks.items() if b.uses.get(i))
            w.word(len(used))
            for block, positions in used:
                w.word(block)
                w.sequence(positions)

    def load(self, r: StateReader) -> None:
        """Into a rule that has seen no launch."""
        n = r.count(self._remembered, 3, "remembered iterations")
        for i in range(n):
            length = r.word()
            execs = [r.word() for _ in range(r.count(None, 1, "launches"))]
            indexed = [r.word() for _ in range(r.count(None, 1, "indexed launches"))]
            if indexed != sorted(set(indexed)) or any(p >= length for p in indexed):
                fail("an iteration's indexed launches are not ascending positions within it")
            self._history[i] = _Iteration(execs, length, set(indexed))
            for _ in range(r.count(None, 3, "blocks")):
                b = self._blocks.setdefault(r.block(), _Block())
                if i in b.uses:
                    fail("a block appears twice in one iteration")
                positions = [r.word() for _ in range(r.count(None, 1, "uses"))]
                if any(p >= length or p > 2**32 - 1 for p in positions) or positions != sorted(set(positions)):
                    fail("a block's uses are not ascending within its iteration")
                b.uses[i] = positions
        self._iterations = n
        self._matching = sorted(self._history, reverse=True)
        self._foreseen_from = n - 1 if n else None
        for b in self._blocks.values():
            b.last_counted = list(b.uses.get(n - 1, []))

    def short_lived(self, most_uses: int, span_percent: int, indexed_any_span: bool) -> list[int]:
        """Blocks (ascending) the last ended iteration used in 1..`most_uses` launches, all within
        `span_percent` percent of its launches (the first to the last use, both counted), or, with
        `indexed_any_span`, all by indexed launches whatever their span. Uses as count_use counts them
        (of a loaded state's last iteration: all of them)."""
        if not self._iterations:
            return []
        ended = self._history[self._iterations - 1]
        chosen = []
        for block, b in self._blocks.items():
            uses = b.last_counted
            if not uses or len(uses) > most_uses:
                continue
            brief = (uses[-1] - uses[0] + 1) * 100 <= span_percent * ended.length
            if brief or (indexed_any_span and all(p in ended.indexed for p in uses)):
                chosen.append(block)
        return sorted(chosen)

    def passes(self, block: int) -> int:
        """The passes over `block` in the last ended iteration: the launches that used it, as
        short_lived counts them, a run of consecutive launches counted once (a kernel split over
        consecutive launches, as a multi-tensor kernel over a long tensor list is, goes over each part
        of the block once)."""
        uses = self._blocks[block].last_counted if block in self._blocks else []
        return sum(1 for i, p in enumerate(uses) if i == 0 or p != uses[i - 1] + 1)

    def used_beside(self, chosen: set[int]) -> int:
        """Blocks outside `chosen` that the last ended iteration used (as short_lived counts uses)
        within the span of `chosen`'s uses, from the first to the last, both counted; 0 where none
        of `chosen` was used."""
        uses = [self._blocks[block].last_counted for block in chosen if block in self._blocks]
        spans = [(u[0], u[-1]) for u in uses if u]
        if not spans:
            return 0
        first, last = min(s[0] for s in spans), max(s[1] for s in spans)
        return sum(1 for block, b in self._blocks.items()
                   if block not in chosen and any(first <= p <= last for p in b.last_counted))

    def remembered_exec_ids(self) -> set[int]:
        """Every execution ID of the remembered iterations."""
        return {exec_id for iteration in self._history.values() for exec_id in iteration.execs}

    def victim(self, launch: int, resident: Callable[[int], bool], may_go: Callable[[int], bool],
               dead: Callable[[int], bool], dead_search: int, need_at: int) -> int | None:
        """The resident block foreseen last (ties: least recently arrived) among those `may_go`
        allows; the first `dead` one among the first `dead_search` of them is preferred (it goes
        without a copy). need_at > 0: a prefetch for that launch, which gives up no block foreseen
        at or before it (None). The block chosen stops being a candidate. `launch` is the launch
        asking; within one launch, a block `may_go` refused must stay refused (the native version
        sets it aside until the next launch asks)."""
        candidates = sorted((b for b, s in self._blocks.items() if s.queued and resident(b)),
                            key=lambda b: (-self._blocks[b].next_use, self._blocks[b].age))
        allowed = [b for b in candidates if may_go(b)][:max(dead_search, 0)]
        if not allowed:
            return None
        chosen = next((b for b in allowed if dead(b)), allowed[0])
        if need_at > 0 and self._blocks[chosen].next_use <= need_at:
            return None
        self._blocks[chosen].queued = False
        return chosen

    def spare(self, block: int, launch: int) -> None:
        """The block victim() chose at `launch` stays resident: a candidate again."""
        b = self._blocks[block]
        b.queued, b.next_use = True, self._foresee(b, launch)

    def _foresee_queued(self, launch: int) -> None:
        for block in self._blocks.values():
            if block.queued:
                block.next_use = self._foresee(block, launch)

    def _foresee(self, b: _Block, launch: int) -> int:
        source = self._foreseen_from
        if source is None:
            return UNFORESEEN
        position = launch - self._start
        uses = b.uses.get(source, [])
        at = bisect.bisect_right(uses, position)
        if at < len(uses):
            return self._start + uses[at]
        follower = source + 1 if source + 1 < self._iterations else source
        after = b.uses.get(follower)
        if not after:
            return UNFORESEEN
        return self._start + max(self._history[source].length, position + 1) + after[0]
