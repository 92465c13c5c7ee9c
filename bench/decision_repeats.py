"""Which launches does the policy's decision cost go to, and how often does it decide again what it
decided at the same place of an earlier iteration?

Replays a recorded trace through the native policy core as bench/policy_cost.py does (the trace's
memory events between launches, untimed), once launch by launch to read each launch's plan and whether
it was a kernel miss, then --repeats times timing each launch's decision with each --displace pass
before it. The launches from --from-iteration on are split into kernel misses (the prediction window
rebuilt), hits that decided moves other than their own blocks' (a hand-over to the engine's worker)
and hits that decided none; for each class, its share of the launches and of the time, its mean and
median (µs). Then, for each steady iteration and each of --back (iterations back), the launches whose
exec ID and blocks equal those at the same place that many iterations back, and of them those whose
whole plan (moves and blocks) is also equal: how much of the decision an iteration's repetition could
spare.

Writes one JSON record: command, the CPU, the source revision, date, trace, capacity, config, the
classes per displacement (medians over the repeats) and the repetitions per iteration.

    python3 bench/decision_repeats.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 --displace 0,4MiB -o bench/results/decision_repeats/gpt2_bf16.json
"""
from __future__ import annotations

import datetime
import json
import shlex
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import policy_cost  # noqa: E402
from deepum.offline.simulator import kernel_kinds  # noqa: E402
from replay_throughput import cpu_model, source_revision  # noqa: E402

BACKS = (1, 2)
"""Iterations back that each steady iteration's launches are compared with."""


def build_parser():
    parser = policy_cost.build_parser()
    parser.description = __doc__.splitlines()[0]
    parser.set_defaults(displace="0,4MiB")
    return parser


def launch_plans(trace, capacity: int, config) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """Each launch's (exec ID, blocks, plan) with the plan a sorted tuple of (move, UM block); whether
    it was a kernel miss; whether it decided a move other than its own blocks' (demand)."""
    policy = policy_cost.new_policy(capacity, config)
    memory = policy_cost.TraceMemory(trace, policy)
    kinds, starts = kernel_kinds(trace), set(trace.iteration_first_kernel.tolist()[1:])
    launches, missed, moved = [], np.zeros(trace.num_kernels, bool), np.zeros(trace.num_kernels, bool)
    for k in range(trace.num_kernels):
        memory.apply_through(k - 1)
        if k in starts:
            policy.next_iteration()
        blocks = trace.kernel_blocks(k).tolist()
        misses = policy.kernel_misses
        _, decided = policy.on_launch(int(trace.kernel_exec_id[k]), blocks, bool(kinds[k] & 1), bool(kinds[k] & 2), [])
        missed[k] = policy.kernel_misses > misses
        moved[k] = any(move != "demand" for move, _ in decided)
        launches.append((int(trace.kernel_exec_id[k]), tuple(blocks), tuple(sorted((m, int(b)) for m, b in decided))))
    return launches, missed, moved


def classes(times_ns: np.ndarray, missed: np.ndarray, moved: np.ndarray) -> dict:
    """Per class of launch: its launches, share of the launches and of the time, mean and median (µs)."""
    total = times_ns.sum()
    out = {}
    for name, mask in (("misses", missed), ("hits_with_moves", ~missed & moved), ("hits_without_moves", ~missed & ~moved)):
        out[name] = {"launches": int(mask.sum()), "share_of_launches": float(mask.mean()),
                     "share_of_time": float(times_ns[mask].sum() / total),
                     "mean_us": float(times_ns[mask].mean()) / 1e3 if mask.any() else 0.0,
                     "median_us": float(np.median(times_ns[mask])) / 1e3 if mask.any() else 0.0}
    return out


def repetitions(trace, launches: list[tuple], moved: np.ndarray, from_iteration: int) -> list[dict]:
    """For each iteration from `from_iteration` and each of BACKS: its launches equal (exec ID and
    blocks) to those at the same place that many iterations back, and of them those with the same plan,
    over all its launches and over those that decided moves."""
    firsts = trace.iteration_first_kernel.tolist() + [trace.num_kernels]
    rows = []
    for it in range(from_iteration, len(firsts) - 1):
        first, length = firsts[it], firsts[it + 1] - firsts[it]
        row = {"iteration": it, "launches": length, "launches_with_moves": int(moved[first:first + length].sum())}
        for back in BACKS:
            if it - back < 0 or firsts[it - back + 1] - firsts[it - back] != length:
                row[f"back_{back}"] = None  # the iterations differ in length: no place-by-place comparison
                continue
            earlier = firsts[it - back]
            same_launch = [launches[first + p][:2] == launches[earlier + p][:2] for p in range(length)]
            same_plan = [same_launch[p] and launches[first + p][2] == launches[earlier + p][2] for p in range(length)]
            row[f"back_{back}"] = {
                "same_launch": int(sum(same_launch)), "same_plan": int(sum(same_plan)),
                "same_plan_with_moves": int(sum(s and moved[first + p] for p, s in enumerate(same_plan)))}
        rows.append(row)
    return rows


def main(argv=None) -> int:
    args = policy_cost.parse_args(argv, build_parser())
    trace, config = args.trace_data, args.deepum_config
    launches, missed, moved = launch_plans(trace, args.capacity, config)
    first = int(trace.iteration_first_kernel[args.from_iteration])
    cases = []
    for displace in args.displace:
        times = np.median([policy_cost.time_launches(trace, policy_cost.new_policy(args.capacity, config), displace)
                           for _ in range(args.repeats)], axis=0)[first:]
        cases.append({"displace_bytes": displace, "mean_us": float(times.mean()) / 1e3,
                      "classes": classes(times, missed[first:], moved[first:])})
        shares = ", ".join(f"{name} {c['share_of_launches']:.1%} of launches, {c['share_of_time']:.1%} of time, "
                           f"mean {c['mean_us']:.2f} µs" for name, c in cases[-1]["classes"].items())
        print(f"displace {displace >> 10} KiB: mean {cases[-1]['mean_us']:.2f} µs a launch; {shares}", flush=True)
    rows = repetitions(trace, launches, moved, args.from_iteration)
    for row in rows:
        compared = "; ".join(f"{back} back: {row[f'back_{back}']}" for back in BACKS)
        print(f"iteration {row['iteration']}: {row['launches']} launches, {row['launches_with_moves']} with moves; {compared}")
    record = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]), "cpu": cpu_model(),
        "revision": source_revision(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "trace": str(args.trace), "capacity_bytes": args.capacity, "config": config.to_dict(),
        "from_iteration": args.from_iteration, "repeats": args.repeats, "cases": cases, "iterations": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
