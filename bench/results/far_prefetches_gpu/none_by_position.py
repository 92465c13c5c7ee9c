"""How much `none`'s steps drift between the trees of a lockstep A/B call: for every committed
bench/lockstep_ab.py call (a lockstep_ab.json under bench/results), each model and each tree after the
first, the median over the rounds of its `none` runs' median step over the first tree's `none` of the
same round, and pooled over the calls by the tree's place in the round (1: second, 2: third).

    python3 bench/results/far_prefetches_gpu/none_by_position.py
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(RESULTS.parents[0]))

from lockstep_ab import MODELS  # noqa: E402


def none_medians(folder: Path, model: str) -> list[float] | None:
    """The `none` runs' median steps of one model and tree, round by round, where recorded."""
    workload = MODELS[model].workload if model in MODELS else model
    try:
        return json.loads((folder / "no_pressure.json").read_text())["workloads"][workload]["none_run_medians"]
    except (OSError, KeyError, ValueError):
        return None


def main() -> None:
    pooled: dict[int, list[float]] = {}
    for call in sorted(RESULTS.glob("**/lockstep_ab.json")):
        record = json.loads(call.read_text())
        trees = ["this_tree", *record["trees"]]
        for model in sorted({row["model"] for row in record["rows"]}):
            first = none_medians(call.parent / f"{model}_{trees[0]}", model)
            for place, tree in enumerate(trees[1:], 1):
                mine = none_medians(call.parent / f"{model}_{tree}", model)
                if not first or not mine:
                    continue
                ratios = [a / b for a, b in zip(mine, first)]
                pooled.setdefault(place, []).extend(ratios)
                print(f"{call.parent.relative_to(RESULTS)}: {model} {tree} (place {place}):"
                      f" none / the first tree's, median {statistics.median(ratios):.3f} over {len(ratios)} rounds")
    for place, ratios in sorted(pooled.items()):
        print(f"place {place}: median {statistics.median(ratios):.3f} over {len(ratios)} rounds,"
              f" {sum(r > 1 for r in ratios)} above 1, {min(ratios):.3f}–{max(ratios):.3f}")


if __name__ == "__main__":
    main()
