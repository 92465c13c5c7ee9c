"""The session's routing beside PyTorch's own pool scopes (deepum/runtime/pool_scopes.py), with a fake
torch that logs the calls: a capture or another pool's scope lifts the routing once (after the engine
stands aside and the device is synchronized) and the last one to close restores it; deepum's own pool
is never counted as another; a failed capture_begin closes its scope; remove() puts PyTorch back."""
from __future__ import annotations

import types
import weakref

import pytest

from deepum.runtime.pool_scopes import COLLECTIVES_WITHOUT_RECORD_STREAM, PoolScopes, keep_collectives_off_record_stream

OURS = (7, 1)
THEIRS = (0, 3)


class FakePool:
    """deepum's MemPool: its use count is one for the object plus one per routing into it, as in
    PyTorch; its destruction is logged with the count it had then."""
    live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __init__(self, pool_id, log):
        self.id, self.log, self.uses = pool_id, log, 1
        FakePool.live[pool_id] = self

    def use_count(self):
        return self.uses

    def __del__(self):
        self.log.append(("pool_destroyed", self.id, self.uses))


class FakePools:
    """deepum's pools (allocator.ManagedAllocator): the one routed into now, and replace_pool()."""

    def __init__(self, log):
        self.log, self.made = log, 0
        self.pool = FakePool(OURS, log)

    def replace_pool(self):
        self.made += 1
        old, self.pool = self.pool, FakePool((OURS[0], OURS[1] + self.made), self.log)
        return old


def make_fake_torch(log: list):
    def route(device, pool_id):
        log.append(("route", device, pool_id))
        FakePool.live[pool_id].uses += 1

    def logged(name, result=None, fails=False):
        def call(*args, **kwargs):
            log.append((name, *args))
            if fails:
                raise RuntimeError(f"{name} failed")
            return result
        return call

    class CUDAGraph:
        def capture_begin(self, pool=None, capture_error_mode="global"):
            log.append(("capture_begin", pool))
            if pool == "bad":
                raise RuntimeError("capture_begin failed")

        def capture_end(self):
            log.append(("capture_end",))

    def release_pool(device, pool_id):
        log.append(("release_pool", device, pool_id))
        FakePool.live[pool_id].uses -= 1

    c = types.SimpleNamespace(
        _cuda_beginAllocateToPool=route, _cuda_endAllocateToPool=logged("end_pool"),
        _cuda_releasePool=release_pool,
        _cuda_beginAllocateCurrentStreamToPool=logged("begin_other"),
        _cuda_beginAllocateCurrentThreadToPool=logged("begin_other_thread"))
    class MemPool:
        def __init__(self, allocator=None):
            self.allocator = allocator

        def __del__(self):
            log.append(("pool_destroyed", self.allocator))

    memory = types.SimpleNamespace(empty_cache=logged("empty_cache"), MemPool=MemPool)
    cuda = types.SimpleNamespace(graphs=types.SimpleNamespace(CUDAGraph=CUDAGraph), memory=memory,
                                 empty_cache=memory.empty_cache, synchronize=logged("synchronize"), MemPool=MemPool)
    return types.SimpleNamespace(_C=c, cuda=cuda)


class FakeEngine:
    def __init__(self, log):
        self.log = log

    def pause(self):
        self.log.append(("pause",))

    def resume(self):
        self.log.append(("resume",))


@pytest.fixture
def setup():
    log: list = []
    torch = make_fake_torch(log)
    scopes = PoolScopes(torch, FakeEngine(log), 0, FakePools(log))
    scopes.route()
    scopes.install()
    log.clear()
    return torch, scopes, log


LIFT = [("pause",), ("synchronize", 0), ("end_pool", 0, OURS)]
RESTORE = [("route", 0, OURS), ("resume",)]


def test_a_capture_lifts_the_routing_once_and_restores_it(setup):
    torch, scopes, log = setup
    graph = torch.cuda.graphs.CUDAGraph()
    graph.capture_begin(THEIRS)
    torch._C._cuda_beginAllocateCurrentStreamToPool(0, (0, 9))  # nested: no second lift
    torch._C._cuda_endAllocateToPool(0, (0, 9))
    graph.capture_end()
    assert log == [*LIFT, ("capture_begin", THEIRS), ("begin_other", 0, (0, 9)), ("end_pool", 0, (0, 9)),
                   ("capture_end",), *RESTORE]
    assert scopes.depth == 0


def test_our_own_pool_is_not_another_scope(setup):
    torch, scopes, log = setup
    torch._C._cuda_beginAllocateCurrentThreadToPool(0, OURS)
    torch._C._cuda_endAllocateToPool(0, OURS)
    assert log == [("begin_other_thread", 0, OURS), ("end_pool", 0, OURS)]
    assert scopes.depth == 0


