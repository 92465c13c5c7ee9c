"""What does the policy's decision cost per kernel launch on the CPU, with warm and with cold caches?

Replays a recorded trace's launches through the native policy core (deepum._native.Policy, mode
deepum, the engine's defaults or --config) at --capacity, timing each launch's decision
(Policy::on_launch, the part of the launch hook that stats() counts in hook_policy_ns less
hook_release_ns and hook_translate_ns). Between launches, untimed, the policy is told the trace's
memory events (which blocks are dead, which segments are freed) and its iterations' starts. Before
each launch a pass writes every cache line of a buffer of each --displace size: it stands for the
framework's own work between two launches, which pushes the policy's data out of the CPU's caches (0:
none, caches warm). The policy's memory facts are a set of dead blocks here and the memory map in the
engine, and no launch is told which of its blocks are fresh.

Writes one JSON record: command, the CPU, the source revision, date, the trace, launches per
iteration, and per displacement the median, mean and 90th percentile of the per-launch time (µs)
over the iterations from --from-iteration on, the mean times launches per iteration (ms, the
policy's part of the launching thread's time a step), and by the launches' block counts (bins from
BLOCK_BINS) each bin's mean and share of the time: each the median over --repeats replays, each
replay's figures beside them.

    python3 bench/policy_cost.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 -o bench/results/launching_thread_time/policy_cost_this_cpu.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum import _native  # noqa: E402
from deepum.config import DeepUMConfig  # noqa: E402
from deepum.offline.simulator import kernel_kinds  # noqa: E402
from deepum.offline.trace_format import (BLOCK_BYTES, MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC,  # noqa: E402
                                         MEM_SEGMENT_FREE)
from deepum.units import parse_size  # noqa: E402
import replay_arguments  # noqa: E402
from replay_throughput import cpu_model, source_revision  # noqa: E402

DEFAULT_DISPLACE = "0,1MiB,4MiB,16MiB"
BLOCK_BINS = [0, 4, 16, 64, 256]
"""Lower ends of the bins of launches by block count that each case is also split by."""
BLOCK_SHIFT = BLOCK_BYTES.bit_length() - 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("--displace", default=DEFAULT_DISPLACE,
                        help="bytes written between launches, comma-separated sizes (default: %(default)s)")
    replay_arguments.add_from_iteration(parser)
    parser.add_argument("--repeats", type=int, default=3,
                        help="replays per displacement, each in a fresh policy (1 to 100, default %(default)s)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """The arguments (of `parser`, build_parser()'s by default), checked; errors exit with status 2
    and one line on stderr."""
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    try:
        args.displace = [parse_size(size) for size in args.displace.split(",")]
    except ValueError as exc:
        parser.error(f"--displace: {exc}")
    if any(size < 0 or size > 1 << 30 for size in args.displace):
        parser.error("--displace sizes must be from 0 to 1GiB")
    if not 1 <= args.repeats <= 100:
        parser.error(f"--repeats must be from 1 to 100, got {args.repeats}")
    replay_arguments.check_from_iteration(parser, args)
    return args


class TraceMemory:
    """The trace's allocator events told to a policy as its memory facts, as the engine's memory map
    tells them: a block is dead once it was allocated and no live allocation overlaps it, and not
    memory while a segment that held it is freed (its blocks released then)."""

    def __init__(self, trace, policy):
        self.trace, self.policy = trace, policy
        self.live_bytes: dict[int, int] = {}
        self.next_event = 0

    def apply_through(self, kernel: int) -> None:
        """Applies the events recorded up to and including kernel `kernel`'s launch (-1: before any)."""
        t = self.trace
        while self.next_event < t.mem_action.size and t.mem_kernel[self.next_event] <= kernel:
            e = self.next_event
            self.next_event += 1
            start, end = int(t.mem_address[e]), int(t.mem_address[e]) + int(t.mem_bytes[e])
            action = int(t.mem_action[e])
            for number in range(start >> BLOCK_SHIFT, ((end - 1) >> BLOCK_SHIFT) + 1 if end > start else 0):
                overlap = min(end, (number + 1) << BLOCK_SHIFT) - max(start, number << BLOCK_SHIFT)
                if action == MEM_ALLOC:
                    self.live_bytes[number] = self.live_bytes.get(number, 0) + overlap
                    self.policy.set_dead(number, False)
                elif action == MEM_FREE and number in self.live_bytes:
                    self.live_bytes[number] -= overlap
                    self.policy.set_dead(number, self.live_bytes[number] <= 0)
                elif action == MEM_SEGMENT_ALLOC:
                    self.policy.set_absent(number, False)
                elif action == MEM_SEGMENT_FREE:
                    self.policy.set_absent(number, True)
                    self.policy.release(number)


def new_policy(capacity: int, config: DeepUMConfig):
    """A fresh native policy, mode deepum, at `capacity` bytes."""
    return _native.Policy("deepum", capacity // BLOCK_BYTES, config.to_dict())


def time_launches(trace, policy, displace: int, displace_from: int = 0, on_displace=None,
                  until: int | None = None) -> np.ndarray:
    """Each launch's decision time, ns, through `policy`, told the trace's memory events between
    launches and its iterations' starts (both untimed), for the kernels before `until` (None: all).
    Launches before kernel `displace_from` run without the displacing pass; `on_displace` (if given)
    is called once before the first that runs with it."""
    memory = TraceMemory(trace, policy)
    ids, offsets = trace.kernel_exec_id.astype(np.uint64), trace.access_offsets.astype(np.int64)
    blocks, kinds = trace.access_block.astype(np.int64), kernel_kinds(trace)
    # Runs of launches with no memory event, no iteration start and no start of the displacing inside.
    end = trace.num_kernels if until is None else min(until, trace.num_kernels)
    cuts = np.unique(np.concatenate([[0, end, min(max(displace_from, 0), end)], trace.iteration_first_kernel,
                                     trace.mem_kernel[(trace.mem_kernel >= 0)] + 1]))
    cuts = cuts[(cuts >= 0) & (cuts <= end)]
    starts = {k for k in trace.iteration_first_kernel.tolist() if k > 0}
    times, displacing = [], False
    for first, last in zip(cuts[:-1], cuts[1:]):
        memory.apply_through(int(first) - 1)
        if first in starts:
            policy.next_iteration()
        if first >= displace_from and not displacing:
            displacing = True
            if on_displace:
                on_displace()
        times.append(policy.time_launches(ids[first:last], offsets[first:last + 1] - offsets[first],
                                          blocks[offsets[first]:offsets[last]], kinds[first:last],
                                          displace if displacing else 0))
    return np.concatenate(times)


def block_bins(blocks_per_launch: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The launches by how many blocks each uses, one (name, mask) per bin of BLOCK_BINS that holds any."""
    bins = []
    for low, high in zip(BLOCK_BINS, BLOCK_BINS[1:] + [np.inf]):
        mask = (blocks_per_launch >= low) & (blocks_per_launch < high)
        if mask.any():
            bins.append((f"{low}_{'up' if high == np.inf else high}", mask))
    return bins


def summary(times_ns: np.ndarray, launches_per_iteration: float, bins: list[tuple[str, np.ndarray]]) -> dict:
    """Per-launch figures (µs), their mean over an iteration's launches (ms), and for each of `bins`
    (block_bins of the same launches) its mean (µs) and share of the time."""
    out = {"median_us": float(np.median(times_ns)) / 1e3, "mean_us": float(times_ns.mean()) / 1e3,
           "p90_us": float(np.percentile(times_ns, 90)) / 1e3,
           "per_iteration_ms": float(times_ns.mean()) * launches_per_iteration / 1e6}
    for name, mask in bins:
        out[f"mean_us_blocks_{name}"] = float(times_ns[mask].mean()) / 1e3
        out[f"share_blocks_{name}"] = float(times_ns[mask].sum() / times_ns.sum())
    return out


def median_of(repeats: list[dict]) -> dict:
    """Each figure's median over the repeats' summaries."""
    return {key: float(np.median([r[key] for r in repeats])) for key in repeats[0]}


def main(argv=None) -> int:
    args = parse_args(argv)
    trace = args.trace_data
    first = int(trace.iteration_first_kernel[args.from_iteration])
    launches_per_iteration = (trace.num_kernels - first) / (trace.iteration_first_kernel.size - args.from_iteration)
    bins = block_bins(np.diff(trace.access_offsets)[first:])
    cases = []
    for displace in args.displace:
        repeats = [summary(time_launches(trace, new_policy(args.capacity, args.deepum_config), displace)[first:],
                           launches_per_iteration, bins) for _ in range(args.repeats)]
        cases.append({"displace_bytes": displace, **median_of(repeats), "repeats": repeats})
        print(f"displace {displace >> 10} KiB: median {cases[-1]['median_us']:.2f} µs, "
              f"mean {cases[-1]['mean_us']:.2f} µs a launch (medians of {args.repeats})", flush=True)
    record = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]), "cpu": cpu_model(),
        "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "trace": str(args.trace), "capacity_bytes": args.capacity,
        "config": args.deepum_config.to_dict(), "from_iteration": args.from_iteration,
        "launches_per_iteration": launches_per_iteration,
        "launches_by_blocks": {name: int(mask.sum()) for name, mask in bins}, "cases": cases,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
