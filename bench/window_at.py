"""What does the prediction window hold at one launch of a recorded trace, against what comes next?

Feeds the native correlation predictor a recorded trace's launches (each exec ID, then each block it
used, as the policy teaches it with learn_from "accesses", an iteration ending at each iteration's
first launch) up to and including launch --launch of iteration --iteration, without a budget or any
move: the window depends only on the launches. Then, for each window entry j (0: the running launch),
the exec ID predicted, the places in the iteration where that exec ID launched, the blocks predicted,
and how many of them the launch that came j launches later actually used.

Writes one JSON record (command, machine, date, trace, config, the launch and the entries) and
prints the entries.

    python3 bench/window_at.py --trace bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz \\
        --iteration 10 --launch 1392 -o bench/results/turn_prefetches/window_gpt2_defaults.json
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import replay_arguments  # noqa: E402
from deepum.config import DeepUMConfig  # noqa: E402
from deepum.specs.predictor import make_predictor  # noqa: E402
from replay_throughput import write_simulator_record  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser, capacity=False)
    parser.add_argument("--iteration", type=int, required=True, help="the iteration of the launch")
    parser.add_argument("--launch", type=int, required=True, help="the launch, counted from the iteration's first")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    iterations = int(args.trace_data.iteration_first_kernel.size)
    if not 0 <= args.iteration < iterations:
        parser.error(f"--iteration must be in [0, {iterations}), the trace's iterations")
    launches = len(args.trace_data.iteration_kernels(args.iteration))
    if not 0 <= args.launch < launches:
        parser.error(f"--launch must be in [0, {launches}), iteration {args.iteration}'s launches")
    return args


def window_at(trace, config: DeepUMConfig, iteration: int, launch: int) -> list[dict]:
    """The window's entries after the launch: exec ID, the places of the iteration where it launched,
    blocks predicted, and those of them the launch j later used (None past the trace's end)."""
    kernels = trace.iteration_kernels(iteration)
    first = kernels.start
    predictor = make_predictor(config, native=True)
    starts = set(trace.iteration_first_kernel.tolist()[1:])
    for k in range(first + launch + 1):
        if k in starts:
            predictor.start_iteration()
        predictor.on_kernel(int(trace.kernel_exec_id[k]))
        for b in trace.kernel_blocks(k).tolist():
            predictor.on_fault(b)
    places = defaultdict(list)
    for k in kernels:
        places[int(trace.kernel_exec_id[k])].append(k - first)
    entries = []
    for j, entry in enumerate(predictor.window):
        k = first + launch + j
        used = len(set(entry.blocks).intersection(trace.kernel_blocks(k).tolist())) if k < trace.num_kernels else None
        entries.append({"entry": j, "exec_id": int(entry.exec_id), "places": places.get(int(entry.exec_id), []),
                        "blocks": len(entry.blocks), "used_by_the_launch_then": used})
    return entries


def main(argv=None) -> int:
    args = parse_args(argv)
    entries = window_at(args.trace_data, args.deepum_config, args.iteration, args.launch)
    print(f"the window after launch {args.launch} of iteration {args.iteration}: entry, places of its exec ID "
          f"in the iteration, blocks predicted, of them used by the launch that came then")
    for e in entries:
        places = ",".join(map(str, e["places"][:4])) + ("…" if len(e["places"]) > 4 else "") or "none"
        print(f"  {e['entry']:3d}  at {places:24s} {e['blocks']:6d} {e['used_by_the_launch_then']}")
    write_simulator_record(args.output, {"trace": str(args.trace), "config": args.deepum_config.to_dict(),
                                         "iteration": args.iteration, "launch": args.launch, "entries": entries})
    return 0


if __name__ == "__main__":
    sys.exit(main())
