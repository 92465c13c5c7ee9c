"""Eviction by foreseen next use: the readable specification of driver_hooks/next_use.hpp, which the
simulator's deepum policy and the online engine use (DeepUMConfig.eviction = "next_use").

Training repeats its iteration, so the launches at which a block was used in the last iteration
foretell when it is used next. A block used at positions u1 < u2 < ... of the last iteration
(launches counted from the iteration's first) is foreseen, at position p of the current one, at the
first ui past p, else at u1 of the next iteration (which starts one last-iteration length after the
current one, or just past p if the current iteration already ran longer). The victim is the
resident block foreseen last: Belady's choice on the foreseen future. Blocks the last iteration did
not use are foreseen never and go first, least recently arrived first.

A block's foreseen launch is taken when it arrives, when it is used while resident and at each
iteration start, not at every launch: the native version keeps blocks in a heap by that figure.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Callable

UNFORESEEN = 2**64 - 1
"""Foreseen launch of a block the last iteration did not use."""


@dataclasses.dataclass
class _Block:
    before: list[int] = dataclasses.field(default_factory=list)  # positions of its uses, last iteration
    now: list[int] = dataclasses.field(default_factory=list)     # positions of its uses, this iteration
    next_use: int = UNFORESEEN  # foreseen launch, as last taken
    age: int = 0                # number of its latest arrival
    queued: bool = False        # a candidate while resident (False once given up, until it arrives or is used)


class NextUseEviction:
    """Foresees each block's next use and picks victims; launches are numbered by the caller in
    launch order (the simulator: kernel rows; the engine: 1, 2, ... across iterations)."""

    def __init__(self):
        self._blocks: dict[int, _Block] = {}
        self._start = 0        # first launch of the current iteration
        self._last_length = 0  # launches of the last iteration
        self._arrivals = 0

    def start_iteration(self, first: int) -> None:
        """The iteration starting at launch `first` begins; the one that ends is foreseen from."""
        self._last_length = first - self._start
        self._start = first
        for block in self._blocks.values():
            block.before, block.now = block.now, []
            if block.queued:
                block.next_use = self._foresee(block, first)

    def use(self, block: int, launch: int, resident: bool) -> None:
        """The kernel of `launch` uses `block`; a resident block is foreseen anew."""
        b = self._blocks.setdefault(block, _Block())
        position = launch - self._start
        if not b.now or b.now[-1] != position:
            b.now.append(position)
        if resident:
            b.next_use, b.queued = self._foresee(b, launch), True

    def arrive(self, block: int, launch: int) -> None:
        """`block` became resident at `launch`."""
        b = self._blocks.setdefault(block, _Block())
        self._arrivals += 1
        b.age, b.next_use, b.queued = self._arrivals, self._foresee(b, launch), True

    def foresee(self, block: int, launch: int) -> int:
        """The launch at which `block` is foreseen to be used next, seen from `launch`."""
        b = self._blocks.get(block)
        return UNFORESEEN if b is None else self._foresee(b, launch)

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

    def _foresee(self, b: _Block, launch: int) -> int:
        if not b.before:
            return UNFORESEEN
        position = launch - self._start
        at = bisect.bisect_right(b.before, position)
        if at < len(b.before):
            return self._start + b.before[at]
        return self._start + max(self._last_length, position + 1) + b.before[0]
