"""Do kernels run slower on managed memory than on device memory, once its pages are on the GPU, or
cost the launching thread more?

Times the same kernels, in one process, on four buffers of the same size:

- device: torch's caching allocator (device memory, as mode none has it);
- prefetched: cudaMallocManaged, its pages given to the GPU by one prefetch of the whole buffer (as an
  asleep deepum populates each new managed segment);
- faulted: cudaMallocManaged, its pages brought to the GPU by the first kernel that writes them (GPU
  page faults, as plain um has them);
- advised: cudaMallocManaged with the GPU as its preferred location and a mapping for it
  (cudaMemAdviseSetPreferredLocation, cudaMemAdviseSetAccessedBy), then prefetched as `prefetched`.

GPU time, by CUDA events, of kernels within one buffer: stream (a copy of one half onto the other),
gather (index_select of random 256-byte rows of a table filling the buffer: one translation per row),
matmul (square float32 products). CPU time per call on the launching thread, by the clock around
--calls calls of small operands carved from one buffer (the GPU keeps up, so the thread never waits
for it): add (an elementwise kernel of PyTorch's), small_matmul (cuBLAS), conv (cuDNN),
pointer_query (cudaPointerGetAttributes on the buffer, which libraries may ask per call), and copies
that wait for the GPU, as steps that read sizes or counts back do: item (one value to the host),
to_host and from_host (16 KiB to and from pageable host memory), and to_host_4m and from_host_4m
(the same with 4 MiB, the size of a batch of indices). Each round times everything on every buffer,
the buffers' order rotating from round to round, so a drift of the shared machine's speed falls on
all alike; each buffer's figure is the median over the rounds, and its ratio to device memory the
median of the rounds' ratios.

--cupti configures CUPTI's unified-memory counters (deepum's fault log) before CUDA starts, as
deepum.enable() does in every mode, to see what they cost the launching thread.

Writes one JSON record (command, device, date, whether CUPTI's counters were on, per measurement and buffer the round times in ms (GPU)
or µs per call (CPU), medians, ratios).

    python3 bench/managed_kernel_probe.py -o bench/results/managed_kernels/managed_kernel_probe.json

Safety: the three managed buffers (3 x --gib GiB) must stay under a quarter of the free GPU memory.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

BUFFERS = ("device", "prefetched", "faulted", "advised")
ROW_BYTES = 256


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of each buffer in GiB (default 2)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of timings (default 30)")
    parser.add_argument("--repeats", type=int, default=5, help="launches of a kernel per timing (default 5)")
    parser.add_argument("--matmul", type=int, default=4096, help="side of the square matmul (default 4096)")
    parser.add_argument("--calls", type=int, default=200, help="calls per CPU timing (default 200)")
    parser.add_argument("--cupti", action="store_true",
                        help="configure CUPTI's unified-memory counters (deepum's fault log) before CUDA starts")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0.0625 <= args.gib <= 64:
        parser.error(f"--gib must be from 0.0625 to 64, got {args.gib}")
    if not 1 <= args.rounds <= 1000 or not 1 <= args.repeats <= 100 or not 1 <= args.calls <= 10000:
        parser.error(f"--rounds must be from 1 to 1000, --repeats from 1 to 100 and --calls from 1 to 10000, "
                     f"got {args.rounds}, {args.repeats}, {args.calls}")
    if not 64 <= args.matmul <= 16384 or 3 * 4 * args.matmul**2 > args.gib * 2**30:
        parser.error(f"--matmul must be from 64 to 16384, its three matrices within --gib, got {args.matmul}")
    return args


def managed_tensor(torch, rt, check, size: int):
    """A flat float32 tensor over a new cudaMallocManaged buffer of `size` bytes (wrapped through
    cupy: torch.from_dlpack refuses managed memory) and the buffer's address."""
    import cupy

    address = check(rt.cudaMallocManaged(size, rt.cudaMemAttachGlobal))
    memory = cupy.cuda.UnownedMemory(address, size, owner=None)
    array = cupy.ndarray((size // 4,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(memory, 0))
    return torch.as_tensor(array, device="cuda"), address


def kernels(torch, flat, matmul_side: int, rows):
    """The probe's kernels over one buffer's flat tensor, by name."""
    half = flat.numel() // 2
    source, target = flat[:half], flat[half:2 * half]
    n = matmul_side * matmul_side
    a, b, c = (flat[i * n:(i + 1) * n].view(matmul_side, matmul_side) for i in range(3))
    table = flat[: flat.numel() // (ROW_BYTES // 4) * (ROW_BYTES // 4)].view(-1, ROW_BYTES // 4)
    gathered = torch.empty(rows.numel(), ROW_BYTES // 4, device="cuda")
    return {"stream": lambda: target.copy_(source),
            "gather": lambda: torch.index_select(table, 0, rows, out=gathered),
            "matmul": lambda: torch.matmul(a, b, out=c)}


def small_calls(torch, flat, rt, check, address: int):
    """Calls on small operands carved from one buffer (`address`: its start), by name, whose cost is
    the launching thread's."""
    import torch.nn.functional as F

    x, y, out = flat[:4096], flat[4096:8192], flat[8192:12288]
    host = torch.ones(4096)
    big, big_host = flat[1 << 20:2 << 20], torch.ones(1 << 20)
    a, b, c = (flat[16384 + i * 4096:16384 + (i + 1) * 4096].view(64, 64) for i in range(3))
    image = flat[32768:32768 + 8 * 16 * 16 * 16].view(8, 16, 16, 16)
    weight = flat[98304:98304 + 16 * 16 * 9].view(16, 16, 3, 3)
    return {"add": lambda: torch.add(x, y, out=out),
            "small_matmul": lambda: torch.matmul(a, b, out=c),
            "conv": lambda: F.conv2d(image, weight, padding=1),
            "pointer_query": lambda: check(rt.cudaPointerGetAttributes(address)),
            "item": lambda: x[0].item(),
            "to_host": lambda: x.cpu(),
            "from_host": lambda: x.copy_(host),
            "to_host_4m": lambda: big.cpu(),
            "from_host_4m": lambda: big.copy_(big_host)}


def cpu_us(torch, call, calls: int) -> float:
    """Microseconds of the calling thread per call, over `calls` calls (the GPU drained before)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def time_ms(torch, work, repeats: int) -> float:
    """Milliseconds per launch of `work`, over `repeats` launches between two CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeats


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from cuda.bindings import runtime as rt
    from um_calls import check, locations  # the script's own folder is first on sys.path

    if args.cupti:  # before the CUDA context, as deepum.enable() does it
        from deepum.runtime import native_build

        native_build.load_torch_extension(native_build.online_engine()).configure_fault_log(0)

    size = int(args.gib * 2**30) // 2**21 * 2**21
    free, _total = torch.cuda.mem_get_info()
    if 3 * size > free // 4:
        raise SystemExit(f"3 x {args.gib} GiB of managed memory is more than a quarter of the free "
                         f"{free / 2**30:.1f} GiB: use a smaller --gib")
    torch.backends.cuda.matmul.allow_tf32 = False
    gpu, _host = locations(rt)
    flats = {"device": torch.empty(size // 4, device="cuda")}
    flats["prefetched"], address = managed_tensor(torch, rt, check, size)
    check(rt.cudaMemPrefetchAsync(address, size, gpu, 0, torch.cuda.current_stream().cuda_stream))
    flats["faulted"], faulted_address = managed_tensor(torch, rt, check, size)
    flats["advised"], advised_address = managed_tensor(torch, rt, check, size)
    check(rt.cudaMemAdvise(advised_address, size, rt.cudaMemoryAdvise.cudaMemAdviseSetPreferredLocation, gpu))
    check(rt.cudaMemAdvise(advised_address, size, rt.cudaMemoryAdvise.cudaMemAdviseSetAccessedBy, gpu))
    check(rt.cudaMemPrefetchAsync(advised_address, size, gpu, 0, torch.cuda.current_stream().cuda_stream))
    addresses = {"device": flats["device"].data_ptr(), "prefetched": address, "faulted": faulted_address,
                 "advised": advised_address}
    generator = torch.Generator(device="cuda").manual_seed(0)
    for flat in flats.values():
        flat.normal_(generator=generator)  # the first writes: the faulted buffer's pages come in here
    torch.cuda.synchronize()
    rows = torch.randint(0, size // ROW_BYTES, (1 << 20,), device="cuda", generator=generator)
    work = {name: kernels(torch, flat, args.matmul, rows) for name, flat in flats.items()}
    calls = {name: small_calls(torch, flat, rt, check, addresses[name]) for name, flat in flats.items()}
    for by_kernel in [*work.values(), *calls.values()]:
        for run in by_kernel.values():
            run()  # each once before timing
    times = {kernel: {name: [] for name in BUFFERS} for kernel in [*work["device"], *calls["device"]]}
    for index in range(args.rounds):
        order = BUFFERS[index % len(BUFFERS):] + BUFFERS[:index % len(BUFFERS)]
        for kernel in times:
            for name in order:
                times[kernel][name].append(time_ms(torch, work[name][kernel], args.repeats) if kernel in work[name]
                                           else cpu_us(torch, calls[name][kernel], args.calls))
    figures = {}
    for kernel, by_buffer in times.items():
        device = by_buffer["device"]
        figures[kernel] = {
            "clock": "gpu_ms" if kernel in work["device"] else "cpu_us_per_call",
            "rounds": by_buffer,
            "median": {name: statistics.median(ms) for name, ms in by_buffer.items()},
            "over_device": {name: statistics.median(m / d for m, d in zip(ms, device))
                            for name, ms in by_buffer.items() if name != "device"},
        }
    record = {"command": "python3 bench/managed_kernel_probe.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "device": torch.cuda.get_device_name(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "buffer_bytes": size, "rounds": args.rounds, "repeats": args.repeats, "matmul_side": args.matmul,
              "calls": args.calls, "cupti": args.cupti,
              "gather_rows": rows.numel(), "row_bytes": ROW_BYTES, "kernels": figures}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    for kernel, f in figures.items():
        unit = "ms" if f["clock"] == "gpu_ms" else "us/call"
        print(f"{kernel:13s} " + "  ".join(f"{name} {v:.3f} {unit}" for name, v in f["median"].items()) + "   " +
              "  ".join(f"{name}/device {r:.3f}" for name, r in f["over_device"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
