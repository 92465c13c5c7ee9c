"""deepum/runtime/host_heap.py: glibc's heap kept once grown, where and only where deepum may migrate."""
import ctypes

import pytest

from deepum.config import DeepUMConfig
from deepum.runtime import host_heap


class FakeMallopt:
    """A C library whose mallopt records its calls and accepts all but the parameters in `refused`."""

    def __init__(self, refused=()):
        self.calls, self.refused = [], set(refused)
        self.mallopt = self._mallopt

    def _mallopt(self, parameter, value):
        self.calls.append((parameter, value))
        return 0 if parameter in self.refused else 1


def test_keep_sets_trim_top_pad_and_mmap_thresholds():
    libc = FakeMallopt()
    assert host_heap.keep(libc)
    assert libc.calls == [(-1, 1 << 30), (-2, 64 << 20), (-3, 32 << 20)]


def test_a_refused_setting_is_reported():
    libc = FakeMallopt(refused={host_heap.M_TOP_PAD})
    assert not host_heap.keep(libc)
    assert libc.calls[:2] == [(-1, 1 << 30), (-2, 64 << 20)]


def test_a_c_library_without_mallopt_sets_nothing():
    class NoMallopt:
        pass

    assert not host_heap.keep(NoMallopt())


def test_this_process_c_library_accepts_every_setting():
    libc = host_heap.c_library()
    if libc is None or not hasattr(libc, "mallopt"):
        pytest.skip("the C library has no mallopt (not glibc)")
    assert host_heap.keep(libc)
    buffer = ctypes.create_string_buffer(1 << 20)  # the heap still serves allocations
    assert len(buffer) == 1 << 20


@pytest.mark.parametrize("mode, switch, device_memory, kept", [
    ("deepum", True, False, True),
    ("deepum", False, False, False),
    ("deepum", True, True, False),
    ("um", True, False, False),
    ("advise", True, False, False),
    ("none", True, False, False),
])
def test_only_deepum_sessions_that_may_migrate_keep_the_heap(mode, switch, device_memory, kept):
    assert host_heap.keeps_host_heap(mode, switch, device_memory) is kept


def test_the_knob_is_on_by_default_and_round_trips():
    assert DeepUMConfig().keep_host_heap is True
    config = DeepUMConfig(keep_host_heap=False)
    assert DeepUMConfig.from_dict(config.to_dict()).keep_host_heap is False
    with pytest.raises(ValueError, match="keep_host_heap"):
        DeepUMConfig(keep_host_heap=1)
