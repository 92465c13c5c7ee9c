"""What marking a point of a stream costs the CPU: the ways a launching thread can make the GPU tell
the CPU that the work launched so far on a stream has completed, each timed per call on the calling
thread, between launches of a small kernel on that stream (as the launch hook marks between a
training step's launches):

- write_value: cuStreamWriteValue64 of the mark's number to a word of pinned host memory (the mark
  the move threads wait for, stream_marks.hpp);
- kernel_write: a one-thread kernel that writes the number there (launched through cuLaunchKernel);
- event_record: cuEventRecord (the worker's events; not readable without a CUDA call);
- empty_call: cuCtxGetCurrent, the cost of a driver call from Python, to subtract.

Each way runs --calls times after --warmup, alternating with the kernel launches, in --rounds rounds
taking turns; reported as the median of the rounds' means, µs a call. Writes one JSON record: command,
device, driver, date, and per way the rounds' means.

    DEEPUM_NO_OVERSUBSCRIBE=1 python3 bench/mark_cost.py -o bench/results/submit_split/mark_cost.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
import time
from pathlib import Path


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", required=True, help="the JSON record to write")
    parser.add_argument("--calls", type=int, default=2000, help="timed calls a way and round (1 to 100000, default 2000)")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first (0 to 100000, default 200)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, the ways taking turns (1 to 100, default 5)")
    args = parser.parse_args(argv)
    for name, low, high in (("calls", 1, 100_000), ("warmup", 0, 100_000), ("rounds", 1, 100)):
        if not low <= getattr(args, name) <= high:
            parser.error(f"--{name} must be from {low} to {high}")
    return args


def check(result):
    """The value of a cuda-bindings call; raises on an error code."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err}")
    return rest[0] if len(rest) == 1 else rest


def main(argv=None) -> int:
    args = parse_args(argv)
    import cupy
    import numpy as np
    from cuda.bindings import driver as cu

    cupy.cuda.Device(0).use()
    stream = cupy.cuda.Stream(non_blocking=True)
    handle = cu.CUstream(stream.ptr)
    host = check(cu.cuMemHostAlloc(8, cu.CU_MEMHOSTALLOC_DEVICEMAP))
    word = check(cu.cuMemHostGetDevicePointer(host, 0))
    writer = cupy.RawKernel(r'extern "C" __global__ void mark(unsigned long long* w, unsigned long long v) { *w = v; }',
                            "mark")
    work = cupy.zeros(1 << 16, dtype=cupy.float32)
    event = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    number = [0]

    def next_number():
        number[0] += 1
        return number[0]

    ways = {
        "write_value": lambda: check(cu.cuStreamWriteValue64(handle, word, next_number(), 0)),
        "kernel_write": lambda: writer((1,), (1,), (np.uint64(int(word)), np.uint64(next_number())), stream=stream),
        "event_record": lambda: check(cu.cuEventRecord(event, handle)),
        "empty_call": lambda: check(cu.cuCtxGetCurrent()),
    }
    means = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, call in ways.items():
            total = 0
            for i in range(args.warmup + args.calls):
                with stream:
                    work += 1
                began = time.perf_counter_ns()
                call()
                if i >= args.warmup:
                    total += time.perf_counter_ns() - began
            stream.synchronize()
            means[name].append(total / args.calls / 1e3)
    check(cu.cuMemFreeHost(host))
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    record = {
        "command": "python3 bench/mark_cost.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        "device": device, "driver_version": check(cu.cuDriverGetVersion()),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "calls": args.calls, "warmup": args.warmup, "rounds": args.rounds,
        "us_per_call_round_means": means,
        "us_per_call_median": {name: statistics.median(v) for name, v in means.items()},
    }
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    for name, value in record["us_per_call_median"].items():
        print(f"{name}: {value:.2f} µs a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
