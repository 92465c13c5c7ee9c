"""The simulator's speed-up over `um` against the GPU's: the replays bench/sweep_agreement.sh wrote into
OUT (the recorded GPT-2 trace at half and three quarters of its footprint, the median of iterations
3-7) against the sweep's GPU steps at the same capacities (bench/results/sweep_fewer_driver_calls/).

    python3 bench/sweep_agreement.py OUT
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

SWEEP = Path(__file__).resolve().parent / "results" / "sweep_fewer_driver_calls" / "sweep"
"""The sweep's committed records (bench/run_all.py), whose GPT-2 runs the replays are set against."""


def sweep_steps(fraction: str) -> tuple[float, float]:
    """The sweep's GPT-2 at `fraction` of its footprint on the GPU: `um`'s and deepum's median steps, s."""
    return tuple(json.loads((SWEEP / f"gpt2_{mode}_b{fraction}.json").read_text())["step_s_median"]
                 for mode in ("um", "deepum"))


SWEEP_GPU = {fraction: sweep_steps(fraction) for fraction in ("0.50", "0.75")}
"""Per fraction of the footprint (half, three quarters), the sweep's `um` and deepum steps, s."""


def agreement(out: Path) -> dict[str, float]:
    """Per fraction, the replayed speed-up over `um` divided by the GPU's (printed with the medians)."""
    times = {fraction: {policy: statistics.median(i["time_s"] for i in json.loads(
        (out / f"replay_{policy}_b{fraction}.json").read_text())["per_iteration"][3:8])
        for policy in ("um", "deepum", "oracle")} for fraction in SWEEP_GPU}
    print(f"replays of bench/results/gpu_check/trace.npz in {out}, median of iterations 3-7")
    ratios = {}
    for fraction, (um_gpu, deepum_gpu) in SWEEP_GPU.items():
        time = times[fraction]
        replayed, gpu = time["um"] / time["deepum"], um_gpu / deepum_gpu
        ratios[fraction] = replayed / gpu
        print(f"  {fraction}: um {time['um']:.3f} s, deepum {time['deepum']:.4f} s, oracle {time['oracle']:.4f} s;"
              f" {replayed:.2f}x against the GPU's {gpu:.2f}x: {ratios[fraction]:.2f}")
    return ratios


if __name__ == "__main__":
    try:
        for folder in sys.argv[1:]:
            agreement(Path(folder))
    except (OSError, ValueError, KeyError, TypeError, statistics.StatisticsError) as error:
        sys.exit(print(f"sweep_agreement: {error}", file=sys.stderr) or 2)
