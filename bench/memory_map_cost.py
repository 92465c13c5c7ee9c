"""What does the memory map cost per allocation and free? Builds bench/probes/memory_map_cost.cpp with the
C++ compiler ($CXX, else c++) and replays a recorded trace's memory events (allocations and frees in
deepum's managed segments, as the allocator hook hands them to the map) through the map asleep (the
engine sleeping without pressure) and awake, --repeats times, and awake again while a second thread asks
the map under its lock, without pause, whether blocks are dead (as a policy deciding on a thread of its
own would); writes one JSON record: command, the machine, date, the trace, events per iteration,
nanoseconds per event asleep, awake and awake while asked (with the questions asked per second), and what
that makes per iteration in microseconds. CPU only: the map is CUDA-free.

    python3 bench/memory_map_cost.py -o bench/results/no_pressure_lockstep/memory_map_cost.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_TRACE = HERE / "results" / "gpu_check" / "trace.npz"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="a recorded trace (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=50, help="replays of the events timed (1 to 10000, default 50)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def memory_events(parser: argparse.ArgumentParser, path: Path) -> tuple[np.ndarray, int]:
    """The trace's memory events as (action, address, bytes) int64 rows, and its iterations; exits
    with status 2 naming what is wrong with the file."""
    try:
        with np.load(path, allow_pickle=False) as trace:
            rows = np.stack([trace["mem_action"].astype(np.int64), trace["mem_address"].astype(np.int64),
                             trace["mem_bytes"].astype(np.int64)], 1)
            iterations = int(np.asarray(trace["iteration_first_kernel"]).size) if "iteration_first_kernel" in trace.files else 1
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--trace {path} is not a trace with memory events ({exc})")
    return rows, max(1, iterations)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 1 <= args.repeats <= 10000:
        parser.error(f"--repeats must be from 1 to 10000, got {args.repeats}")
    events, iterations = memory_events(parser, args.trace)
    with tempfile.TemporaryDirectory() as scratch:
        binary, rows = Path(scratch) / "memory_map_cost", Path(scratch) / "events.bin"
        subprocess.run([os.environ.get("CXX", "c++"), "-std=c++20", "-O2", "-I", str(ROOT / "driver_hooks"),
                        str(HERE / "probes" / "memory_map_cost.cpp"), "-o", str(binary), "-lpthread"], check=True)
        events.tofile(rows)
        figures = json.loads(subprocess.run([str(binary), str(rows), str(args.repeats)], check=True,
                                            capture_output=True, text=True).stdout)
    per_iteration = figures["events"] / args.repeats / iterations
    record = {"command": "python3 bench/memory_map_cost.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "device": f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)",
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trace": str(args.trace.resolve().relative_to(ROOT) if args.trace.resolve().is_relative_to(ROOT) else args.trace),
              "repeats": args.repeats, "iterations": iterations,
              "events_per_iteration": per_iteration, **{k: v for k, v in figures.items() if k != "events"},
              "asleep_us_per_iteration": figures["asleep_ns_per_event"] * per_iteration / 1e3,
              "awake_us_per_iteration": figures["awake_ns_per_event"] * per_iteration / 1e3,
              "awake_asked_us_per_iteration": figures["awake_asked_ns_per_event"] * per_iteration / 1e3}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    print(f"{per_iteration:.0f} allocations and frees per iteration: {record['asleep_ns_per_event']:.1f} ns each asleep "
          f"({record['asleep_us_per_iteration']:.0f} µs per iteration), {record['awake_ns_per_event']:.1f} ns awake, "
          f"{record['awake_asked_ns_per_event']:.1f} ns awake while another thread asked "
          f"{record['questions_per_s'] / 1e6:.1f} million questions a second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
