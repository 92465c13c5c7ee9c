"""No data loss and no hang on a real GPU: side streams, record_stream, threads, CUDA graphs,
torch.compile, injected CUDA failures, the caching allocator's state, start and stop (exit without
disable(), exceptions, device-side asserts, torch.profiler), the kernel-parameter cache across module
unloads, re-enabling with tensors still resident, and plain device memory after a session.

deepum.enable() must precede CUDA initialization, so every case runs in a fresh Python process: this
file is also the script that runs a case (`python tests/test_safety_gpu.py CASE [KEY=VALUE ...]`),
printing one `RESULT <json>` line. Every case checks its data exactly (against values known in
advance, or against the same computation without deepum) and reports the stats that show the risky
mechanism happened (discards, evictions, launches, injected failures), so that no test passes
vacuously. Sizes stay small: at most 1 GiB managed, a capacity of 32 to 64 MiB to press the budget,
and never past GPU memory (DEEPUM_NO_OVERSUBSCRIBE=1 in every process).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
MANAGED = 3   # cudaMemoryTypeManaged
DEVICE = 2    # cudaMemoryTypeDevice
MiB = 1 << 20
GiB = 1 << 30

FUSE = "1GiB"                     # max_managed_bytes of every case but e
CAPACITY = "64MiB"                # the budget of the stream, graph and filtering cases
PRESSURE_BYTES = 256 * MiB        # live at once in one pressure round: 4x CAPACITY
PRESSURE_SIZES = (8 * MiB, 16 * MiB, 32 * MiB)
PRESSURE_ROUNDS = 4
SIDE_BYTES = 16 * MiB             # the tensor a queued side-stream kernel still reads
LONG_SLEEP = 4_000_000_000        # GPU cycles (about 2 s): outlasts all the pressure
SHORT_SLEEP = 400_000_000         # GPU cycles (about 0.2 s): one round of the reading thread

TRAIN_CAPACITY = "48MiB"          # the training cases: parameters, gradients and Adam take 128 MiB
STEPS, LAYERS, WIDTH, BATCH = 8, 8, 1024, 256
PROFILED_STEPS = (3, 4)           # f3: torch.profiler runs around these steps

pytestmark = pytest.mark.gpu


# --- shared helpers of the cases ----------------------------------------------------------------

def _memory_type(tensor) -> int:
    from deepum.runtime import gpu
    return gpu.memory_type(tensor.data_ptr())


def _blocks(address: int, nbytes: int) -> list[int]:
    """The 2 MiB unified-memory blocks [address, address + nbytes) covers."""
    return list(range(address >> 21, ((address + nbytes - 1) >> 21) + 1))


def _pressure(rounds: int = PRESSURE_ROUNDS, seed: int = 0) -> bool:
    """Budget pressure on the current stream: each round allocates and writes tensors of 8 to 32 MiB,
    PRESSURE_BYTES of them live at once (well past the capacity, so earlier ones are evicted), reduces
    every one after all are written, frees them (their blocks die) and marks an iteration. True when
    every sum is exact."""
    import torch

    import deepum

    exact = True
    for r in range(rounds):
        tensors, expected, allocated = [], [], 0
        while allocated < PRESSURE_BYTES:
            words = PRESSURE_SIZES[len(tensors) % len(PRESSURE_SIZES)] // 4
            value = 1000 * seed + 100 * r + len(tensors) + 1
            tensors.append(torch.full((words,), value, dtype=torch.int32, device="cuda"))
            expected.append(value * words)
            allocated += words * 4
        sums = torch.stack([t.sum(dtype=torch.int64) for t in tensors]).cpu().tolist()
        exact = exact and sums == expected
        del tensors
        deepum.mark_iteration()
    return exact


def _migrations(stats: dict) -> dict:
    """The figures that show the engine moved or dropped data."""
    return {key: stats.get(key) for key in ("launches", "evict_bytes", "discard_bytes", "populate_bytes",
                                             "prefetch_bytes", "cuda_errors", "last_cuda_error")}


def _train(compile_mode: str = "", on_step=None) -> dict:
    """STEPS deterministic Adam steps of LAYERS x (Linear(WIDTH), ReLU) on fixed random data (eager, or
    torch.compile with `compile_mode`: "default" or "reduce-overhead"); the losses and a digest of the
    final parameters. on_step(step) runs before each step."""
    import hashlib

    import torch

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())
                                  for _ in range(LAYERS)]).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    forward = model
    if compile_mode:
        forward = torch.compile(model, mode=None if compile_mode == "default" else compile_mode)
    generator = torch.Generator().manual_seed(1)
    losses = []
    for step in range(STEPS):
        if on_step is not None:
            on_step(step)
        if compile_mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(BATCH, WIDTH, generator=generator).cuda()
        target = torch.randn(BATCH, WIDTH, generator=generator).cuda()
        loss = torch.nn.functional.mse_loss(forward(x), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters()))
    return {"digest": digest.hexdigest(), "losses": losses}


class _ProfileSteps:
    """on_step for _train: torch.profiler (CPU and CUDA activities) runs around steps first..last; the
    GPU page faults counted when it starts and when it stops (the GPU idle, the fault log flushed)."""

    def __init__(self, first: int, last: int):
        self.first, self.last, self.profiler = first, last, None
        self.faults_at_start = self.faults_at_stop = None

    @staticmethod
    def _faults() -> int:
        import torch

        import deepum

        torch.cuda.synchronize()
        return deepum.stats()["gpu_page_faults"]

    def __call__(self, step: int) -> None:
        import torch

        if step == self.first:
            self.faults_at_start = self._faults()
            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            self.profiler = torch.profiler.profile(activities=activities)
            self.profiler.start()
        elif step == self.last + 1:
            self.profiler.stop()
            self.faults_at_stop = self._faults()

    def cuda_events(self) -> int:
        """Events the profiler saw on the GPU (reported, not checked)."""
        return sum(1 for event in self.profiler.events() if str(getattr(event, "device_type", "")).endswith("CUDA"))


# --- cases (each runs in its own process) ---------------------------------------------------------

def case_side_stream(mode: str, how: str) -> dict:
    """A kernel queued on a side stream behind a long GPU sleep reads x into y; x is freed on the host
    at once, then the default stream presses the budget (its dead blocks are what the engine drops
    first). how="side_allocation": x was allocated on the side stream, so the caching allocator frees
    it at once; how="record_stream": x was allocated on the default stream and recorded on the side
    stream. y must hold x's contents exactly."""
    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE)
    # One round first, so that the pressure below reuses cached segments and allocates no new ones
    # while the side stream sleeps; y too is allocated before the sleep.
    warmup_exact = _pressure(rounds=1, seed=9)
    side = torch.cuda.Stream()
    words = SIDE_BYTES // 4
    if how == "side_allocation":
        with torch.cuda.stream(side):
            x = torch.arange(words, dtype=torch.int32, device="cuda")
            y = torch.empty_like(x)
            torch.cuda._sleep(LONG_SLEEP)
            y.copy_(x)
    elif how == "record_stream":
        x = torch.arange(words, dtype=torch.int32, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = torch.empty_like(x)
            torch.cuda._sleep(LONG_SLEEP)
            y.copy_(x)
        x.record_stream(side)
    else:
        raise ValueError(f"unknown side-stream scenario {how!r}")
    x_type = _memory_type(x)
    del x
    side_busy_at_pressure = not side.query()  # the read is still queued when the pressure begins
    pressure_exact = _pressure() and warmup_exact
    # Reported only: an engine that orders the discard of x's blocks after the side stream may make
    # the default stream wait for it, and then the side stream is done when the pressure ends.
    side_busy_after_pressure = not side.query()
    torch.cuda.synchronize()
    copied = y.cpu()
    wrong = torch.nonzero(copied != torch.arange(words, dtype=torch.int32)).flatten()
    return {"exact": wrong.numel() == 0, "wrong_words": wrong.numel(),  # first wrong: [index, value]
            "first_wrong": [int(wrong[0]), int(copied[wrong[0]])] if wrong.numel() else None, "x_type": x_type,
            "pressure_exact": pressure_exact, "side_busy_at_pressure": side_busy_at_pressure,
            "side_busy_after_pressure": side_busy_after_pressure, "stats": deepum.stats()}


def _config(eviction_threads: str = "", prefetch_threads: str = ""):
    """The config of a case: the default, with `eviction_threads` threads evicting and `prefetch_threads`
    threads prefetching where given ("0": none; "": the default's)."""
    import deepum

    threads = {"eviction_threads": eviction_threads, "prefetch_threads": prefetch_threads}
    return deepum.DeepUMConfig(**{name: int(n) for name, n in threads.items() if n})


def case_two_threads(mode: str, eviction_threads: str = "", prefetch_threads: str = "") -> dict:
    """Two threads launch on two streams: one reads a freshly freed tensor on its stream behind a GPU
    sleep, round after round, and checks the copy; the other presses the budget on its own stream
    meanwhile. Every check exact."""
    import threading

    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE, config=_config(eviction_threads, prefetch_threads))
    words, rounds = SIDE_BYTES // 4, 10
    reader_done = threading.Event()
    outcome: dict = {}

    def reader():
        try:
            exact = []
            with torch.cuda.stream(torch.cuda.Stream()):
                for r in range(rounds):
                    x = torch.arange(words, dtype=torch.int32, device="cuda").add_(r)
                    y = torch.empty_like(x)
                    torch.cuda._sleep(SHORT_SLEEP)
                    y.copy_(x)
                    del x
                    exact.append(torch.equal(y.cpu(), torch.arange(words, dtype=torch.int32) + r))
            outcome["reader_exact"] = exact
        except BaseException as exc:  # reported, not lost in the thread
            outcome["reader_error"] = repr(exc)
        finally:
            reader_done.set()

    def presser():
        try:
            exact, done_rounds = True, 0
            with torch.cuda.stream(torch.cuda.Stream()):
                while done_rounds < 2 or not reader_done.is_set():
                    exact = _pressure(rounds=1, seed=done_rounds) and exact
                    done_rounds += 1
            outcome["pressure_exact"], outcome["pressure_rounds"] = exact, done_rounds
        except BaseException as exc:
            outcome["presser_error"] = repr(exc)

    threads = [threading.Thread(target=presser), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    torch.cuda.synchronize()
    return {**outcome, "stats": deepum.stats()}


def case_graph_replays(mode: str) -> dict:
    """torch.cuda.graph captures an MLP's forward (static input) under a budget; 20 replays, each
    followed by eager pressure past the capacity and then the eager forward of the same input, which
    the replay's output must equal bitwise. Also the memory types: the graph's static output lives in
    the graph's own pool (device memory), the static input and the weights in managed memory."""
    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    generator = torch.Generator().manual_seed(2)
    inputs = [torch.randn(256, 1024, generator=generator) for _ in range(20)]
    static_input = torch.zeros(256, 1024, device="cuda")
    graph = torch.cuda.CUDAGraph()
    exact = []
    with torch.no_grad():
        warmup = torch.cuda.Stream()
        warmup.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(warmup):
            for _ in range(3):
                model(static_input)
        torch.cuda.current_stream().wait_stream(warmup)
        with torch.cuda.graph(graph):
            static_output = model(static_input)
        pressure_exact = True
        for i, host_input in enumerate(inputs):
            static_input.copy_(host_input)
            graph.replay()
            replayed = static_output.clone()
            pressure_exact = _pressure(rounds=1, seed=i) and pressure_exact
            exact.append(torch.equal(replayed, model(host_input.cuda())))
    torch.cuda.synchronize()
    return {"exact": exact, "pressure_exact": pressure_exact, "static_output_type": _memory_type(static_output),
            "static_input_type": _memory_type(static_input), "weight_type": _memory_type(model[0].weight),
            "stats": deepum.stats()}


def case_train(mode: str, compile_mode: str = "", record: str = "", profile: str = "", disable: str = "1",
               eviction_threads: str = "", prefetch_threads: str = "") -> dict:
    """_train under TRAIN_CAPACITY (compile_mode: a torch.compile mode; record: a trace path; profile="1":
    torch.profiler around PROFILED_STEPS; disable="0": the process exits with deepum still enabled;
    eviction_threads, prefetch_threads: the config's, "" the default's)."""
    import deepum

    deepum.enable(mode, capacity=TRAIN_CAPACITY, max_managed_bytes=FUSE, record=record or None,
                  config=_config(eviction_threads, prefetch_threads))
    profiler = _ProfileSteps(*PROFILED_STEPS) if profile == "1" else None
    result = _train(compile_mode=compile_mode, on_step=profiler)
    if profiler is not None:
        result.update(profiler_cuda_events=profiler.cuda_events(), faults_at_profiler_start=profiler.faults_at_start,
                      faults_at_profiler_stop=profiler.faults_at_stop)
    result["stats"] = deepum.stats()
    if disable == "1":
        deepum.disable()
    return result


def case_record_stream_rounds(mode: str) -> dict:
    """32 rounds of: allocate 32 MiB on the default stream, read it on a side stream, record_stream,
    free, under a 512 MiB fuse (1 GiB in all, so blocks must be reused); then empty_cache()."""
    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes="512MiB")
    side, words, rounds = torch.cuda.Stream(), 32 * MiB // 4, 32
    sums, out_of_memory_at = [], None
    for r in range(rounds):
        try:
            x = torch.full((words,), r + 1, dtype=torch.int32, device="cuda")
        except torch.OutOfMemoryError:
            out_of_memory_at = r
            break
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(1_000_000)
            sums.append(x.sum(dtype=torch.int64))
        x.record_stream(side)
        del x
    torch.cuda.synchronize()
    exact = [int(s) for s in sums] == [(r + 1) * words for r in range(len(sums))]
    before = deepum.stats()
    torch.cuda.empty_cache()
    after = deepum.stats()
    y = torch.full((words,), 3, dtype=torch.int32, device="cuda")  # in the fresh pool: managed again
    exact_after = int(y.sum(dtype=torch.int64)) == 3 * words
    return {"rounds": len(sums), "out_of_memory_at": out_of_memory_at, "exact": exact,
            "in_use_before_empty_cache": before["managed_bytes_in_use"],
            "in_use_after_empty_cache": after["managed_bytes_in_use"], "stats": after,
            "exact_after_empty_cache": exact_after,
            "in_use_after_new_tensor": deepum.stats()["managed_bytes_in_use"]}


