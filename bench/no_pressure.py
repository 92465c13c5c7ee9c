"""Checks that deepum costs nothing where the model fits: per workload, bench/train.py in mode none
and then in mode deepum without a budget, side by side in one call (bench/run_all.py's run_one: each
its own process under the guard and deepum's fuse), and the ratio of deepum's median step to none's
against a tolerance (default 3%), over at least MIN_MEASURED_STEPS measured steps each.

Writes <out>/<workload>_none_full.json and <workload>_deepum_full.json (train.py records, named as the
sweep names them) and <out>/no_pressure.json: command, device, date, tolerance, per workload both
medians (seconds), the ratio, whether it is within the tolerance, deepum's hook CPU time per step
(seconds) and whether the two trained bitwise alike, and whether every workload is within.

    python3 bench/no_pressure.py --out bench/results/no_pressure
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
import workloads  # noqa: E402

MIN_MEASURED_STEPS = 10
"""Fewest steps after warm-up that the check accepts."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "no_pressure", help="folder for the records")
    parser.add_argument("--workloads", default=",".join(run_all.SWEEP_SIZES),
                        help=f"comma-separated, from {', '.join(sorted(workloads.WORKLOADS))} (default: %(default)s)")
    parser.add_argument("--size", action="append", default=[], metavar="WORKLOAD=FLAGS",
                        help='train.py sizing flags replacing a workload\'s sweep size, e.g. "gpt2=--layers 12"')
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tolerance", type=float, default=0.03,
                        help="largest accepted excess of deepum's median step over none's (default 0.03: 3%%)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument("--resume", action="store_true", help="keep successful records already in --out")
    parser.add_argument("--dry-run", action="store_true", help="print the runs without starting them")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: unknown workloads, bad sizes, fewer than MIN_MEASURED_STEPS measured
    steps and a negative tolerance exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.workloads = run_all.checked_workloads(parser, args.workloads)
    if args.warmup < 0 or args.steps - args.warmup < MIN_MEASURED_STEPS:
        parser.error(f"need at least {MIN_MEASURED_STEPS} measured steps (--steps less --warmup, --warmup >= 0), "
                     f"got --steps {args.steps} --warmup {args.warmup}")
    if args.tolerance < 0:
        parser.error(f"--tolerance must be at least 0, got {args.tolerance}")
    args.sizes = run_all.workload_sizes(parser, args.workloads, args.size)
    return args


def compare(none: dict, deepum: dict, tolerance: float) -> dict:
    """The check for one workload from its two records: medians (s), ratio deepum / none,
    within_tolerance (ratio <= 1 + tolerance), deepum's hook time per step (s), bitwise equality;
    a run that did not succeed gives status "incomplete" and no ratio."""
    if none.get("status") != "ok" or deepum.get("status") != "ok":
        return {"status": "incomplete", "none_status": none.get("status"), "deepum_status": deepum.get("status"),
                "ratio": None, "within_tolerance": False}
    ratio = deepum["step_s_median"] / none["step_s_median"]
    return {"status": "ok", "workload_id": none["workload_id"], "none_step_s_median": none["step_s_median"],
            "deepum_step_s_median": deepum["step_s_median"], "ratio": ratio,
            "within_tolerance": ratio <= 1 + tolerance,
            "measured_steps": min(none["measured_steps"], deepum["measured_steps"]),
            "deepum_hook_s_per_step": deepum.get("hook_s_per_step"),
            "bitwise_equal": none["parameter_sha256"] == deepum["parameter_sha256"]}


def main(argv=None) -> int:
    args = parse_args(argv)
    command = run_all.script_command("no_pressure.py", argv)
    if not run_all.ready_to_run(args):
        return 1
    results, device = {}, None
    for workload in args.workloads:
        none = run_all.run_one(args, workload, "none", None, None)
        deepum = run_all.run_one(args, workload, "deepum", None, None)
        results[workload] = compare(none, deepum, args.tolerance)
        device = device or none.get("device")
    if args.dry_run:
        return 0
    record = {"command": command, "device": device,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "tolerance": args.tolerance, "workloads": results,
              "all_within_tolerance": all(r["within_tolerance"] for r in results.values())}
    (args.out / "no_pressure.json").write_text(json.dumps(record, indent=1))
    for workload, result in results.items():
        ratio = "–" if result["ratio"] is None else f"{result['ratio']:.3f}"
        print(f"{workload}: deepum / none = {ratio} ({'within' if result['within_tolerance'] else 'NOT within'} "
              f"{args.tolerance:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
