"""Does the GPU's traffic over the host link slow the policy's decisions on the CPU?

Replays a recorded trace's launches through the native policy core as bench/policy_cost.py does (each
launch's decision timed, --displace bytes written before each launch to push the policy's data out of
the CPU's caches), alternately on a quiet machine and while another process keeps a GPU kernel
reading and writing pinned host memory (--host-bytes of it, over the link both ways at once, as the
optimizer's step over host-mapped moments does). Writes one JSON record: command, CPU, GPU, source
revision, date, each replay's per-launch figures (µs) with the streaming process's rate (bytes a
second each way), and the mean decision time while streaming over the quiet one's.

    python3 bench/link_traffic_probe.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 -o link_traffic.json

Needs a GPU and CuPy; the host memory is pinned, not managed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import shlex
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum.units import parse_size  # noqa: E402
import policy_cost  # noqa: E402
import replay_arguments  # noqa: E402
from replay_throughput import cpu_model, source_revision  # noqa: E402

READY_TIMEOUT_S = 120


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("--displace", default="4MiB",
                        help="bytes written before each launch (default %(default)s)")
    parser.add_argument("--host-bytes", default="1GiB",
                        help="pinned host memory the GPU kernel streams (64MiB to 16GiB, default %(default)s)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="quiet and streaming replays, alternated (1 to 20, default %(default)s)")
    replay_arguments.add_from_iteration(parser)
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    try:
        args.displace, args.host_bytes = parse_size(args.displace), parse_size(args.host_bytes)
    except ValueError as exc:
        parser.error(str(exc))
    if not 0 <= args.displace <= 1 << 30:
        parser.error("--displace must be from 0 to 1GiB")
    if not 64 << 20 <= args.host_bytes <= 16 << 30:
        parser.error("--host-bytes must be from 64MiB to 16GiB")
    if not 1 <= args.pairs <= 20:
        parser.error(f"--pairs must be from 1 to 20, got {args.pairs}")
    replay_arguments.check_from_iteration(parser, args)
    return args


def stream(host_bytes: int, ready, stop, results) -> None:
    """In a process of its own: a GPU kernel adds one to every float of `host_bytes` of pinned host
    memory, pass after pass, until `stop` is set; puts the passes, seconds and bytes a second each way."""
    import cupy

    pinned = cupy.cuda.alloc_pinned_memory(host_bytes)
    memory = cupy.cuda.UnownedMemory(pinned.ptr, host_bytes, pinned, device_id=0)
    data = cupy.ndarray((host_bytes // 4,), cupy.float32, cupy.cuda.MemoryPointer(memory, 0))
    data.fill(0)
    cupy.cuda.Device(0).synchronize()
    ready.set()
    passes, start = 0, time.perf_counter()
    while not stop.is_set():
        data += 1
        cupy.cuda.Device(0).synchronize()
        passes += 1
    seconds = time.perf_counter() - start
    results.put({"passes": passes, "seconds": seconds, "bytes_per_s_each_way": passes * host_bytes / seconds})


def gpu_name() -> str:
    """The name of GPU 0 (CuPy's runtime)."""
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def replay(args, launches_per_iteration: float, bins, first: int) -> dict:
    """One replay through a fresh policy: bench/policy_cost.py's summary of the launches from `first`."""
    times = policy_cost.time_launches(args.trace_data, policy_cost.new_policy(args.capacity, args.deepum_config),
                                      args.displace)[first:]
    return policy_cost.summary(times, launches_per_iteration, bins)


def streaming_replay(args, launches_per_iteration: float, bins, first: int) -> dict:
    """A replay while stream() runs in a process of its own; its summary with the stream's rate."""
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Event(), context.Event(), context.Queue()
    streamer = context.Process(target=stream, args=(args.host_bytes, ready, stop, results), daemon=True)
    streamer.start()
    try:
        if not ready.wait(READY_TIMEOUT_S):
            raise RuntimeError(f"the streaming process was not ready within {READY_TIMEOUT_S} s")
        figures = replay(args, launches_per_iteration, bins, first)
    finally:
        stop.set()
    rate = results.get(timeout=READY_TIMEOUT_S)
    streamer.join(timeout=READY_TIMEOUT_S)
    return {**figures, "stream": rate}


def main(argv=None) -> int:
    args = parse_args(argv)
    trace = args.trace_data
    first = int(trace.iteration_first_kernel[args.from_iteration])
    launches_per_iteration = (trace.num_kernels - first) / (trace.iteration_first_kernel.size - args.from_iteration)
    bins = policy_cost.block_bins(np.diff(trace.access_offsets)[first:])
    quiet, streaming = [], []
    for pair in range(args.pairs):
        quiet.append(replay(args, launches_per_iteration, bins, first))
        streaming.append(streaming_replay(args, launches_per_iteration, bins, first))
        print(f"pair {pair}: quiet {quiet[-1]['mean_us']:.2f} µs, streaming {streaming[-1]['mean_us']:.2f} µs a launch "
              f"(the stream at {streaming[-1]['stream']['bytes_per_s_each_way'] / 1e9:.1f} GB/s each way)", flush=True)
    record = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]), "cpu": cpu_model(),
        "gpu": gpu_name(), "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "trace": str(args.trace), "capacity_bytes": args.capacity, "displace_bytes": args.displace,
        "host_bytes": args.host_bytes, "launches_per_iteration": launches_per_iteration,
        "quiet": quiet, "streaming": streaming,
        "streaming_over_quiet_mean": float(np.mean([s["mean_us"] for s in streaming]) /
                                           np.mean([q["mean_us"] for q in quiet])),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
