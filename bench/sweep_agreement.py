"""The simulator's speed-up over `um` against the GPU's: the replays bench/sweep_agreement.sh wrote into
OUT (the recorded GPT-2 trace at half and three quarters of its footprint, the median of iterations
3-7) against a sweep's GPU steps at the same capacities (bench/run_all.py's records; by default those of
bench/results/sweep_fewer_driver_calls/).

    python3 bench/sweep_agreement.py OUT [OUT ...] [--sweep FOLDER]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

SWEEP = Path(__file__).resolve().parent / "results" / "sweep_fewer_driver_calls" / "sweep"
"""The sweep whose GPT-2 runs the replays are set against unless --sweep names another."""
FRACTIONS = ("0.50", "0.75")
"""The fractions of the footprint (half, three quarters) the replays and the sweep share."""


def sweep_steps(sweep: Path) -> dict[str, tuple[float, float]]:
    """Per fraction of the footprint, the sweep's GPT-2 on the GPU: `um`'s and deepum's median steps, s."""
    return {fraction: tuple(json.loads((sweep / f"gpt2_{mode}_b{fraction}.json").read_text())["step_s_median"]
                            for mode in ("um", "deepum")) for fraction in FRACTIONS}


def agreement(out: Path, sweep: Path = SWEEP) -> dict[str, float]:
    """Per fraction, the replayed speed-up over `um` divided by the GPU's (printed with the medians)."""
    gpu_steps = sweep_steps(sweep)
    times = {fraction: {policy: statistics.median(i["time_s"] for i in json.loads(
        (out / f"replay_{policy}_b{fraction}.json").read_text())["per_iteration"][3:8])
        for policy in ("um", "deepum", "oracle")} for fraction in FRACTIONS}
    print(f"replays of bench/results/gpu_check/trace.npz in {out}, median of iterations 3-7, against {sweep}")
    ratios = {}
    for fraction, (um_gpu, deepum_gpu) in gpu_steps.items():
        time = times[fraction]
        replayed, gpu = time["um"] / time["deepum"], um_gpu / deepum_gpu
        ratios[fraction] = replayed / gpu
        print(f"  {fraction}: um {time['um']:.3f} s, deepum {time['deepum']:.4f} s, oracle {time['oracle']:.4f} s;"
              f" {replayed:.2f}x against the GPU's {gpu:.2f}x: {ratios[fraction]:.2f}")
    return ratios


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sweep_agreement", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="+", type=Path, help="folders bench/sweep_agreement.sh wrote")
    parser.add_argument("--sweep", type=Path, default=SWEEP, help=f"the sweep's records (default {SWEEP})")
    args = parser.parse_args(argv)
    try:
        for folder in args.out:
            agreement(folder, args.sweep)
    except (OSError, ValueError, KeyError, TypeError, statistics.StatisticsError) as error:
        sys.exit(print(f"sweep_agreement: {error}", file=sys.stderr) or 2)


if __name__ == "__main__":
    main()
