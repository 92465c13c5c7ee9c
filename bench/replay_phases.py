"""Where a replayed iteration waits: its forward and backward passes against its optimizer step, and
the passes cut into equal parts by launch, each with the kernels' own time and the time they waited
for prefetches (the simulator's per-kernel timeline, deepum.offline.simulator.simulate).

The optimizer step starts at the iteration's first kernel whose name holds --optimizer-kernel
(default "adam": PyTorch's fused and foreach Adam and AdamW kernels). With --gpu-timeline, a step
timeline the GPU captured (deepum.capture_timeline, saved by bench/train.py --timeline-step) is cut
the same way beside it: its kernels in start order, the last --gpu-optimizer-kernels of them the
optimizer step (a timeline holds no kernel names), each part's span and the GPU's idle time before its
kernels. Writes one JSON record: command, date, the trace, policy, capacity, calibration, per iteration
asked its time, the passes' and the optimizer's time, kernel time and prefetch waits, and the passes'
parts (seconds); and the GPU step's parts.

    python3 bench/replay_phases.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \\
        --capacity 6138363904 --calibration bench/results/unbudgeted_traces/replays/gpt2_bf16_launch.json \\
        -o bench/results/launching_thread_time/replays/gpt2_bf16_phases.json
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

from deepum.offline.calibration import Calibration  # noqa: E402
from deepum.offline.simulator import POLICIES, simulate  # noqa: E402
from deepum.runtime.timeline import CALL, CALL_OPS, D2H, H2D, KERNEL, StepTimeline, covered, merged  # noqa: E402

import replay_arguments  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("--policy", choices=POLICIES, default="deepum")
    parser.add_argument("--calibration", default="h200", help="a bundled name or a JSON file (default: h200)")
    parser.add_argument("--iterations", default=None,
                        help="comma-separated iterations to report (default: every one from the third on)")
    parser.add_argument("--parts", type=int, default=10, help="equal parts the passes are cut into (default 10)")
    parser.add_argument("--optimizer-kernel", default="adam",
                        help="a substring of the optimizer step's first kernel's name (default: %(default)s)")
    parser.add_argument("--gpu-timeline", type=Path, default=None, metavar="FILE.timeline.npz",
                        help="a GPU step timeline of the same workload, cut into the same parts")
    parser.add_argument("--gpu-optimizer-kernels", type=int, default=0,
                        help="the optimizer step's kernels at the end of the GPU timeline (default 0)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    try:
        args.calibration_data = Calibration.load(args.calibration)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--calibration {args.calibration}: {exc}")
    count = int(args.trace_data.iteration_first_kernel.size)
    try:
        args.iterations = [int(i) for i in args.iterations.split(",")] if args.iterations else list(range(2, count))
    except ValueError:
        parser.error(f"--iterations must be comma-separated integers, got {args.iterations!r}")
    if not args.iterations or any(not 0 <= i < count for i in args.iterations):
        parser.error(f"--iterations must name iterations in [0, {count}), the trace's")
    if not 1 <= args.parts <= 1000:
        parser.error(f"--parts must be from 1 to 1000, got {args.parts}")
    args.gpu_step = None
    if args.gpu_timeline is not None:
        try:
            args.gpu_step = StepTimeline.load(args.gpu_timeline)
        except (OSError, ValueError, KeyError) as exc:
            parser.error(f"--gpu-timeline {args.gpu_timeline}: {exc}")
        kernels = len(args.gpu_step.spans(KERNEL)[0])
        if not 0 <= args.gpu_optimizer_kernels < kernels:
            parser.error(f"--gpu-optimizer-kernels must be in [0, {kernels}), the timeline's kernels")
    return args


def optimizer_step(trace, iteration: int, optimizer_kernel: str) -> tuple[int, int, int | None]:
    """`iteration`'s first launch, the next iteration's, and its optimizer step's first launch counted
    from its own first (the first kernel whose name holds `optimizer_kernel`; None: no such kernel)."""
    bounds = [*trace.iteration_first_kernel.tolist(), trace.num_kernels]
    lo, hi = int(bounds[iteration]), int(bounds[iteration + 1])
    names = [str(trace.kernel_names[i]) for i in trace.kernel_name_idx[lo:hi]]
    return lo, hi, next((k for k, name in enumerate(names) if optimizer_kernel.lower() in name.lower()), None)


def iteration_phases(trace, timeline: dict, iteration: int, parts: int, optimizer_kernel: str) -> dict:
    """One iteration's time split into the passes and the optimizer step, and the passes into parts."""
    lo, hi, optimizer = optimizer_step(trace, iteration, optimizer_kernel)
    optimizer = hi - lo if optimizer is None else optimizer
    start, end = timeline["kernel_t_start_s"][lo:hi], timeline["kernel_t_end_s"][lo:hi]
    waits = timeline["kernel_prefetch_wait_s"][lo:hi]
    kernels = trace.kernel_duration_ns[lo:hi] / 1e9

    def phase(a: int, b: int) -> dict:
        if a >= b:
            return {"launches": 0, "time_s": 0.0, "kernel_s": 0.0, "prefetch_wait_s": 0.0}
        return {"launches": b - a, "time_s": float(end[b - 1] - start[a]), "kernel_s": float(kernels[a:b].sum()),
                "prefetch_wait_s": float(waits[a:b].sum())}

    cuts = np.linspace(0, optimizer, parts + 1).astype(int)
    return {"iteration": iteration, "time_s": float(end[-1] - start[0]), "optimizer_first_launch": optimizer,
            "passes": phase(0, optimizer), "optimizer": phase(optimizer, hi - lo),
            "parts": [phase(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]}


def moved_within(step: StepTimeline, lo: int, hi: int) -> dict:
    """What moved in [lo, hi) (ns): per direction the bytes of the migrations that started there and
    the seconds the link carried one there, and the worker's calls that started there by move,
    {move: [calls, bytes]}."""
    window = np.array([[lo, hi]], dtype=np.int64)
    out = {}
    for kind, name in ((H2D, "h2d"), (D2H, "d2h")):
        chosen = step.kind == kind
        starts, ends = step.start[chosen].astype(np.int64), step.end[chosen].astype(np.int64)
        within = (starts >= lo) & (starts < hi)
        out[f"{name}_bytes"] = int(step.value[chosen][within].sum())
        out[f"{name}_busy_s"] = covered(merged(starts, ends), window) / 1e9
    chosen = step.kind == CALL
    starts = step.start[chosen].astype(np.int64)
    within = (starts >= lo) & (starts < hi)
    ops, sizes = step.detail[chosen][within], step.value[chosen][within]
    out["calls"] = {CALL_OPS[op]: [int((ops == op).sum()), int(sizes[ops == op].sum())] for op in sorted(set(ops.tolist()))}
    return out


def gpu_phases(step: StepTimeline, parts: int, optimizer_kernels: int) -> dict:
    """A GPU step timeline cut as iteration_phases cuts a replay: each phase's span and the GPU's idle
    time before its kernels (after every kernel before them ended), seconds, and what moved from its
    first kernel's start to the next phase's (moved_within)."""
    start, end = (a.astype(np.int64) for a in step.spans(KERNEL))
    ended = np.concatenate([[start[0]], np.maximum.accumulate(end)[:-1]])
    idle = np.maximum(0, start - ended)
    optimizer = len(start) - optimizer_kernels

    def phase(a: int, b: int) -> dict:
        if a >= b:
            return {"kernels": 0, "time_s": 0.0, "idle_s": 0.0}
        until = int(start[b]) if b < len(start) else int(end.max())
        return {"kernels": b - a, "time_s": float(end[a:b].max() - start[a]) / 1e9, "idle_s": float(idle[a:b].sum()) / 1e9,
                **moved_within(step, int(start[a]), until)}

    cuts = np.linspace(0, optimizer, parts + 1).astype(int)
    return {"time_s": float(end.max() - start[0]) / 1e9, "passes": phase(0, optimizer),
            "optimizer": phase(optimizer, len(start)), "parts": [phase(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]}


def main(argv=None) -> int:
    args = parse_args(argv)
    result = simulate(args.trace_data, args.policy, args.capacity, args.deepum_config, args.calibration_data)
    rows = [iteration_phases(args.trace_data, result.timeline, i, args.parts, args.optimizer_kernel)
            for i in args.iterations]
    for row in rows:
        print(f"iteration {row['iteration']}: {row['time_s']:.4f} s; passes {row['passes']['time_s']:.4f} s "
              f"(kernels {row['passes']['kernel_s']:.4f}, prefetch waits {row['passes']['prefetch_wait_s']:.4f}); "
              f"optimizer {row['optimizer']['time_s']:.4f} s", flush=True)
    record = {"command": shlex.join([Path(sys.executable).name, *sys.argv]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trace": str(args.trace), "policy": args.policy, "capacity_bytes": args.capacity,
              "calibration": str(args.calibration), "config": args.deepum_config.to_dict(),
              "optimizer_kernel": args.optimizer_kernel, "iterations": rows,
              "gpu_timeline": str(args.gpu_timeline) if args.gpu_step else None,
              "gpu_step": gpu_phases(args.gpu_step, args.parts, args.gpu_optimizer_kernels) if args.gpu_step else None}
    if args.gpu_step:
        gpu = record["gpu_step"]
        optimizer = gpu["optimizer"]
        print(f"GPU step: {gpu['time_s']:.4f} s; passes {gpu['passes']['time_s']:.4f} s (idle "
              f"{gpu['passes']['idle_s']:.4f}); optimizer {optimizer['time_s']:.4f} s, meanwhile "
              f"{optimizer.get('h2d_bytes', 0) / 1e6:.1f} MB in and {optimizer.get('d2h_bytes', 0) / 1e6:.1f} MB out "
              f"migrated (the link busy {optimizer.get('h2d_busy_s', 0):.4f} s in, {optimizer.get('d2h_busy_s', 0):.4f} s out), "
              f"the worker's calls {optimizer.get('calls', {})}", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
