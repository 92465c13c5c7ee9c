"""The sleep gate (deepum/specs/sleep.py, driver_hooks/sleep_gate.hpp): the native gate against the
spec on any run of segments made, freed and early wakes; and the simulator, which sleeps like the
engine: it shows the policy the first launch the spec's gate allows over the trace's memory events,
and a replay that sleeps throughout is um's."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum import _native
from deepum.config import DeepUMConfig
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.offline.trace_format import MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE
from deepum.specs.sleep import SleepGate, spanned_bytes
from deepum.units import parse_capacity

MiB = 1 << 20

events = st.lists(st.one_of(st.tuples(st.just("alloc"), st.integers(1, 64 * MiB)),
                            st.tuples(st.just("free"), st.integers(0, 7)), st.tuples(st.just("wake"), st.none())),
                  max_size=40)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(0, 512 * MiB), percent=st.integers(0, 100), run=events)
def test_native_gate_agrees_with_the_spec(capacity, percent, run):
    spec, native = SleepGate(capacity, percent), _native.SleepGate(capacity, percent)
    live: list[int] = []
    assert spec.asleep == native.asleep == (percent > 0)
    for action, value in run:
        if action == "alloc":
            live.append(value)
            assert spec.segment_alloc(value) == native.segment_alloc(value)
        elif action == "free" and live:
            nbytes = live.pop(value % len(live))
            spec.segment_free(nbytes)
            native.segment_free(nbytes)
        elif action == "wake":
            assert spec.wake() == native.wake()
        assert spec.asleep == native.asleep


def test_a_segment_counts_the_whole_blocks_it_spans():
    assert spanned_bytes(0, 1) == spanned_bytes(2 * MiB, 2 * MiB) == 2 * MiB
    assert spanned_bytes(MiB, 2 * MiB) == 4 * MiB and spanned_bytes(5 * MiB, 0) == 0


def test_the_gate_wakes_past_its_share_and_stays_awake():
    gate = SleepGate(100 * MiB, 90)
    assert not gate.segment_alloc(90 * MiB) and gate.asleep      # at the threshold: still asleep
    assert gate.segment_alloc(1) and not gate.asleep             # past it: wakes, once
    gate.segment_free(90 * MiB + 1)
    assert not gate.segment_alloc(1) and not gate.asleep
    with pytest.raises(ValueError, match="wake_percent"):
        SleepGate(MiB, 101)


def first_kernel_seen(trace, capacity_bytes: int, wake_percent: int) -> int | None:
    """The spec's answer for a replay: the first kernel after the trace's segments wake the gate."""
    actions = trace.mem_action.tolist()
    gate = SleepGate(capacity_bytes, wake_percent if MEM_SEGMENT_ALLOC in actions else 0)
    live: dict[int, int] = {}
    after = trace.mem_kernel.tolist()
    event = 0

    def apply(kernel: int) -> None:
        nonlocal event
        while event < len(after) and after[event] == kernel:
            address, nbytes = int(trace.mem_address[event]), int(trace.mem_bytes[event])
            if actions[event] == MEM_SEGMENT_ALLOC:
                live[address] = nbytes = spanned_bytes(address, nbytes)
                gate.segment_alloc(nbytes)
            elif actions[event] == MEM_SEGMENT_FREE and address in live:
                gate.segment_free(live.pop(address))
            event += 1

    apply(-1)
    for k in range(trace.num_kernels):
        if not gate.asleep:
            return k
        apply(k)
    return None


@pytest.mark.parametrize("name", ["transformer", "cnn", "moe"])
@pytest.mark.parametrize("fraction", [0.5, 0.75])
@pytest.mark.parametrize("wake_percent", [50, 90, 100])
def test_the_simulator_wakes_where_the_spec_says(name, fraction, wake_percent):
    trace = GENERATORS[name](iterations=2)
    capacity = parse_capacity(fraction, trace.footprint_bytes())
    result = simulate(trace, "deepum", capacity, DeepUMConfig(wake_percent=wake_percent))
    expected = first_kernel_seen(trace, capacity, wake_percent)
    assert expected is not None and expected > 0
    assert result.woke_at_kernel == expected
    assert result.lost_reads == 0


def test_a_replay_that_sleeps_throughout_is_ums_and_never_sleeping_is_as_before():
    trace = GENERATORS["transformer"](iterations=3)
    roomy = 2 * trace.footprint_bytes()
    asleep = simulate(trace, "deepum", roomy)
    um = simulate(trace, "um", roomy)
    assert asleep.woke_at_kernel is None and um.woke_at_kernel is None
    assert (asleep.faults, asleep.h2d_bytes, asleep.time_s) == (um.faults, um.h2d_bytes, um.time_s)
    awake = simulate(trace, "deepum", parse_capacity(0.5, trace.footprint_bytes()), DeepUMConfig(wake_percent=0))
    assert awake.woke_at_kernel == 0


def test_a_warm_start_wakes_the_replay_at_once():
    trace = GENERATORS["transformer"](iterations=3)
    capacity = parse_capacity(0.5, trace.footprint_bytes())
    first = simulate(trace, "deepum", capacity)
    assert first.woke_at_kernel > 0
    second = simulate(trace, "deepum", capacity, warm_state=first.learned_state)
    assert second.woke_at_kernel == 0
