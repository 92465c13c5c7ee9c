"""The release of the blocks PyTorch holds back under the routing (deepum/runtime/deferred_frees.py),
with a fake torch: record_stream calls are counted and passed on; a release comes at the next mark
after one (never without one), at once past the byte limit, and is retried when it could not run."""
from __future__ import annotations

import types

import pytest

from deepum.runtime.deferred_frees import DeferredFrees, routing_holds_frees


class Storage:
    def __init__(self, nbytes):
        self._nbytes = nbytes

    def nbytes(self):
        return self._nbytes


def fake_torch(log):
    class Tensor:
        def __init__(self, nbytes):
            self.storage = Storage(nbytes)

        def untyped_storage(self):
            return self.storage

        def record_stream(self, stream):
            log.append(("record_stream", self.storage.nbytes(), stream))

    return types.SimpleNamespace(Tensor=Tensor)


@pytest.fixture
def frees():
    log, outcomes = [], []

    def release():
        log.append(("release",))
        return outcomes.pop(0) if outcomes else True

    torch = fake_torch(log)
    deferred = DeferredFrees(torch, release, max_pending_bytes=100)
    deferred.install()
    yield torch, deferred, log, outcomes
    deferred.remove()


def test_record_stream_is_counted_and_passed_on(frees):
    torch, deferred, log, _ = frees
    torch.Tensor(40).record_stream("side")
    assert log == [("record_stream", 40, "side")]
    assert (deferred.pending_calls, deferred.pending_bytes) == (1, 40)


def test_a_mark_releases_only_after_a_record_stream(frees):
    torch, deferred, log, _ = frees
    assert deferred.release_if_pending() is False and log == []
    torch.Tensor(10).record_stream("side")
    assert deferred.release_if_pending() is True
    assert log[-1] == ("release",) and deferred.releases == 1
    assert deferred.release_if_pending() is False and deferred.releases == 1


def test_past_the_byte_limit_the_next_record_stream_releases_first(frees):
    torch, deferred, log, _ = frees
    for _ in range(3):
        torch.Tensor(40).record_stream("side")
    assert ("release",) not in log               # 120 bytes pending: past the limit only now
    torch.Tensor(40).record_stream("side")
    assert log[-2:] == [("release",), ("record_stream", 40, "side")]
    assert (deferred.pending_calls, deferred.pending_bytes) == (1, 40)


def test_a_release_that_cannot_run_keeps_what_is_pending(frees):
    torch, deferred, log, outcomes = frees
    torch.Tensor(30).record_stream("side")
    outcomes.append(False)
    assert deferred.release_if_pending() is False
    assert (deferred.pending_calls, deferred.pending_bytes) == (1, 30) and deferred.releases == 0
    assert deferred.release_if_pending() is True and deferred.pending_calls == 0


def test_remove_puts_record_stream_back(frees):
    torch, deferred, log, _ = frees
    deferred.remove()
    torch.Tensor(5).record_stream("side")
    assert deferred.pending_calls == 0 and log == [("record_stream", 5, "side")]


@pytest.mark.parametrize("version, holds", [("2.11.0+cu130", True), ("2.12.1", True), ("2.13.0", False),
                                            ("2.13.0a0+git1234", False), ("3.0.0", False), ("1.13.1", True)])
def test_versions_that_hold_frees(version, holds):
    assert routing_holds_frees(version) is holds


def test_the_limit_must_be_positive():
    with pytest.raises(ValueError, match="max_pending_bytes"):
        DeferredFrees(types.SimpleNamespace(), lambda: True, 0)
