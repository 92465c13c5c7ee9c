"""How many cache misses does the policy's decision take per kernel launch, with cold caches?

Counts, where bench/policy_cost.py times: a recorded trace's launches go through the native policy
core (policy_cost's replay, the trace's memory events and iteration starts told between launches),
here under valgrind's callgrind with its cache simulation (64-byte lines; first-level data cache 48 KiB
12-way; last level --ll-bytes, 16-way), counting only inside Policy::on_launch. The launches before
--from-iteration run with warm caches and are not counted (callgrind's counters are zeroed after
them); those of the --iterations iterations from it each follow a pass writing --displace bytes (the
framework's own work between launches, which must exceed the last level to leave it cold). The
counts are exact for the simulated caches and the same on every machine for one build; they say
which change touches less memory, not how long a miss takes.

Writes one JSON record: command, the source revision, date, trace, capacity, config, the simulated
caches, the measured launches with their kernel hits and misses, and per measured launch the
instructions, data reads and writes, first-level and last-level misses (`ll_misses` = reads + writes).

    python3 bench/policy_cache_misses.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 -o bench/results/shared_walks/cache_misses_this_build.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import policy_cost  # noqa: E402
import replay_arguments  # noqa: E402
from deepum.units import parse_size  # noqa: E402
from replay_throughput import source_revision  # noqa: E402

FIRST_LEVEL = "49152,12,64"
"""callgrind's --D1: bytes, ways, line bytes."""
EVENTS = {"Ir": "instructions", "Dr": "data_reads", "Dw": "data_writes", "D1mr": "l1_read_misses",
          "D1mw": "l1_write_misses", "DLmr": "ll_read_misses", "DLmw": "ll_write_misses"}
"""callgrind's events, by the names the record gives them (per measured launch)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    replay_arguments.add_from_iteration(parser)
    parser.add_argument("--iterations", type=int, default=2,
                        help="iterations counted from --from-iteration (default %(default)s)")
    parser.add_argument("--ll-bytes", default="1MiB", help="simulated last-level cache (default %(default)s)")
    parser.add_argument("--displace", default="2MiB",
                        help="bytes written before each counted launch, more than --ll-bytes (default %(default)s)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    replay_arguments.check_from_iteration(parser, args)
    iterations = int(args.trace_data.iteration_first_kernel.size)
    if not 1 <= args.iterations <= iterations - args.from_iteration:
        parser.error(f"--iterations must be from 1 to {iterations - args.from_iteration}, the trace's iterations "
                     f"from --from-iteration on")
    try:
        args.ll_bytes, args.displace = parse_size(args.ll_bytes), parse_size(args.displace)
    except ValueError as exc:
        parser.error(str(exc))
    if not 64 * 1024 <= args.ll_bytes <= 1 << 30 or args.ll_bytes & (args.ll_bytes - 1):
        parser.error("--ll-bytes must be a power of two from 64KiB to 1GiB")
    if not args.ll_bytes < args.displace <= 1 << 30:
        parser.error("--displace must exceed --ll-bytes (and be at most 1GiB): the counted launches start cold")
    if args.child is None and not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        parser.error("valgrind (with callgrind_control) is not installed")
    return args


def measured_kernels(trace, from_iteration: int, iterations: int) -> tuple[int, int]:
    """The kernels [first, end) of `iterations` iterations from `from_iteration`."""
    starts = trace.iteration_first_kernel.tolist() + [trace.num_kernels]
    return starts[from_iteration], starts[from_iteration + iterations]


def child(args) -> int:
    """Under callgrind: the replay, the counters zeroed before the first counted launch; writes the
    counted launches' kernel hits and misses to args.child."""
    trace = args.trace_data
    first, end = measured_kernels(trace, args.from_iteration, args.iterations)
    policy = policy_cost.new_policy(args.capacity, args.deepum_config)
    before = {}

    def zero_counters():
        subprocess.run(["callgrind_control", "-z", str(os.getpid())], check=True, capture_output=True)
        before.update(hits=policy.kernel_hits, misses=policy.kernel_misses)

    policy_cost.time_launches(trace, policy, args.displace, displace_from=first, on_displace=zero_counters, until=end)
    args.child.write_text(json.dumps({"kernel_hits": policy.kernel_hits - before["hits"],
                                      "kernel_misses": policy.kernel_misses - before["misses"]}))
    return 0


def read_totals(callgrind_out: Path) -> dict[str, int]:
    """The event totals of a callgrind output file."""
    names = totals = None
    for line in callgrind_out.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(v) for v in line.split()[1:]]
    if not names or not totals:
        raise ValueError(f"{callgrind_out}: no event totals")
    return dict(zip(names, totals))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        return child(args)
    with tempfile.TemporaryDirectory() as scratch:
        out, counted = Path(scratch) / "callgrind.out", Path(scratch) / "counted.json"
        forwarded = list(argv if argv is not None else sys.argv[1:])
        command = ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--D1={FIRST_LEVEL}",
                   f"--LL={args.ll_bytes},16,64", "--toggle-collect=deepum::Policy::on_launch*",
                   f"--callgrind-out-file={out}", sys.executable, str(Path(__file__).resolve()), *forwarded,
                   "--child", str(counted)]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0 or not counted.exists():
            tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"policy_cache_misses: the replay under callgrind failed: {tail}", file=sys.stderr)
            return 1
        totals, launches = read_totals(out), json.loads(counted.read_text())
    first, end = measured_kernels(args.trace_data, args.from_iteration, args.iterations)
    per_launch = {name: totals[event] / (end - first) for event, name in EVENTS.items()}
    per_launch["ll_misses"] = per_launch["ll_read_misses"] + per_launch["ll_write_misses"]
    record = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]), "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "trace": str(args.trace), "capacity_bytes": args.capacity, "config": args.deepum_config.to_dict(),
        "caches": {"line_bytes": 64, "l1_data": FIRST_LEVEL, "last_level_bytes": args.ll_bytes, "last_level_ways": 16},
        "displace_bytes": args.displace, "from_iteration": args.from_iteration, "iterations": args.iterations,
        "measured_launches": end - first, **launches, "per_launch": per_launch,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    print(f"{end - first} launches: {per_launch['ll_misses']:.1f} last-level misses, "
          f"{per_launch['instructions']:.0f} instructions a launch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
