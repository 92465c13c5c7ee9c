"""How far ahead of its use does the policy bring each block in, and where in the iteration?

Replays a recorded trace through the native policy core launch by launch, as bench/decision_repeats.py
does (the trace's memory events between launches), and for each iteration from --from-iteration on
measures each block brought in (a prefetch or a population decided at launch k) by its lead: the
launches from k to the block's next use, in this iteration or the next (none: never used again in the
trace). A block whose lead exceeds --early launches came in too early, for a use far away: it holds
GPU memory all that time and moved when a wrong prediction said so. Per tenth of each iteration's
launches: the blocks brought in, those too early, and the launches that decided a move other than their own
blocks' (each one hand-over to the engine's worker).

Writes one JSON record (command, machine, date, trace, capacity, config, --early, and per iteration
the three rows by tenth) and prints the rows.

    python3 bench/prefetch_lead.py --trace bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz \\
        --capacity 6138363904 --from-iteration 10 -o bench/results/turn_prefetches/gpt2_defaults.json
"""
from __future__ import annotations

import argparse
import bisect
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import replay_arguments  # noqa: E402
from decision_repeats import launch_plans  # noqa: E402
from replay_throughput import write_simulator_record  # noqa: E402

TENTHS = 10
BROUGHT_IN = ("prefetch", "populate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    replay_arguments.add_from_iteration(parser)
    parser.add_argument("--early", type=int, default=256,
                        help="launches of lead past which a block came in too early (1 to 1000000, "
                             "default %(default)s)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None):
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    replay_arguments.check_from_iteration(parser, args)
    if not 1 <= args.early <= 1_000_000:
        parser.error(f"--early must be from 1 to 1000000, got {args.early}")
    return args


def leads(launches: list[tuple]) -> list[list[tuple[str, int]]]:
    """Per launch, each block its plan brought in with its lead (launches to the block's next use at
    or after that launch; None where the trace never uses it again)."""
    uses: dict[int, list[int]] = defaultdict(list)
    for k, (_, blocks, _) in enumerate(launches):
        for b in blocks:
            uses[b].append(k)
    out = []
    for k, (_, _, plan) in enumerate(launches):
        row = []
        for move, b in plan:
            if move in BROUGHT_IN:
                at = uses.get(b, [])
                i = bisect.bisect_left(at, k)
                row.append((move, at[i] - k if i < len(at) else None))
        out.append(row)
    return out


def by_tenth(trace, launches: list[tuple], lead: list[list[tuple[str, int]]], early: int, iteration: int) -> dict:
    """One iteration's rows by tenth of its launches: blocks brought in, those whose lead (leads())
    exceeds `early` or that are never used again, launches that handed moves over."""
    kernels = trace.iteration_kernels(iteration)
    first, end = kernels.start, kernels.stop
    rows = {"brought_in": [0] * TENTHS, "early": [0] * TENTHS, "hand_overs": [0] * TENTHS}
    for k in range(first, end):
        tenth = min(TENTHS - 1, TENTHS * (k - first) // (end - first))
        rows["brought_in"][tenth] += len(lead[k])
        rows["early"][tenth] += sum(d is None or d > early for _, d in lead[k])
        rows["hand_overs"][tenth] += any(move != "demand" for move, _ in launches[k][2])
    return {"iteration": iteration, "launches": end - first, **rows}


def main(argv=None) -> int:
    args = parse_args(argv)
    trace = args.trace_data
    launches, _, _ = launch_plans(trace, args.capacity, args.deepum_config)
    lead = leads(launches)
    iterations = [by_tenth(trace, launches, lead, args.early, i)
                  for i in range(args.from_iteration, int(trace.iteration_first_kernel.size))]
    for it in iterations:
        print(f"iteration {it['iteration']} ({it['launches']} launches), by tenth:")
        for name in ("brought_in", "early", "hand_overs"):
            print(f"  {name:11s}" + "".join(f"{n:6d}" for n in it[name]) + f"   all {sum(it[name])}")
    write_simulator_record(args.output, {"trace": str(args.trace), "capacity_bytes": args.capacity,
                                         "config": args.deepum_config.to_dict(), "early": args.early,
                                         "iterations": iterations})
    return 0


if __name__ == "__main__":
    sys.exit(main())
