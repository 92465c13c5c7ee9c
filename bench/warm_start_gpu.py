"""Warm start on the GPU: per workload at a budget (default half the footprint), deepum cold with a
warm-start file, then deepum again from that file, beside um and none, each its own bench/train.py
process (bench/run_all.py's run_train: the guard, deepum's fuse, a timeout).

Two targets of the warm start and of learning without harm:
- the warm run's first step within TARGET_FIRST_VS_STEADY (1.25x) of its steady step (the median of
  its steps from STEADY_FROM on); reported as measured and past start-up, that is less the one-off
  cost the first step has in memory too (none's first step less its steady step: CUDA, cuBLAS and
  cuDNN set-up, lazy module loading, the optimizer state's allocation), which no memory policy
  removes; and beside the floor that cost sets: none's first step over the warm run's steady step.
  Where the floor exceeds the target, no memory policy can meet it: its first step runs every launch
  of none's and moves memory besides;
- no step of the cold run slower than the same step of um (the largest ratio is reported).

Records: <out>/<workload>_{none_full,um_bNN,deepum-cold_bNN,deepum-warm_bNN}.json (train.py records),
the state file <out>/<workload>.deepum-warm, and <out>/warm_start_gpu.json (command, device, date, per
workload: step times, the ratios, the warm run's trial, whether every run trained bitwise like none).
<out>/warm_start_gpu.png plots each workload's step times, run by run. --report-only rebuilds both
from the records in --out (keeping the command, device and date of the runs). matplotlib loads only
when the plot is drawn.

    python3 bench/warm_start_gpu.py --out bench/results/warm_start/gpu --footprint-from bench/results/sweep_sizes
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_report  # noqa: E402
import run_all  # noqa: E402

STEADY_FROM = 3
"""The warm run's steady step: the median of its steps from this index (the fourth step) on."""
TARGET_FIRST_VS_STEADY = 1.25


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "warm_start" / "gpu", help="folder for the records")
    parser.add_argument("--steps", type=int, default=8)
    run_all.add_budget_arguments(parser)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: unknown workloads, bad sizes, a budget outside (0, 1] and too few steps
    exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.steps <= STEADY_FROM:
        parser.error(f"--steps must exceed {STEADY_FROM} so that the warm run has steady steps, got {args.steps}")
    run_all.check_budget_arguments(parser, args)
    return args


def _run(args, workload: str, name: str, mode: str, capacity, extra: list[str]) -> dict:
    reference = run_all.in_memory_reference(args, workload) if mode != "none" else None
    command = run_all.train_command(args, workload, mode, args.out / f"{name}.json", capacity, reference) + extra
    return run_all.run_train(args, name, command, workload, mode, {"budget_fraction": args.budget})


def steady(step_s: list[float]) -> float:
    return statistics.median(step_s[STEADY_FROM:])


def run_names(workload: str, budget: float) -> dict[str, str]:
    """The record names (without .json) of a workload's four runs."""
    tag = f"b{budget:.2f}"
    return {"none": run_all.run_name(workload, "none", None), "um": f"{workload}_um_{tag}",
            "cold": f"{workload}_deepum-cold_{tag}", "warm": f"{workload}_deepum-warm_{tag}"}


def recorded_runs(args, workload: str) -> dict[str, dict]:
    """The workload's records in args.out; a missing or unreadable one counts as failed."""
    runs = {}
    for run, name in run_names(workload, args.budget).items():
        try:
            runs[run] = json.loads((args.out / f"{name}.json").read_text())
        except (OSError, json.JSONDecodeError):
            runs[run] = {"status": "missing"}
    return runs


def first_step_figures(none: list[float], warm: list[float]) -> dict:
    """The warm run's first step against its steady step (seconds and ratios), as measured, past the
    start-up cost none's first step has (its first less its steady step), and the floor: none's first
    step over the warm run's steady step, the least any memory policy's first step can reach."""
    warm_steady = steady(warm)
    first_vs_steady = warm[0] / warm_steady
    start_up = max(0.0, none[0] - steady(none))
    floor = none[0] / warm_steady
    return {
        "warm_first_step_s": warm[0], "warm_steady_step_s": warm_steady,
        "warm_first_vs_steady": first_vs_steady,
        "warm_within_target": first_vs_steady <= TARGET_FIRST_VS_STEADY,
        "start_up_s": start_up,
        "warm_first_vs_steady_past_start_up": (warm[0] - start_up) / warm_steady,
        "in_memory_first_vs_warm_steady": floor,
        "target_reachable": floor <= TARGET_FIRST_VS_STEADY,
    }


