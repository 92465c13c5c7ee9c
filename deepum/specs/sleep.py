"""When the engine sleeps: the readable specification of driver_hooks/sleep_gate.hpp, which the GPU
engine and the offline simulator both run.

Residency can never exceed the managed segments, so while they hold no more than the capacity nothing
ever has to move, and watching launches only costs time (the gate counts the bytes of the blocks the
segments span, `spanned_bytes`, as blocks are what becomes resident). The engine therefore starts asleep: the
launch hook is off and the policy sees no launch. It wakes, for good, at the first managed segment
that takes the live segments past `wake_percent` of the capacity; from the next launch on, the
launch hook runs and the policy, told first that every block of the live segments is resident
(Policy.wake: which of them the GPU touched while the engine slept is not known), decides as
usual. With wake_percent 0 the engine never sleeps, and a session that loads a learned state (a warm
start) wakes at once: the run that learned it was under pressure.

While asleep, deepum's policy populates each managed segment that leaves the gate asleep on the GPU as
it is made (`populates_new_segments`): one prefetch of fresh pages, no copy, where the driver alone
would fault on every first touch. It has room: the live segments then span at most the capacity. A
segment that wakes the gate is left to the woken policy, which counts it resident.

Where even the whole fuse (max_managed_bytes) fits the capacity, the engine could never need to move a
block: residency cannot pass the managed bytes, and they cannot pass the fuse. A deepum session that
would sleep all the while then takes its segments from plain device memory (`serves_device_memory`),
since managed memory costs some steps more even with every page on the GPU (each copy that waits for
the GPU costs the driver more). The pool and the fuse stay; neither hook is installed, since no
segment could enter the memory map (it maps managed segments only) and wake the gate. A session that
records a trace, loads a learned state, learns from faults or never sleeps (wake_percent 0) keeps
managed memory, as do um and advise, whose point is plain unified memory.
"""
from __future__ import annotations

from .. import _native

BLOCK_BYTES: int = _native.BLOCK_BYTES


def spanned_bytes(address: int, nbytes: int) -> int:
    """The bytes of the blocks a segment at `address` of `nbytes` spans: what the gate counts, since a
    block partly inside a segment may be resident whole."""
    if nbytes <= 0:
        return 0
    return ((address + nbytes - 1) // BLOCK_BYTES - address // BLOCK_BYTES + 1) * BLOCK_BYTES


class SleepGate:
    """Whether the engine sleeps, from the sizes of the managed segments made and freed."""

    def __init__(self, capacity_bytes: int, wake_percent: int):
        if not 0 <= wake_percent <= 100:
            raise ValueError(f"wake_percent must be within 0..100, got {wake_percent}")
        self.threshold_bytes = capacity_bytes * wake_percent // 100
        self.segment_bytes = 0
        self.asleep = wake_percent > 0

    def segment_alloc(self, nbytes: int) -> bool:
        """A managed segment of `nbytes` is made; whether the engine wakes with it."""
        self.segment_bytes += nbytes
        if self.asleep and self.segment_bytes > self.threshold_bytes:
            self.asleep = False
            return True
        return False

    def wake(self) -> bool:
        """Wakes now (a session that loads a learned state expects pressure); whether it slept."""
        slept, self.asleep = self.asleep, False
        return slept

    def segment_free(self, nbytes: int) -> None:
        """A managed segment this gate saw made is freed."""
        self.segment_bytes -= nbytes


def populates_new_segments(mode: str, populate_segments: bool) -> bool:
    """Whether a managed segment made while the engine sleeps, and that leaves it asleep, is populated on
    the GPU at once: deepum's policy with DeepUMConfig.populate_segments; um and advise leave its first
    touches to fault, as the driver alone does."""
    return mode == "deepum" and populate_segments


def serves_device_memory(mode: str, fuse_bytes: int, capacity_bytes: int, wake_percent: int, learn_from: str,
                         device_memory_without_pressure: bool, recording: bool, loads_state: bool) -> bool:
    """Whether the session's segments come from device memory: deepum's policy
    (DeepUMConfig.device_memory_without_pressure), its fuse no larger than its capacity (both in
    bytes: no block would ever have to move), and its engine starting asleep with nothing to learn
    (wake_percent above 0, learning from accesses, no trace recorded, no learned state loaded)."""
    return (mode == "deepum" and device_memory_without_pressure and fuse_bytes <= capacity_bytes
            and wake_percent > 0 and learn_from == "accesses" and not recording and not loads_state)
