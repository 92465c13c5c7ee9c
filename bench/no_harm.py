"""Do no harm while learning, in the simulator: deepum's simulated time over um's in every iteration of
every synthetic workload (defaults, 12 iterations) at 0.75 and 0.5 of the footprint, with the window
trusted only once the predictor is confident (confident_hits=16, the default) and trusted at once
(confident_hits=0). The target: at most 1.0 in every iteration.

Writes bench/results/no_harm/no_harm.json (command, device, date, per-iteration ratios and their
maximum per workload, capacity and variant) and prints the worst ratio of each.

Run: python bench/no_harm.py [--iterations N] [-o FILE]
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.units import parse_capacity

CAPACITY_FRACTIONS = (0.75, 0.5)
TARGET = 1.0
VARIANTS = {"confident": DeepUMConfig(confident_hits=16), "trusted-at-once": DeepUMConfig(confident_hits=0)}
RESULTS = Path(__file__).resolve().parent / "results" / "no_harm" / "no_harm.json"


def iteration_times(trace, policy: str, capacity: int, config: DeepUMConfig) -> list[float]:
    result = simulate(trace, policy, capacity, config=config).to_dict()
    return [x["time_s"] for x in sorted(result["per_iteration"], key=lambda x: x["iteration"])]


def measure(iterations: int) -> list[dict]:
    rows = []
    for workload, generate in GENERATORS.items():
        trace = generate(iterations=iterations)
        for fraction in CAPACITY_FRACTIONS:
            capacity = parse_capacity(fraction, trace.footprint_bytes())
            um = iteration_times(trace, "um", capacity, DeepUMConfig())
            for variant, config in VARIANTS.items():
                ratios = [d / u for d, u in zip(iteration_times(trace, "deepum", capacity, config), um)]
                rows.append({"workload": workload, "capacity_fraction": fraction, "capacity_bytes": capacity,
                             "variant": variant, "confident_hits": config.confident_hits,
                             "deepum_over_um": ratios, "max": max(ratios), "worst_iteration": ratios.index(max(ratios)),
                             "target_met": max(ratios) <= TARGET})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = measure(args.iterations)
    print(f"{'workload':12} {'capacity':>8} {'variant':16} {'worst deepum/um':>15} {'iteration':>9}  target")
    for r in rows:
        print(f"{r['workload']:12} {r['capacity_fraction']:8} {r['variant']:16} {r['max']:15.3f} "
              f"{r['worst_iteration']:9}  {'met' if r['target_met'] else 'missed'}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"command": "python bench/no_harm.py " + " ".join(sys.argv[1:]),
                                       "device": "cpu (simulator)",
                                       "date": datetime.date.today().isoformat(),
                                       "iterations": args.iterations, "target": TARGET, "rows": rows},
                                      indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
