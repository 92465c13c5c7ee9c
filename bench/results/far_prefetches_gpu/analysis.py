"""The figures docs/results.md quotes from this folder's lockstep calls (bench/lockstep_report.py: per
model and tree the pairs, the per-round ratios to this tree's defaults, the bytes moved, the hook's
time, the even steps against the odd, bitwise equality and CUDA errors); then the replays in replays/
against the sweep's GPU speed-ups over `um` (bench/sweep_agreement.py).

    python3 bench/results/far_prefetches_gpu/analysis.py
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lockstep_report import report  # noqa: E402
from sweep_agreement import agreement  # noqa: E402

CALLS = (HERE / "call_a" / "gpt2", HERE / "call_b" / "bert")


def main() -> None:
    for folder in CALLS:
        report(folder)


if __name__ == "__main__":
    main()
    agreement(HERE / "replays")
