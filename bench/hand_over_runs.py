"""How many commands the launch hook hands over, and in how many runs: replays a recorded trace through
the native policy (mode deepum at --capacity, the config's knobs), launch by launch, and puts each
launch's moves in the order the engine hands them over (Engine::submit: host mappings; evictions and
discards by block; prefetches and populations in decision order). Per iteration it counts the
launches that hand something over, the commands, and the runs: maximal stretches of one kind of move
on consecutive blocks (portable numbers, which are consecutive only within a segment), which one
command per run would hand over instead of one per block.

Writes one JSON record: command, revision, date, the trace, capacity, config, and per iteration the
launches, hand-overs, commands by move and runs by move.

    python3 bench/hand_over_runs.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 -o bench/results/submit_split/hand_over_runs.json
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum.offline.simulator import kernel_kinds  # noqa: E402

import policy_cost  # noqa: E402
import replay_arguments  # noqa: E402
from replay_throughput import source_revision  # noqa: E402

MAPPINGS, DROPS, ARRIVALS = ("map_host", "map_gpu"), ("evict", "discard"), ("prefetch", "populate")


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    return args


def hand_over_order(moves: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A launch's moves (name, block) in the order the engine hands them over; demand moves, which the
    hook issues on the launching stream itself, left out."""
    return ([m for m in moves if m[0] in MAPPINGS] + sorted((m for m in moves if m[0] in DROPS), key=lambda m: m[1])
            + [m for m in moves if m[0] in ARRIVALS])


def runs(order: list[tuple[str, int]]) -> collections.Counter:
    """Maximal stretches of `order` of one move on consecutive blocks, counted by move."""
    counted = collections.Counter()
    for i, (move, block) in enumerate(order):
        if i == 0 or order[i - 1] != (move, block - 1):
            counted[move] += 1
    return counted


def replay(trace, capacity: int, config) -> list[dict]:
    """Per iteration of the trace (launches before its first iteration left out, though decided):
    launches, hand-overs (launches with a command), commands and runs by move."""
    policy = policy_cost.new_policy(capacity, config)
    memory = policy_cost.TraceMemory(trace, policy)
    kinds = kernel_kinds(trace)
    offsets, blocks = trace.access_offsets, trace.access_block
    firsts = set(trace.iteration_first_kernel.tolist())
    iterations = []
    for k in range(trace.num_kernels):
        memory.apply_through(k - 1)
        if k in firsts:
            if k > 0:
                policy.next_iteration()
            iterations.append({"launches": 0, "hand_overs": 0, "commands": collections.Counter(),
                               "runs": collections.Counter()})
        _, moves = policy.on_launch(int(trace.kernel_exec_id[k]), blocks[offsets[k]:offsets[k + 1]].tolist(),
                                    bool(kinds[k] & 1), bool(kinds[k] & 2), [])
        if not iterations:
            continue
        row = iterations[-1]
        row["launches"] += 1
        order = hand_over_order(moves)
        if order:
            row["hand_overs"] += 1
            row["commands"].update(move for move, _ in order)
            row["runs"].update(runs(order))
    return [{**row, "commands": dict(row["commands"]), "runs": dict(row["runs"])} for row in iterations]


def main(argv=None) -> int:
    args = parse_args(argv)
    trace = args.trace_data
    iterations = replay(trace, args.capacity, args.deepum_config)
    record = {
        "command": "python3 bench/hand_over_runs.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "trace": str(args.trace), "capacity_bytes": args.capacity, "config": args.deepum_config.to_dict(),
        "iterations": iterations,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    for i, row in enumerate(iterations):
        commands, in_runs = sum(row["commands"].values()), sum(row["runs"].values())
        print(f"iteration {i}: {row['launches']} launches, {row['hand_overs']} hand-overs, {commands} commands "
              f"in {in_runs} runs ({commands / max(in_runs, 1):.2f} a run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
