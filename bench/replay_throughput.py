"""Replay throughput of the simulator: block accesses replayed per second of wall time, per policy.

Single process, one core; the wall time of each replay is taken with time.perf_counter and the best
of REPEATS runs is kept. Traces: the default transformer and cnn generators, replayed at half their
footprint. Writes the JSON result to -o (default replay_throughput.json in the current folder; the
committed result, bench/results/replay_throughput.json, changes only when named) and prints whether
the deepum policy meets the target of TARGET_ACCESSES_PER_S.

Run: python bench/replay_throughput.py [--repeats N] [-o FILE]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from deepum.offline.simulator import POLICIES, simulate
from deepum.offline.synth import GENERATORS
from deepum.units import parse_capacity

TARGET_ACCESSES_PER_S = 2_000_000
CAPACITY_FRACTION = 0.5
DEFAULT_OUTPUT = "replay_throughput.json"


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo, or platform.processor() where that file does not exist."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def source_revision() -> str | None:
    """The git commit of the checkout the benchmark ran from, with "+modified" when tracked files differ
    from it; None outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+modified" if dirty else "")


def machine() -> dict:
    """Where and when a benchmark ran: platform, CPU model, logical CPUs, Python, UTC date, source revision."""
    return {"platform": platform.platform(), "cpu": cpu_model(), "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "revision": source_revision()}


def write_simulator_record(output: Path, fields: dict) -> None:
    """Writes a simulator benchmark's JSON record: the command, the device ("cpu (simulator)"), the
    date and machine(), then `fields`; says where it wrote."""
    from deepum.offline.report import to_json

    where = machine()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(to_json({"command": " ".join(["python", *sys.argv]), "device": "cpu (simulator)",
                               "date": where["date"], "machine": where, **fields}, indent=2) + "\n")
    print(f"wrote {output}")


def measure(trace, policy: str, capacity: int, repeats: int) -> dict:
    """Best-of-`repeats` wall time (s) of one replay and the accesses per second it gives."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = simulate(trace, policy, capacity)
        best = min(best, time.perf_counter() - start)
    return {"policy": policy, "accesses": int(result.accesses), "kernels": int(result.kernels),
            "wall_s": best, "accesses_per_s": result.accesses / best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="replays per measurement, best kept (default 5)")
    parser.add_argument("-o", "--output", type=Path, default=Path(DEFAULT_OUTPUT),
                        help=f"JSON result to write (default {DEFAULT_OUTPUT}; the committed one is "
                             "bench/results/replay_throughput.json)")
    args = parser.parse_args()
    if args.output.is_dir():
        parser.error(f"-o {args.output} is a folder; give a file name")

    rows = []
    for model, generate in GENERATORS.items():
        trace = generate()
        capacity = parse_capacity(CAPACITY_FRACTION, trace.footprint_bytes())
        for policy in POLICIES:
            row = {"trace": model, "capacity_bytes": capacity, **measure(trace, policy, capacity, args.repeats)}
            rows.append(row)
            print(f"{model:12s} {policy:7s} {row['accesses']:>10,} accesses  {row['wall_s']:8.4f} s  "
                  f"{row['accesses_per_s'] / 1e6:7.2f} M accesses/s")

    deepum_rates = [r["accesses_per_s"] for r in rows if r["policy"] == "deepum"]
    met = min(deepum_rates) >= TARGET_ACCESSES_PER_S
    print(f"target {TARGET_ACCESSES_PER_S / 1e6:.0f} M accesses/s per core for the deepum policy: "
          f"{'met' if met else 'NOT met'} (slowest deepum replay {min(deepum_rates) / 1e6:.2f} M/s)")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"machine": machine(), "repeats": args.repeats,
                                   "capacity_fraction": CAPACITY_FRACTION,
                                   "target_accesses_per_s": TARGET_ACCESSES_PER_S, "target_met": met,
                                   "results": rows}, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
