"""Skips tests marked `gpu` when PyTorch with a CUDA GPU (or nvcc, which builds the allocator) is
missing, so the suite runs everywhere; and never lets a test go past GPU memory: every test, and
every process a test starts, runs with DEEPUM_NO_OVERSUBSCRIBE=1, so deepum.enable() refuses the
opt-in to oversubscribe the GPU. Tests of the opt-in itself remove the variable with monkeypatch."""
from __future__ import annotations

import functools
import os
import time

import pytest

# Set on import, before any test runs or starts a process, whatever the caller's environment says.
os.environ["DEEPUM_NO_OVERSUBSCRIBE"] = "1"


@functools.lru_cache(maxsize=None)
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when they can: what `deepum record`/`deepum run` need,
    and nvcc. Creates no CUDA context."""
    from deepum.cli.traces import gpu_missing
    from deepum.runtime import native_build

    reason = gpu_missing()
    if reason:
        return reason
    try:
        native_build.find_nvcc()
    except native_build.NativeBuildError as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and gpu_unavailable_reason():
        skip = pytest.mark.skip(reason=f"GPU test: {gpu_unavailable_reason()}")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def allocator_built():
    """GPU tests: builds the managed allocator once in this process, so the processes each case runs in
    find it cached."""
    from deepum.runtime import native_build

    started = time.perf_counter()
    path = native_build.build_library(native_build.MANAGED_ALLOCATOR)
    print(f"\nmanaged allocator: {path} ({time.perf_counter() - started:.1f} s)")
    return path