def case_exception_in_with(mode: str) -> dict:
    """The fuse's out-of-memory error leaves `with deepum.enable(...)`; afterwards deepum is off, and a
    new enable() works: a tensor made then is managed and computes exactly."""
    import torch

    import deepum

    result: dict = {"raised": None}
    try:
        with deepum.enable(mode, capacity=CAPACITY, max_managed_bytes="512MiB"):
            kept = torch.arange(MiB, dtype=torch.int64, device="cuda")
            result["pressure_exact"] = _pressure(rounds=1)  # the engine busy, dead blocks about
            torch.empty(GiB, dtype=torch.uint8, device="cuda")  # past the fuse: refused
    except torch.OutOfMemoryError as exc:
        result["raised"] = type(exc).__name__
    except Exception as exc:  # reported: the test expects the fuse's error only
        result["raised"] = repr(exc)
    result["refusals"] = deepum.stats()["fuse_refusals"]
    result["enabled_after_exit"] = deepum.is_enabled()
    with deepum.enable(mode, capacity=CAPACITY, max_managed_bytes="512MiB"):
        fresh = torch.arange(MiB, dtype=torch.int64, device="cuda") * 3
        result["fresh_type"] = _memory_type(fresh)
        result["fresh_exact"] = int(fresh.sum()) == 3 * MiB * (MiB - 1) // 2
        result["kept_exact"] = int(kept.sum()) == MiB * (MiB - 1) // 2
        result["enabled_in_second_session"] = deepum.is_enabled()
    result["enabled_after_second_session"] = deepum.is_enabled()
    return result


