"""The step timeline: where the GPU's time went during a window of training, from raw time spans.

While a window is captured (`deepum.capture_timeline()`, usually one step), the engine keeps the
spans behind its per-iteration figures (driver_hooks/timeline.hpp): every kernel the GPU ran, every
transfer of managed memory across the host link, every driver call of the engine's worker, and every
launch the hook saw with what it made the kernel wait for. `StepTimeline.idle_breakdown()` splits the GPU's idle time two
ways: by the kernel that ended each idle gap (what that kernel had been made to wait for), and by what
ran meanwhile (the link, the worker's calls, or neither). `plot()` draws the window.

Times are nanoseconds on CUPTI's clock; bytes are bytes. Kernel records are on only while the engine
is awake (under pressure), so a window in which it sleeps holds no kernels.
"""
from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import numpy as np

KERNEL, H2D, D2H, CALL, LAUNCH, LAUNCH_CALL = range(6)
"""Span kinds (timeline.hpp SpanKind). LAUNCH: the launch hook's time on the launching thread;
LAUNCH_CALL: the rest of the launch call, from the hook's return to the driver's."""
WAITED_FOR_MIGRATIONS, WAITED_FOR_DISCARD, PREFETCHED_ON_STREAM = 1, 2, 4
"""A launch span's detail bits: its kernel waited for the worker's moves of its blocks, its stream
waited for a discard of memory allocated since the stream's last launch, or its missing blocks were
prefetched on its stream just before it."""
CALL_OPS = ("prefetch", "populate", "evict", "discard", "map host", "map GPU")
"""A call span's detail: the worker's move (commands.hpp Op)."""

PLOT_BINS = 400
"""plot()'s default number of time slices."""

RUN_JOIN_NS = 20_000
"""transfer_runs' default: copies this close (ns) belong to one run (one migration call's blocks)."""
GAP_CAUSES = ("prefetched_on_stream", "migration_wait", "discard_wait", "no_wait")
"""What the kernel that ends an idle gap had been made to wait for, in the order a gap is attributed
when it had several: its blocks prefetched on its stream, a wait for the worker's moves, a wait for a
discard, none (the launching thread had not issued it yet, or its launch was not seen)."""


