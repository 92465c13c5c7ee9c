"""Caching-allocator trace: the block and segment events of PyTorch's CUDA caching allocator
(alloc, free requested/completed, segment alloc/free), with addresses and sizes in bytes.

Backed by a PyTorch C++ extension (driver_hooks/allocator_trace.cpp) built on first use (tens of
seconds the first time, cached afterwards). Needs torch; importing this module does not.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from . import native_build

DEFAULT_CAPACITY = 1 << 20
"""Events kept between drains; later ones are counted as dropped."""


class AllocatorEvent(NamedTuple):
    action: str   # alloc, free_requested, free_completed, segment_alloc, segment_free, ...
    device: int
    address: int
    nbytes: int
    stream: int   # cudaStream_t as an integer


@functools.lru_cache(maxsize=None)
def _extension():
    return native_build.load_torch_extension(native_build.ALLOCATOR_TRACE)


@functools.lru_cache(maxsize=None)
def _action_names() -> dict[int, str]:
    return {code: name for name, code in _extension().actions().items()}


def start(capacity: int = DEFAULT_CAPACITY) -> None:
    """Attaches the tracker (once per process) and records up to `capacity` events."""
    _extension().start(capacity)


def stop() -> None:
    """Stops recording; events already recorded stay until drained."""
    _extension().stop()


def drain() -> list[AllocatorEvent]:
    """Removes and returns the recorded events, oldest first."""
    names = _action_names()
    return [AllocatorEvent(names.get(action, f"action{action}"), device, address, nbytes, stream)
            for action, device, address, nbytes, stream in _extension().drain()]


def dropped() -> int:
    """Events lost because the buffer was full."""
    return int(_extension().dropped())
