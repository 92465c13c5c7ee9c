"""The figures the README quotes: the simulated last-level misses and instructions per repeated GPT-2
launch before and after (cache_misses_*.json), and the policy's time an iteration with 4 MiB written
before each launch (time/*.json), round by round, after over before.

    python3 bench/results/policy_layout/summary.py
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    for side in ("before", "after"):
        per = json.loads((HERE / f"cache_misses_{side}.json").read_text())["per_launch"]
        print(f"{side}: {per['ll_misses']:.1f} last-level misses, {per['instructions']:.0f} instructions a launch")
    for model in ("gpt2", "bert"):
        rounds = sorted({p.stem.rsplit("_r", 1)[1] for p in (HERE / "time").glob(f"{model}_*_r*.json")})
        ms = {side: [json.loads((HERE / "time" / f"{model}_{side}_r{r}.json").read_text())["cases"][0]
                     ["per_iteration_ms"] for r in rounds] for side in ("before", "after")}
        ratios = [a / b for a, b in zip(ms["after"], ms["before"])]
        print(f"{model}: ms an iteration before {' '.join(f'{v:.1f}' for v in ms['before'])},"
              f" after {' '.join(f'{v:.1f}' for v in ms['after'])}; after / before median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
