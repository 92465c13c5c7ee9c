"""The first steps without a warm start, side by side: per workload at a budget (default half the
footprint), bench/train.py in mode none once (the in-memory reference and the safety check), then um and
deepum with nothing learned --repeats times in alternation (um, deepum, um, deepum, ...: a drift of the
shared GPU's speed falls on both), --steps steps each, every one measured. Per step, each mode's median
over its runs and deepum's over um's; the target of learning without harm is no step above 1.

Records: <out>/<workload>_none_full.json and <workload>_{um,deepum}_bNN.json (train.py records,
repetitions with the suffix _r1, _r2, ...), and <out>/early_steps.json: command, device, date, budget,
per workload each run's step times (s), the per-step medians (s) and ratios, the worst ratio and its
step (1-based), whether no step is slower under deepum, and whether every run trained bitwise like
none; <out>/early_steps.png: each run's step times by step, one panel per workload. --report-only
rebuilds both from the records in --out.

    python3 bench/early_steps.py --out bench/results/early_steps --footprint-from bench/results/sweep_sizes --repeats 3
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

MODES = ("um", "deepum")
MODE_COLORS = {"um": "tab:red", "deepum": "tab:blue"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "early_steps", help="folder for the records")
    parser.add_argument("--steps", type=int, default=3, help="steps per run, all measured (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode per workload, alternating (1 to 10)")
    run_all.add_budget_arguments(parser)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: unknown workloads, bad sizes, a budget outside (0, 1], no step and a
    repeat count outside 1..10 exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    if not 1 <= args.repeats <= 10:
        parser.error(f"--repeats must be from 1 to 10, got {args.repeats}")
    run_all.check_budget_arguments(parser, args)
    return args


def run_names(workload: str, budget: float, repeats: int) -> dict[str, list[str]]:
    """The record names (without .json) of a workload's runs, by mode, in the order they run."""
    names = {"none": [run_all.run_name(workload, "none", None)]}
    for mode in MODES:
        base = run_all.run_name(workload, mode, budget)
        names[mode] = [base + (f"_r{repeat}" if repeat else "") for repeat in range(repeats)]
    return names


def compare(none: dict, runs: dict[str, list[dict]]) -> dict:
    """One workload's figures from its none record and its um and deepum records: per step (as many as
    every run has) each mode's median over its runs, deepum / um, the worst of those and its step;
    a run that did not succeed gives status "incomplete"."""
    every = [none, *runs["um"], *runs["deepum"]]
    if any(record.get("status") != "ok" for record in every):
        return {"status": "incomplete",
                "run_status": {mode: [r.get("status") for r in runs[mode]] for mode in ("um", "deepum")},
                "none_status": none.get("status")}
    steps = min(len(record["step_s"]) for record in every[1:])
    medians = {mode: [statistics.median(r["step_s"][i] for r in runs[mode]) for i in range(steps)] for mode in MODES}
    ratios = [d / u for d, u in zip(medians["deepum"], medians["um"])]
    worst = max(range(steps), key=ratios.__getitem__)
    return {"status": "ok", "workload_id": none["workload_id"], "capacity_bytes": runs["um"][0]["capacity_bytes"],
            "runs": len(runs["um"]), "step_s": {mode: [r["step_s"] for r in runs[mode]] for mode in MODES},
            "median_step_s": medians, "deepum_vs_um_by_step": ratios, "worst_ratio": ratios[worst],
            "worst_step": worst + 1, "never_slower_than_um": ratios[worst] <= 1.0,
            "bitwise_equal": len({r["parameter_sha256"] for r in every}) == 1}


def measure(args, workload: str) -> dict:
    """Runs a workload's none reference, then um and deepum in alternation; its comparison."""
    none = run_all.run_one(args, workload, "none", None, None)
    capacity, ended = run_all.budget_capacity(args, workload, none)
    if ended:
        return ended
    runs = {mode: [] for mode in MODES}
    for repeat in range(args.repeats):
        for mode in MODES:
            runs[mode].append(run_all.run_one(args, workload, mode, args.budget, capacity, repeat))
    return {"status": "planned"} if args.dry_run else compare(none, runs)


def recorded(args, workload: str) -> dict:
    """A workload's comparison from the records in args.out; a missing or unreadable one counts as failed."""
    def read(name: str) -> dict:
        try:
            return json.loads((args.out / f"{name}.json").read_text())
        except (OSError, json.JSONDecodeError):
            return {"status": "missing"}

    names = run_names(workload, args.budget, args.repeats)
    return compare(read(names["none"][0]), {mode: [read(name) for name in names[mode]] for mode in MODES})


def plot(results: dict, path: Path) -> None:
    """Each run's step time by step, one panel per workload that ran (log scale)."""
    panels = {}
    for workload, result in results.items():
        if result.get("status") != "ok":
            continue
        lines = {f"{mode} {run + 1}": (steps, MODE_COLORS[mode])
                 for mode in MODES for run, steps in enumerate(result["step_s"][mode])}
        panels[workload] = (f"{workload}: deepum/um at most {result['worst_ratio']:.2f} (step {result['worst_step']})",
                            lines)
    bench_report.plot_steps_by_step(panels, "First steps without a warm start", path)


def main(argv=None) -> int:
    args = parse_args(argv)
    results = run_all.budget_summary(args, argv, "early_steps.py", measure, recorded, {"budget_fraction": args.budget})
    if isinstance(results, int):
        return results
    plot(results, args.out / "early_steps.png")
    print(f"{'workload':<12} {'deepum / um by step (medians of runs)':<40} {'worst':>6} {'bitwise':>8}")
    for workload, result in results.items():
        if result["status"] != "ok":
            print(f"{workload:<12} {result['status']}: {result.get('reason') or result.get('run_status')}")
            continue
        by_step = " ".join(f"{ratio:.2f}" for ratio in result["deepum_vs_um_by_step"])
        print(f"{workload:<12} {by_step:<40} {result['worst_ratio']:>6.2f} {result['bitwise_equal']!s:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
