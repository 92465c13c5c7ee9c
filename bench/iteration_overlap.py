"""How much of each iteration's launches a learned state could recognise: per iteration of a trace, its
distinct execution IDs and how many of them each other iteration also has. A warm start learns from
the iterations a run remembers at its end; the first iterations of a run allocate state and settle
the caching allocator's layout, and an execution ID mixes the portable addresses of a kernel's
arguments, so where those iterations share few IDs with the steady ones, a state built from the
steady ones cannot foresee them.

For each synthetic workload of bench/warm_start.py (or --trace files instead), writes one JSON record:
per trace, launches and distinct exec IDs per iteration and the matrix of shared IDs (row i, column
j: IDs of iteration i that iteration j also has). Prints, per iteration, the share of its IDs the
last iteration has.

Run: python bench/iteration_overlap.py [--trace FILE ...] [--iterations N] [-o FILE]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from deepum.offline.synth import GENERATORS
from deepum.offline.trace_io import read_trace
from replay_throughput import write_simulator_record  # the script's own folder is first on sys.path
from warm_start import WORKLOADS

RESULTS = Path(__file__).resolve().parent / "results" / "warm_start" / "iteration_overlap.json"


def overlap(exec_ids: np.ndarray, iteration: np.ndarray, iterations: int) -> dict:
    """Launches and distinct exec IDs per iteration, and shared[i][j]: the distinct IDs of iteration i
    that iteration j also launches."""
    ids = [set(exec_ids[iteration == i].tolist()) for i in range(iterations)]
    return {"launches": [int((iteration == i).sum()) for i in range(iterations)],
            "exec_ids": [len(s) for s in ids],
            "shared": [[len(a & b) for b in ids] for a in ids]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="append", type=Path, default=[], help="a recorded trace (repeatable)")
    parser.add_argument("--iterations", type=int, default=6, help="iterations of each synthetic trace (default 6)")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.iterations < 2:
        parser.error(f"--iterations must be at least 2, got {args.iterations}")
    missing = [str(p) for p in args.trace if not p.is_file()]
    if missing:
        parser.error(f"no such trace: {', '.join(missing)}")
    traces = ({str(p): read_trace(p) for p in args.trace} if args.trace else
              {name: GENERATORS[generator](**options, iterations=args.iterations)
               for name, (generator, options) in WORKLOADS.items()})
    results = {}
    for name, trace in traces.items():
        results[name] = overlap(np.asarray(trace.kernel_exec_id), np.asarray(trace.kernel_iteration), trace.iterations)
        shared, sizes = results[name]["shared"], results[name]["exec_ids"]
        last = [f"{row[-1] / size:.0%}" if size else "–" for row, size in zip(shared, sizes)]
        print(f"{name}: share of each iteration's exec IDs the last iteration has: {' '.join(last)}")
    write_simulator_record(args.output, {"traces": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
