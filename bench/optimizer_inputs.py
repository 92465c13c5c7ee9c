"""When does the policy bring in the optimizer step's blocks? Replays a recorded trace through the
native policy core (mode deepum, the engine's defaults or --config) at --capacity, told the trace's
memory events and iterations as bench/policy_cost.py tells them, and counts the moves decided at the
launches of one iteration from --before launches ahead of its optimizer step (from the first kernel
whose name holds --optimizer-kernel) to its end: by move, and each prefetch by the next launch that
uses its block (the forward and backward passes before the step, the step, the next iteration's first
--next-launches launches, a later one, none). On the GPU a move decided at launch k runs once the work launched before k is done: what is
decided shortly before the optimizer step runs during it, beside its reads and writes over the link.

Writes one JSON record: command, date, revision, the trace, capacity, config, the iteration, its
optimizer step's first launch (in the iteration) and launches; the budget in blocks, the distinct
blocks the step uses, and before the decision at the window's first launch and at the step's first
(`occupancy`) the resident blocks, and of the step's blocks those resident and those mapped from the
host; per window ("before": the --before
launches ahead of the step, "during": the step's) the moves {move: [decisions, bytes]} and the
prefetches by next use {use: [decisions, bytes]}; and per launch offset from the step's first launch
the bytes prefetched for the step itself.

    python3 bench/optimizer_inputs.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 --iteration 4 -o bench/results/optimizer_tail/optimizer_inputs.json
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import shlex
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum.offline.simulator import kernel_kinds  # noqa: E402
from deepum.offline.trace_format import BLOCK_BYTES  # noqa: E402

import replay_arguments  # noqa: E402
from policy_cost import TraceMemory, new_policy  # noqa: E402
from replay_phases import optimizer_step  # noqa: E402
from replay_throughput import source_revision  # noqa: E402

NEXT_USES = ("the passes before the step", "the optimizer step", "the next iteration's first launches", "later",
             "none")
"""The classes of a prefetched block's next use, in the order the record lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("--iteration", type=int, default=4, help="the iteration looked at (default %(default)s)")
    parser.add_argument("--before", type=int, default=64,
                        help="launches ahead of the optimizer step whose decisions count (default %(default)s)")
    parser.add_argument("--next-launches", type=int, default=64,
                        help="the next iteration's first launches counted apart (default %(default)s)")
    parser.add_argument("--optimizer-kernel", default="adam",
                        help="a substring of the optimizer step's first kernel's name (default: %(default)s)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    trace = args.trace_data
    iterations = int(trace.iteration_first_kernel.size)
    if not 0 <= args.iteration < iterations - 1:
        parser.error(f"--iteration must be in [0, {iterations - 1}): an iteration the trace holds the next one of")
    for flag, value in (("--before", args.before), ("--next-launches", args.next_launches)):
        if not 0 <= value <= 100_000:
            parser.error(f"{flag} must be from 0 to 100000, got {value}")
    lo, args.iteration_end, first = optimizer_step(trace, args.iteration, args.optimizer_kernel)
    if first is None:
        parser.error(f"--optimizer-kernel {args.optimizer_kernel!r} names no kernel of iteration {args.iteration}")
    args.iteration_start, args.optimizer = lo, lo + first
    return args


def next_uses(trace) -> callable:
    """A function (block, launch) -> the first launch after `launch` that uses `block` (None: none)."""
    offsets, blocks = trace.access_offsets.astype(np.int64), trace.access_block.astype(np.int64)
    launches = np.repeat(np.arange(trace.num_kernels), np.diff(offsets))
    uses = collections.defaultdict(list)
    for block, launch in zip(blocks.tolist(), launches.tolist()):
        uses[block].append(launch)

    def after(block: int, launch: int) -> int | None:
        found = uses.get(block, [])
        i = np.searchsorted(found, launch, side="right")
        return int(found[i]) if i < len(found) else None
    return after


def replay(args) -> dict:
    """The moves decided around the optimizer step of args.iteration (the record's windows)."""
    trace = args.trace_data
    lo, hi = args.iteration_start, args.iteration_end
    start = max(lo, args.optimizer - args.before)
    policy = new_policy(args.capacity, args.deepum_config)
    memory, after = TraceMemory(trace, policy), next_uses(trace)
    ids, offsets = trace.kernel_exec_id.astype(np.uint64), trace.access_offsets.astype(np.int64)
    blocks, kinds = trace.access_block.astype(np.int64), kernel_kinds(trace)
    iteration_starts = {k for k in trace.iteration_first_kernel.tolist() if k > 0}
    windows = {name: {"moves": collections.Counter(), "prefetches": collections.Counter()} for name in ("before", "during")}
    late = collections.Counter()  # launch offset from the step's first -> bytes prefetched for the step
    every, used = np.unique(blocks).tolist(), np.unique(blocks[offsets[args.optimizer]:offsets[hi]]).tolist()
    occupancy = {}
    uses_from = [args.optimizer, hi, hi + args.next_launches]  # where each class of NEXT_USES after the first starts
    for k in range(hi):
        memory.apply_through(k - 1)
        if k in iteration_starts:
            policy.next_iteration()
        for name, at in (("window_start", start), ("step_start", args.optimizer)):
            if k == at:
                occupancy[name] = {"resident_blocks": sum(map(policy.resident, every)),
                                   "step_blocks_resident": sum(map(policy.resident, used)),
                                   "step_blocks_host_mapped": sum(map(policy.host_mapped, used))}
        _, moves = policy.on_launch(int(ids[k]), blocks[offsets[k]:offsets[k + 1]].tolist(), bool(kinds[k] & 1),
                                    bool(kinds[k] & 2), [])
        if k < start:
            continue
        window = windows["before" if k < args.optimizer else "during"]
        for move, block in moves:
            window["moves"][move] += 1
            if move != "prefetch":
                continue
            use = after(block, k)
            kind = NEXT_USES[4] if use is None else NEXT_USES[int(np.searchsorted(uses_from, use, side="right"))]
            window["prefetches"][kind] += 1
            if kind == NEXT_USES[1]:
                late[k - args.optimizer] += BLOCK_BYTES

    def table(counts: collections.Counter, order) -> dict:
        return {key: [counts[key], counts[key] * BLOCK_BYTES] for key in order if counts[key]}
    return {
        "optimizer_first_launch": args.optimizer - lo, "optimizer_launches": hi - args.optimizer,
        "windows": {name: {"launches": (args.optimizer - start) if name == "before" else (hi - args.optimizer),
                           "moves": table(w["moves"], sorted(w["moves"])),
                           "prefetches_by_next_use": table(w["prefetches"], NEXT_USES)}
                    for name, w in windows.items()},
        "optimizer_prefetch_bytes_by_offset": {str(offset): late[offset] for offset in sorted(late)},
        "capacity_blocks": args.capacity // BLOCK_BYTES, "step_blocks": len(used), "occupancy": occupancy,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    found = replay(args)
    for name, window in found["windows"].items():
        print(f"{name} the optimizer step ({window['launches']} launches): moves {window['moves']}; "
              f"prefetches by next use {window['prefetches_by_next_use']}", flush=True)
    for name, counts in found["occupancy"].items():
        print(f"at the {name.replace('_', ' ')}: {counts} (budget {found['capacity_blocks']} blocks, the step uses "
              f"{found['step_blocks']})", flush=True)
    record = {"command": shlex.join([Path(sys.executable).name, *sys.argv]), "revision": source_revision(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trace": str(args.trace), "capacity_bytes": args.capacity, "config": args.deepum_config.to_dict(),
              "iteration": args.iteration, "before": args.before, "next_launches": args.next_launches, **found}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
