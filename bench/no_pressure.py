"""Checks that deepum costs nothing where the model fits: per workload, bench/train.py in mode none
and then in mode deepum without a budget, side by side in one call (bench/run_all.py's run_one: each
its own process under the guard and deepum's fuse), --repeats times in alternation (none, deepum,
none, deepum, ...: a drift of the shared GPU's speed falls on both), and the ratio of deepum's median
step to none's (each the median of its runs' medians) against a tolerance (default 3%), over at least
MIN_MEASURED_STEPS measured steps per run.

Writes <out>/<workload>_none_full.json and <workload>_deepum_full.json (train.py records, named as the
sweep names them; repetitions with the suffix _r1, _r2, ...), <out>/no_pressure.png (plot_pairs) and
<out>/no_pressure.json: command,
device, date, tolerance, per workload both medians (seconds) and each run's, the ratio, whether it is
within the tolerance, deepum's hook CPU time per step (seconds), whether all runs trained bitwise
alike and which memory deepum's segments were in, and whether every workload is within. The record
is rewritten, and the workload's line printed, as each workload finishes, so a call cut short keeps
the workloads it finished. Since the runs alternate, each deepum run and the none run before it form
a pair that shares the GPU's speed of the moment: the record also gives each
pair's ratio and a verdict from them (pair_verdict), which says "undecided" where the pairs straddle
the tolerance, instead of reading noise as a result. --cpus pins this script, and with it every run,
to a set of CPUs (the launch-bound steps vary less from run to run; docs/results.md).

--lockstep starts each pair's two runs together and has them take turns at their steps
(bench/lockstep.py): step i of none and step i of deepum run one right after the other, alone on the
GPU, the order alternating from step to step, so a drift of the shared machine's speed, which lasts
several steps, falls on both. A pair's ratio is then the median over the measured steps of deepum's
step over none's same step. With --cpus naming one CPU, the two runs of a pair, taking turns, share
that core: the steadiest figures (docs/results.md).

--capacity WORKLOAD=SIZE gives that workload's deepum runs a budget: the check then compares deepum's
step under pressure with the in-memory step (e.g. --tolerance 1.5: within 2.5x), its deepum records
named <workload>_deepum_c<bytes>. --deepum-config FILE gives every deepum run that DeepUMConfig JSON
(train.py --config), which the record repeats as deepum_config.

    python3 bench/no_pressure.py --out bench/results/no_pressure --lockstep --cpus 3
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum.config import DeepUMConfig  # noqa: E402
from deepum.units import parse_size  # noqa: E402
import lockstep  # noqa: E402
import run_all  # noqa: E402
import workloads  # noqa: E402
from guard import child_env  # noqa: E402

MODES = ("none", "deepum")
"""The modes compared, in the order each pair runs them."""
MIN_MEASURED_STEPS = 10
"""Fewest steps after warm-up that the check accepts."""
MAX_REPEATS = 10
"""Most runs of each mode per workload (--repeats)."""
PAIR_CONFIDENCE = 0.9
"""The confidence pair_verdict's interval aims for: it drops as many extreme pairs on each side as
keep it at least this (none below 5 pairs, where even the smallest and largest fall short of it)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "no_pressure", help="folder for the records")
    parser.add_argument("--workloads", default=",".join(run_all.SWEEP_SIZES),
                        help=f"comma-separated, from {', '.join(sorted(workloads.WORKLOADS))} (default: %(default)s)")
    parser.add_argument("--size", action="append", default=[], metavar="WORKLOAD=FLAGS",
                        help='train.py sizing flags replacing a workload\'s sweep size, e.g. "gpt2=--layers 12"')
    parser.add_argument("--capacity", action="append", default=[], metavar="WORKLOAD=SIZE",
                        help='a budget for that workload\'s deepum runs, e.g. "gpt2=6GiB" (default: none)')
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help=f"runs of each mode per workload, alternating (1 to {MAX_REPEATS})")
    parser.add_argument("--tolerance", type=float, default=0.03,
                        help="largest accepted excess of deepum's median step over none's (default 0.03: 3%%)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument("--cpus", default=None, metavar="LIST",
                        help='pin the runs to these CPUs, e.g. "2-9" or "0,2,4-6" (default: not pinned)')
    parser.add_argument("--lockstep", action="store_true",
                        help="run each pair's two runs together, taking turns at their steps (bench/lockstep.py)")
    parser.add_argument("--deepum-config", dest="deepum_config_file", default=None, metavar="FILE",
                        help="DeepUMConfig JSON for deepum's runs (train.py --config; default: the defaults)")
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
    if not 1 <= args.repeats <= MAX_REPEATS:
        parser.error(f"--repeats must be from 1 to {MAX_REPEATS}, got {args.repeats}")
    if args.tolerance < 0:
        parser.error(f"--tolerance must be at least 0, got {args.tolerance}")
    args.sizes = run_all.workload_sizes(parser, args.workloads, args.size)
    args.capacities = capacities(parser, args.capacity, args.workloads)
    args.cpus = None if args.cpus is None else cpu_list(parser, args.cpus)
    args.deepum_config_values = None
    if args.deepum_config_file is not None:
        try:
            args.deepum_config_values = DeepUMConfig.load(args.deepum_config_file).to_dict()
        except ValueError as exc:
            parser.error(f"--deepum-config: {exc}")
    return args


