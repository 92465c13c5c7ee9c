"""The host heap kept, once grown, while deepum migrates (DeepUMConfig.keep_host_heap).

The unified-memory driver holds the process's address-space lock for reading through every
migration: an eviction holds it while its pages are copied out and mapped on the host one by one.
glibc's malloc gives memory back to the kernel and takes it again with calls that need that lock for
writing: brk when the main heap's top is trimmed or grows, munmap and mmap for large blocks, and for
each thread's own heaps (PyTorch's autograd thread allocates in one) munmap when a heap empties, then
mmap and mprotect when it is made again. Those calls wait on the launching threads until the
migrations in flight end, and the GPU waits for the launches (docs/results.md). keep() sets glibc's
thresholds so that the heap, once grown, stays:

- M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES: a heap's free top is given back only past this size;
- M_TOP_PAD, TOP_PAD_BYTES: each growth takes this much more than asked, and a thread's heap is
  deleted only when more than this would stay free after it, which this size never allows;
- M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES: only blocks of this size or more get mappings of their own.

The settings hold for the rest of the process (glibc cannot restore its adaptive defaults); the cost
is host memory the process keeps instead of returning, bounded by its peak heap. Where the C library
has no mallopt (not glibc), nothing is set.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
"""mallopt's parameter numbers (glibc's malloc.h)."""
TRIM_THRESHOLD_BYTES = 1 << 30
"""Free top of a heap, bytes, kept before any is given back: more than a training step frees at once."""
TOP_PAD_BYTES = 64 << 20
"""Bytes added to each heap growth: a thread's heap is at most 64 MiB on 64-bit glibc, so none is deleted."""
MMAP_THRESHOLD_BYTES = 32 << 20
"""The smallest block, bytes, given a mapping of its own: the largest threshold glibc accepts."""
SETTINGS = ((M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES), (M_TOP_PAD, TOP_PAD_BYTES),
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def c_library():
    """The process's C library through ctypes, or None where it cannot be loaded."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None


def keep(libc=None) -> bool:
    """Sets SETTINGS through `libc`'s mallopt (the process's C library by default; ctypes passes and
    returns C ints); True when every one was accepted, False where there is no mallopt or one was
    refused (those before it stay set)."""
    libc = c_library() if libc is None else libc
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    return all(mallopt(parameter, value) == 1 for parameter, value in SETTINGS)


def keeps_host_heap(mode: str, keep_host_heap: bool, device_memory: bool) -> bool:
    """Whether a session keeps the heap: deepum's policy with DeepUMConfig.keep_host_heap, where its
    segments are managed memory (on device memory nothing ever migrates)."""
    return mode == "deepum" and keep_host_heap and not device_memory
