"""The GPU runtime's logic that needs no GPU: configuration, the too-late rule, the allocator's fuse
and registry (against a host-only CUDA stub), and importing without torch. The limits are in
test_limits.py, the native build cache in test_build_cache.py."""
from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from deepum.config import DeepUMConfig
from deepum.runtime.limits import RuntimeConfig, too_late_reason

GiB = 1 << 30
MiB = 1 << 20
REPO = Path(__file__).resolve().parent.parent


# --- configuration -------------------------------------------------------------------------

def test_config_parses_sizes_to_bytes():
    config = RuntimeConfig(mode="um", capacity="8GiB", max_managed_bytes="512 MiB", headroom=0)
    assert (config.capacity, config.max_managed_bytes, config.headroom) == (8 * GiB, 512 * MiB, 0)
    assert RuntimeConfig().mode == "deepum" and RuntimeConfig().capacity is None


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "fast"}, "unknown deepum mode 'fast'"),
    ({"capacity": "eight gigs"}, "cannot read size"),
    ({"capacity": 0}, "capacity must be positive"),
    ({"max_managed_bytes": "0GiB"}, "max_managed_bytes must be positive"),
    ({"max_managed_bytes": -5}, "must not be negative"),
    ({"device": -1}, "device must be a CUDA device index"),
    ({"device": True}, "device must be a CUDA device index"),
    ({"config": {"lookahead": 8}}, "config must be a DeepUMConfig"),
])
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RuntimeConfig(**kwargs)


def test_config_keeps_predictor_config():
    assert RuntimeConfig(config=DeepUMConfig(lookahead=8)).config.lookahead == 8


# --- too late: enable() after CUDA was set up -----------------------------------------------

def test_not_too_late_on_a_fresh_process():
    assert too_late_reason(False, False, False, prepared_by_deepum=False) is None


@pytest.mark.parametrize("torch_initialized, primary, current, fact", [
    (True, False, False, "torch.cuda.is_initialized()"),
    (False, True, False, "primary CUDA context already exists"),
    (False, False, True, "current CUDA context"),
    (True, True, True, "primary CUDA context already exists"),
])
def test_too_late_names_what_happened_and_what_to_do(torch_initialized, primary, current, fact):
    reason = too_late_reason(torch_initialized, primary, current, prepared_by_deepum=False)
    assert reason.startswith("deepum.enable() came too late")
    assert fact in reason
    assert "at the top of the script" in reason and "before model.cuda()" in reason


def test_reenabling_after_deepum_prepared_cuda_is_not_too_late():
    assert too_late_reason(True, True, True, prepared_by_deepum=True) is None


# --- the allocator's fuse, counters and registry, on a host-only CUDA stub --------------------

