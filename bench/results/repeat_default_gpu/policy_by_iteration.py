"""The launch hook's policy part per iteration of BERT-Large's deepum runs, by what the iteration's
plan record was written into: the figures docs/results.md quotes for repeated plans by default.

    python3 bench/results/repeat_default_gpu/policy_by_iteration.py [RUN.json ...]

Defaults to this folder's BERT-Large runs and those of bench/results/turn_prefetches_gpu/call_b. The
plan records keep the last 16 iterations, so iterations 0-16 are recorded into new storage and later
ones into the storage of the iteration that dropped out; with repeat_plans_percent 0 nothing is
recorded and the same iterations are grouped alike for comparison. Iterations 0-3 (warm-up) and
repeated iterations are left out.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent
sys.path.insert(0, str(HERE.parents[2]))

from deepum.specs.plan_records import REMEMBERED  # noqa: E402

WARM_UP = 4


def group(index: int, iterations: list[dict]) -> str:
    """Which storage iteration `index` was recorded into, or that a repeated iteration came before it."""
    if index and iterations[index - 1]["repeated_plan_launches"]:
        return "after a repeated one"
    return "new storage" if index <= REMEMBERED else "reused storage"


def main(paths: list[str]) -> None:
    paths = paths or sorted(str(p) for p in [*HERE.glob("call_c/bert/*/*_deepum_*.json"),
                                             *(RESULTS / "turn_prefetches_gpu/call_b").glob("bert-large_*/*_deepum_*.json")])
    rows: dict[tuple, dict[str, list[float]]] = {}
    for path in paths:
        record = json.loads(Path(path).read_text())
        iterations = record["stats"]["per_iteration"]
        run = Path(path).resolve()
        key = (str(run.parent.relative_to(RESULTS)), record["config"]["repeat_plans_percent"])
        for index, it in enumerate(iterations):
            if index >= WARM_UP and not it["repeated_plan_launches"]:
                rows.setdefault(key, {}).setdefault(group(index, iterations), []).append(it["hook_policy_ns"] / 1e6)
    print("policy part of the hook, ms an iteration: median (iterations)")
    for (runs, percent), groups in sorted(rows.items()):
        cells = ", ".join(f"{name} {statistics.median(ms):.1f} ({len(ms)})" for name, ms in groups.items())
        print(f"  {runs} (repeat_plans_percent {percent}): {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
