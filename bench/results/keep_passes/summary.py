"""host_map_keep_uses 3 counted in passes (this folder's replays) beside bench/results/keep_migrated's
replays of 0 and of 3 counted in launches: per trace and capacity, the median simulated time of an
iteration, the bytes brought in and those kernels used over the host mapping a step (as that folder's
summary.py takes them), and the ratios of the times to 0's.

    python3 bench/results/keep_passes/summary.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "keep_migrated"))

from summary import figures  # noqa: E402


def main() -> None:
    launches = HERE.parent / "keep_migrated" / "replays"
    print(f"{'trace and capacity':28s} {'0':>22s} {'3 in launches':>30s} {'3 in passes':>30s}")
    for passes in sorted((HERE / "replays").glob("*_passes.json")):
        stem = passes.stem.removesuffix("_passes")
        rows = [figures(path) for path in (launches / f"{stem}_keep0.json", launches / f"{stem}_keep3.json", passes)]
        base = rows[0][0]
        print(f"{stem:28s} " + "  ".join(f"{t:.4f} s ({t / base:.3f}) in {h2d:.2f} map {mapped:.2f}"
                                         for t, h2d, mapped in rows))


if __name__ == "__main__":
    main()
