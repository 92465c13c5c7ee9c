"""Plan records (deepum policy with ``repeat_plans_percent``): each iteration's launches with the plan
decided for each, and the remembered iteration that the next one repeats. This is the readable
specification of driver_hooks/plan_records.hpp; deepum.specs.policy says how the policy repeats a plan.

An iteration is recorded launch by launch as (execution ID, blocks, moves), the moves as decided. When
it ends it is remembered (the last REMEMBERED are). Two remembered iterations are alike where they have
as many launches and, at ``percent`` of their places or more, launched the same (execution ID and
blocks) and decided the same moves. The next iteration repeats the remembered one ``back`` iterations
before it where the ended iteration is alike the one ``back`` before it and the one to repeat is alike
the one ``back`` before that: the least ``back`` from 1 (every iteration alike) to REPEAT_BACK
(iterations whose tensors the caching allocator places in a cycle of several iterations). The second
condition keeps a plan decided while the learners were still changing it from being repeated: the
iterations of a cycle settle one by one, and the ended one settling says nothing of the one to repeat.
Below 100 percent, a few launches whose blocks moved (a tensor the caching allocator placed elsewhere
this time) or whose plans still change do not keep an iteration from being repeated. An iteration of
more than REPEAT_LAUNCHES launches, or more than REPEAT_ENTRIES blocks and moves, is not recorded and
none repeats it.
"""
from __future__ import annotations

from collections import deque

REPEAT_LAUNCHES = 1 << 16
"""Most launches of an iteration recorded."""

REPEAT_ENTRIES = 1 << 20
"""Most blocks and moves (together) of an iteration recorded."""

REPEAT_BACK = 8
"""Most iterations back that an ended iteration is compared with."""

REMEMBERED = 2 * REPEAT_BACK
"""Iterations remembered: the one that ended, those before it that it may equal, and those the one it
would repeat is compared with."""


class PlanRecords:
    """The recorded iterations and the one being recorded."""

    def __init__(self, percent: int):
        self.percent = percent
        self._remembered: deque[list | None] = deque(maxlen=REMEMBERED)  # latest first; None: not recorded
        self._current: list | None = []
        self._entries = 0

    def record(self, exec_id: int, blocks, moves) -> None:
        """The next launch of the running iteration and its plan's moves, (move, block) as decided (in
        a repeated iteration, at a place the remembered iteration has, the plan remembered there)."""
        if self._current is None:
            return
        self._entries += len(blocks) + len(moves)
        if len(self._current) == REPEAT_LAUNCHES or self._entries > REPEAT_ENTRIES:
            self._current = None
            return
        self._current.append((exec_id, tuple(blocks), tuple(moves)))

    def place(self) -> int:
        """The running iteration's launches recorded so far (REPEAT_LAUNCHES once it is not recorded)."""
        return REPEAT_LAUNCHES if self._current is None else len(self._current)

    def end_iteration(self) -> list | None:
        """The running iteration ends: it is remembered. Returns the remembered iteration the next one
        repeats, each entry (execution ID, blocks, moves), or None."""
        self._remembered.appendleft(self._current)
        self._current, self._entries = [], 0
        for back in range(1, REPEAT_BACK + 1):
            if self._alike(0, back) and self._alike(back - 1, 2 * back - 1):
                return self._remembered[back - 1]
        return None

    def _alike(self, later: int, earlier: int) -> bool:
        """Whether the remembered iterations ``later`` and ``earlier`` (0: the one that ended) were both
        recorded, have as many launches and launched and decided the same at ``percent`` of their
        places or more."""
        if len(self._remembered) <= earlier:
            return False
        a, b = self._remembered[later], self._remembered[earlier]
        if not a or not b or len(a) != len(b):
            return False
        return sum(x == y for x, y in zip(a, b)) * 100 >= self.percent * len(a)