class StubAllocator:
    """kernels/managed_allocator.cpp compiled against tests/cuda_stub (malloc-backed)."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.deepum_malloc.restype = ctypes.c_void_p
        self.lib.deepum_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self.lib.deepum_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self.lib.deepum_set_max_managed_bytes.argtypes = [ctypes.c_size_t]
        self.lib.deepum_segments.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        for name in ("deepum_bytes_in_use", "deepum_peak_bytes", "deepum_max_managed_bytes",
                     "deepum_last_refused_bytes", "deepum_bytes_in_use_at_refusal", "deepum_segments"):
            getattr(self.lib, name).restype = ctypes.c_size_t
        for name in ("deepum_segments_allocated", "deepum_segments_freed", "deepum_refusals",
                     "deepum_driver_failures", "deepum_device_segments_allocated"):
            getattr(self.lib, name).restype = ctypes.c_uint64

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def malloc(self, nbytes):
        return self.lib.deepum_malloc(nbytes, 0, None)

    def free(self, ptr, nbytes=0):
        self.lib.deepum_free(ptr, nbytes, 0, None)

    def segments(self, room=64):
        buffer = (ctypes.c_uint64 * (2 * room))()
        live = self.lib.deepum_segments(buffer, room)
        return [(buffer[2 * i], buffer[2 * i + 1]) for i in range(min(live, room))], live


@pytest.fixture(scope="module")
def stub_allocator_build(tmp_path_factory):
    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    output = tmp_path_factory.mktemp("stub") / "libstub_allocator.so"
    subprocess.run([compiler, "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", "-x", "c++",
                    f"-I{REPO / 'tests' / 'cuda_stub'}", str(REPO / "kernels" / "managed_allocator.cpp"),
                    "-o", str(output)], check=True)
    return output


@pytest.fixture
def stub_allocator(stub_allocator_build, tmp_path):
    """A fresh allocator state per test: a copy under a new path is a new library instance."""
    copy = tmp_path / stub_allocator_build.name
    shutil.copy(stub_allocator_build, copy)
    return StubAllocator(copy)


def test_fuse_starts_closed(stub_allocator):
    assert stub_allocator.malloc(4096) is None
    assert stub_allocator.deepum_refusals() == 1 and stub_allocator.stub_driver_malloc_calls() == 0


def test_fuse_refuses_past_the_cap_without_calling_the_driver(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(10 * MiB)
    a = stub_allocator.malloc(6 * MiB)
    b = stub_allocator.malloc(4 * MiB)                   # exactly at the cap: allowed
    assert a and b
    assert stub_allocator.malloc(1) is None              # one byte past the cap
    assert stub_allocator.deepum_refusals() == 1
    assert stub_allocator.deepum_last_refused_bytes() == 1
    assert stub_allocator.deepum_bytes_in_use_at_refusal() == 10 * MiB
    assert stub_allocator.stub_driver_malloc_calls() == 2
    stub_allocator.free(a, 6 * MiB)
    assert stub_allocator.malloc(6 * MiB)                # room again after a free
    assert stub_allocator.deepum_bytes_in_use() == 10 * MiB
    assert stub_allocator.deepum_peak_bytes() == 10 * MiB


def test_nonpositive_sizes_are_refused(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(MiB)
    assert stub_allocator.malloc(0) is None and stub_allocator.malloc(-1) is None
    assert stub_allocator.stub_driver_malloc_calls() == 0


def test_driver_failure_returns_the_reservation(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(MiB)
    stub_allocator.stub_fail_next_malloc()
    assert stub_allocator.malloc(4096) is None
    assert stub_allocator.deepum_driver_failures() == 1 and stub_allocator.deepum_refusals() == 0
    assert stub_allocator.deepum_bytes_in_use() == 0


def test_registry_lists_live_segments_in_address_order(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(GiB)
    sizes = [4096, 2 * MiB, 20 * MiB, 512]
    pointers = [stub_allocator.malloc(n) for n in sizes]
    segments, live = stub_allocator.segments()
    assert live == 4 and segments == sorted(zip(pointers, sizes))
    stub_allocator.free(pointers[1])
    segments, live = stub_allocator.segments()
    assert live == 3 and (pointers[1], sizes[1]) not in segments
    assert stub_allocator.deepum_segments_allocated() == 4 and stub_allocator.deepum_segments_freed() == 1
    truncated, live = stub_allocator.segments(room=1)
    assert live == 3 and len(truncated) == 1


def test_device_memory_segments_are_fused_freed_and_never_listed(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(10 * MiB)
    managed = stub_allocator.malloc(2 * MiB)
    stub_allocator.deepum_set_device_memory(1)
    assert stub_allocator.deepum_device_memory() == 1
    device = [stub_allocator.malloc(4 * MiB), stub_allocator.malloc(4 * MiB)]
    assert stub_allocator.stub_driver_device_malloc_calls() == 2 and stub_allocator.deepum_device_segments_allocated() == 2
    assert stub_allocator.malloc(1) is None                      # the fuse counts both kinds
    assert stub_allocator.segments() == ([(managed, 2 * MiB)], 1)  # only managed segments are listed
    stub_allocator.free(device[0])
    assert stub_allocator.deepum_bytes_in_use() == 6 * MiB and stub_allocator.stub_driver_free_calls() == 1
    stub_allocator.deepum_set_device_memory(0)                  # live segments keep their kind
    later = stub_allocator.malloc(MiB)
    assert stub_allocator.stub_driver_device_malloc_calls() == 2
    assert stub_allocator.segments() == (sorted([(managed, 2 * MiB), (later, MiB)]), 2)
    for ptr in (managed, device[1], later):
        stub_allocator.free(ptr)
    assert stub_allocator.deepum_bytes_in_use() == 0 and stub_allocator.segments() == ([], 0)


def test_a_change_of_kind_says_whether_segments_of_the_old_kind_live(stub_allocator):
    stub_allocator.deepum_set_max_managed_bytes(GiB)
    assert stub_allocator.deepum_set_device_memory(1) == 0   # nothing lives yet
    device = stub_allocator.malloc(MiB)
    assert stub_allocator.deepum_set_device_memory(1) == 0   # no change of kind
    assert stub_allocator.deepum_set_device_memory(0) == 1   # a device segment lives
    managed = stub_allocator.malloc(MiB)
    stub_allocator.free(device)
    assert stub_allocator.deepum_set_device_memory(0) == 0
    assert stub_allocator.deepum_set_device_memory(1) == 1   # a managed segment lives
    stub_allocator.free(managed)
    assert stub_allocator.deepum_set_device_memory(0) == 0   # none of the old kind left


class AllocatorAgreesWithItsModel(RuleBasedStateMachine):
    """The allocator (stub-backed) against a model of its fuse, kinds and registry: sizes, kinds and
    counters after any sequence of caps, kinds, allocations and frees."""

    def __init__(self, library: Path, scratch: Path):
        super().__init__()
        copy = scratch / f"allocator_{next(_instances)}.so"  # a fresh library state per example
        shutil.copy(library, copy)
        self.lib = StubAllocator(copy)
        self.cap, self.device_memory, self.live, self.peak = 0, False, {}, 0
        self.allocated = self.device_allocated = self.refusals = 0

    @rule(cap=st.integers(0, 64 * MiB))
    def set_cap(self, cap):
        self.lib.deepum_set_max_managed_bytes(cap)
        self.cap = cap

    @rule(on=st.booleans())
    def set_kind(self, on):
        old_kind_live = on != self.device_memory and any(device == self.device_memory for _, device in self.live.values())
        assert self.lib.deepum_set_device_memory(int(on)) == int(old_kind_live)
        self.device_memory = on

    @rule(size=st.integers(-1, 16 * MiB))
    def malloc(self, size):
        ptr = self.lib.malloc(size)
        in_use = sum(n for n, _ in self.live.values())
        if size <= 0 or size > self.cap or in_use > self.cap - size:
            assert ptr is None
            self.refusals += 1
            return
        assert ptr is not None and ptr not in self.live
        self.live[ptr] = (size, self.device_memory)
        self.allocated += 1
        self.device_allocated += self.device_memory
        self.peak = max(self.peak, in_use + size)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data):
        # In the order of allocation: addresses differ from run to run, and a choice that followed them
        # would make hypothesis's replays of an example diverge.
        ptr = data.draw(st.sampled_from(list(self.live)))
        self.lib.free(ptr)
        del self.live[ptr]

    @invariant()
    def figures_agree(self):
        assert self.lib.deepum_bytes_in_use() == sum(n for n, _ in self.live.values())
        assert self.lib.deepum_peak_bytes() == self.peak
        assert self.lib.deepum_refusals() == self.refusals
        assert self.lib.deepum_segments_allocated() == self.allocated
        assert self.lib.deepum_segments_freed() == self.allocated - len(self.live)
        assert self.lib.deepum_device_segments_allocated() == self.device_allocated
        managed = sorted((ptr, n) for ptr, (n, device) in self.live.items() if not device)
        assert self.lib.segments(room=len(self.live) + 1) == (managed, len(managed))

    def teardown(self):
        for ptr in list(self.live):
            self.lib.free(ptr)


_instances = itertools.count()


def test_the_allocator_agrees_with_its_model(stub_allocator_build, tmp_path):
    run_state_machine_as_test(lambda: AllocatorAgreesWithItsModel(stub_allocator_build, tmp_path),
                              settings=settings(max_examples=40, stateful_step_count=30, deadline=None))


def test_foreign_pointers_are_not_freed(stub_allocator):
    stub_allocator.free(12345)
    assert stub_allocator.stub_driver_free_calls() == 0 and stub_allocator.deepum_segments_freed() == 0


def test_concurrent_allocations_never_pass_the_cap(stub_allocator):
    cap = 8 * MiB
    stub_allocator.deepum_set_max_managed_bytes(cap)

    def churn():
        for _ in range(300):
            ptr = stub_allocator.malloc(MiB)
            if ptr:
                stub_allocator.free(ptr, MiB)

    threads = [threading.Thread(target=churn) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stub_allocator.deepum_peak_bytes() <= cap
    assert stub_allocator.deepum_bytes_in_use() == 0
    assert stub_allocator.deepum_segments_allocated() == stub_allocator.deepum_segments_freed()
    assert stub_allocator.segments()[1] == 0


# --- importable without torch or CUDA ---------------------------------------------------------

def test_runtime_imports_and_reports_without_torch():
    script = textwrap.dedent("""\
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "cuda", "cupy", "cupti"):
                    raise ImportError(f"{name} is blocked")
        sys.meta_path.insert(0, Block())
        import deepum.runtime.session, deepum.runtime.gpu, deepum.runtime.native_build, deepum.runtime.recorder
        import deepum
        assert all(getattr(deepum, name) for name in deepum.__all__)  # the public API loads without torch
        assert deepum.runtime.session.stats()["enabled"] is False
        with deepum.runtime.session.enable(mode="none") as session:
            assert deepum.runtime.session.is_enabled() and deepum.runtime.session.stats()["mode"] == "none"
        assert not deepum.runtime.session.is_enabled()
        try:
            deepum.runtime.session.enable(mode="um")
        except RuntimeError as exc:
            assert "PyTorch" in str(exc), exc
        else:
            raise AssertionError("enable(mode='um') without torch did not raise")
        assert not deepum.runtime.session.is_enabled()
        print("ok")
        """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_cuda_status_check_returns_values_or_names_the_failed_call():
    from deepum.runtime import gpu

    assert gpu._check((0, "a", 7), "cuThing", 0, lambda status: (0, b"unused")) == ["a", 7]
    with pytest.raises(gpu.CudaError, match="cuThing failed: CUDA_ERROR_INVALID_VALUE"):
        gpu._check((1,), "cuThing", 0, lambda status: (0, b"CUDA_ERROR_INVALID_VALUE"))


def test_stats_documents_every_key():
    """Each key stats() can return, from the engine's bindings or from Python, is in its docstring."""
    import re
    from pathlib import Path

    from deepum.runtime import session

    root = Path(__file__).resolve().parent.parent
    engine_keys = re.findall(r'out\["(\w+)"\]', (root / "driver_hooks" / "online_bindings.cpp").read_text())
    python_keys = re.findall(r'^\s+"(\w+)":', Path(session.__file__).read_text(), flags=re.MULTILINE)
    keys = set(engine_keys) | set(python_keys) | {"faults_attributed", "faults_unattributed", "per_iteration"}
    assert len(engine_keys) > 30
    undocumented = sorted(key for key in keys if f"``{key}``" not in session.stats.__doc__)
    assert not undocumented