def capacities(parser: argparse.ArgumentParser, items: list[str], names: list[str]) -> dict[str, int]:
    """The deepum budget (bytes) of each workload a --capacity WORKLOAD=SIZE item names; an item that
    names no checked workload or no readable size exits with status 2."""
    budgets = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or name not in names:
            parser.error(f"--capacity wants WORKLOAD=SIZE with a workload of --workloads, got {item!r}")
        try:
            budgets[name] = parse_size(size)
        except ValueError as exc:
            parser.error(f"--capacity {item}: {exc}")
    return budgets


def capacity_of(args, workload: str, mode: str) -> int | None:
    """The budget (bytes) of one run: the workload's --capacity for deepum, none for none."""
    return args.capacities.get(workload) if mode == "deepum" else None


def run_name(args, workload: str, mode: str) -> str:
    """File stem of one run: run_all's (<workload>_<mode>_full), or <workload>_deepum_c<bytes> for
    deepum at a --capacity."""
    capacity = capacity_of(args, workload, mode)
    return run_all.run_name(workload, mode, None) if capacity is None else f"{workload}_deepum_c{capacity}"


def cpu_list(parser: argparse.ArgumentParser, text: str) -> list[int]:
    """The CPUs a --cpus value names ("2-9", "0,2,4-6"), ascending; exits with status 2 where it is
    malformed or names a CPU this process may not run on."""
    allowed = os.sched_getaffinity(0)
    cpus = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or (dash and int(last) < int(first)):
            parser.error(f'--cpus must list CPUs as "2-9" or "0,2,4-6", got {text!r}')
        named = range(int(first), int(last if dash else first) + 1)
        if named[-1] > max(allowed) or not set(named) <= allowed:
            parser.error(f"--cpus names CPUs ({part.strip()}) this process may not run on (allowed: {sorted(allowed)})")
        cpus.update(named)
    return sorted(cpus)


def pair_verdict(pair_ratios: list[float], tolerance: float) -> dict:
    """What the pairs' ratios (deepum / none, one per alternation) say of the median pair ratio: of n
    pairs in order, it lies between the k-th smallest and the k-th largest with confidence
    1 - 2 * P(Binomial(n, 1/2) < k) (the sign test; 0 for one pair), k the largest that keeps it at
    least PAIR_CONFIDENCE, else 1 (the smallest and the largest). It is "within" the tolerance when
    the interval's top is at most 1 + tolerance, "outside" when its bottom is above, "undecided"
    otherwise. Also the pairs' median, the figure the interval brackets."""
    ordered, n = sorted(pair_ratios), len(pair_ratios)
    k = 1
    while k < n // 2 and interval_confidence(n, k + 1) >= PAIR_CONFIDENCE:
        k += 1
    low, high = ordered[k - 1], ordered[n - k]
    verdict = "within" if high <= 1 + tolerance else "outside" if low > 1 + tolerance else "undecided"
    return {"pair_ratios": pair_ratios, "pair_median": statistics.median(pair_ratios), "pair_interval": [low, high],
            "pair_interval_confidence": interval_confidence(n, k) if n > 1 else 0.0, "verdict": verdict}


