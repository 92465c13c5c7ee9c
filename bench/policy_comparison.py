"""Policy comparison: um, deepum and oracle plus deepum ablations, at several capacities, per iteration.

Traces: the default transformer and cnn generators (--iterations changes their iteration count,
--model keeps one of them). Capacities: 1.0, 0.75 and 0.5 of each trace's footprint. Variants: the
modes of bench/modes.py that have a simulator policy: um, deepum, oracle, and deepum without
prefetch, without pre-eviction, without invalidation, and learning its block tables from faults
instead of accesses (deepum-faults, learn_from="faults").

For every trace, capacity and variant it records the totals, the faults and simulated time of every
iteration, and the warm-up view: the variant's faults as a fraction of um's and its time relative to
oracle's, over iterations 1.. (after the first) and 2.. (from the second on). Writes
bench/results/policy_comparison.json (with --iterations N: policy_comparison_iterations_N.json) and
prints the tables.

Run: python bench/policy_comparison.py [--iterations N] [--model {transformer,cnn}] [-o FILE]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.offline.report import WARMUP_STARTS, from_iteration, to_json, warmup_ratios
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.units import format_bytes, parse_capacity
from modes import BY_NAME, SIMULATED_MODES  # the script's own folder is first on sys.path
from replay_throughput import machine

CAPACITY_FRACTIONS = (1.0, 0.75, 0.5)
TRACES = ("transformer", "cnn")  # the irregular workloads have bench/irregular.py
# Variant name -> (policy, DeepUMConfig fields changed from the defaults).
VARIANTS = {name: (BY_NAME[name].policy, BY_NAME[name].config) for name in SIMULATED_MODES}
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _ratio_text(value, percent: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if percent else f"{value:.3f}"


def compare(model: str, trace, fraction: float) -> tuple[list[dict], list[dict]]:
    """Replays every variant at `fraction` of the footprint: (one row per variant, warm-up rows)."""
    capacity = parse_capacity(fraction, trace.footprint_bytes())
    results = {}
    for name, (policy, changes) in VARIANTS.items():
        config = dataclasses.replace(DeepUMConfig(), **changes)
        results[name] = simulate(trace, policy, capacity, config=config).to_dict()
    rows, warmup = [], []
    for name, r in results.items():
        per_iteration = sorted(r["per_iteration"], key=lambda x: x["iteration"])
        rows.append({
            "trace": model, "capacity_fraction": fraction, "variant": name, "policy": VARIANTS[name][0],
            "config_changes": VARIANTS[name][1],
            "time_s": r["time_s"], "faults": r["faults"],
            "time_vs_um": r["time_s"] / results["um"]["time_s"],
            "time_vs_deepum": r["time_s"] / results["deepum"]["time_s"],
            **{f"faults_from_iteration_{s}": from_iteration(r, "faults", s) for s in WARMUP_STARTS},
            **{f"time_from_iteration_{s}_s": from_iteration(r, "time_s", s) for s in WARMUP_STARTS},
            "faults_per_iteration": [x["faults"] for x in per_iteration],
            "time_per_iteration_s": [x["time_s"] for x in per_iteration],
            "result": r,
        })
        if name.startswith("deepum"):  # the variant in deepum's place against um and oracle
            for w in warmup_ratios({"um": results["um"], "deepum": r, "oracle": results["oracle"]}):
                warmup.append({"trace": model, "capacity_fraction": fraction, "variant": name,
                               "from_iteration": w["from_iteration"], "last_iteration": w["last_iteration"],
                               "faults_vs_um": w["deepum_faults_vs_um"],
                               "time_vs_oracle": w["deepum_time_vs_oracle"]})
    return rows, warmup


def print_totals(rows: list[dict]) -> None:
    header = (f"{'trace':12s} {'capacity':>8s} {'variant':21s} {'time (s)':>9s} {'faults':>10s} "
              f"{'faults it1..':>12s} {'faults it2..':>12s} {'H2D':>10s} {'D2H':>10s} {'vs um':>6s} {'vs deepum':>9s}")
    print(header)
    print("-" * len(header))
    for row in rows:
        r = row["result"]
        after = [row[f"faults_from_iteration_{s}"] for s in WARMUP_STARTS]
        print(f"{row['trace']:12s} {row['capacity_fraction']:8.2f} {row['variant']:21s} {r['time_s']:9.4f} "
              f"{r['faults']:>10,} " + " ".join('-'.rjust(12) if a is None else f"{a:>12,}" for a in after)
              + f" {format_bytes(r['h2d_bytes']):>10s} {format_bytes(r['d2h_bytes']):>10s} "
              f"{row['time_vs_um']:6.3f} {row['time_vs_deepum']:9.3f}")


def print_per_iteration(rows: list[dict]) -> None:
    print("\nfaults | simulated time (s) per iteration")
    for row in rows:
        cells = "  ".join(f"{f:>9,} | {t:6.4f}" for f, t in zip(row["faults_per_iteration"],
                                                               row["time_per_iteration_s"]))
        print(f"{row['trace']:12s} {row['capacity_fraction']:4.2f} {row['variant']:21s} {cells}")


def print_warmup(warmup: list[dict]) -> None:
    print("\nwarm-up: faults as % of um's and time / oracle's, over iterations from..last")
    header = f"{'trace':12s} {'capacity':>8s} {'variant':21s} {'from':>4s} {'last':>4s} {'faults/um':>9s} {'time/oracle':>11s}"
    print(header)
    print("-" * len(header))
    for w in warmup:
        print(f"{w['trace']:12s} {w['capacity_fraction']:8.2f} {w['variant']:21s} {w['from_iteration']:>4d} "
              f"{w['last_iteration']:>4d} {_ratio_text(w['faults_vs_um'], percent=True):>9s} "
              f"{_ratio_text(w['time_vs_oracle']):>11s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, help="training iterations per trace (default: the generator's, 4)")
    parser.add_argument("--model", action="append", choices=TRACES,
                        help="trace to compare (repeatable; default: all)")
    parser.add_argument("-o", "--output", type=Path, help="JSON file to write (default: in bench/results/)")
    args = parser.parse_args()
    output = args.output or RESULTS_DIR / ("policy_comparison.json" if args.iterations is None
                                           else f"policy_comparison_iterations_{args.iterations}.json")

    rows, warmup, traces = [], [], {}
    for model in args.model or TRACES:
        trace = GENERATORS[model](**({} if args.iterations is None else {"iterations": args.iterations}))
        traces[model] = {"kernels": trace.num_kernels, "accesses": trace.num_accesses,
                         "iterations": trace.iterations, "footprint_bytes": trace.footprint_bytes()}
        for fraction in CAPACITY_FRACTIONS:
            more_rows, more_warmup = compare(model, trace, fraction)
            rows += more_rows
            warmup += more_warmup
    print_totals(rows)
    print_per_iteration(rows)
    print_warmup(warmup)

    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(to_json({"machine": machine(), "command": " ".join(["python", *sys.argv]),
                               "capacity_fractions": list(CAPACITY_FRACTIONS), "traces": traces,
                               "variants": {k: {"policy": p, "config_changes": c} for k, (p, c) in VARIANTS.items()},
                               "warmup": warmup, "results": rows}, indent=2) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