def test_per_iteration_counters_are_documented_stats():
    """Each counter stats()["per_iteration"] differences is a key documented in stats()."""
    from deepum.runtime import session

    undocumented = [key for key in session._PER_ITERATION if f"``{key}``" not in session.stats.__doc__]
    assert not undocumented


@pytest.mark.parametrize("asleep, launched, allocated, counts", [
    (False, True, True, True), (False, True, False, True), (False, False, True, False),
    (True, False, True, True),
    # bench/train.py marks again after the optimizer's own mark: nothing between them, ignored asleep too
    (True, False, False, False)])
def test_a_mark_counts_only_after_work_it_can_see(asleep, launched, allocated, counts):
    from deepum.runtime import session

    last = {"launches": 10, "managed_allocations": 50, "asleep": asleep}
    now = {"launches": 10 + launched, "managed_allocations": 50 + allocated, "asleep": asleep}
    assert session.mark_counts(now, last) is counts


@pytest.mark.parametrize("device_memory", [False, True])
def test_a_session_on_device_memory_counts_no_iteration_and_still_releases_held_frees(monkeypatch, device_memory):
    """An iteration mark in a session on managed memory asks the engine for its counters and starts the
    next iteration; on device memory, where nothing is learned or moved, it only releases the blocks
    PyTorch held back."""
    from types import SimpleNamespace

    from deepum.runtime import session

    calls = []

    class Engine:
        def __init__(self):
            self.launches = 0

        def stats(self):
            calls.append("stats")
            self.launches += 1  # a kernel launched between any two calls
            return {"launches": self.launches, "managed_allocations": 0, "asleep": False}

        def next_iteration(self):
            calls.append("next_iteration")
            return 0

        def mark_iteration_time(self):
            calls.append("mark_iteration_time")

    class HeldFrees:
        def release_if_pending(self):
            calls.append("release")

    run = session.Session(SimpleNamespace(mode="deepum"), None)
    run.device_memory, run.deferred_frees = device_memory, HeldFrees()
    monkeypatch.setattr(session, "_engine", Engine())
    monkeypatch.setattr(session, "_session", run)
    monkeypatch.setattr(session, "_iterations", [{"launches": 0, "managed_allocations": 0, "asleep": False}])
    for _ in range(3):
        session.mark_iteration()
    assert calls.count("release") == 3
    if device_memory:
        assert calls == ["release"] * 3 and len(session._iterations) == 1
    else:
        assert calls.count("next_iteration") == 3 and len(session._iterations) == 4
