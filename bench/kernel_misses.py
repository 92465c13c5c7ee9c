"""Where does the predictor miss, and what do its misses cost the decision? Feeds a recorded trace's
exec IDs, launch by launch, to the predictor (deepum.specs.predictor.make_predictor, native, the
config's table sizes and recall, told each iteration's start as the policy tells it): a launch that
does not match the window's next entry is a kernel miss, and rebuilds the window. Counts the misses
per iteration; from --from-iteration on, classes each miss by whether the launched exec ID stood at
the same place (launches counted from each iteration's first) in the iteration before and in the one
before that; and splits bench/policy_cost.py's timed replay of the whole policy (per --displace, the
median of --repeats fresh policies launch by launch) between the miss launches and the others.

Writes one JSON record: command, the CPU, revision, date, the trace, capacity, config, the
iterations' launches and misses, the miss classes (counts), and per displacement the mean µs a miss
launch and a launch otherwise, the misses' share of the decision time and their ms an iteration.

    python3 bench/kernel_misses.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 --from-iteration 4 -o bench/results/kernel_misses/gpt2_bf16.json
"""
from __future__ import annotations

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

from deepum.specs.predictor import make_predictor  # noqa: E402

import policy_cost  # noqa: E402
from replay_throughput import cpu_model, source_revision  # noqa: E402


def parse_args(argv=None):
    parser = policy_cost.build_parser()
    parser.description = __doc__.splitlines()[0]
    return policy_cost.parse_args(argv, parser)


def misses(trace, config) -> np.ndarray:
    """For each launch of `trace`, whether the predictor missed it (told each iteration's start, as the
    policy tells it)."""
    predictor = make_predictor(config, native=True)
    missed = np.zeros(trace.num_kernels, dtype=bool)
    starts = {k for k in trace.iteration_first_kernel.tolist() if k > 0}
    for k, exec_id in enumerate(trace.kernel_exec_id.tolist()):
        if k in starts:
            predictor.start_iteration()
        before = predictor.kernel_misses
        predictor.on_kernel(int(exec_id))
        missed[k] = predictor.kernel_misses > before
    return missed


def miss_classes(trace, missed: np.ndarray, from_iteration: int) -> dict:
    """The misses of the iterations from `from_iteration` on, by whether the launched exec ID stood at
    the same place in the iteration before and in the one before that ("same" or "other" for each;
    "none" where that iteration is shorter or does not exist)."""
    firsts = [*trace.iteration_first_kernel.tolist(), trace.num_kernels]
    ids = trace.kernel_exec_id.tolist()

    def at(iteration: int, place: int) -> int | None:
        if iteration < 0 or firsts[iteration] + place >= firsts[iteration + 1]:
            return None
        return ids[firsts[iteration] + place]

    classes = collections.Counter()
    for i in range(from_iteration, len(firsts) - 1):
        for k in np.flatnonzero(missed[firsts[i]:firsts[i + 1]]).tolist():
            looks = [at(i - back, k) for back in (1, 2)]
            launched = ids[firsts[i] + k]
            key = ", ".join(f"{name} {'none' if seen is None else 'same' if seen == launched else 'other'}"
                            for name, seen in zip(("iteration before:", "two before:"), looks))
            classes[key] += 1
    return dict(classes.most_common())


def main(argv=None) -> int:
    args = parse_args(argv)
    trace = args.trace_data
    firsts = [*trace.iteration_first_kernel.tolist(), trace.num_kernels]
    missed = misses(trace, args.deepum_config)
    first = firsts[args.from_iteration]
    iterations = len(firsts) - 1 - args.from_iteration
    cases = []
    for displace in args.displace:
        times = np.median(np.stack([policy_cost.time_launches(trace, policy_cost.new_policy(args.capacity, args.deepum_config),
                                                              displace)[first:] for _ in range(args.repeats)]), axis=0)
        at_miss = missed[first:]
        cases.append({"displace_bytes": displace, "mean_us_miss": float(times[at_miss].mean()) / 1e3,
                      "mean_us_otherwise": float(times[~at_miss].mean()) / 1e3,
                      "miss_share": float(times[at_miss].sum() / times.sum()),
                      "miss_ms_per_iteration": float(times[at_miss].sum()) / 1e6 / iterations,
                      "ms_per_iteration": float(times.sum()) / 1e6 / iterations})
        print(f"displace {displace >> 10} KiB: a miss {cases[-1]['mean_us_miss']:.2f} µs, otherwise "
              f"{cases[-1]['mean_us_otherwise']:.2f} µs; misses {100 * cases[-1]['miss_share']:.1f}% of the decision "
              f"time ({cases[-1]['miss_ms_per_iteration']:.2f} of {cases[-1]['ms_per_iteration']:.2f} ms an iteration)",
              flush=True)
    record = {"command": shlex.join([Path(sys.executable).name, *sys.argv]), "cpu": cpu_model(),
              "revision": source_revision(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trace": str(args.trace), "capacity_bytes": args.capacity, "config": args.deepum_config.to_dict(),
              "from_iteration": args.from_iteration,
              "iterations": [{"iteration": i, "launches": firsts[i + 1] - firsts[i],
                              "misses": int(missed[firsts[i]:firsts[i + 1]].sum())} for i in range(len(firsts) - 1)],
              "miss_classes": miss_classes(trace, missed, args.from_iteration), "cases": cases}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
