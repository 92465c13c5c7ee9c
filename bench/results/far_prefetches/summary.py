"""Each far_prefetches setting against the default ("evict") on every replay of replay_all.sh: per
trace and capacity, the mean simulated time and bytes brought in an iteration (the 20-iteration traces
from iteration 10, the others from iteration 4), over even and odd iterations apart, and the ratios.

    python3 bench/results/far_prefetches/summary.py
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def figures(path: Path) -> dict:
    iterations = json.loads(path.read_text())["per_iteration"]
    steady = iterations[10:] if len(iterations) > 12 else iterations[4:]
    mean = lambda key, rows: statistics.mean(row[key] for row in rows)  # noqa: E731
    even = [row for row in steady if row["iteration"] % 2 == 0]
    odd = [row for row in steady if row["iteration"] % 2 == 1]
    return {"time_s": mean("time_s", steady), "h2d_gb": mean("h2d_bytes", steady) / 1e9,
            "even_odd_time_s": (mean("time_s", even), mean("time_s", odd)),
            "even_odd_h2d_gb": (mean("h2d_bytes", even) / 1e9, mean("h2d_bytes", odd) / 1e9)}


SETTINGS = ("dead_only", "skip")
"""The far_prefetches settings replay_all.sh replays beside the default."""


def main() -> None:
    for default, label in ((d, label) for d in sorted((HERE / "replays").glob("*_evict.json")) for label in SETTINGS):
        setting = default.with_name(default.name.replace("_evict", f"_{label}"))
        if not setting.exists():
            continue
        a, b = figures(default), figures(setting)
        print(f"{default.stem.replace('_evict', ''):24s} {label:9s} time {a['time_s']:.4f} -> {b['time_s']:.4f} s "
              f"({b['time_s'] / a['time_s']:.3f}), in {a['h2d_gb']:.3f} -> {b['h2d_gb']:.3f} GB "
              f"({b['h2d_gb'] / a['h2d_gb'] if a['h2d_gb'] else 1:.3f}); even/odd in "
              f"{a['even_odd_h2d_gb'][0]:.3f}/{a['even_odd_h2d_gb'][1]:.3f} -> "
              f"{b['even_odd_h2d_gb'][0]:.3f}/{b['even_odd_h2d_gb'][1]:.3f} GB")


if __name__ == "__main__":
    main()
