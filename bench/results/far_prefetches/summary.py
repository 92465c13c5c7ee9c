"""Each probe against the committed engine on every replay of replay_all.sh: per trace and capacity,
the mean simulated time and bytes brought in an iteration (the 20-iteration traces from iteration 10,
the others from iteration 4), over even and odd iterations apart, and each probe's ratio.

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


PROBES = ("probe", "dead_room")
"""replay_all.sh's labels of the probes: far_prefetches_take_no_place.patch, far_prefetches_take_dead_room.patch."""


def main() -> None:
    for committed, label in ((c, label) for c in sorted((HERE / "replays").glob("*_committed.json")) for label in PROBES):
        probe = committed.with_name(committed.name.replace("_committed", f"_{label}"))
        if not probe.exists():
            continue
        a, b = figures(committed), figures(probe)
        print(f"{committed.stem.replace('_committed', ''):24s} {label:9s} time {a['time_s']:.4f} -> {b['time_s']:.4f} s "
              f"({b['time_s'] / a['time_s']:.3f}), in {a['h2d_gb']:.3f} -> {b['h2d_gb']:.3f} GB "
              f"({b['h2d_gb'] / a['h2d_gb'] if a['h2d_gb'] else 1:.3f}); even/odd in "
              f"{a['even_odd_h2d_gb'][0]:.3f}/{a['even_odd_h2d_gb'][1]:.3f} -> "
              f"{b['even_odd_h2d_gb'][0]:.3f}/{b['even_odd_h2d_gb'][1]:.3f} GB")


if __name__ == "__main__":
    main()
