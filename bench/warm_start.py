"""Warm start in the simulator: a second replay of the same trace, warm-started from the first one's
learned state, against the cold first replay, at half the footprint.

For each synthetic workload it replays deepum cold, then again from the cold replay's learned state,
and oracle once, and reports each replay's first iteration over the steady iteration (the median of
the cold replay's iterations from the third on, in simulated seconds) against the target: a
warm-started first iteration within 1.25x of the steady one. Oracle's first iteration over the same
steady figure shows how much of the first iteration no prefetcher can hide (first touches). A foreign
state (another workload's, under the same settings) must be forgotten after its trial.

With --trace, a recorded trace is replayed instead (no foreign state: there is no second workload),
its steady iteration likewise from the third; --config gives the replays' DeepUMConfig.

Writes bench/results/warm_start/warm_start.json (command, device, date, per-iteration figures) and
prints the table.

Run: python bench/warm_start.py [--iterations N] [--trace FILE [--config JSON]] [-o FILE]
"""
from __future__ import annotations

import argparse
import statistics
import warnings
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.offline.trace_io import read_trace
from deepum.units import parse_capacity
from replay_throughput import write_simulator_record  # the script's own folder is first on sys.path

CAPACITY_FRACTION = 0.5
STEADY_FROM = 2  # the third iteration
TARGET_FIRST_VS_STEADY = 1.25
WORKLOADS = {"transformer": ("transformer", {}), "cnn": ("cnn", {}), "bucketed-2": ("bucketed", {"buckets": 2}),
             "unet": ("unet", {}), "moe": ("moe", {})}
FOREIGN = {"transformer": "cnn", "cnn": "transformer", "bucketed-2": "unet", "unet": "moe", "moe": "unet"}
RESULTS = Path(__file__).resolve().parent / "results" / "warm_start" / "warm_start.json"


def times(result) -> list[float]:
    return [row["time_s"] for row in sorted(result.per_iteration, key=lambda row: row["iteration"])]


def trace_of(name: str, iterations: int):
    generator, options = WORKLOADS[name]
    return GENERATORS[generator](**options, iterations=iterations)


def foreign_replay(trace, capacity: int, foreign_trace) -> dict:
    """The trace replayed from another workload's state (under settings both share, so that the state
    reaches its trial): its per-iteration times and trial."""
    shared = DeepUMConfig(exec_ids=min(trace.num_kernels, foreign_trace.num_kernels))
    foreign_state = simulate(foreign_trace, "deepum", parse_capacity(CAPACITY_FRACTION, foreign_trace.footprint_bytes()),
                             config=shared).learned_state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the expected "forgotten" warning
        foreign = simulate(trace, "deepum", capacity, config=shared, warm_state=foreign_state)
    return {"times": times(foreign), "warm_start": foreign.warm_start}


def measure(name: str, trace, options: dict, config: DeepUMConfig, foreign_trace=None, foreign_name=None) -> dict:
    capacity = parse_capacity(CAPACITY_FRACTION, trace.footprint_bytes())
    cold = simulate(trace, "deepum", capacity, config=config)
    warm = simulate(trace, "deepum", capacity, config=config, warm_state=cold.learned_state)
    oracle = simulate(trace, "oracle", capacity, config=config)
    foreign = foreign_replay(trace, capacity, foreign_trace) if foreign_trace is not None else None
    steady = statistics.median(times(cold)[STEADY_FROM:])
    return {"workload": name, "options": options,
            "footprint_bytes": trace.footprint_bytes(), "capacity_bytes": capacity, "config": config.to_dict(),
            "steady_s": steady, "state_bytes": len(cold.learned_state),
            "cold_first_vs_steady": times(cold)[0] / steady, "warm_first_vs_steady": times(warm)[0] / steady,
            "oracle_first_vs_steady": times(oracle)[0] / steady, "warm_first_vs_oracle_first": times(warm)[0] / times(oracle)[0],
            "warm_whole_vs_cold_whole": warm.time_s / cold.time_s,
            "target_met": times(warm)[0] / steady <= TARGET_FIRST_VS_STEADY,
            "warm_start": warm.warm_start,
            "foreign": foreign and {"workload": foreign_name, "warm_start": foreign["warm_start"]},
            "per_iteration_s": {"cold": times(cold), "warm": times(warm), "oracle": times(oracle),
                                **({"foreign": foreign["times"]} if foreign else {})}}


def print_table(rows: list[dict]) -> None:
    header = (f"{'workload':12s} {'cold 1st/steady':>15s} {'warm 1st/steady':>15s} {'oracle 1st/steady':>17s} "
              f"{'warm 1st/oracle 1st':>19s} "
              f"{'warm/cold run':>13s} {'trial':>6s} {'foreign':>10s}  target")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['workload']:12s} {r['cold_first_vs_steady']:15.2f} {r['warm_first_vs_steady']:15.2f} "
              f"{r['oracle_first_vs_steady']:17.2f} {r['warm_first_vs_oracle_first']:19.2f} "
              f"{r['warm_whole_vs_cold_whole']:13.3f} "
              f"{r['warm_start']['state']:>6s} {(r['foreign'] or {}).get('warm_start', {}).get('state', '-'):>10s}  "
              + ("met" if r["target_met"] else "missed"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12, help="training iterations per trace (default 12)")
    parser.add_argument("--trace", type=Path, default=None, help="replay this recorded trace instead")
    parser.add_argument("--config", type=Path, default=None, help="DeepUMConfig JSON for the replays (default: defaults)")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS, help=f"JSON file to write (default {RESULTS})")
    args = parser.parse_args()
    config = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    if args.trace is not None:
        rows = [measure(f"trace:{args.trace.name}", read_trace(args.trace), {"trace": str(args.trace)}, config)]
    else:
        rows = [measure(name, trace_of(name, args.iterations), {**WORKLOADS[name][1], "iterations": args.iterations},
                        config, trace_of(FOREIGN[name], args.iterations), FOREIGN[name]) for name in WORKLOADS]
    print_table(rows)
    write_simulator_record(args.output, {"capacity_fraction": CAPACITY_FRACTION, "steady_from_iteration": STEADY_FROM,
                                         "target_first_vs_steady": TARGET_FIRST_VS_STEADY, "results": rows})


if __name__ == "__main__":
    main()
