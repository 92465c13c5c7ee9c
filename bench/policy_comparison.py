"""Policy comparison: um, deepum and oracle plus deepum ablations, at several capacities.

Traces: the default transformer and cnn generators. Capacities: 1.0, 0.75 and 0.5 of each trace's
footprint. Variants: um, deepum, oracle, and deepum without prefetch, without pre-eviction, and
without invalidation. Writes bench/results/policy_comparison.json and prints a table with each
variant's simulated time relative to um and to deepum.

Run: python bench/policy_comparison.py
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.report import after_first, to_json
from deepum.simulator import simulate
from deepum.synth import GENERATORS
from deepum.units import format_bytes, parse_capacity
from replay_throughput import machine  # the script's own folder is first on sys.path

CAPACITY_FRACTIONS = (1.0, 0.75, 0.5)
# Variant name -> (policy, config switches turned off).
VARIANTS = {
    "um": ("um", ()),
    "deepum": ("deepum", ()),
    "oracle": ("oracle", ()),
    "deepum-no-prefetch": ("deepum", ("prefetch",)),
    "deepum-no-pre-evict": ("deepum", ("pre_evict",)),
    "deepum-no-invalidate": ("deepum", ("invalidate",)),
}
RESULTS = Path(__file__).resolve().parent / "results" / "policy_comparison.json"


def main() -> None:
    rows = []
    header = (f"{'trace':12s} {'capacity':>9s} {'variant':22s} {'time (s)':>10s} {'faults':>10s} "
              f"{'faults>it1':>10s} {'H2D':>11s} {'D2H':>11s} {'vs um':>7s} {'vs deepum':>9s}")
    print(header)
    print("-" * len(header))
    for model, generate in GENERATORS.items():
        trace = generate()
        for fraction in CAPACITY_FRACTIONS:
            capacity = parse_capacity(fraction, trace.footprint_bytes())
            results = {}
            for name, (policy, off) in VARIANTS.items():
                config = dataclasses.replace(DeepUMConfig(), **{k: False for k in off})
                results[name] = simulate(trace, policy, capacity, config=config).to_dict()
            for name, r in results.items():
                row = {"trace": model, "capacity_fraction": fraction, "variant": name,
                       "time_vs_um": r["time_s"] / results["um"]["time_s"],
                       "time_vs_deepum": r["time_s"] / results["deepum"]["time_s"],
                       "faults_after_first": after_first(r, "faults"), "result": r}
                rows.append(row)
                after = row["faults_after_first"]
                print(f"{model:12s} {fraction:9.2f} {name:22s} {r['time_s']:10.4f} {r['faults']:>10,} "
                      f"{'-' if after is None else f'{after:,}':>10s} {format_bytes(r['h2d_bytes']):>11s} "
                      f"{format_bytes(r['d2h_bytes']):>11s} {row['time_vs_um']:7.3f} {row['time_vs_deepum']:9.3f}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(to_json({"machine": machine(), "capacity_fractions": list(CAPACITY_FRACTIONS),
                                "results": rows}, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
