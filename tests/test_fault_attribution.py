"""Faults to kernels by GPU time (deepum/runtime/fault_attribution.py): the lessons online learning
takes from the fault log, delivered in rounds, match an oracle that sees the whole log at once."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.runtime.fault_attribution import FaultLessons, kernel_at, kernel_times

MIB2 = 2 << 20


def as_pairs(lessons):
    return [(int(e), tuple(int(b) for b in lessons.blocks[lo:hi]))
            for e, lo, hi in zip(lessons.exec_ids, lessons.offsets[:-1], lessons.offsets[1:])]


def test_kernel_times_match_by_correlation_and_missing_records_stay_unknown():
    start, end = kernel_times(np.array([7, 3, 9]), np.array([9, 3]), np.array([50, 10]), np.array([40, 20]))
    assert start.tolist() == [-1, 10, 50] and end.tolist() == [-1, 20, 50]  # an end before the start is clamped


def test_kernel_at_takes_the_latest_kernel_started_when_its_span_holds_the_time():
    rows = kernel_at(np.array([5, 10, 13, 15, 30, 31]), np.array([10, 12, -1, 30]), np.array([20, 14, -1, 30]))
    assert rows.tolist() == [-1, 0, 1, -1, 3, -1]


def test_a_round_attributes_what_it_can_and_keeps_the_rest_for_the_next():
    lessons = FaultLessons()
    first = lessons.add(
        launch_correlation=[1, 2, 3], launch_exec_id=[100, 200, 300],
        kernel_correlation=[1, 2], kernel_start_ns=[10, 30], kernel_end_ns=[20, 40],
        fault_t_ns=[11, 12, 13, 25, 31, 45], fault_address=[5 * MIB2 + 4096, 5 * MIB2, 6 * MIB2, 9 * MIB2, 7 * MIB2, 8 * MIB2])
    # kernel 1: blocks 5, 5 (repeat dropped), 6; t=25 falls between kernels; t=45 is past every known end.
    assert as_pairs(first) == [(100, (5, 6)), (200, (7,))]
    assert (lessons.faults_attributed, lessons.faults_unattributed) == (4, 1)
    second = lessons.add(launch_correlation=[4], launch_exec_id=[400], kernel_correlation=[3, 4],
                         kernel_start_ns=[44, 60], kernel_end_ns=[50, 70], fault_t_ns=[61], fault_address=[2 * MIB2])
    assert as_pairs(second) == [(300, (8,)), (400, (2,))]
    assert (lessons.faults_attributed, lessons.faults_unattributed) == (6, 1)
    assert len(lessons.add([], [], [], [], [], [], [])) == 0


@st.composite
def single_stream_logs(draw):
    """Kernels one after another on one stream (launched before they start), page faults at random
    times (inside kernels and between them), and the times at which the log is delivered."""
    count = draw(st.integers(0, 12))
    t, kernels = 0, []
    for correlation in range(1, count + 1):
        launch = t
        start = t + draw(st.integers(0, 5))
        end = start + draw(st.integers(0, 20))
        kernels.append((correlation, draw(st.integers(0, 3)), launch, start, end))
        t = end + draw(st.integers(1, 5))
    times = sorted(draw(st.lists(st.integers(0, t + 5), max_size=40)))
    faults = [(time, draw(st.integers(0, 4)) * MIB2 + draw(st.integers(0, 511)) * 4096) for time in times]
    cuts = sorted(draw(st.lists(st.integers(0, t + 5), max_size=4)))
    return kernels, faults, cuts


def oracle(kernels, faults):
    """Each kernel's faulted blocks in time order, consecutive repeats dropped, in launch order."""
    out = []
    for _, exec_id, _, start, end in kernels:
        blocks = []
        for time, address in faults:
            if start <= time <= end and (not blocks or blocks[-1] != address // MIB2):
                blocks.append(address // MIB2)
        if blocks:
            out.append((exec_id, tuple(blocks)))
    return out


@settings(max_examples=300, deadline=None)
@given(single_stream_logs())
def test_lessons_over_rounds_match_an_oracle_of_the_whole_log(log):
    kernels, faults, cuts = log
    lessons, learned, delivered = FaultLessons(), [], 0.0
    for cut in [*cuts, float("inf")]:
        new_launches = [k for k in kernels if delivered <= k[2] < cut]
        new_records = [k for k in kernels if delivered <= k[4] < cut]
        new_faults = [f for f in faults if delivered <= f[0] < cut]
        learned += as_pairs(lessons.add(
            [k[0] for k in new_launches], [k[1] for k in new_launches], [k[0] for k in new_records],
            [k[3] for k in new_records], [k[4] for k in new_records], [f[0] for f in new_faults],
            [f[1] for f in new_faults]))
        delivered = cut
    assert learned == oracle(kernels, faults)
    last_end = kernels[-1][4] if kernels else -1
    assert lessons.faults_attributed == sum(any(k[3] <= t <= k[4] for k in kernels) for t, _ in faults)
    assert lessons.faults_attributed + lessons.faults_unattributed == sum(t <= last_end for t, _ in faults)