def case_device_assert_in_with(mode: str) -> dict:
    """A device-side assert (an out-of-bounds CUDA index) inside `with deepum.enable(...)`, the engine
    busy with pressure: leaving the block raises that very error, not one from disable(), and deepum
    is off. The process must then end by itself (the test's timeout catches a hang)."""
    import torch

    import deepum

    result: dict = {"original": None, "raised": None}
    original = None
    try:
        with deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE):
            _pressure(rounds=2)
            values = torch.arange(16, device="cuda")
            try:
                values[torch.tensor([1 << 20], device="cuda")].sum()
                torch.cuda.synchronize()
            except Exception as exc:
                original = exc
                result["original"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                raise
    except Exception as exc:
        result["raised"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        result["raised_is_original"] = exc is original
    result["enabled_after_exit"] = deepum.is_enabled()
    return result


def case_kernel_parameter_cache(mode: str, record: str, folder: str) -> dict:
    """Modules loaded and unloaded in turn through CuPy: `k(int n, float* x)` once, then (after it is
    unloaded, so that the driver may recycle its function handle) `k2(float* x, int n)` many times,
    over several cycles, on a managed tensor, with record=. The trace (read by the test) must give
    every launch of either kernel the tensor's blocks; the tensor's values are exact."""
    import gc

    import cupy
    import torch

    import deepum
    from deepum.runtime import native_build

    sources = {"k": 'extern "C" __global__ void k(int n, float* x) {\n'
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) x[i] = x[i] * 2.0f + 1.0f;\n}\n",
               "k2": 'extern "C" __global__ void k2(float* x, int n) {\n'
                     "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) x[i] = x[i] + 1.0f;\n}\n"}
    ptx = {}
    for name, source in sources.items():  # before enable(): nvcc needs no GPU
        path = Path(folder) / f"{name}.cu"
        path.write_text(source)
        subprocess.run([str(native_build.find_nvcc()), "-ptx", "-o", str(path.with_suffix(".ptx")), str(path)],
                       check=True)
        ptx[name] = path.with_suffix(".ptx").read_bytes() + b"\0"

    deepum.enable(mode, max_managed_bytes="256MiB", record=record)
    words, threads, cycles, k2_launches = 4 * MiB // 4, 256, 6, 16
    x = torch.zeros(words, dtype=torch.float32, device="cuda")
    pointer, count = np.uint64(x.data_ptr()), np.int32(words)

    def load_launch_unload(name: str, args: tuple, launches: int) -> int:
        module = cupy.cuda.function.Module()
        module.load(ptx[name])
        function = module.get_function(name)
        handle = int(getattr(function, "ptr", 0))
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            for _ in range(launches):
                function((-(-words // threads),), (threads,), args)
        torch.cuda.current_stream().synchronize()  # nothing of the module runs when it is unloaded
        del function, module
        gc.collect()
        return handle

    handles: dict = {"k": [], "k2": []}
    expected = 0.0
    for _ in range(cycles):
        handles["k"].append(load_launch_unload("k", (count, pointer), 1))
        handles["k2"].append(load_launch_unload("k2", (pointer, count), k2_launches))
        expected = expected * 2 + 1 + k2_launches
    exact = torch.equal(x.cpu(), torch.full((words,), expected, dtype=torch.float32))
    result = {"exact": exact, "expected": expected, "address": x.data_ptr(), "nbytes": words * 4,
              "x_type": _memory_type(x), "launches": {"k": cycles, "k2": cycles * k2_launches},
              "handles_recycled": len(set(handles["k"] + handles["k2"])) < 2 * cycles, "handles": handles}
    result["stats"] = deepum.stats()
    deepum.disable()
    return result


def case_reenable_with_resident(mode: str) -> dict:
    """enable() with default limits, 512 MiB allocated and touched, disable(), enable() again with the
    same arguments: the second session's fuse and capacity, and a further 256 MiB allocation."""
    import torch

    import deepum

    deepum.enable(mode)
    first = deepum.stats()
    resident = torch.full((512 * MiB,), 7, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    deepum.disable()
    deepum.enable(mode)
    second = deepum.stats()
    result = {"first": {key: first[key] for key in ("max_managed_bytes", "capacity_bytes", "free_bytes_at_enable")},
              "second": {key: second[key] for key in ("max_managed_bytes", "capacity_bytes", "free_bytes_at_enable")},
              "further_allocation": None}
    try:
        further = torch.full((256 * MiB,), 9, dtype=torch.uint8, device="cuda")
        result["further_allocation"] = "ok"
        result["further_exact"] = int(further.sum(dtype=torch.int64)) == 9 * 256 * MiB
        result["further_type"] = _memory_type(further)
    except torch.OutOfMemoryError as exc:
        result["further_allocation"] = str(exc).splitlines()[0]
    result["resident_exact"] = int(resident.sum(dtype=torch.int64)) == 7 * 512 * MiB
    result["resident_type"] = _memory_type(resident)
    result["stats"] = deepum.stats()
    deepum.disable()
    return result


def case_pool_dropped_in_session(mode: str) -> dict:
    """A torch.cuda.MemPool made, used (use_mem_pool) and dropped while deepum runs, then more managed
    work and disable(): the pool's tensor was in device memory and the process ends normally."""
    import gc

    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY)
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        in_pool = torch.full((MiB,), 3.0, device="cuda")
    pool_type, pool_sum = _memory_type(in_pool), float(in_pool.sum())
    del in_pool, pool
    gc.collect()
    after = torch.full((MiB,), 2.0, device="cuda")
    result = {"pool_type": pool_type, "pool_exact": pool_sum == 3.0 * MiB, "after_type": _memory_type(after),
              "after_exact": float(after.sum()) == 2.0 * MiB}
    deepum.disable()
    return result


def case_device_memory_after_disable(mode: str, record: str) -> dict:
    """A session under pressure, disable(), plain device tensors made (cudaMalloc memory now), then a
    second session (small capacity, record=) whose kernels use both those device tensors and new
    managed ones under pressure. Results exact; the test reads the trace for the device tensors' blocks."""
    import torch

    import deepum

    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE)
    first_exact = _pressure(rounds=2)
    deepum.disable()
    words, count = 16 * MiB // 4, 4
    device = [torch.full((words,), i + 1, dtype=torch.int32, device="cuda") for i in range(count)]
    deepum.enable(mode, capacity=CAPACITY, max_managed_bytes=FUSE, record=record)
    rounds, exact = 4, True
    for r in range(rounds):
        for tensor in device:
            tensor.add_(1)
        managed = [tensor * 2 for tensor in device]
        exact = _pressure(rounds=1, seed=r) and exact
        sums = torch.stack([m.sum(dtype=torch.int64) for m in managed]).cpu().tolist()
        exact = exact and sums == [2 * (i + 2 + r) * words for i in range(count)]
    final = [int(t.sum(dtype=torch.int64)) for t in device]
    exact = exact and final == [(i + 1 + rounds) * words for i in range(count)]
    result = {"exact": exact, "first_session_exact": first_exact,
              "device_types": sorted({_memory_type(t) for t in device}),
              "managed_types": sorted({_memory_type(m) for m in managed}),
              "device_ranges": [[t.data_ptr(), words * 4] for t in device],
              "managed_ranges": [[m.data_ptr(), words * 4] for m in managed]}
    result["stats"] = deepum.stats()
    deepum.disable()
    return result


CASES = {name[len("case_"):]: fn for name, fn in dict(globals()).items() if name.startswith("case_")}


# --- the tests (run each case in a subprocess) ----------------------------------------------------

def run_case(name: str, *, env: dict | None = None, timeout: float = 300, check: bool = True,
             **arguments: str) -> tuple[dict | None, subprocess.CompletedProcess]:
    """Runs case `name` in a fresh process (KEY=VALUE arguments); its RESULT and the finished process.
    check: the process must exit with status 0 and print a RESULT. A process still running at
    `timeout` is a hang: the test fails."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                       CUBLAS_WORKSPACE_CONFIG=":4096:8", PYTHONUNBUFFERED="1", DEEPUM_NO_OVERSUBSCRIBE="1")
    environment.pop("DEEPUM_INJECT_FAULTS", None)
    environment.update(env or {})
    command = [sys.executable, str(Path(__file__).resolve()), name, *(f"{k}={v}" for k, v in arguments.items())]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"case {name} {arguments} still ran after {timeout} s (a hang):\n"
                    f"{exc.stdout!r:.4000}\n{exc.stderr!r:.4000}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if check:
        assert done.returncode == 0 and lines, f"case {name} {arguments} failed:\n{done.stdout}\n{done.stderr}"
    result = json.loads(lines[-1][len("RESULT "):]) if lines else None
    print(f"{name}({arguments}) exit {done.returncode}: {json.dumps(result)}")
    return result, done


def compile_environment(folder: Path) -> dict:
    """torch.compile's caches in a folder of the run's own, and no compile worker processes."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TRITON_CACHE_DIR": str(folder / "triton"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1"}


@pytest.fixture(scope="module")
def plain_training(allocator_built) -> dict:
    """_train with mode none: the reference of every eager training case."""
    result, _ = run_case("train", mode="none")
    return result


def assert_budget_pressed(stats: dict) -> None:
    """The run's managed memory went past its capacity, and the engine failed no CUDA call."""
    assert stats["capacity_bytes"] < stats["managed_bytes_peak"] <= GiB, stats
    assert stats["launches"] > 0 and stats["evict_bytes"] > 0, _migrations(stats)


@pytest.mark.parametrize("mode", ["um", "deepum"])
@pytest.mark.parametrize("how", ["side_allocation", "record_stream"])
def test_side_stream_read_of_a_freed_tensor_survives_default_stream_pressure(allocator_built, mode, how):
    """a1 (x allocated on the side stream, freed at once) and a2 (record_stream); mode um is the
    reference without discards."""
    result, _ = run_case("side_stream", mode=mode, how=how)
    stats = result["stats"]
    assert result["x_type"] == MANAGED
    assert result["side_busy_at_pressure"], "the side stream finished before the pressure began: no race shown"
    assert result["pressure_exact"] and result["exact"], _migrations(stats)
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    if mode == "deepum":
        assert stats["discard_bytes"] + stats["populate_bytes"] > 0, _migrations(stats)


@pytest.mark.parametrize("eviction_threads", ["0", "4"])
def test_two_threads_on_two_streams_keep_every_copy_exact(allocator_built, eviction_threads):
    """a3: a thread reading freed tensors behind GPU sleeps while another presses the budget; the
    evictions through the CUDA driver, or from threads of their own."""
    result, _ = run_case("two_threads", mode="deepum", eviction_threads=eviction_threads)
    assert "reader_error" not in result and "presser_error" not in result, result
    assert result["reader_exact"] == [True] * 10 and result["pressure_exact"] and result["pressure_rounds"] >= 2
    stats = result["stats"]
    assert stats["discard_bytes"] + stats["populate_bytes"] > 0, _migrations(stats)
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")


def test_two_threads_with_move_threads_end_every_time(allocator_built):
    """a3 again, six runs with four eviction threads and four prefetch threads or none: each run ends
    within its limit and every check is exact. (A run hung where an allocation dropped the last holder
    of a discard event and destroyed it, waiting for the CUDA driver's lock under the memory map's,
    while the other thread's copy to the host held the driver's lock and waited for the GPU.)"""
    for run in range(6):
        result, _ = run_case("two_threads", mode="deepum", eviction_threads="4", prefetch_threads=str(4 * (run % 2)),
                             timeout=120)
        assert "reader_error" not in result and "presser_error" not in result, result
        assert result["reader_exact"] == [True] * 10 and result["pressure_exact"], result
        assert result["stats"]["cuda_errors"] == 0, result["stats"].get("last_cuda_error")


def test_cuda_graph_replays_equal_eager_under_pressure(allocator_built):
    """b1: 20 replays of a captured forward, each bitwise equal to the eager forward, with pressure
    past the capacity between them; capture allocations in the graph's pool, not managed memory."""
    result, _ = run_case("graph_replays", mode="deepum")
    assert result["exact"] == [True] * 20 and result["pressure_exact"]
    assert result["static_output_type"] == DEVICE
    assert result["static_input_type"] == MANAGED and result["weight_type"] == MANAGED
    stats = result["stats"]
    assert stats["evict_bytes"] > 0, _migrations(stats)
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")


@pytest.mark.parametrize("compile_mode", ["reduce-overhead", "default"])
def test_compiled_training_under_a_budget_equals_plain_compiled(allocator_built, tmp_path, compile_mode):
    """b2 (reduce-overhead: CUDA graphs through Inductor) and c (default: Inductor's Triton kernels):
    bitwise equal to the same compiled training with mode none; in c the recorded launches include
    Triton kernels (launched through cuLaunchKernel, seen by the hook)."""
    from deepum.offline.trace_io import read_trace

    plain, _ = run_case("train", mode="none", compile_mode=compile_mode, timeout=900,
                        env=compile_environment(tmp_path / "none"))
    trace = tmp_path / "compiled.npz"
    managed, _ = run_case("train", mode="deepum", compile_mode=compile_mode, record=str(trace), timeout=900,
                          env=compile_environment(tmp_path / "deepum"))
    assert managed["losses"] == plain["losses"]
    assert managed["digest"] == plain["digest"]
    stats = managed["stats"]
    assert_budget_pressed(stats)
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    recorded = read_trace(trace)
    names = {str(recorded.kernel_names[i]) for i in np.unique(recorded.kernel_name_idx)}
    assert recorded.num_kernels > 0
    if compile_mode == "default":
        assert any(name.startswith("triton") for name in names), sorted(names)[:40]


@pytest.mark.parametrize("prefetch_threads", ["0", "4"])
def test_move_threads_keep_training_exact(allocator_built, plain_training, prefetch_threads):
    """Training under a budget with four threads evicting through the unified-memory driver, and four
    prefetching or none, equals mode none; the threads did the moves, and the driver refused none."""
    managed, _ = run_case("train", mode="deepum", eviction_threads="4", prefetch_threads=prefetch_threads)
    stats = managed["stats"]
    assert_budget_pressed(stats)
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    assert stats["direct_eviction_refusals"] == 0 and stats["direct_eviction_wait_ns"] > 0, _migrations(stats)
    assert stats["direct_prefetch_refusals"] == 0
    assert (stats["direct_prefetch_wait_ns"] > 0) == (prefetch_threads != "0"), _migrations(stats)
    assert managed["losses"] == plain_training["losses"]
    assert managed["digest"] == plain_training["digest"]


def test_injected_cuda_failures_keep_training_exact(allocator_built, plain_training):
    """d: the engine built with DEEPUM_INJECT_FAULTS=3 (every 3rd guarded CUDA call fails): training
    under a budget still equals mode none, and failures were injected and counted."""
    managed, _ = run_case("train", mode="deepum", env={"DEEPUM_INJECT_FAULTS": "3"}, timeout=1200)
    stats = managed["stats"]
    assert stats["injected_failures"] > 0 and stats["cuda_errors"] > 0, _migrations(stats)
    assert_budget_pressed(stats)
    assert managed["losses"] == plain_training["losses"]
    assert managed["digest"] == plain_training["digest"]


def _torch_routes_as_capture() -> bool:
    """Whether the installed PyTorch counts a routing into a pool as a graph capture (before 2.13)."""
    try:
        import torch
    except ImportError:
        return False
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    return (major, minor) < (2, 13)


@pytest.fixture(scope="module")
def record_stream_rounds(allocator_built):
    result, _ = run_case("record_stream_rounds", mode="deepum")
    return result


def test_record_stream_blocks_are_reused(record_stream_rounds):
    """e: 32 x 32 MiB allocated, read on a side stream, record_stream'd and freed under a 512 MiB
    fuse: no out-of-memory (freed blocks are reused), every read exact; with a PyTorch that holds such
    frees back under the routing, deepum released them."""
    result = record_stream_rounds
    assert result["out_of_memory_at"] is None and result["rounds"] == 32, result
    assert result["exact"]
    stats = result["stats"]
    assert stats["fuse_refusals"] == 0 and stats["managed_bytes_peak"] <= 512 * MiB
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    if _torch_routes_as_capture():
        assert stats["held_frees_releases"] >= 1, stats


def test_empty_cache_releases_managed_segments(record_stream_rounds):
    """e: after the rounds, empty_cache() lowers the managed bytes in use; a tensor made afterwards
    is managed again and computes exactly."""
    result = record_stream_rounds
    assert result["in_use_after_empty_cache"] < result["in_use_before_empty_cache"], result
    assert result["exact_after_empty_cache"]
    assert result["in_use_after_new_tensor"] >= result["in_use_after_empty_cache"] + 32 * MiB, result


def test_exit_without_disable_writes_the_recorded_trace(allocator_built, plain_training, tmp_path):
    """f1: a script that enables deepum with record= and exits without disable(): status 0, the
    training equals mode none, and the trace is written at exit and readable."""
    from deepum.offline.trace_io import read_trace

    trace = tmp_path / "at_exit.npz"
    result, _ = run_case("train", mode="deepum", record=str(trace), disable="0")
    assert result["digest"] == plain_training["digest"]
    assert trace.is_file(), "no trace written at exit"
    recorded = read_trace(trace)
    assert recorded.iterations == STEPS and recorded.num_kernels > STEPS
    assert recorded.meta["mode"] == "deepum"


def test_exception_in_with_block_disables_and_enable_works_again(allocator_built):
    """f2, ordinary error: the fuse's out-of-memory error leaves the with-block; deepum is off after
    it, and a second enable() gives a managed tensor that computes exactly."""
    result, _ = run_case("exception_in_with", mode="deepum")
    assert result["raised"] == "OutOfMemoryError" and result["refusals"] >= 1, result
    assert result["pressure_exact"]
    assert result["enabled_after_exit"] is False
    assert result["enabled_in_second_session"] is True and result["enabled_after_second_session"] is False
    assert result["fresh_type"] == MANAGED and result["fresh_exact"] and result["kept_exact"]


def test_device_side_assert_in_with_block_raises_it_and_does_not_hang(allocator_built):
    """f2, device-side assert: leaving the with-block raises the original error (not one from
    disable()), deepum is off, and the process ends by itself, without a crash at teardown."""
    result, done = run_case("device_assert_in_with", mode="deepum", timeout=180, check=False)
    assert result is not None, f"no RESULT:\n{done.stdout}\n{done.stderr}"
    assert result["original"] and "device-side assert" in result["original"], result
    assert result["raised_is_original"] is True, result
    assert result["enabled_after_exit"] is False
    assert done.returncode >= 0, f"killed by signal {-done.returncode}:\n{done.stderr[-4000:]}"


def test_profiler_mid_run_does_not_freeze_fault_counters(allocator_built, plain_training):
    """f3: torch.profiler (CPU and CUDA) around two steps of an 8-step um training under a budget: GPU
    page faults are still counted after it (as before it), and training equals none. Counted over
    the steps after the profiler rather than per iteration: on so small a model the fault log's
    records reach the per-iteration figures in lumps, some iterations showing none."""
    result, _ = run_case("train", mode="um", profile="1")
    assert result["digest"] == plain_training["digest"] and result["losses"] == plain_training["losses"]
    stats = result["stats"]
    assert len(stats["per_iteration"]) == STEPS
    faults = [i["gpu_page_faults"] for i in stats["per_iteration"]]
    assert result["faults_at_profiler_start"] > 0, f"no faults before the profiler: {faults}"
    assert stats["gpu_page_faults"] > result["faults_at_profiler_stop"], f"fault counters froze after the profiler: {faults}"
    assert_budget_pressed(stats)


def test_exit_without_disable_twenty_times_ends_cleanly(allocator_built, plain_training):
    """f4: a deepum training that exits without disable(), 20 times in a row: every exit status 0, no
    crash at teardown, every result equal to mode none."""
    for run in range(20):
        result, done = run_case("train", mode="deepum", disable="0")
        for crash in ("Segmentation fault", "terminate called", "core dumped", "Aborted"):
            assert crash not in done.stderr, f"run {run}: {crash}\n{done.stderr[-4000:]}"
        assert result["digest"] == plain_training["digest"], f"run {run}"


def test_kernel_parameter_cache_follows_module_unloads(allocator_built, tmp_path):
    """g: kernels k(int n, float* x) and k2(float* x, int n) in modules loaded and unloaded in turn
    (a recycled function handle must not reuse the other kernel's argument layout): every recorded
    launch of either accesses the tensor's blocks, and the tensor's values are exact."""
    pytest.importorskip("cupy")
    from deepum.offline.trace_io import read_trace

    trace = tmp_path / "modules.npz"
    result, _ = run_case("kernel_parameter_cache", mode="um", record=str(trace), folder=str(tmp_path))
    assert result["exact"] and result["x_type"] == MANAGED, result
    recorded = read_trace(trace)
    expected = set(_blocks(result["address"], result["nbytes"]))
    names = recorded.kernel_names[recorded.kernel_name_idx]
    for kernel, launches in result["launches"].items():
        rows = np.flatnonzero(names == kernel)
        assert rows.size == launches, (kernel, rows.size, sorted(set(names.tolist()))[:40])
        for row in rows:
            blocks = set(recorded.access_block[recorded.access_offsets[row]:recorded.access_offsets[row + 1]].tolist())
            assert expected <= blocks, f"launch {row} of {kernel} misses the tensor's blocks: {sorted(blocks)}"
    stats = result["stats"]
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")


def test_reenable_with_resident_tensors_keeps_fuse_and_capacity(allocator_built):
    """i: 512 MiB still resident from a first um session (default limits) shrink neither the fuse
    nor the capacity of a second one with the same arguments, and 256 MiB more are allocated."""
    result, _ = run_case("reenable_with_resident", mode="um")
    first, second = result["first"], result["second"]
    assert second["max_managed_bytes"] == first["max_managed_bytes"], result
    assert second["capacity_bytes"] == first["capacity_bytes"], result
    assert result["further_allocation"] == "ok", result
    assert result["further_exact"] and result["resident_exact"]
    assert result["further_type"] == MANAGED and result["resident_type"] == MANAGED
    assert result["stats"]["fuse_refusals"] == 0


def test_a_pool_dropped_in_a_session_does_not_end_the_process(allocator_built):
    """b: a MemPool made and dropped while deepum runs (PyTorch asserts when one is destroyed under a
    routing) is kept until the routing ends; its tensor was device memory, later ones managed."""
    result, _ = run_case("pool_dropped_in_session", mode="deepum")
    assert result["pool_type"] == DEVICE and result["after_type"] == MANAGED, result
    assert result["pool_exact"] and result["after_exact"]


def test_device_tensors_made_after_disable_stay_outside_the_engine(allocator_built, tmp_path):
    """j: ordinary cudaMalloc tensors made between two deepum sessions, used by kernels of the second
    one under pressure: results exact, no failed CUDA call (no migration of non-managed memory), and
    no recorded launch accesses their blocks (while the managed tensors' blocks are recorded)."""
    from deepum.offline.trace_io import read_trace

    trace = tmp_path / "after_disable.npz"
    result, _ = run_case("device_memory_after_disable", mode="deepum", record=str(trace))
    assert result["device_types"] == [DEVICE] and result["managed_types"] == [MANAGED]
    assert result["exact"] and result["first_session_exact"]
    stats = result["stats"]
    assert stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    assert stats["evict_bytes"] > 0, _migrations(stats)
    accessed = set(read_trace(trace).access_block.tolist())
    device_blocks = {b for address, nbytes in result["device_ranges"] for b in _blocks(address, nbytes)}
    managed_blocks = {b for address, nbytes in result["managed_ranges"] for b in _blocks(address, nbytes)}
    assert managed_blocks <= accessed
    assert not device_blocks & accessed, sorted(device_blocks & accessed)


if __name__ == "__main__":
    case, arguments = sys.argv[1], dict(argument.split("=", 1) for argument in sys.argv[2:])
    print("RESULT " + json.dumps(CASES[case](**arguments)), flush=True)
