"""The sleep gate (deepum/specs/sleep.py, driver_hooks/sleep_gate.hpp): the native gate against the
spec on any run of segments made, freed and early wakes; and the simulator, which sleeps like the
engine: it shows the policy the first launch the spec's gate allows over the trace's memory events and,
under deepum, populates the segments made while it sleeps as the spec says; a replay that sleeps
throughout without populating is um's."""
from __future__ import annotations

import typing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum import _native
from deepum.config import DeepUMConfig
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.offline.trace_format import MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE
from deepum.specs.sleep import BLOCK_BYTES, SleepGate, populates_new_segments, serves_device_memory, spanned_bytes
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


@pytest.mark.parametrize("make_gate", [SleepGate, _native.SleepGate], ids=["spec", "native"])
def test_the_gate_wakes_past_its_share_and_stays_awake(make_gate):
    gate = make_gate(100 * MiB, 90)
    assert not gate.segment_alloc(90 * MiB) and gate.asleep      # at the threshold: still asleep
    assert gate.segment_alloc(1) and not gate.asleep             # past it: wakes, once
    gate.segment_free(90 * MiB + 1)
    assert not gate.segment_alloc(1) and not gate.asleep


def test_the_spec_refuses_a_share_past_the_whole():
    with pytest.raises(ValueError, match="wake_percent"):
        SleepGate(MiB, 101)


class SpecReplay(typing.NamedTuple):
    """The spec's answer for a replay: the first kernel the policy sees (None: it slept throughout) and
    the bytes of the trace's blocks populated as their segments were made while it slept."""

    first_kernel_seen: int | None
    populated_bytes: int


def spec_replay(trace, capacity_bytes: int, wake_percent: int, populate: bool) -> SpecReplay:
    actions = trace.mem_action.tolist()
    gate = SleepGate(capacity_bytes, wake_percent if MEM_SEGMENT_ALLOC in actions else 0)
    trace_blocks = set(np.unique(trace.access_block).tolist())
    live: dict[int, int] = {}
    resident: set[int] = set()  # blocks populated and not since released with a segment
    populated = 0
    after = trace.mem_kernel.tolist()
    event = 0

    def blocks_of(address: int, nbytes: int) -> set[int]:
        return set(range(address // BLOCK_BYTES, (address + nbytes - 1) // BLOCK_BYTES + 1)) & trace_blocks

    def apply(kernel: int) -> None:
        nonlocal event, populated
        while event < len(after) and after[event] == kernel:
            address, nbytes = int(trace.mem_address[event]), int(trace.mem_bytes[event])
            if actions[event] == MEM_SEGMENT_ALLOC and nbytes > 0:
                live[address] = nbytes
                if not gate.segment_alloc(spanned_bytes(address, nbytes)) and gate.asleep and populate:
                    fresh = blocks_of(address, nbytes) - resident
                    populated += len(fresh) * BLOCK_BYTES
                    resident.update(fresh)
            elif actions[event] == MEM_SEGMENT_FREE and address in live:
                nbytes = live.pop(address)
                gate.segment_free(spanned_bytes(address, nbytes))
                resident.difference_update(blocks_of(address, nbytes))
            event += 1

    apply(-1)
    for k in range(trace.num_kernels):
        if not gate.asleep:
            return SpecReplay(k, populated)
        apply(k)
    return SpecReplay(None, populated)


@pytest.mark.parametrize("name", ["transformer", "cnn", "moe"])
@pytest.mark.parametrize("fraction", [0.5, 0.75])
@pytest.mark.parametrize("wake_percent", [50, 90, 100])
def test_the_simulator_wakes_and_populates_where_the_spec_says(name, fraction, wake_percent):
    trace = GENERATORS[name](iterations=2)
    capacity = parse_capacity(fraction, trace.footprint_bytes())
    for policy, populate in [("deepum", True), ("deepum", False), ("um", True), ("advise", True)]:
        result = simulate(trace, policy, capacity, DeepUMConfig(wake_percent=wake_percent, populate_segments=populate))
        expected = spec_replay(trace, capacity, wake_percent, populates_new_segments(policy, populate))
        assert expected.first_kernel_seen is not None and expected.first_kernel_seen > 0
        assert result.woke_at_kernel == expected.first_kernel_seen, policy
        assert result.segment_populated_bytes == expected.populated_bytes, (policy, populate)
        assert (expected.populated_bytes > 0) == (policy == "deepum" and populate)
        assert result.peak_resident_bytes <= capacity
        assert result.lost_reads == 0


def test_a_replay_that_sleeps_throughout_faults_like_um_unless_its_segments_are_populated():
    trace = GENERATORS["transformer"](iterations=3)
    roomy = 2 * trace.footprint_bytes()
    um = simulate(trace, "um", roomy)
    faulting = simulate(trace, "deepum", roomy, DeepUMConfig(populate_segments=False))
    populated = simulate(trace, "deepum", roomy)
    assert um.woke_at_kernel is faulting.woke_at_kernel is populated.woke_at_kernel is None
    assert (faulting.faults, faulting.h2d_bytes, faulting.time_s) == (um.faults, um.h2d_bytes, um.time_s)
    expected = spec_replay(trace, roomy, DeepUMConfig().wake_percent, True)
    assert populated.segment_populated_bytes == expected.populated_bytes >= um.h2d_bytes > 0
    # Every block the trace touches lies in a segment made while asleep: no first touch faults.
    assert populated.faults == populated.h2d_bytes == 0
    assert populated.time_s < um.time_s
    awake = simulate(trace, "deepum", parse_capacity(0.5, trace.footprint_bytes()), DeepUMConfig(wake_percent=0))
    assert awake.woke_at_kernel == 0 and awake.segment_populated_bytes == 0


def test_a_warm_start_wakes_the_replay_at_once():
    trace = GENERATORS["transformer"](iterations=3)
    capacity = parse_capacity(0.5, trace.footprint_bytes())
    first = simulate(trace, "deepum", capacity)
    assert first.woke_at_kernel > 0
    second = simulate(trace, "deepum", capacity, warm_state=first.learned_state)
    assert second.woke_at_kernel == 0


DEVICE_MEMORY_SESSION = dict(mode="deepum", fuse_bytes=8 << 30, capacity_bytes=8 << 30, wake_percent=90,
                             learn_from="accesses", device_memory_without_pressure=True, recording=False,
                             loads_state=False)


def test_a_session_that_can_never_come_under_pressure_takes_device_memory():
    assert serves_device_memory(**DEVICE_MEMORY_SESSION)  # the fuse exactly at the capacity


@pytest.mark.parametrize("change", [
    dict(mode="um"), dict(mode="advise"),                # plain unified memory is their point
    dict(fuse_bytes=(8 << 30) + 1),                      # residency could pass the capacity
    dict(wake_percent=0), dict(learn_from="faults"),     # an engine awake from the start
    dict(recording=True), dict(loads_state=True),        # a trace of managed memory, a learned state
    dict(device_memory_without_pressure=False),          # the way out
])
def test_every_other_session_keeps_managed_memory(change):
    assert not serves_device_memory(**{**DEVICE_MEMORY_SESSION, **change})


@given(st.integers(1, 1 << 40), st.integers(1, 1 << 40))
def test_device_memory_only_where_the_fuse_fits_the_capacity(fuse, capacity):
    session = {**DEVICE_MEMORY_SESSION, "fuse_bytes": fuse, "capacity_bytes": capacity}
    assert serves_device_memory(**session) == (fuse <= capacity)

