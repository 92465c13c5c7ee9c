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

from lockstep_ab import summary  # noqa: E402


def main() -> None:
    pooled: dict[int, list[float]] = {}
    for call in sorted(RESULTS.glob("**/lockstep_ab.json")):
        record = json.loads(call.read_text())
        trees = ["this_tree", *record["trees"]]
        for model in sorted({row["model"] for row in record["rows"]}):
            first, *later = summary(call.parent, [model], trees)
            for place, row in enumerate(later, 1):
                if not first.get("none_steps") or not row.get("none_steps"):
                    continue
                ratios = [a / b for a, b in zip(row["none_steps"], first["none_steps"])]
                pooled.setdefault(place, []).extend(ratios)
                print(f"{call.parent.relative_to(RESULTS)}: {model} {row['tree']} (place {place}):"
                      f" none / the first tree's, median {statistics.median(ratios):.3f} over {len(ratios)} rounds")
    for place, ratios in sorted(pooled.items()):
        print(f"place {place}: median {statistics.median(ratios):.3f} over {len(ratios)} rounds,"
              f" {sum(r > 1 for r in ratios)} above 1, {min(ratios):.3f}–{max(ratios):.3f}")


if __name__ == "__main__":
    main()
