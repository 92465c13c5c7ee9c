"""Predictor: the window of the running kernel and the kernels predicted to follow it, each with the
UM blocks it is predicted to fault on.

This is the readable specification of deepum._native.Predictor (driver_hooks/correlation.hpp), which
must agree with it on every input; make_predictor picks one of the two.
"""
from __future__ import annotations

from collections import deque
from itertools import islice
from typing import NamedTuple

from ..config import DeepUMConfig
from .tables import HISTORY, CorrelationTables, check_exec_id


# The DeepUMConfig fields the predictor uses; the others configure the policy around it.
TABLE_FIELDS = ("lookahead", "recall_iterations", "exec_ids", "exec_records", "block_rows", "block_ways",
                "block_successors", "chain_blocks")

RECALLED_LAUNCHES = 1 << 16
"""The launches of an iteration the predictor remembers at most (those past it are not recalled)."""


class PredictedKernel(NamedTuple):
    exec_id: int
    blocks: tuple[int, ...]  # UM blocks in chain-walk order, no repeats


class WindowChange(NamedTuple):
    popped: int  # entries removed from the front of the window (all old ones on a rebuild)
    pushed: int  # entries appended at the back (the last `pushed` entries of the window)


class Predictor:
    """Predicts the next `lookahead` kernels and the UM blocks of each, learning as it goes.

    On each launch: a launch that matches window[1] is a kernel hit and pops the front; any other
    launch rebuilds the window from the launched kernel (a kernel miss if a prediction existed). Then
    the tail grows one predicted kernel at a time until the window holds lookahead + 1 entries or
    there is no prediction; later launches grow it again. Each is recalled where it can be, else
    predicted from the launch history followed by the kernels predicted before it (the tables).

    Recall: the predictor remembers the launches of the last `recall_iterations` iterations (up to
    RECALLED_LAUNCHES each; start_iteration() ends one). A launch at place p of the running iteration
    (launches counted from its first) keeps following the remembered iteration followed so far if that
    one launched the same exec ID at p, else follows the latest that did, else none; a new iteration
    goes on following the one as many iterations back. While one is followed, the entry at window
    place j is its launch at p + j, where it has one.
    """

    def __init__(self, config: DeepUMConfig = DeepUMConfig()):
        self.lookahead = config.lookahead
        self.recall_iterations = config.recall_iterations
        self.tables = CorrelationTables(config)
        self._current: list[int] = []           # the running iteration's launches so far
        self._past: deque[list[int]] = deque()  # the remembered iterations' launches, latest first
        self._following: int | None = None      # the one followed (index into _past)
        self._window: deque[PredictedKernel] = deque()
        self._kernel_hits = 0
        self._kernel_misses = 0

    def on_kernel(self, exec_id: int) -> WindowChange:
        """A kernel with execution ID `exec_id` launched."""
        self.tables.on_kernel(exec_id)
        self._recall(exec_id)
        window = self._window
        if len(window) >= 2 and window[1].exec_id == exec_id:
            window.popleft()
            self._kernel_hits += 1
            return WindowChange(popped=1, pushed=self._extend())
        if len(window) >= 2:
            self._kernel_misses += 1
        popped = len(window)
        window.clear()
        window.append(PredictedKernel(exec_id, self.tables.chain(exec_id)))
        return WindowChange(popped=popped, pushed=1 + self._extend())

    def start_iteration(self) -> None:
        """An iteration starts with the next launch: the one that ends is remembered. The remembered
        iteration as far back as the one followed is followed on (iterations that repeat every other
        one stay in step)."""
        if self.recall_iterations:
            self._past.appendleft(self._current)
            while len(self._past) > self.recall_iterations:
                self._past.pop()
        self._current = []
        if self._following is not None and self._following >= len(self._past):
            self._following = None

    def _recall(self, exec_id: int) -> None:
        if not self.recall_iterations:
            return
        place = len(self._current)
        if place >= RECALLED_LAUNCHES:
            self._following = None
            return
        self._current.append(exec_id)

        def same(i: int) -> bool:
            return place < len(self._past[i]) and self._past[i][place] == exec_id
        if self._following is not None and same(self._following):
            return
        self._following = next((i for i in range(len(self._past)) if same(i)), None)

    def _recalled(self) -> int | None:
        """The followed iteration's launch at the place of the window's next entry, if it has one."""
        if self._following is None:
            return None
        past, place = self._past[self._following], len(self._current) - 1 + len(self._window)
        return past[place] if place < len(past) else None

    def on_fault(self, block: int) -> None:
        """The running kernel faulted on UM block `block` (a non-negative block number)."""
        self.tables.on_fault(block)

    def learn_faults(self, exec_id: int, blocks) -> None:
        """UM blocks one earlier launch of `exec_id` faulted on, in order, learned now (see
        CorrelationTables.learn_faults); the window keeps its chains until its entries are rebuilt."""
        self.tables.learn_faults(exec_id, blocks)

    def _extend(self) -> int:
        window = self._window
        predicted = [entry.exec_id for entry in islice(window, max(0, len(window) - HISTORY - 1), None)]
        context = (self.tables.history[:HISTORY] + tuple(predicted))[-(HISTORY + 1):]
        pushed = 0
        while len(window) < self.lookahead + 1:
            next_id = self._recalled()
            if next_id is None:
                next_id = self.tables.predict_next(context)
            if next_id is None:
                break
            window.append(PredictedKernel(next_id, self.tables.chain(next_id)))
            context = context[1:] + (next_id,)
            pushed += 1
        return pushed

    @property
    def window(self) -> list[PredictedKernel]:
        """[0]: the running kernel; [1:]: the kernels predicted to follow it, in order."""
        return list(self._window)

    @property
    def kernel_hits(self) -> int:
        """Launches that matched window[1] of the previous launch."""
        return self._kernel_hits

    @property
    def kernel_misses(self) -> int:
        """Launches that did not match window[1] of the previous launch although it existed."""
        return self._kernel_misses

    def table_bytes(self) -> int:
        """Bytes the correlation tables hold now (same costs as DeepUMConfig.table_bytes_bound)."""
        return self.tables.bytes_used()

    def predict_blocks(self, exec_id: int) -> tuple[int, ...]:
        """UM blocks predicted now for one launch of `exec_id`, in chain-walk order."""
        return self.tables.chain(check_exec_id(exec_id))


def make_predictor(config: DeepUMConfig = DeepUMConfig(), native: bool = True):
    """The native predictor (deepum._native.Predictor), or with native=False the Python one."""
    if not native:
        return Predictor(config)
    try:
        from .. import _native
    except ImportError as exc:
        raise ImportError("deepum._native is not built: install the package with `pip install -e .` "
                          "(or run `python setup.py build_ext --inplace`) to compile it, or pass "
                          "native=False for the Python predictor") from exc
    return _native.Predictor(config.to_dict())
