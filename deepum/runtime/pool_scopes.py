"""PyTorch's own allocation scopes beside a session's routing.

A session routes every CUDA allocation into deepum's managed pool. A CUDA graph capture
(`torch.cuda.graph`, torch.compile's CUDA graph trees) and another pool's scope
(`torch.cuda.use_mem_pool`) must get their allocations in their own pools, and the engine must put
nothing of its own (waits, prefetches, event records) into a captured graph. While such a scope is
open, the routing is lifted and the engine stands aside with its commands drained; when the last
one closes, both come back. Graph memory is thus plain device memory, outside the budget, and never
prefetched, evicted or discarded.

`torch.cuda.empty_cache()` runs with the routing lifted, and replaces deepum's pool first: PyTorch
frees the cached segments of a pool only once nothing uses the pool any more. The replaced pool is
let go (PyTorch frees its cached segments at once, and its live blocks' segments at a later
empty_cache or out-of-memory retry once they die); later allocations go to the fresh pool.

PyTorch before 2.13 counts a routing into a pool as a capture under way: it defers the free of a
block used on other streams (`record_stream`) while the routing lasts, and once no capture is under
way it frees such a block without waiting for those streams (it takes them for captured streams,
which are done). So the routing is lifted only after the device has finished all work queued so far.
It also asserts that no capture is under way when a MemPool is destroyed: the pools made while a
session runs are kept until its routing ends.
"""
from __future__ import annotations

import functools
import os
import threading

COLLECTIVES_WITHOUT_RECORD_STREAM = "TORCH_NCCL_AVOID_RECORD_STREAMS"
"""PyTorch's switch that makes its NCCL process groups keep a collective's tensors alive until the
collective ends, in place of record_stream on them."""


def keep_collectives_off_record_stream(environ=None) -> None:
    """Asks PyTorch's NCCL process groups made from now on not to record_stream their tensors
    (sets TORCH_NCCL_AVOID_RECORD_STREAMS=1 unless the user chose a value): under the routing such
    blocks would be held back for the session and then freed unordered (see the module's note)."""
    environ = os.environ if environ is None else environ
    environ.setdefault(COLLECTIVES_WITHOUT_RECORD_STREAM, "1")


class PoolScopes:
    """The session's routing (route, unroute) and the wrappers that lift it for PyTorch's own scopes
    (install, remove)."""

    def __init__(self, torch, engine, device: int, pools):
        """pools: deepum's pools (allocator.ManagedAllocator): `pool`, the MemPool routed into now,
        and `replace_pool()`, which puts a fresh one in its place and returns the old one."""
        self.torch = torch
        self.engine = engine
        self.device = device
        self.pools = pools
        self.depth = 0                 # scopes open now
        self.lock = threading.RLock()
        self.originals: list[tuple[object, str, object]] = []
        self.kept_pools: list = []     # MemPools made under the routing, destroyed only after it
        c = torch._C
        self._begin = c._cuda_beginAllocateToPool
        self._end = c._cuda_endAllocateToPool
        self._release_pool = c._cuda_releasePool
        self._empty_cache = torch.cuda.memory.empty_cache

    @property
    def pool_id(self) -> tuple[int, int]:
        return tuple(self.pools.pool.id)

    # -- the session's own routing ---------------------------------------------------------------
    def route(self) -> None:
        self._begin(self.device, self.pool_id)

    def start_fresh_pool(self) -> None:
        """Before the routing starts: puts a fresh pool in place of deepum's current one and lets the
        old one go (PyTorch frees its cached segments at once, its live blocks' segments once they die
        and empty_cache runs), so no allocation lands in an earlier session's segments."""
        self._let_go(self.pools.replace_pool())

    def unroute(self) -> None:
        """Ends the routing (unless a scope has lifted it already) and lets the kept pools go."""
        with self.lock:
            if self.depth == 0:
                self._end(self.device, self.pool_id)
            self.kept_pools.clear()

    # -- scopes ------------------------------------------------------------------------------------
    def open(self) -> None:
        with self.lock:
            if self.depth == 0:
                self.engine.pause()
                self.torch.cuda.synchronize(self.device)  # deferred frees may complete without waiting
                self._end(self.device, self.pool_id)
            self.depth += 1

    def close(self) -> None:
        with self.lock:
            if self.depth == 0:
                return
            self.depth -= 1
            if self.depth == 0:
                self.route()
                self.engine.resume()

    def release_held_frees(self) -> bool:
        """PyTorch's empty_cache with the routing lifted and the device idle, which frees the blocks
        it held back under the routing (deferred_frees.py); False, doing nothing, while a scope is open."""
        with self.lock:
            if self.depth:
                return False
            self.open()
            try:
                self._empty_cache()
            finally:
                self.close()
        return True

    def _ours(self, pool) -> bool:
        return tuple(pool) == self.pool_id

    def install(self) -> None:
        torch, c = self.torch, self.torch._C
        graph = torch.cuda.graphs.CUDAGraph
        self._wrap(graph, "capture_begin", lambda original: self._opening(original))
        self._wrap(graph, "capture_end", lambda original: self._closing(original))
        for name in ("_cuda_beginAllocateCurrentStreamToPool", "_cuda_beginAllocateCurrentThreadToPool"):
            if hasattr(c, name):
                self._wrap(c, name, lambda original: self._opening_other_pool(original))
        self._wrap(c, "_cuda_endAllocateToPool", lambda original: self._closing_other_pool(original))
        for owner in (torch.cuda, torch.cuda.memory):
            self._wrap(owner, "empty_cache", lambda original: self._emptying(original))
            self._wrap(owner, "MemPool", lambda original: self._kept(original))

    def remove(self) -> None:
        for owner, name, original in reversed(self.originals):
            setattr(owner, name, original)
        self.originals.clear()

    def _wrap(self, owner, name: str, make) -> None:
        original = getattr(owner, name)
        self.originals.append((owner, name, original))
        replacement = make(original)
        setattr(owner, name, replacement if isinstance(original, type) else functools.wraps(original)(replacement))

    def _opening(self, original):
        def opening(*args, **kwargs):
            self.open()
            try:
                return original(*args, **kwargs)
            except BaseException:
                self.close()
                raise
        return opening

    def _closing(self, original):
        def closing(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            finally:
                self.close()
        return closing

    def _opening_other_pool(self, original):
        def opening(device, pool, *args, **kwargs):
            if self._ours(pool):
                return original(device, pool, *args, **kwargs)
            self.open()
            try:
                return original(device, pool, *args, **kwargs)
            except BaseException:
                self.close()
                raise
        return opening

    def _closing_other_pool(self, original):
        def closing(device, pool, *args, **kwargs):
            try:
                return original(device, pool, *args, **kwargs)
            finally:
                if not self._ours(pool):
                    self.close()
        return closing

    def _kept(self, original):
        kept = self.kept_pools

        class MemPool(original):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                kept.append(self)

        MemPool.__qualname__ = original.__qualname__
        MemPool.__module__ = original.__module__
        return MemPool

    def _emptying(self, original):
        def empty_cache(*args, **kwargs):
            with self.lock:
                self.open()
                try:
                    if self.depth == 1:  # no capture beside: a pool may be let go
                        self._let_go(self.pools.replace_pool())
                    return original(*args, **kwargs)
                finally:
                    self.close()
        return empty_cache

    def _let_go(self, pool) -> None:
        """Gives back the references the routing took on a replaced pool (each routing into a pool
        counts one), leaving the pool object's own; the object's destructor, when the caller drops
        it, gives back the last one and frees the pool's cached segments."""
        while pool.use_count() > 1:
            self._release_pool(self.device, pool.id)
