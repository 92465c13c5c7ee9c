"""host_map_keep_uses 3 against 0 on every replay of replay_all.sh: per trace and capacity, the median
simulated time of an iteration, the bytes brought in and those kernels used over the host mapping a step (the
20-iteration traces from iteration 10, the others from iteration 3), and the ratios of time and bytes in.

    python3 bench/results/keep_migrated/summary.py
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def figures(path: Path) -> tuple[float, float, float]:
    """Median time of the steady iterations (s), bytes in a step and bytes mapped a step (GB)."""
    record = json.loads(path.read_text())
    iterations = record["per_iteration"]
    steady = iterations[10:] if len(iterations) > 12 else iterations[3:]
    return (statistics.median(row["time_s"] for row in steady),
            statistics.median(row["h2d_bytes"] for row in steady) / 1e9,
            record["host_mapped_bytes"] / len(iterations) / 1e9)


def main() -> None:
    for off in sorted((HERE / "replays").glob("*_keep0.json")):
        (t0, in0, map0), (t3, in3, map3) = figures(off), figures(off.with_name(off.name.replace("keep0", "keep3")))
        print(f"{off.stem.replace('_keep0', ''):28s} time {t0:.4f} -> {t3:.4f} s ({t3 / t0:.3f}), "
              f"in {in0:.2f} -> {in3:.2f} GB ({f'{in3 / in0:.3f}' if in0 else '-'}), mapped {map0:.2f} -> {map3:.2f} GB a step")


if __name__ == "__main__":
    main()
