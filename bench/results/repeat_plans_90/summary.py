"""Per recorded trace, deepum's replay at repeat_plans_percent 95 (the default) and 90: the launches that
took a remembered plan (all iterations), and the medians over iteration 4 on of the simulated time and
the bytes brought in an iteration, 90 against 95.

    python3 bench/results/repeat_plans_90/summary.py
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = ("bert_fp32_10", "gpt2_fp32_8", "bert_bf16_20", "gpt2_bf16_20")
FROM = 4
"""The first iteration counted: those before it warm the tables up."""


def figures(name: str, percent: int) -> dict:
    record = json.loads((HERE / "replays" / f"{name}_{percent}.json").read_text())
    later = record["per_iteration"][FROM:]
    return {"repeated": record["repeated_plan_launches"], "launches": record["kernels"],
            "time": statistics.median(i["time_s"] for i in later),
            "h2d": statistics.median(i["h2d_bytes"] for i in later)}


def main() -> None:
    print(f"{'trace':<14} {'launches':>8} {'repeated 95':>11} {'repeated 90':>11} {'time 95 s':>9} {'90/95':>6}"
          f" {'H2D 95 GB':>9} {'90/95':>6}")
    for name in TRACES:
        a, b = figures(name, 95), figures(name, 90)
        print(f"{name:<14} {a['launches']:>8} {a['repeated']:>11} {b['repeated']:>11}"
              f" {a['time']:>9.4f} {b['time'] / a['time']:>6.3f} {a['h2d'] / 1e9:>9.3f} {b['h2d'] / a['h2d']:>6.3f}")


if __name__ == "__main__":
    main()
