"""Irregular training in the simulator: deepum against um and oracle at half the footprint, on the
synthetic workloads whose repeating iteration is not the last one (bucketed sequence lengths, alternating
and cycling through three), a U-Net (long skip connections) and a mixture of experts (routing that
changes every step), and on the regular transformer for reference.

For each workload it replays um, oracle, deepum (default config) and deepum foreseeing from the last
iteration only (foresight_iterations=1, the rule before iterations were matched by exec ID), with each
--config one more deepum variant, and reports
deepum's faults as a share of um's and its simulated time over oracle's, from the third iteration on
(iterations 2..) and over the whole run, against the targets: from the third iteration on, faults at
most 2% of um's and time at most 1.25x oracle's; the whole run at most 1.6x oracle's.

Writes bench/results/irregular/irregular.json (command, device, date, per-iteration figures) and prints
the table.

Run: python bench/irregular.py [--iterations N] [--config C.json ...] [-o FILE]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.offline.report import from_iteration
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.units import parse_capacity
from replay_throughput import write_simulator_record  # the script's own folder is first on sys.path

CAPACITY_FRACTION = 0.5
STEADY_FROM = 2  # the third iteration
TARGETS = {"steady_faults_vs_um": 0.02, "steady_time_vs_oracle": 1.25, "whole_time_vs_oracle": 1.6}
# Workload name -> (generator, its options besides the iteration count).
WORKLOADS = {
    "bucketed-2": ("bucketed", {"buckets": 2}),
    "bucketed-3": ("bucketed", {"buckets": 3}),
    "unet": ("unet", {}),
    "moe": ("moe", {}),
    "transformer": ("transformer", {}),
}
# Variant name -> (policy, DeepUMConfig).
VARIANTS = {
    "um": ("um", DeepUMConfig()),
    "oracle": ("oracle", DeepUMConfig()),
    "deepum": ("deepum", DeepUMConfig()),
    "deepum-last-iteration": ("deepum", DeepUMConfig(foresight_iterations=1)),
}
RESULTS = Path(__file__).resolve().parent / "results" / "irregular" / "irregular.json"


def ratio(result: dict, other: dict, key: str, start: int) -> float:
    return from_iteration(result, key, start) / from_iteration(other, key, start)


def per_iteration(result: dict) -> dict:
    """Faults and simulated time of each iteration, in order."""
    ordered = sorted(result["per_iteration"], key=lambda x: x["iteration"])
    return {"faults": [x["faults"] for x in ordered], "time_s": [x["time_s"] for x in ordered]}


def measure(name: str, iterations: int, variants: dict = VARIANTS) -> list[dict]:
    """Replays every variant on one workload: one row per deepum variant."""
    generator, options = WORKLOADS[name]
    trace = GENERATORS[generator](**options, iterations=iterations)
    capacity = parse_capacity(CAPACITY_FRACTION, trace.footprint_bytes())
    results = {variant: simulate(trace, policy, capacity, config=config).to_dict()
               for variant, (policy, config) in variants.items()}
    um, oracle = results["um"], results["oracle"]
    rows = []
    for variant in [v for v, (policy, _) in variants.items() if policy == "deepum"]:
        r = results[variant]
        figures = {"steady_faults_vs_um": ratio(r, um, "faults", STEADY_FROM),
                   "steady_time_vs_oracle": ratio(r, oracle, "time_s", STEADY_FROM),
                   "whole_faults_vs_um": ratio(r, um, "faults", 0),
                   "whole_time_vs_oracle": ratio(r, oracle, "time_s", 0)}
        rows.append({"workload": name, "generator": generator, "options": {**options, "iterations": iterations},
                     "footprint_bytes": trace.footprint_bytes(), "capacity_bytes": capacity, "variant": variant,
                     "config": variants[variant][1].to_dict(), **figures,
                     "targets_met": {key: figures[key] <= bound for key, bound in TARGETS.items()},
                     "per_iteration": {v: per_iteration(results[v]) for v in ("um", "oracle", variant)}})
    return rows


def print_table(rows: list[dict]) -> None:
    header = (f"{'workload':12s} {'variant':32s} {'faults/um it2..':>15s} {'time/oracle it2..':>17s} "
              f"{'faults/um all':>13s} {'time/oracle all':>15s}  targets")
    print(header)
    print("-" * len(header))
    for row in rows:
        met = row["targets_met"]
        print(f"{row['workload']:12s} {row['variant']:32s} {100 * row['steady_faults_vs_um']:14.2f}% "
              f"{row['steady_time_vs_oracle']:17.3f} {100 * row['whole_faults_vs_um']:12.2f}% "
              f"{row['whole_time_vs_oracle']:15.3f}  "
              + ("all met" if all(met.values()) else "missed: " + ", ".join(k for k, ok in met.items() if not ok)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12, help="training iterations per trace (default 12)")
    parser.add_argument("--config", type=Path, action="append", default=[],
                        help="a DeepUMConfig JSON replayed as one more deepum variant, named after its file "
                             "(repeatable)")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS, help=f"JSON file to write (default {RESULTS})")
    args = parser.parse_args(argv)
    variants = dict(VARIANTS)
    for path in args.config:
        try:
            variants[f"deepum-{path.stem}"] = ("deepum", DeepUMConfig.load(path))
        except (OSError, ValueError, TypeError) as exc:
            parser.error(f"--config {path}: {exc}")
    rows = [row for name in WORKLOADS for row in measure(name, args.iterations, variants)]
    print_table(rows)
    write_simulator_record(args.output, {"capacity_fraction": CAPACITY_FRACTION, "steady_from_iteration": STEADY_FROM,
                                         "targets": TARGETS, "results": rows})


if __name__ == "__main__":
    main()
