"""Blocks PyTorch holds back under the routing, and their release.

PyTorch before 2.13 counts the session's routing into deepum's pool as a graph capture under way.
A block used on another stream (`Tensor.record_stream`) and then freed is therefore not freed: its
free waits for the end of a capture that never ends, and its memory is never used again while the
session lasts (FSDP, for one, frees every gathered parameter that way, every layer). Releasing them
takes the routing off for a moment with the device idle: PyTorch then frees the held blocks into
the pool, where they are used again.

This module counts the record_stream calls made through Python and releases the held blocks at the
next iteration mark after one, and at once when the tensors recorded since the last release come to
more than a share of the fuse. A release costs a device synchronization. record_stream calls made
inside PyTorch's C++ code are not seen: PyTorch's NCCL process groups are asked not to make them
(pool_scopes.keep_collectives_off_record_stream).
"""
from __future__ import annotations

import functools
import threading

FUSE_SHARE_DIVISOR = 4
"""A release comes at once when the bytes recorded since the last one pass max_managed_bytes / this
(default 4, minimum 1: each block recorded past the whole fuse; no maximum)."""


class DeferredFrees:
    """Counts record_stream calls (install, remove) and releases the blocks PyTorch holds back after
    them (release_if_pending) through `release`: a callable that frees them and says whether it
    could (PoolScopes.release_held_frees; not while a capture or another pool's scope is open)."""

    def __init__(self, torch, release, max_pending_bytes: int):
        if max_pending_bytes < 1:
            raise ValueError(f"max_pending_bytes must be at least 1, got {max_pending_bytes}")
        self.torch = torch
        self.release = release
        self.max_pending_bytes = max_pending_bytes
        self.pending_calls = 0      # record_stream calls since the last release
        self.pending_bytes = 0      # bytes of the storages they recorded
        self.releases = 0
        self.lock = threading.Lock()
        self.original = None

    def install(self) -> None:
        tensor = self.torch.Tensor
        self.original = tensor.record_stream

        @functools.wraps(self.original)
        def record_stream(t, stream):
            self.note(t.untyped_storage().nbytes())
            return self.original(t, stream)

        tensor.record_stream = record_stream

    def remove(self) -> None:
        if self.original is not None:
            self.torch.Tensor.record_stream = self.original
            self.original = None

    def note(self, nbytes: int) -> None:
        """One record_stream call on a storage of `nbytes`: releases first when the bytes recorded
        since the last release have passed max_pending_bytes."""
        with self.lock:
            over = self.pending_bytes > self.max_pending_bytes
        if over:
            self.release_if_pending()
        with self.lock:
            self.pending_calls += 1
            self.pending_bytes += nbytes

    def release_if_pending(self) -> bool:
        """Releases the held blocks if record_stream was called since the last release; whether it did."""
        with self.lock:
            if self.pending_calls == 0:
                return False
            calls, nbytes = self.pending_calls, self.pending_bytes
            self.pending_calls = self.pending_bytes = 0
        if not self.release():
            with self.lock:
                self.pending_calls += calls
                self.pending_bytes += nbytes
            return False
        self.releases += 1
        return True


def routing_holds_frees(torch_version: str) -> bool:
    """Whether PyTorch of this version ("2.11.0+cu130") holds back record_stream'd frees under the
    routing (before 2.13)."""
    major, minor = (int(part) for part in torch_version.split(".")[:2])
    return (major, minor) < (2, 13)
