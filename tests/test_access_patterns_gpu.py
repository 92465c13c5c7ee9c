"""Exact access patterns on a real GPU, with the kernels of kernels/access_patterns.cu launched
through CuPy (tests/gpu_kernels.py). Like tests/test_runtime_gpu.py, each case runs in a fresh
Python process (deepum.enable() must precede CUDA, and CuPy is imported only after it): this file is
also the script that runs a case (`python tests/test_access_patterns_gpu.py CASE`), printing one
`RESULT <json>` line.

Managed memory stays tiny: the fuse is 256 MiB and the cases allocate well under 100 MiB.
The one test without the gpu mark checks, on the CPU, that the kernels' pattern and checksum
arithmetic equals the numpy counterparts the GPU cases compare against.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
MiB = 1 << 20
FUSE = "256MiB"

# integrity: buffers of 2 MiB, three times as many bytes as the capacity holds.
CAPACITY = 16 * MiB
BUFFER_BYTES = 2 * MiB
BUFFERS = 24
ROUNDS = 5
PAGES = BUFFER_BYTES // 4096

# gather: sources reached only through a pointer array in device memory.
SOURCES = 8
SOURCE_BYTES = 4 * MiB
GATHER_ITERATIONS = 6


# --- cases (each runs in its own process) ----------------------------------------------------

def case_integrity() -> dict:
    """Mode deepum under a capacity of 16 MiB: each round overwrites a strided set of pages of each
    of 24 buffers of 2 MiB (48 MiB) with a pattern, replaces one buffer by a fresh zeroed one (its old
    block dies), reads every page of every buffer and checksums every buffer; the engine prefetches,
    evicts and invalidates meanwhile. Every read sum and checksum is compared with a numpy model of
    what was written."""
    import torch

    import deepum

    deepum.enable(mode="deepum", capacity=CAPACITY, max_managed_bytes=FUSE)
    import gpu_kernels as k  # CuPy loads at the first launch, after enable()

    words = BUFFER_BYTES // 4
    buffers = [torch.zeros(words, dtype=torch.int32, device="cuda") for _ in range(BUFFERS)]
    model = [np.zeros(words, np.uint32) for _ in range(BUFFERS)]
    read_sum = torch.zeros(1, dtype=torch.int64, device="cuda")
    mismatches = []
    for r in range(ROUNDS):
        fresh = r % BUFFERS
        buffers[fresh] = None
        buffers[fresh] = torch.zeros(words, dtype=torch.int32, device="cuda")
        model[fresh][:] = 0
        for j, buffer in enumerate(buffers):
            first, stride, seed = (r + j) % 3, 1 + (3 * r + j) % 5, 1000 * (r + 1) + j
            pages = (PAGES - first + stride - 1) // stride
            k.touch_pages(buffer, first, pages, stride, seed=seed, write=True)
            by_page = model[j].reshape(PAGES, k.WORDS_PER_PAGE)
            by_page[first::stride] = k.pattern(seed, 0, words).reshape(PAGES, k.WORDS_PER_PAGE)[first::stride]
        read_sum.zero_()
        for buffer in buffers:
            k.touch_pages(buffer, 0, PAGES, sum_into=read_sum)
        want = sum(k.word_sum(m) for m in model) & k.MASK64
        got = int(read_sum.item()) & k.MASK64
        if got != want:
            mismatches.append({"round": r, "what": "read sum", "got": got, "want": want})
        for j, buffer in enumerate(buffers):
            got, want = k.checksum(buffer), k.weighted_checksum(model[j])
            if got != want:
                mismatches.append({"round": r, "what": f"checksum of buffer {j}", "got": got, "want": want})
        torch.cuda.synchronize()
        deepum.mark_iteration()
    stats = deepum.stats()
    return {"mismatches": mismatches, "page_aligned": all(b.data_ptr() % 4096 == 0 for b in buffers),
            "stats": stats}


def case_gather() -> dict:
    """Mode deepum learning from the fault log: each iteration the CPU writes new contents into 8
    sources of 4 MiB (their pages move to the host), then one gather_sum launch reads them through a
    device-side pointer array, which the launch hook, scanning the arguments, does not see. Its sums
    are compared with numpy's."""
    import ctypes

    import torch

    import deepum

    deepum.enable(mode="deepum", max_managed_bytes=FUSE, config=deepum.DeepUMConfig(learn_from="faults"))
    import gpu_kernels as k

    words = SOURCE_BYTES // 4
    sources = [torch.empty(words, dtype=torch.int32, device="cuda") for _ in range(SOURCES)]
    on_host = [np.ctypeslib.as_array((ctypes.c_uint32 * words).from_address(s.data_ptr())) for s in sources]
    pointers = torch.tensor([s.data_ptr() for s in sources], dtype=torch.int64, device="cuda")
    out = torch.zeros(SOURCES, dtype=torch.int64, device="cuda")
    mismatches = []
    for it in range(GATHER_ITERATIONS):
        torch.cuda.synchronize()  # the last gather has read the sources
        expected = []
        for j, view in enumerate(on_host):
            view[:] = k.pattern(100 * (it + 1) + j, 0, words)  # managed memory written by the CPU
            expected.append(k.weighted_checksum(view))
        out.zero_()
        k.gather_sum(pointers, words, out)
        got = [int(v) & k.MASK64 for v in out.cpu().tolist()]
        if got != expected:
            mismatches.append({"iteration": it, "got": got, "want": expected})
        torch.cuda.synchronize()
        deepum.mark_iteration()
    return {"mismatches": mismatches, "stats": deepum.stats()}


