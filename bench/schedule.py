"""The schedule in the simulator: deepum with and without it, against um and oracle, at half the footprint,
on the synthetic transformer and cnn, the irregular workloads (bucketed, U-Net, MoE) and the recorded
GPU trace committed under bench/results/gpu_check/.

For each workload it replays um, oracle, deepum without the schedule (schedule=false, the correlation
tables alone) and deepum with it (the default), and reports, from the third iteration on (iterations 2..)
and over the whole run: the bytes copied host->device against the minimum (the blocks each iteration
touches less the capacity, summed over the iterations), the simulated time over oracle's and the faults
as a share of um's.

Writes bench/results/schedule/schedule.json (command, device, date, per-iteration figures) and prints
the table.

Run: python bench/schedule.py [--iterations N] [-o FILE]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from deepum.config import DeepUMConfig
from deepum.offline.report import from_iteration
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.offline.trace_format import BLOCK_BYTES, Trace
from deepum.offline.trace_io import read_trace
from deepum.units import parse_capacity
from replay_throughput import write_simulator_record  # the script's own folder is first on sys.path

CAPACITY_FRACTION = 0.5
STEADY_FROM = 2  # the third iteration
HERE = Path(__file__).resolve().parent
GPU_TRACE = HERE / "results" / "gpu_check" / "trace.npz"
# Workload name -> (generator, its options besides the iteration count); the GPU trace is added if present.
SYNTHETIC = {
    "transformer": ("transformer", {}),
    "cnn": ("cnn", {}),
    "bucketed-2": ("bucketed", {"buckets": 2}),
    "bucketed-3": ("bucketed", {"buckets": 3}),
    "unet": ("unet", {}),
    "moe": ("moe", {}),
}
# Variant name -> (policy, DeepUMConfig).
VARIANTS = {
    "um": ("um", DeepUMConfig()),
    "oracle": ("oracle", DeepUMConfig()),
    "deepum-without-schedule": ("deepum", DeepUMConfig(schedule=False)),
    "deepum-with-schedule": ("deepum", DeepUMConfig(schedule=True)),
}
RESULTS = HERE / "results" / "schedule" / "schedule.json"


def minimum_h2d(trace: Trace, capacity: int) -> list[int]:
    """Per iteration, the bytes that must come in: the blocks it touches less those the GPU holds."""
    capacity_blocks = capacity // BLOCK_BYTES
    first = [*trace.iteration_first_kernel.tolist(), trace.num_kernels]
    out = []
    for lo, hi in zip(first, first[1:]):
        rows = trace.access_block[trace.access_offsets[lo]:trace.access_offsets[hi]]
        out.append(max(0, np.unique(rows).size - capacity_blocks) * BLOCK_BYTES)
    return out


def workloads(iterations: int) -> dict[str, tuple[Trace, dict]]:
    out = {name: (GENERATORS[generator](**options, iterations=iterations),
                  {"generator": generator, **options, "iterations": iterations})
           for name, (generator, options) in SYNTHETIC.items()}
    if GPU_TRACE.exists():
        out["gpu-trace"] = (read_trace(GPU_TRACE), {"trace": str(GPU_TRACE.relative_to(HERE.parent))})
    return out


def measure(name: str, trace: Trace, source: dict) -> dict:
    capacity = parse_capacity(CAPACITY_FRACTION, trace.footprint_bytes())
    results = {variant: simulate(trace, policy, capacity, config=config).to_dict()
               for variant, (policy, config) in VARIANTS.items()}
    minimum = minimum_h2d(trace, capacity)
    um, oracle = results["um"], results["oracle"]
    figures = {}
    for variant, r in results.items():
        h2d = [row["h2d_bytes"] for row in sorted(r["per_iteration"], key=lambda x: x["iteration"])]
        figures[variant] = {
            "h2d_vs_minimum_steady": sum(h2d[STEADY_FROM:]) / max(1, sum(minimum[STEADY_FROM:])),
            "h2d_vs_minimum_all": sum(h2d) / max(1, sum(minimum)),
            "time_vs_oracle_steady": from_iteration(r, "time_s", STEADY_FROM) / from_iteration(oracle, "time_s", STEADY_FROM),
            "time_vs_oracle_all": r["time_s"] / oracle["time_s"],
            "faults_vs_um_all": r["faults"] / um["faults"] if um["faults"] else 0.0,
            "time_s": r["time_s"], "h2d_bytes": r["h2d_bytes"], "d2h_bytes": r["d2h_bytes"],
            "faults": r["faults"], "lost_reads": r["lost_reads"],
            "per_iteration": {"h2d_bytes": h2d,
                              "time_s": [row["time_s"] for row in sorted(r["per_iteration"], key=lambda x: x["iteration"])]},
        }
    return {"workload": name, "source": source, "footprint_bytes": trace.footprint_bytes(), "capacity_bytes": capacity,
            "iterations": trace.iterations, "minimum_h2d_bytes_per_iteration": minimum,
            "configs": {v: VARIANTS[v][1].to_dict() for v in VARIANTS if VARIANTS[v][0] == "deepum"},
            "variants": figures}


def print_table(rows: list[dict]) -> None:
    header = (f"{'workload':12s} {'variant':24s} {'H2D/min it2..':>13s} {'H2D/min all':>11s} "
              f"{'time/oracle it2..':>17s} {'time/oracle all':>15s} {'faults/um':>9s}")
    print(header)
    print("-" * len(header))
    for row in rows:
        for variant, f in row["variants"].items():
            print(f"{row['workload']:12s} {variant:24s} {f['h2d_vs_minimum_steady']:13.3f} {f['h2d_vs_minimum_all']:11.3f} "
                  f"{f['time_vs_oracle_steady']:17.3f} {f['time_vs_oracle_all']:15.3f} {100 * f['faults_vs_um_all']:8.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12, help="iterations of each synthetic trace (default 12)")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS, help=f"JSON file to write (default {RESULTS})")
    args = parser.parse_args()
    rows = [measure(name, trace, source) for name, (trace, source) in workloads(args.iterations).items()]
    print_table(rows)
    write_simulator_record(args.output, {"capacity_fraction": CAPACITY_FRACTION, "steady_from_iteration": STEADY_FROM,
                                         "results": rows})


if __name__ == "__main__":
    main()
