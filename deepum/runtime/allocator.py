"""The managed-memory allocator (kernels/managed_allocator.cpp, built on first use) under a PyTorch
MemPool: every CUDA allocation routed into it lands in managed memory, or in device memory where the
session can never come under pressure (deepum/specs/sleep.py), under the fuse."""
from __future__ import annotations

import ctypes

from . import native_build


class ManagedAllocator:
    """The managed-memory allocator library, its PyTorch MemPool and the counters it keeps."""

    def __init__(self, device: int):
        import torch

        self.path = native_build.build_library(native_build.MANAGED_ALLOCATOR)
        self.lib = ctypes.CDLL(str(self.path))
        for name, restype in (("deepum_max_managed_bytes", ctypes.c_size_t),
                              ("deepum_bytes_in_use", ctypes.c_size_t),
                              ("deepum_peak_bytes", ctypes.c_size_t),
                              ("deepum_segments_allocated", ctypes.c_uint64),
                              ("deepum_segments_freed", ctypes.c_uint64),
                              ("deepum_device_segments_allocated", ctypes.c_uint64),
                              ("deepum_device_memory", ctypes.c_int),
                              ("deepum_refusals", ctypes.c_uint64),
                              ("deepum_last_refused_bytes", ctypes.c_size_t),
                              ("deepum_bytes_in_use_at_refusal", ctypes.c_size_t),
                              ("deepum_driver_failures", ctypes.c_uint64),
                              ("deepum_last_driver_error", ctypes.c_int),
                              ("deepum_segments", ctypes.c_size_t)):
            getattr(self.lib, name).restype = restype
        self.lib.deepum_set_max_managed_bytes.argtypes = [ctypes.c_size_t]
        self.lib.deepum_set_device_memory.argtypes = [ctypes.c_int]
        self.lib.deepum_set_device_memory.restype = ctypes.c_int
        self.lib.deepum_segments.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.pluggable = torch.cuda.memory.CUDAPluggableAllocator(str(self.path), "deepum_malloc", "deepum_free")
        self.torch = torch
        self.make_pool = torch.cuda.MemPool  # PyTorch's own class, never a session's wrapper of it
        self.device = device
        self.pool = self._new_pool()

    def _new_pool(self):
        with self.torch.cuda.device(self.device):
            return self.make_pool(self.pluggable.allocator())

    def replace_pool(self):
        """Puts a fresh MemPool of the same allocator in place of the current one, and returns the
        current one: PyTorch releases a pool's cached segments only once the pool is let go."""
        old, self.pool = self.pool, self._new_pool()
        return old

    def counter(self, name: str) -> int:
        return int(getattr(self.lib, f"deepum_{name}")())

    def set_max_managed_bytes(self, nbytes: int) -> None:
        self.lib.deepum_set_max_managed_bytes(nbytes)

    def set_device_memory(self, on: bool) -> bool:
        """Segments made from now on come from device memory (True) or managed memory (False); whether
        segments of the other kind still live, whose free blocks the pool would hand out again."""
        return bool(self.lib.deepum_set_device_memory(int(on)))

    def segments(self) -> list[tuple[int, int]]:
        """The live managed segments as (address, bytes), in address order."""
        while True:
            room = self.counter("segments_allocated") - self.counter("segments_freed") + 16
            buffer = (ctypes.c_uint64 * (2 * room))()
            live = self.lib.deepum_segments(buffer, room)
            if live <= room:
                return [(buffer[2 * i], buffer[2 * i + 1]) for i in range(live)]