@dataclasses.dataclass(frozen=True)
class StepTimeline:
    """The spans of one captured window (timeline.hpp TimelineSpan), one array per field."""

    start: np.ndarray   # ns
    end: np.ndarray     # ns
    value: np.ndarray   # kernels and launches: correlation ID; transfers and calls: bytes
    kind: np.ndarray    # KERNEL, H2D, D2H, CALL, LAUNCH, LAUNCH_CALL
    detail: np.ndarray  # launches: wait bits; calls: index into CALL_OPS; transfers: cause
    dropped: int = 0    # spans past the engine's bound, not kept

    @classmethod
    def from_engine(cls, taken: dict) -> "StepTimeline":
        return cls(*(np.asarray(taken[k]) for k in ("start", "end", "value", "kind", "detail")),
                   dropped=int(taken["dropped"]))

    def save(self, path: str | Path) -> None:
        np.savez_compressed(path, start=self.start, end=self.end, value=self.value, kind=self.kind,
                            detail=self.detail, dropped=self.dropped)

    @classmethod
    def load(cls, path: str | Path) -> "StepTimeline":
        with np.load(path) as data:
            return cls.from_engine({k: data[k] for k in data.files})

    def spans(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) of the spans of `kind`, sorted by start."""
        chosen = self.kind == kind
        order = np.argsort(self.start[chosen], kind="stable")
        return self.start[chosen][order], self.end[chosen][order]

    def idle_breakdown(self) -> dict:
        """The window from the first kernel's start to the last kernel's end, in nanoseconds:

        - window_ns, gpu_busy_ns (the union of the kernels' spans), gpu_idle_ns (the rest);
        - idle_before_<cause>_ns for each of GAP_CAUSES: the idle gaps, each counted for the kernel
          that ended it (the first to start after it);
        - the same gaps split by when that kernel's launch call returned: idle_not_launched_ns before
          it (the GPU waited for the launching thread to issue the kernel), idle_launched_ns after it
          (the kernel was queued and waited on the GPU: for moves, a stream wait, the driver), and
          idle_launch_unseen_ns for kernels whose launch call was not captured;
        - idle_link_busy_ns: idle time during which a transfer crossed the link (either way);
          idle_worker_calling_ns: idle time, the link idle, during which the worker was in a driver
          call; idle_otherwise_ns: the rest of the idle time (the driver's work around the copies,
          stream waits resolving, the launching thread);
        - the launching thread, from the first hook's start to the last launch call's end
          (thread_window_ns): thread_hook_ns in the launch hook, thread_launch_call_ns in the rest of
          the launch calls, thread_other_ns in neither (the framework's own work between launches);
          thread_window_h2d_busy_ns and thread_window_d2h_busy_ns: how long a transfer crossed the
          link that way within that window (what a launch-bound step leaves of the link unused);
        - kernels, launches_seen (launches whose kernel is among them), h2d_bytes, d2h_bytes,
          worker_calls, and calls_by_op ({op: [calls, bytes, ns in calls]}) over the whole capture;
          h2d_busy_ns and d2h_busy_ns, how long a transfer crossed the link that way, and
          both_ways_busy_ns, how long transfers crossed it both ways at once, over the whole capture;
        - dropped: spans the engine's bound left out (the figures then fall short).
        Empty windows (no kernel captured) give zeros.
        """
        kernels = self.value[self.kind == KERNEL].tolist()
        out = {"window_ns": 0, "gpu_busy_ns": 0, "gpu_idle_ns": 0,
               **{f"idle_before_{c}_ns": 0 for c in GAP_CAUSES},
               "idle_not_launched_ns": 0, "idle_launched_ns": 0, "idle_launch_unseen_ns": 0,
               "idle_link_busy_ns": 0, "idle_worker_calling_ns": 0, "idle_otherwise_ns": 0,
               "kernels": len(kernels), "launches_seen": 0, "dropped": self.dropped}
        h2d, d2h = merged(*self.spans(H2D)), merged(*self.spans(D2H))
        out.update(self._traffic(h2d, d2h))
        out.update(self._launching_thread(h2d, d2h))
        if not kernels:
            return out
        waits = self._launch_waits()
        out["launches_seen"] = sum(1 for c in kernels if c in waits)
        gaps, (first, last) = self._gaps()
        out["window_ns"] = last - first
        for (s, e, cause, _), cut in zip(gaps, self._cut_at_launch(gaps)):
            out[f"idle_before_{cause}_ns"] += e - s
            if cut is None:
                out["idle_launch_unseen_ns"] += e - s
                continue
            out["idle_not_launched_ns"] += cut - s
            out["idle_launched_ns"] += e - cut
        out["gpu_idle_ns"] = sum(e - s for s, e, _, _ in gaps)
        out["gpu_busy_ns"] = out["window_ns"] - out["gpu_idle_ns"]
        idle = np.array([(s, e) for s, e, _, _ in gaps], dtype=np.int64).reshape(-1, 2)
        link = merged(*np.concatenate([h2d, d2h]).T)
        calls = merged(*self.spans(CALL))
        out["idle_link_busy_ns"] = covered(idle, link)
        out["idle_worker_calling_ns"] = covered(idle, calls) - covered(idle, calls, link)
        out["idle_otherwise_ns"] = out["gpu_idle_ns"] - out["idle_link_busy_ns"] - out["idle_worker_calling_ns"]
        return out

    def transfer_runs(self, kind: int, joined_within_ns: int = RUN_JOIN_NS) -> dict:
        """The transfers of one direction (`kind` H2D or D2H) as runs: copies that start less than
        `joined_within_ns` after the one before ends belong to one run (the driver copies the blocks
        of one migration call back to back). In nanoseconds and counts:

        - runs, transfers, bytes;
        - blocks_per_run_median and blocks_per_run_mean (transfers per run);
        - copy_ns_per_transfer: the runs' total length over the transfers in them (the link's pace
          inside a call);
        - gap_ns_total, gap_ns_median, gap_ns_p90: the time between one run's end and the next run's
          start (the driver's work after a call's copies, or no call pending).
        """
        rows, sizes = runs(*self.spans(kind), joined_within_ns)
        transfers = int(sizes.sum())
        out = {"runs": len(rows), "transfers": transfers, "bytes": int(self.value[self.kind == kind].sum()),
               "blocks_per_run_median": 0.0, "blocks_per_run_mean": 0.0, "copy_ns_per_transfer": 0.0,
               "gap_ns_total": 0, "gap_ns_median": 0.0, "gap_ns_p90": 0.0}
        if not transfers:
            return out
        gaps = rows[1:, 0] - rows[:-1, 1]
        out.update(blocks_per_run_median=float(np.median(sizes)), blocks_per_run_mean=float(sizes.mean()),
                   copy_ns_per_transfer=float((rows[:, 1] - rows[:, 0]).sum() / transfers))
        if gaps.size:
            out.update(gap_ns_total=int(gaps.sum()), gap_ns_median=float(np.median(gaps)),
                       gap_ns_p90=float(np.percentile(gaps, 90)))
        return out

    def _launching_thread(self, h2d: np.ndarray, d2h: np.ndarray) -> dict:
        """The launching thread's window and its parts; h2d, d2h: each direction's transfers, merged."""
        hook = self.kind == LAUNCH
        calls = self.kind == LAUNCH_CALL
        both = hook | calls
        if not both.any():
            return {"thread_window_ns": 0, "thread_hook_ns": 0, "thread_launch_call_ns": 0, "thread_other_ns": 0,
                    "thread_window_h2d_busy_ns": 0, "thread_window_d2h_busy_ns": 0}
        first, last = int(self.start[both].min()), int(self.end[both].max())
        in_hook = int((self.end[hook] - self.start[hook]).sum())
        in_calls = int((self.end[calls] - self.start[calls]).sum())
        window = np.array([[first, last]], dtype=np.int64)
        return {"thread_window_ns": last - first, "thread_hook_ns": in_hook, "thread_launch_call_ns": in_calls,
                "thread_other_ns": last - first - in_hook - in_calls,
                "thread_window_h2d_busy_ns": covered(window, h2d),
                "thread_window_d2h_busy_ns": covered(window, d2h)}

    def _traffic(self, h2d: np.ndarray, d2h: np.ndarray) -> dict:
        """Bytes, busy time each way and both at once, and the worker's calls; h2d, d2h as above."""
        calls = self.kind == CALL
        by_op = {}
        for index, op in enumerate(CALL_OPS):
            mine = calls & (self.detail == index)
            if mine.any():
                by_op[op] = [int(mine.sum()), int(self.value[mine].sum()),
                             int((self.end[mine] - self.start[mine]).sum())]
        return {"h2d_bytes": int(self.value[self.kind == H2D].sum()),
                "d2h_bytes": int(self.value[self.kind == D2H].sum()),
                "h2d_busy_ns": covered(h2d), "d2h_busy_ns": covered(d2h), "both_ways_busy_ns": covered(h2d, d2h),
                "worker_calls": int(calls.sum()), "calls_by_op": by_op}

    def plot(self, path: str | Path, title: str = "", bins: int = PLOT_BINS) -> None:
        """Draws the window in `bins` equal slices of time, each row as the share of each slice its
        spans cover (a bar of full height: busy the whole slice), since thousands of spans a step are
        narrower than a pixel: the launch hooks and calls, kernels, each link direction, the worker's
        calls by move, the GPU's idle time by what the kernel after each gap waited for, and the same
        idle time cut where that kernel was launched (before: the GPU waited for the launching
        threads)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        k_start, _ = self.spans(KERNEL)
        origin = int(k_start[0]) if k_start.size else int(self.start.min(initial=0))
        edges = np.linspace(origin, max(int(self.end.max(initial=origin)), origin + 1), bins + 1)
        left, width = (edges[:-1] - origin) / 1e6, np.diff(edges) / 1e6  # ms since the first kernel

        def share(starts, ends) -> np.ndarray:  # of each slice, covered by the union of [starts, ends)
            union = merged(starts, ends)
            return np.diff(time_within(edges, union[:, 0], union[:, 1])) / np.diff(edges)

        def draw(y, parts):  # parts: (share, colour, label) stacked from the row's bottom
            below = np.zeros(bins)
            for part, colour, label in parts:
                ax.bar(left, -0.8 * part, width=width, bottom=y + 0.4 - 0.8 * below, align="edge", color=colour,
                       label=label, linewidth=0)
                below += part

        rows = [("launch hook", LAUNCH, None, "tab:brown"), ("launch call", LAUNCH_CALL, None, "tab:pink"),
                ("kernels", KERNEL, None, "tab:blue"), ("host to GPU", H2D, None, "tab:green"),
                ("GPU to host", D2H, None, "tab:red")]
        rows += [(f"worker: {op}", CALL, i, "tab:gray") for i, op in enumerate(CALL_OPS)
                 if ((self.kind == CALL) & (self.detail == i)).any()]
        fig, ax = plt.subplots(figsize=(14, 1.2 + 0.45 * (len(rows) + 2)))
        for y, (_label, kind, detail, colour) in enumerate(rows):
            chosen = self.kind == kind if detail is None else (self.kind == kind) & (self.detail == detail)
            draw(y, [(share(self.start[chosen], self.end[chosen]), colour, None)])
        gaps, _ = self._gaps()
        colours = dict(zip(GAP_CAUSES, ("tab:purple", "tab:orange", "tab:olive", "tab:cyan")))
        by_cause = [([(s, e) for s, e, c, _ in gaps if c == cause], cause) for cause in GAP_CAUSES]
        draw(len(rows), [(share(*zip(*mine)), colours[cause], f"idle before: {cause}") for mine, cause in by_cause if mine])
        cuts = [(s, c, e) for (s, e, _, _), c in zip(gaps, self._cut_at_launch(gaps)) if c is not None]
        if cuts:
            start, cut, end = zip(*cuts)
            draw(len(rows) + 1, [(share(start, cut), "tab:gray", "idle: kernel not launched yet"),
                                 (share(cut, end), "black", "idle: kernel launched, waiting")])
        ax.set_yticks(range(len(rows) + 2), [r[0] for r in rows] + ["GPU idle", "GPU idle by launch"])
        ax.set_xlabel(f"ms since the first kernel (bars: share of each {width[0]:.2f} ms slice)")
        ax.invert_yaxis()
        ax.set_title(title or "step timeline")
        if gaps:
            ax.legend(loc="upper right", fontsize="small")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def _launch_waits(self) -> dict:
        """{correlation ID: wait bits} of the launches captured."""
        rows = self.kind == LAUNCH
        return dict(zip(self.value[rows].tolist(), self.detail[rows].tolist()))

    def _cut_at_launch(self, gaps: list[tuple[int, int, str, int]]) -> list[int | None]:
        """For each of _gaps()'s gaps, where in it the launch call of the kernel that ends it returned
        (clamped to the gap: before the cut the kernel had not been launched); None where that launch
        call was not captured."""
        rows = self.kind == LAUNCH_CALL
        issued = {}
        for correlation, end in zip(self.value[rows].tolist(), self.end[rows].tolist()):
            issued[correlation] = max(end, issued.get(correlation, end))
        return [None if kernel not in issued else min(max(issued[kernel], s), e) for s, e, _, kernel in gaps]

    def _gaps(self) -> tuple[list[tuple[int, int, str, int]], tuple[int, int]]:
        """The GPU's idle gaps between the first kernel's start and the last kernel's end, sorted and
        disjoint, each with the cause and the correlation ID of the kernel that ended it; and that
        window (first, last)."""
        rows = np.flatnonzero(self.kind == KERNEL)
        rows = rows[np.argsort(self.start[rows], kind="stable")]
        waits = self._launch_waits()
        gaps, busy_until = [], None
        for row in rows:
            s, e = int(self.start[row]), int(self.end[row])
            if busy_until is not None and s > busy_until:
                kernel = int(self.value[row])
                gaps.append((busy_until, s, gap_cause(waits.get(kernel, 0)), kernel))
            busy_until = e if busy_until is None else max(busy_until, e)
        first = int(self.start[rows[0]]) if rows.size else 0
        return gaps, (first, busy_until if busy_until is not None else 0)


def gap_cause(bits: int) -> str:
    """The GAP_CAUSES entry for a launch's wait bits."""
    if bits & PREFETCHED_ON_STREAM:
        return "prefetched_on_stream"
    if bits & WAITED_FOR_MIGRATIONS:
        return "migration_wait"
    if bits & WAITED_FOR_DISCARD:
        return "discard_wait"
    return "no_wait"


def time_within(times, starts, ends) -> np.ndarray:
    """For each of `times`, how much of the sorted, disjoint intervals [starts, ends) lies before it."""
    times, starts = np.asarray(times, dtype=np.float64), np.asarray(starts, dtype=np.float64)
    lengths = np.asarray(ends, dtype=np.float64) - starts
    if not starts.size:
        return np.zeros(times.shape)
    whole = np.concatenate([[0.0], np.cumsum(lengths)])  # before each interval: all the ones before it
    last = np.searchsorted(starts, times, side="right") - 1  # the last interval starting at or before
    at = np.maximum(last, 0)
    return np.where(last >= 0, whole[at] + np.clip(times - starts[at], 0, lengths[at]), 0.0)


def runs(starts, ends, joined_within_ns: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) intervals in start order, joined into runs: one that starts less than
    `joined_within_ns` after the run so far ends belongs to it (1: overlapping or touching ones).
    Returns the runs as sorted (start, end) rows and the number of intervals in each."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    if not starts.size:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    reach = np.maximum.accumulate(ends)  # where the run so far ends
    first = np.flatnonzero(np.r_[True, starts[1:] - reach[:-1] >= joined_within_ns])
    last = np.r_[first[1:] - 1, starts.size - 1]
    return np.stack([starts[first], reach[last]], axis=1), last - first + 1


def merged(starts, ends) -> np.ndarray:
    """The union of [start, end) intervals as sorted, disjoint (start, end) rows."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    nonempty = ends > starts
    return runs(starts[nonempty], ends[nonempty])[0]


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The intersection of two unions, each given as sorted, disjoint (start, end) rows."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i, 0], b[j, 0]), min(a[i, 1], b[j, 1])
        if lo < hi:
            out.append((lo, hi))
        if a[i, 1] < b[j, 1]:
            i += 1
        else:
            j += 1
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def covered(first: np.ndarray, *others: np.ndarray) -> int:
    """The length of the intersection of unions, each given as sorted, disjoint (start, end) rows."""
    rows = first
    for other in others:
        rows = intersect(rows, other)
    return int((rows[:, 1] - rows[:, 0]).sum())


@contextlib.contextmanager
def capture_timeline():
    """Captures the step timeline of the work inside the block: synchronizes the device before and
    after (so the window holds exactly that work), then yields a holder whose `timeline` attribute
    (a StepTimeline) is set on exit. Needs an enabled session in a mode with the engine."""
    from . import session

    engine = session.running_engine()
    import torch

    holder = _Captured()
    torch.cuda.synchronize()
    engine.timeline_open()
    try:
        yield holder
    finally:
        torch.cuda.synchronize()
        engine.timeline_close()
        engine.flush_fault_log()
        holder.timeline = StepTimeline.from_engine(engine.timeline_take())


class _Captured:
    timeline: StepTimeline | None = None
