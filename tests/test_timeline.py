"""The step timeline's idle breakdown (deepum/runtime/timeline.py): a hand-worked window, and random
windows against a model that walks the timeline one nanosecond at a time."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.runtime import timeline as tl


def spans(rows):
    """StepTimeline from (start, end, value, kind, detail) rows."""
    start, end, value, kind, detail = (np.array(c, dtype=t) for c, t in
                                       zip(zip(*rows), (np.uint64, np.uint64, np.uint64, np.uint8, np.uint8)))
    return tl.StepTimeline(start, end, value, kind, detail)


HAND = [
    (0, 10, 1, tl.KERNEL, 0), (15, 20, 2, tl.KERNEL, 0), (30, 40, 3, tl.KERNEL, 0),
    (35, 38, 4, tl.KERNEL, 0), (50, 55, 5, tl.KERNEL, 0),
    (1, 3, 2, tl.LAUNCH, tl.WAITED_FOR_MIGRATIONS), (3, 4, 2, tl.LAUNCH_CALL, 0),
    (6, 7, 3, tl.LAUNCH, tl.WAITED_FOR_DISCARD), (7, 9, 3, tl.LAUNCH_CALL, 0),
    (11, 12, 4, tl.LAUNCH, tl.WAITED_FOR_MIGRATIONS | tl.PREFETCHED_ON_STREAM), (12, 14, 4, tl.LAUNCH_CALL, 0),
    (12, 14, 4 << 20, tl.H2D, 1), (25, 45, 2 << 20, tl.D2H, 3),
    (16, 28, 2 << 20, tl.CALL, 0), (29, 31, 4 << 20, tl.CALL, 2),
]


def test_a_hand_worked_window_splits_its_idle_time_by_cause_and_by_what_ran():
    b = spans(HAND).idle_breakdown()
    assert (b["window_ns"], b["gpu_busy_ns"], b["gpu_idle_ns"]) == (55, 30, 25)
    # gaps [10,15) before kernel 2, [20,30) before kernel 3, [40,50) before kernel 5 (no launch seen)
    assert b["idle_before_migration_wait_ns"] == 5
    assert b["idle_before_discard_wait_ns"] == 10
    assert b["idle_before_no_wait_ns"] == 10
    assert b["idle_before_prefetched_on_stream_ns"] == 0  # kernel 4 starts inside kernel 3: no gap
    # kernels 2 and 3 were issued (at 4 and 9) before their gaps began; kernel 5's launch was not seen
    assert (b["idle_not_launched_ns"], b["idle_launched_ns"], b["idle_launch_unseen_ns"]) == (0, 15, 10)
    # link [12,14) and [25,45): 2 + 5 + 5 of the idle time; calls [16,28) and [29,31) with the link
    # idle: [20,25) only; the rest of the idle time: 25 - 12 - 5
    assert (b["idle_link_busy_ns"], b["idle_worker_calling_ns"], b["idle_otherwise_ns"]) == (12, 5, 8)
    assert (b["kernels"], b["launches_seen"]) == (5, 3)
    # the launching thread from 1 to 14: 4 in hooks, 5 in the rest of the launch calls
    assert (b["thread_window_ns"], b["thread_hook_ns"], b["thread_launch_call_ns"], b["thread_other_ns"]) == \
        (13, 4, 5, 4)
    # within it the link carried the H2D copy [12,14) and no D2H (that one runs [25,45))
    assert (b["thread_window_h2d_busy_ns"], b["thread_window_d2h_busy_ns"]) == (2, 0)
    assert (b["h2d_bytes"], b["d2h_bytes"], b["worker_calls"]) == (4 << 20, 2 << 20, 2)
    assert (b["h2d_busy_ns"], b["d2h_busy_ns"], b["both_ways_busy_ns"]) == (2, 20, 0)
    assert b["calls_by_op"] == {"prefetch": [1, 2 << 20, 12], "evict": [1, 4 << 20, 2]}


def test_idle_gaps_split_at_the_ending_kernels_launch_call():
    rows = [(0, 10, 1, tl.KERNEL, 0), (20, 30, 2, tl.KERNEL, 0), (40, 45, 3, tl.KERNEL, 0), (50, 52, 4, tl.KERNEL, 0),
            (12, 15, 2, tl.LAUNCH_CALL, 0),   # kernel 2 issued at 15: of the gap [10,20), 5 waited for it
            (31, 33, 3, tl.LAUNCH_CALL, 0),   # kernel 3 issued at 33: of [30,40), 3 before and 7 after
            (1, 2, 1, tl.LAUNCH_CALL, 0)]     # kernel 1 ends no gap; kernel 4's launch call is not captured
    b = spans(rows).idle_breakdown()
    assert b["gpu_idle_ns"] == 25
    assert (b["idle_not_launched_ns"], b["idle_launched_ns"], b["idle_launch_unseen_ns"]) == (8, 12, 5)


def test_a_window_without_kernels_is_all_zero():
    b = spans([(0, 5, 1 << 20, tl.H2D, 1)]).idle_breakdown()
    assert b["window_ns"] == b["gpu_idle_ns"] == b["idle_otherwise_ns"] == 0
    assert b["h2d_bytes"] == 1 << 20


def test_transfers_group_into_runs_one_per_migration_call():
    MB = 1 << 20
    # D2H: three copies back to back (gaps of 1 and 2 ns), then one 500 ns later, then two more
    # (the second overlapping the first) 1,000 ns after that; an H2D between them is not counted.
    rows = [(0, 40, 2 * MB, tl.D2H, 0), (41, 80, 2 * MB, tl.D2H, 0), (82, 120, 2 * MB, tl.D2H, 0),
            (620, 660, 2 * MB, tl.D2H, 0),
            (1660, 1700, 2 * MB, tl.D2H, 0), (1690, 1720, 2 * MB, tl.D2H, 0),
            (300, 340, 2 * MB, tl.H2D, 0)]
    runs = spans(rows).transfer_runs(tl.D2H, joined_within_ns=10)
    assert (runs["runs"], runs["transfers"], runs["bytes"]) == (3, 6, 12 * MB)
    assert runs["blocks_per_run_median"] == 2 and runs["blocks_per_run_mean"] == 2
    assert runs["copy_ns_per_transfer"] == (120 + 40 + 60) / 6       # the runs' lengths over the copies
    assert (runs["gap_ns_total"], runs["gap_ns_median"]) == (500 + 1000, 750)
    assert runs["gap_ns_p90"] == pytest.approx(950)
    whole = spans(rows).transfer_runs(tl.D2H, joined_within_ns=1001)  # every gap joined: one run
    assert (whole["runs"], whole["gap_ns_total"], whole["copy_ns_per_transfer"]) == (1, 0, 1720 / 6)
    assert spans(rows).transfer_runs(tl.H2D)["runs"] == 1
    assert spans([(0, 5, 1, tl.KERNEL, 0)]).transfer_runs(tl.D2H)["runs"] == 0


def model_breakdown(rows) -> dict:
    """The breakdown by walking the window one nanosecond at a time."""
    kernels = [(s, e, v) for s, e, v, k, _ in rows if k == tl.KERNEL]
    waits = {v: d for _s, _e, v, k, d in rows if k == tl.LAUNCH}
    lo, hi = min(s for s, _, _ in kernels), max(e for _, e, _ in kernels)
    busy = lambda t, kind: any(s <= t < e for s, e, _v, k, _d in rows if k == kind)  # noqa: E731
    issued = {}
    for _s, e, v, k, _d in rows:
        if k == tl.LAUNCH_CALL:
            issued[v] = max(e, issued.get(v, e))
    out = {c: 0 for c in tl.GAP_CAUSES}
    out.update(busy=0, link=0, calling=0, otherwise=0, not_launched=0, launched=0, unseen=0)
    for t in range(lo, hi):
        if any(s <= t < e for s, e, _ in kernels):
            out["busy"] += 1
            continue
        ender = min((s, v) for s, e, v in kernels if s > t)  # the first kernel to start after t
        out[tl.gap_cause(waits.get(ender[1], 0))] += 1
        if ender[1] not in issued:
            out["unseen"] += 1
        elif t < issued[ender[1]]:
            out["not_launched"] += 1
        else:
            out["launched"] += 1
        if busy(t, tl.H2D) or busy(t, tl.D2H):
            out["link"] += 1
        elif busy(t, tl.CALL):
            out["calling"] += 1
        else:
            out["otherwise"] += 1
    out["window"] = hi - lo
    thread = [(s, e) for s, e, _v, k, _d in rows if k in (tl.LAUNCH, tl.LAUNCH_CALL)]
    first, last = (min(s for s, _ in thread), max(e for _, e in thread)) if thread else (0, 0)
    out["thread_h2d"] = sum(busy(t, tl.H2D) for t in range(first, last))
    out["thread_d2h"] = sum(busy(t, tl.D2H) for t in range(first, last))
    ends = [e for _s, e, _v, k, _d in rows if k in (tl.H2D, tl.D2H)]
    out["h2d"] = sum(busy(t, tl.H2D) for t in range(max(ends, default=0)))
    out["d2h"] = sum(busy(t, tl.D2H) for t in range(max(ends, default=0)))
    out["both"] = sum(busy(t, tl.H2D) and busy(t, tl.D2H) for t in range(max(ends, default=0)))
    return out


span_rows = st.lists(
    st.tuples(st.integers(0, 60), st.integers(1, 15), st.sampled_from([tl.KERNEL, tl.H2D, tl.D2H, tl.CALL])),
    min_size=1, max_size=14)


@settings(max_examples=150, deadline=None)
@given(rows=span_rows, wait_bits=st.lists(st.integers(0, 7), min_size=14, max_size=14),
       launch_calls=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 15)), max_size=4))
def test_the_breakdown_agrees_with_a_nanosecond_walk(rows, wait_bits, launch_calls):
    built = [(s, s + n, i + 1, k, 0) for i, (s, n, k) in enumerate(rows)]
    if not any(k == tl.KERNEL for *_, k, _ in built):
        built.append((0, 1, 99, tl.KERNEL, 0))
    built += [(0, 0, i + 1, tl.LAUNCH, wait_bits[i]) for i in range(len(rows)) if wait_bits[i] != 7]
    built += [(s, s + n, i + 1, tl.LAUNCH_CALL, 0) for i, (s, n) in enumerate(launch_calls)]
    b = spans(built).idle_breakdown()
    m = model_breakdown(built)
    assert (b["window_ns"], b["gpu_busy_ns"]) == (m["window"], m["busy"])
    assert {c: b[f"idle_before_{c}_ns"] for c in tl.GAP_CAUSES} == {c: m[c] for c in tl.GAP_CAUSES}
    assert (b["idle_link_busy_ns"], b["idle_worker_calling_ns"], b["idle_otherwise_ns"]) == \
        (m["link"], m["calling"], m["otherwise"])
    assert (b["thread_window_h2d_busy_ns"], b["thread_window_d2h_busy_ns"]) == (m["thread_h2d"], m["thread_d2h"])
    assert (b["idle_not_launched_ns"], b["idle_launched_ns"], b["idle_launch_unseen_ns"]) == \
        (m["not_launched"], m["launched"], m["unseen"])
    assert (b["h2d_busy_ns"], b["d2h_busy_ns"], b["both_ways_busy_ns"]) == (m["h2d"], m["d2h"], m["both"])


def test_a_timeline_survives_a_round_trip_and_plots(tmp_path):
    t = spans(HAND)
    t.save(tmp_path / "t.npz")
    again = tl.StepTimeline.load(tmp_path / "t.npz")
    assert again.idle_breakdown() == t.idle_breakdown()
    t.plot(tmp_path / "t.png", title="hand-worked")
    assert (tmp_path / "t.png").stat().st_size > 10_000


def test_capturing_without_a_running_engine_is_refused():
    from deepum.runtime import session

    if session._engine is not None:
        pytest.skip("an engine is loaded in this process")
    with pytest.raises(RuntimeError, match="no deepum engine runs"):
        with tl.capture_timeline():
            pass


def test_the_plot_bins_count_the_time_of_the_spans_before_each_edge():
    # [0,10) and [20,30): before 5 lies 5, before 15 lies 10, before 25 lies 15, before 40 all 20
    within = tl.time_within([-1, 0, 5, 15, 25, 40], np.array([0, 20]), np.array([10, 30]))
    assert within.tolist() == [0, 0, 5, 10, 15, 20]
    assert tl.time_within([3, 7], np.array([]), np.array([])).tolist() == [0, 0]


@settings(max_examples=100, deadline=None)
@given(spans=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 20)), max_size=12),
       times=st.lists(st.integers(-5, 260), min_size=1, max_size=20))
def test_the_plot_bins_agree_with_counting_each_nanosecond(spans, times):
    union = tl.merged([s for s, _ in spans], [s + n for s, n in spans])
    covered = {t for s, e in union.tolist() for t in range(s, e)}
    within = tl.time_within(times, union[:, 0], union[:, 1])
    assert within.tolist() == [sum(1 for c in covered if c < t) for t in times]