def interval_confidence(n: int, k: int) -> float:
    """The chance that the median of a distribution lies between the k-th smallest and the k-th
    largest of n draws from it: 1 - 2 * P(Binomial(n, 1/2) < k)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


def run_pair_in_lockstep(args, workload: str, repeat: int) -> list[dict]:
    """The records of one repetition's none and deepum runs, started together and taking turns at
    their steps (bench/lockstep.py), named as run_all.run_one names them; with args.resume, kept
    where both succeeded before."""
    suffix = f"_r{repeat}" if repeat else ""
    names = [run_name(args, workload, mode) + suffix for mode in MODES]
    paths = [args.out / f"{name}.json" for name in names]
    if args.resume and all(p.exists() for p in paths):
        kept = [json.loads(p.read_text()) for p in paths]
        if all(r.get("status") == "ok" for r in kept):
            print(f"[{', '.join(names)}] kept from an earlier check", flush=True)
            return kept
    commands = [run_all.train_command(args, workload, mode, path, capacity_of(args, workload, mode), None)
                for mode, path in zip(MODES, paths)]
    for name, command in zip(names, commands):
        print(f"[{name}] {' '.join(command[1:])} (in lockstep)", flush=True)
    if args.dry_run:
        return [{"status": "planned", "run": name} for name in names]
    for path in paths:
        path.unlink(missing_ok=True)
    start = time.monotonic()
    codes, rounds = lockstep.run_in_lockstep(commands, [run_all.run_log(args, name) for name in names], child_env(),
                                             args.timeout)
    wall = time.monotonic() - start
    return [run_all.finished_run(args, name, command, workload, mode, {"lockstep_rounds": rounds}, code, wall)
            for name, command, mode, code in zip(names, commands, MODES, codes)]


def step_pair_ratio(none: dict, deepum: dict) -> float:
    """A lockstep pair's ratio: the median over the measured steps of deepum's step over none's same
    step (the steps after the larger of the two runs' warm-ups)."""
    first = max(none["warmup"], deepum["warmup"])
    return statistics.median(d / n for n, d in zip(none["step_s"][first:], deepum["step_s"][first:]))


def deepum_memory(deepums: list[dict]) -> str | None:
    """Which memory deepum's runs had their segments in (stats()["device_memory"]): "device",
    "managed" or "mixed"; None when a record does not say."""
    kinds = {(r.get("stats") or {}).get("device_memory") for r in deepums}
    if None in kinds:
        return None
    return "mixed" if len(kinds) > 1 else "device" if kinds == {True} else "managed"


def compare(nones: list[dict], deepums: list[dict], tolerance: float, in_lockstep: bool = False) -> dict:
    """The check for one workload from the records of its runs in each mode: medians (s, the median
    of the runs' medians, and each run's), ratio deepum / none, within_tolerance (ratio <= 1 +
    tolerance), deepum's hook time per step (s, median over its runs), bitwise equality of all runs,
    which memory deepum's segments were in (deepum_memory), and pair_verdict's figures for the runs
    taken in pairs (each pair's ratio of run medians, or in_lockstep, step_pair_ratio); a run that did
    not succeed gives status "incomplete" and no ratio."""
    if any(r.get("status") != "ok" for r in nones + deepums):
        return {"status": "incomplete", "none_status": [r.get("status") for r in nones],
                "deepum_status": [r.get("status") for r in deepums], "ratio": None, "within_tolerance": False}
    none_runs = [r["step_s_median"] for r in nones]
    deepum_runs = [r["step_s_median"] for r in deepums]
    ratio = statistics.median(deepum_runs) / statistics.median(none_runs)
    return {"status": "ok", "workload_id": nones[0]["workload_id"], "runs": len(nones),
            "none_step_s_median": statistics.median(none_runs), "deepum_step_s_median": statistics.median(deepum_runs),
            "none_run_medians": none_runs, "deepum_run_medians": deepum_runs, "ratio": ratio,
            "within_tolerance": ratio <= 1 + tolerance,
            "measured_steps": min(r["measured_steps"] for r in nones + deepums),
            "deepum_hook_s_per_step": statistics.median(r.get("hook_s_per_step") or 0.0 for r in deepums),
            "bitwise_equal": len({r["parameter_sha256"] for r in nones + deepums}) == 1,
            "deepum_memory": deepum_memory(deepums), "lockstep": in_lockstep,
            **pair_verdict([step_pair_ratio(n, d) for n, d in zip(nones, deepums)] if in_lockstep else
                           [d / n for n, d in zip(none_runs, deepum_runs)], tolerance)}


def main(argv=None) -> int:
    args = parse_args(argv)
    command = run_all.script_command("no_pressure.py", argv)
    if not run_all.ready_to_run(args):
        return 1
    if args.cpus:
        os.sched_setaffinity(0, args.cpus)  # the runs, started from here, inherit it
    results, device = {}, None

    def write_record() -> None:  # after each workload: a call cut short keeps the workloads it finished
        record = {"command": command, "device": device,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "tolerance": args.tolerance, "cpus": args.cpus, "lockstep": args.lockstep,
                  "deepum_config": args.deepum_config_values, "workloads": results,
                  "all_within_tolerance": all(r["within_tolerance"] for r in results.values())}
        (args.out / "no_pressure.json").write_text(json.dumps(record, indent=1))
        plot_pairs(record, args.out / "no_pressure.png")

    for workload in args.workloads:
        nones, deepums = [], []
        for repeat in range(args.repeats):
            if args.lockstep:
                none, deepum = run_pair_in_lockstep(args, workload, repeat)
            else:
                none, deepum = (run_all.run_one(args, workload, mode, None, capacity_of(args, workload, mode), repeat,
                                                run_name(args, workload, mode)) for mode in MODES)
            nones.append(none)
            deepums.append(deepum)
        results[workload] = {**compare(nones, deepums, args.tolerance, args.lockstep),
                             "deepum_capacity_bytes": args.capacities.get(workload)}
        device = device or nones[0].get("device")
        if not args.dry_run:
            write_record()
            print(summary_line(workload, results[workload], args.tolerance), flush=True)
    return 0


def plot_pairs(record: dict, path: Path) -> None:
    """Per workload checked, each pair's ratio (deepum / none), the pairs' median and the sign test's
    interval of the median pair, against the accepted bound (1 + tolerance); nothing where none is."""
    checked = {w: r for w, r in record["workloads"].items() if r.get("ratio") is not None}
    if not checked:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.2 + 1.6 * len(checked), 3.6))
    for x, (workload, result) in enumerate(checked.items()):
        ratios = result["pair_ratios"]
        spread = [x - 0.12 + 0.24 * i / max(1, len(ratios) - 1) for i in range(len(ratios))]
        ax.scatter(spread, ratios, s=14, color="tab:blue", label="pairs" if x == 0 else None)
        low, high = result["pair_interval"]
        ax.vlines(x + 0.25, low, high, color="black", lw=2,
                  label=f"interval ({result['pair_interval_confidence']:.0%})" if x == 0 else None)
        ax.scatter([x + 0.25], [result["pair_median"]], marker="_", s=200, color="black",
                   label="pairs' median" if x == 0 else None)
    ax.axhline(1 + record["tolerance"], ls="--", color="tab:red", label=f"bound {1 + record['tolerance']:.2f}x")
    ax.set_xticks(range(len(checked)), list(checked), fontsize=8)
    ax.set_xlim(-0.6, len(checked) - 0.4)
    ax.set_ylabel("deepum step / none step")
    ax.set_title("lockstep pairs" if record.get("lockstep") else "alternated pairs", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def summary_line(workload: str, result: dict, tolerance: float) -> str:
    """One workload's result as printed once its runs are done."""
    ratio = "–" if result["ratio"] is None else f"{result['ratio']:.3f}"
    pairs = ("" if result["ratio"] is None else
             f"; pairs' median {result['pair_median']:.3f}, {result['pair_interval'][0]:.3f}–"
             f"{result['pair_interval'][1]:.3f} ({result['pair_interval_confidence']:.0%} confidence): "
             f"{result['verdict']}" + (f"; deepum on {result['deepum_memory']} memory" if result["deepum_memory"] else ""))
    bound = f"{tolerance:.0%}" if tolerance < 0.5 else f"{1 + tolerance:.2f}x"  # a step under pressure: as a ratio
    return f"{workload}: deepum / none = {ratio} ({'within' if result['within_tolerance'] else 'NOT within'} {bound}){pairs}"


if __name__ == "__main__":
    sys.exit(main())