def test_a_failed_capture_begin_closes_its_scope(setup):
    torch, scopes, log = setup
    with pytest.raises(RuntimeError, match="capture_begin failed"):
        torch.cuda.graphs.CUDAGraph().capture_begin("bad")
    assert log == [*LIFT, ("capture_begin", "bad"), *RESTORE]
    assert scopes.depth == 0


FRESH = (OURS[0], OURS[1] + 1)


def test_empty_cache_lets_the_pool_go_with_the_routing_lifted(setup):
    """The pool in use is replaced and let go before PyTorch's empty_cache, so that its cached
    segments are freed: the routing's references given back, then the object destroyed with a use
    count of one (its own); the routing comes back into the fresh pool."""
    torch, scopes, log = setup
    scopes.open()  # a scope opened and closed before: the pool was routed into twice
    scopes.close()
    log.clear()
    torch.cuda.empty_cache()
    assert log == [*LIFT, ("release_pool", 0, OURS), ("release_pool", 0, OURS), ("pool_destroyed", OURS, 1),
                   ("empty_cache",), ("route", 0, FRESH), ("resume",)]
    assert scopes.pool_id == FRESH and FakePool.live[FRESH].use_count() == 2
    torch.cuda.memory.empty_cache()
    assert scopes.pool_id == (OURS[0], OURS[1] + 2)


def test_a_later_session_can_start_with_a_fresh_pool():
    """An earlier session routed into the pool and ended; a later one lets it go before routing (its
    reference from the routing given back, the object destroyed with its own) and routes into a fresh one."""
    log: list = []
    torch, pools = make_fake_torch(log), FakePools(log)
    earlier = PoolScopes(torch, FakeEngine(log), 0, pools)
    earlier.route()
    earlier.unroute()
    log.clear()
    later = PoolScopes(torch, FakeEngine(log), 0, pools)
    later.start_fresh_pool()
    later.route()
    assert log == [("release_pool", 0, OURS), ("pool_destroyed", OURS, 1), ("route", 0, FRESH)]
    assert later.pool_id == FRESH


def test_empty_cache_inside_a_capture_keeps_the_pool(setup):
    torch, scopes, log = setup
    torch.cuda.graphs.CUDAGraph().capture_begin(THEIRS)
    log.clear()
    torch.cuda.empty_cache()
    assert log == [("empty_cache",)] and scopes.pool_id == OURS


def test_unroute_inside_an_open_scope_leaves_the_pool_alone(setup):
    torch, scopes, log = setup
    torch._C._cuda_beginAllocateCurrentStreamToPool(0, THEIRS)
    log.clear()
    scopes.unroute()  # disable() while a scope is open: the routing is already lifted
    assert log == []


def test_remove_puts_pytorch_back(setup):
    torch, scopes, log = setup
    scopes.remove()
    torch.cuda.empty_cache()
    torch.cuda.graphs.CUDAGraph().capture_begin(THEIRS)
    torch._C._cuda_endAllocateToPool(0, THEIRS)
    assert log == [("empty_cache",), ("capture_begin", THEIRS), ("end_pool", 0, THEIRS)]


def test_collectives_are_asked_not_to_record_stream_unless_the_user_chose():
    environ = {}
    keep_collectives_off_record_stream(environ)
    assert environ == {COLLECTIVES_WITHOUT_RECORD_STREAM: "1"}
    chosen = {COLLECTIVES_WITHOUT_RECORD_STREAM: "0"}
    keep_collectives_off_record_stream(chosen)
    assert chosen == {COLLECTIVES_WITHOUT_RECORD_STREAM: "0"}


def test_held_frees_are_released_with_the_routing_lifted(setup):
    """... into the same pool, where they are used again."""
    torch, scopes, log = setup
    assert scopes.release_held_frees() is True
    assert log == [*LIFT, ("empty_cache",), *RESTORE]
    assert scopes.pool_id == OURS


def test_held_frees_wait_while_a_capture_is_open(setup):
    torch, scopes, log = setup
    graph = torch.cuda.graphs.CUDAGraph()
    graph.capture_begin(THEIRS)
    log.clear()
    assert scopes.release_held_frees() is False
    assert log == []


def test_pools_made_under_the_routing_outlive_it(setup):
    torch, scopes, log = setup
    for make in (torch.cuda.MemPool, torch.cuda.memory.MemPool):
        pool = make("theirs")
        assert pool.allocator == "theirs"
        del pool
    assert ("pool_destroyed", "theirs") not in log
    scopes.unroute()
    assert log == [("end_pool", 0, OURS), ("pool_destroyed", "theirs"), ("pool_destroyed", "theirs")]


def test_remove_puts_the_pool_class_back(setup):
    torch, scopes, log = setup
    wrapped = torch.cuda.MemPool
    scopes.remove()
    assert torch.cuda.MemPool is not wrapped and issubclass(wrapped, torch.cuda.MemPool)