CASES = {name[len("case_"):]: fn for name, fn in dict(globals()).items() if name.startswith("case_")}


# --- the tests (run each case in a subprocess) ----------------------------------------------

def run_case(name: str, timeout: float = 300) -> dict:
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed (pip install 'deepum[gpu]')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               DEEPUM_NO_OVERSUBSCRIBE="1", PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), name], capture_output=True, text=True,
                          env=env, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"case {name} failed:\n{done.stdout}\n{done.stderr}"
    result = json.loads(lines[-1][len("RESULT "):])
    print(f"{name}: {json.dumps(result)}")
    return result


@pytest.mark.gpu
def test_pages_written_under_a_budget_read_back_exactly_as_written(allocator_built):
    result = run_case("integrity")
    stats = result["stats"]
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    assert result["mismatches"] == []
    assert stats["managed_bytes_peak"] <= 256 * MiB
    # The budget was tight enough to make the engine move data: the rounds exercised eviction.
    assert stats["evict_bytes"] > 0, stats
    assert len(stats["per_iteration"]) == ROUNDS


@pytest.mark.gpu
def test_a_gather_through_device_side_pointers_is_learned_from_faults(allocator_built):
    result = run_case("gather")
    stats = result["stats"]
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    assert result["mismatches"] == []
    assert stats["fault_lessons"] > 0 and stats["faults_attributed"] > 0
    # Each round's faults (the CPU rewrites the sources between rounds, so the gather faults on them
    # again) reach the tables at the round's mark. CUPTI reports faults per batch, not per
    # block, so the number of blocks a round teaches is not fixed; that it teaches some is.
    assert all(row["fault_lessons"] >= 1 and row["faults_learned"] >= 1 for row in stats["per_iteration"]), stats


def test_kernel_arithmetic_equals_the_numpy_counterparts(tmp_path):
    """pattern_word and weighted_word of the .cu, built as host code, against gpu_kernels' numpy."""
    import gpu_kernels as k

    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    seeds = [0, 1, 7, 1001, 0xFFFFFFFF]
    indices = [0, 1, 1023, 1024, 524287, (1 << 32) + 5]
    values = np.random.default_rng(0).integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32)
    harness = tmp_path / "harness.cpp"
    harness.write_text(
        f'#include "{k.SOURCE}"\n#include <cstdio>\nint main() {{\n'
        f"  const unsigned int seeds[] = {{{', '.join(f'{s}u' for s in seeds)}}};\n"
        f"  const unsigned long long indices[] = {{{', '.join(f'{i}ull' for i in indices)}}};\n"
        f"  const unsigned int values[] = {{{', '.join(f'{v}u' for v in values.tolist())}}};\n"
        "  for (unsigned int s : seeds) for (unsigned long long i : indices) std::printf(\"%u\\n\", pattern_word(s, i));\n"
        "  unsigned long long total = 0;\n"
        f"  for (int w = 0; w < {values.size}; ++w) total += weighted_word(values[w], 65000ull + w);\n"
        '  std::printf("%llu\\n", total);\n}\n')
    binary = tmp_path / "harness"
    subprocess.run([compiler, "-std=c++17", "-x", "c++", str(harness), "-o", str(binary)], check=True)
    printed = [int(line) for line in subprocess.run([str(binary)], capture_output=True, text=True,
                                                    check=True).stdout.split()]
    want = [int(k.pattern(s, i, 1)[0]) for s in seeds for i in indices]
    assert printed[:-1] == want
    assert printed[-1] == k.weighted_checksum(values, first_word=65000)


if __name__ == "__main__":
    print("RESULT " + json.dumps(CASES[sys.argv[1]]()), flush=True)