def summarize(workload: str, runs: dict[str, dict]) -> dict:
    """One workload's figures from its runs (none, um, cold, warm), or its failure."""
    failed = [name for name, record in runs.items() if record.get("status") != "ok"]
    if failed:
        return {"status": "failed", "failed_runs": failed}
    none, um, cold, warm = (runs[name]["step_s"] for name in ("none", "um", "cold", "warm"))
    reference = runs["none"]["parameter_sha256"]
    cold_vs_um = [c / u for c, u in zip(cold, um)]
    return {
        "status": "ok",
        "workload_id": runs["none"]["workload_id"],
        "capacity_bytes": runs["cold"]["capacity_bytes"],
        "step_s": {name: record["step_s"] for name, record in runs.items()},
        **first_step_figures(none, warm),
        "warm_vs_cold_by_step": [w / c for w, c in zip(warm, cold)],
        "cold_first_vs_steady": cold[0] / steady(cold),
        "cold_vs_um_by_step": cold_vs_um, "cold_worst_vs_um": max(cold_vs_um),
        "cold_never_slower_than_um": max(cold_vs_um) <= 1.0,
        "warm_trial": runs["warm"]["stats"].get("warm_start"),
        "bitwise_equal": all(record["parameter_sha256"] == reference for record in runs.values()),
    }


def recorded_summary(args, workload: str) -> dict:
    """A workload's figures from its records in args.out (--report-only)."""
    return summarize(workload, recorded_runs(args, workload))


def warm_start_workload(args, workload: str) -> dict:
    runs = {"none": _run(args, workload, run_all.run_name(workload, "none", None), "none", None, [])}
    capacity, ended = run_all.budget_capacity(args, workload, runs["none"])
    if ended:
        return ended
    state = args.out / f"{workload}.deepum-warm"
    if not args.dry_run:
        state.unlink(missing_ok=True)
    names = run_names(workload, args.budget)
    runs["um"] = _run(args, workload, names["um"], "um", capacity, [])
    for name in ("cold", "warm"):
        runs[name] = _run(args, workload, names[name], "deepum", capacity, ["--warm-start", str(state)])
    return {"status": "planned"} if args.dry_run else summarize(workload, runs)


RUN_STYLES = {"none": ("in memory", "tab:gray"), "um": ("um", "tab:red"),
              "cold": ("deepum, cold", "tab:blue"), "warm": ("deepum, warm start", "tab:green")}


def plot(results: dict, path: Path) -> None:
    """Step time by step, one panel per workload that ran, each run a line (log scale)."""
    panels = {workload: (f"{workload}: warm first step {result['warm_first_vs_steady']:.2f}x steady, "
                         f"in memory {result['in_memory_first_vs_warm_steady']:.2f}x",
                         {label: (result["step_s"][run], color) for run, (label, color) in RUN_STYLES.items()})
              for workload, result in results.items() if result.get("status") == "ok"}
    bench_report.plot_steps_by_step(panels, "Warm and cold starts", path)


def main(argv=None) -> int:
    args = parse_args(argv)
    fields = {"budget_fraction": args.budget, "steady_from_step": STEADY_FROM,
              "target_first_vs_steady": TARGET_FIRST_VS_STEADY}
    results = run_all.budget_summary(args, argv, "warm_start_gpu.py", warm_start_workload, recorded_summary, fields)
    if isinstance(results, int):
        return results
    plot(results, args.out / "warm_start_gpu.png")
    print(f"{'workload':<12} {'warm first/steady':>18} {'past start-up':>14} {'floor':>6} {'cold worst/um':>14} "
          f"{'trial':>10} {'bitwise':>8}")
    for workload, result in results.items():
        if result["status"] != "ok":
            print(f"{workload:<12} {result['status']}: {result.get('reason') or result.get('failed_runs')}")
            continue
        trial = (result["warm_trial"] or {}).get("state")
        print(f"{workload:<12} {result['warm_first_vs_steady']:>18.2f} "
              f"{result['warm_first_vs_steady_past_start_up']:>14.2f} "
              f"{result['in_memory_first_vs_warm_steady']:>6.2f} {result['cold_worst_vs_um']:>14.2f} "
              f"{trial!s:>10} {result['bitwise_equal']!s:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
