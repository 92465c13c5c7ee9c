"""The figures docs/results.md quotes from this folder's lockstep calls (bench/lockstep_report.py: per
model and tree the pairs, the per-round ratios to this tree's defaults, the bytes moved, the hook's
time, the even steps against the odd, bitwise equality and CUDA errors); then the replays of
replays/replay.sh (the median of iterations 3-7) against the sweep's GPU speed-ups over `um`.

    python3 bench/results/far_prefetches_gpu/analysis.py
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lockstep_report import report  # noqa: E402

CALLS = (HERE / "call_a" / "gpt2", HERE / "call_b" / "bert")


def main() -> None:
    for folder in CALLS:
        report(folder)


# The sweep's GPT-2 at half and three quarters of its footprint on the GPU: `um`'s and deepum's steps, s
# (bench/results/sweep_fewer_driver_calls/).
SWEEP_GPU = {"0.50": (4.324, 0.4007), "0.75": (3.172, 0.3283)}


def replays() -> None:
    """The replayed speed-up over `um` on the default against the sweep's on the GPU."""
    print("replays of bench/results/gpu_check/trace.npz, median of iterations 3-7")
    for fraction, (um_gpu, deepum_gpu) in SWEEP_GPU.items():
        time = {policy: statistics.median(i["time_s"] for i in json.loads(
            (HERE / "replays" / f"replay_{policy}_b{fraction}.json").read_text())["per_iteration"][3:8])
            for policy in ("um", "deepum", "oracle")}
        replayed, gpu = time["um"] / time["deepum"], um_gpu / deepum_gpu
        print(f"  {fraction}: um {time['um']:.3f} s, deepum {time['deepum']:.4f} s, oracle {time['oracle']:.4f} s;"
              f" {replayed:.2f}x against the GPU's {gpu:.2f}x: {replayed / gpu:.2f}")


if __name__ == "__main__":
    main()
    replays()
