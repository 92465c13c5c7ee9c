"""Runs bench/train.py once per mode on the GPU and compares them: mode none without a budget
(reference parameters, in-memory step time), deepum without a budget (its overhead, and the
footprint: train.py's footprint_bytes, the most bytes of managed blocks a measured step touches, or
the allocator's peak where the engine slept without pressure), then um and deepum at a budget of a
fraction of that footprint. Every run after none is bounded against none's step (bench/bounds.py).
Writes gpu_check.json.

    python bench/gpu_check.py --fraction 0.5 --out results/ -- --layers 24 --hidden 1024 --steps 20
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from guard import child_env  # the script's own folder is first on sys.path
from modes import BUDGETED_MODES

HERE = Path(__file__).resolve().parent


def train(mode: str, out: Path, extra: list[str], capacity: int | None = None, tag: str = "") -> dict:
    path = out / f"train_{mode}{tag}.json"
    command = [sys.executable, str(HERE / "train.py"), "--mode", mode, "-o", str(path), *extra]
    if capacity is not None:
        command += ["--capacity", str(capacity)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True, env=child_env())
    return json.loads(path.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=0.5, help="budget as a fraction of the footprint")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--modes", default="um,deepum",
                        help=f"modes to run under the budget, from {', '.join(BUDGETED_MODES)} (default: %(default)s)")
    parser.add_argument("--record-steps", type=int, default=0,
                        help="also record a trace of this many deepum steps without a budget (trace.npz), for "
                             "comparing the simulator with the GPU")
    parser.add_argument("train_args", nargs=argparse.REMAINDER, help="arguments for train.py after --")
    args = parser.parse_args()
    unknown = [mode for mode in args.modes.split(",") if mode not in BUDGETED_MODES]
    if unknown:
        parser.error(f"--modes: {', '.join(unknown)} cannot run under a budget; "
                     f"choose from {', '.join(BUDGETED_MODES)}")
    extra = [a for a in args.train_args if a != "--"]
    args.out.mkdir(parents=True, exist_ok=True)
    reference = train("none", args.out, extra)
    extra += ["--reference", str(args.out / "train_none.json")]
    runs = {"none": reference, "deepum_unbudgeted": train("deepum", args.out, extra, tag="_unbudgeted")}
    footprint = runs["deepum_unbudgeted"].get("footprint_bytes")
    if not footprint:
        print("gpu_check: the unbudgeted deepum run reported no footprint; no budget to run under", file=sys.stderr)
        return 1
    capacity = int(footprint * args.fraction)
    for mode in args.modes.split(","):
        runs[mode] = train(mode, args.out, extra, capacity)
    if args.record_steps:
        train("deepum", args.out, [*extra, "--steps", str(args.record_steps), "--warmup", "0",
                                   "--record", str(args.out / "trace.npz")], tag="_recorded")
    summary = {"footprint_bytes": footprint, "capacity_bytes": capacity, "runs": {}}
    for name, run in runs.items():
        per_iteration = run["stats"].get("per_iteration", [])
        faults = [row["gpu_page_faults"] for row in per_iteration]
        summary["runs"][name] = {
            "step_s_median": run["step_s_median"],
            "bitwise_equal_to_none": run["parameter_sha256"] == reference["parameter_sha256"],
            "faults_per_step": faults,
            "faults_per_step_after_warmup": sum(faults[5:]) / max(1, len(faults[5:])),
            "peak_resident_bytes": run["stats"].get("peak_resident_bytes"),
            "prefetch_bytes": run["stats"].get("prefetch_bytes"),
            "evict_bytes": run["stats"].get("evict_bytes"),
            "cuda_errors": run["stats"].get("cuda_errors"),
            "kernel_prediction_hits": run["stats"].get("kernel_prediction_hits"),
            "kernel_prediction_misses": run["stats"].get("kernel_prediction_misses"),
            "link_busy_s_per_step": run.get("link_busy_s_per_step"),
            "bounds": run.get("bounds"),
        }
    s = summary["runs"]
    if "um" in s and "deepum" in s:
        summary["deepum_speedup_over_um"] = s["um"]["step_s_median"] / s["deepum"]["step_s_median"]
        summary["deepum_faults_vs_um"] = (s["deepum"]["faults_per_step_after_warmup"]
                                          / max(1e-9, s["um"]["faults_per_step_after_warmup"]))
    if "deepum" in s:
        deepum_bounds = s["deepum"]["bounds"] or {}
        summary["deepum_over_uvm_path_bound"] = deepum_bounds.get("step_over_uvm_path")
        summary["deepum_over_pinned_copy_bound"] = deepum_bounds.get("step_over_pinned_copy")
    summary["deepum_overhead_unbudgeted"] = s["deepum_unbudgeted"]["step_s_median"] / s["none"]["step_s_median"] - 1
    (args.out / "gpu_check.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
