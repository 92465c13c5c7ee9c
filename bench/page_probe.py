"""Probes where an unbudgeted, sleeping deepum loses time against plain PyTorch on a workload that
reads a few rows of large tables at random (DLRM): managed memory itself, or deepum's bookkeeping.

Each variant trains the workload in its own process (deepum.enable must come before CUDA), 12 steps by
default, and reports its median step after warm-up:

- none: plain PyTorch (device memory);
- um: managed memory, no launch hook, no policy (the driver alone);
- deepum: managed memory, deepum without a budget (asleep: no launch hook; the allocator hook keeps
  its books of every allocation);
- deepum-prefetched: as deepum, and every live managed segment prefetched to the GPU once the model is
  built and after the first step (pages the driver populated by faults, possibly mapped in small
  pages, are migrated again in whole ranges).

The variants run --repeats times in alternation. Writes a JSON record (command, device, date, each
run's step times and median, the median of each variant's run medians, and each variant against
none).

    python3 bench/page_probe.py --workload dlrm -o bench/results/page_probe/page_probe.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

VARIANTS = ("none", "um", "deepum", "deepum-prefetched")
"""The variants, in the order each repetition runs them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloads.add_arguments(parser)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant, in alternation (1 to 10)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="JSON record to write")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one run, in a child process
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.steps - args.warmup < 1:
        parser.error(f"need at least one measured step, got --steps {args.steps} --warmup {args.warmup}")
    if not 1 <= args.repeats <= 10:
        parser.error(f"--repeats must be from 1 to 10, got {args.repeats}")
    return args


def prefetch_managed_segments(torch) -> int:
    """Prefetches every segment of deepum's managed pool to the current GPU; returns the bytes."""
    from cuda.bindings import runtime

    from deepum.runtime import gpu

    location = runtime.cudaMemLocation()
    location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    location.id = torch.cuda.current_device()
    moved = 0
    for segment in torch.cuda.memory_snapshot():
        if gpu.memory_type(segment["address"]) != gpu.MEMORY_TYPE_MANAGED:
            continue
        (status,) = runtime.cudaMemPrefetchAsync(segment["address"], segment["total_size"], location, 0, 0)
        if status != runtime.cudaError_t.cudaSuccess:
            raise RuntimeError(f"cudaMemPrefetchAsync of a managed segment failed: {status}")
        moved += segment["total_size"]
    torch.cuda.synchronize()
    return moved


def run_variant(args) -> dict:
    """Trains in this process as args.variant; the step times (s) and the bytes prefetched."""
    import deepum
    import train as bench_train

    mode = {"none": "none", "um": "um"}.get(args.variant, "deepum")
    with deepum.enable(mode):
        import torch

        torch.use_deterministic_algorithms(True)
        workload = workloads.build(torch, args, device="cuda")
        model = workload.model
        optimizer = workload.make_optimizer(torch, model)
        prefetching = args.variant == "deepum-prefetched"

        step = bench_train.training_step(workload, model, optimizer)
        prefetched = prefetch_managed_segments(torch) if prefetching else 0
        step_s = bench_train.timed_steps(1, "cuda", workload.make_batch, step, torch.cuda.synchronize).step_s
        prefetched += prefetch_managed_segments(torch) if prefetching else 0
        step_s += bench_train.timed_steps(args.steps - 1, "cuda", lambda index: workload.make_batch(index + 1), step,
                                          torch.cuda.synchronize).step_s
        return {"step_s": step_s, "median_s": statistics.median(step_s[args.warmup:]), "prefetched_bytes": prefetched,
                "device": torch.cuda.get_device_name()}


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.variant:
        print("RESULT " + json.dumps(run_variant(args)), flush=True)
        return 0
    child = [sys.executable, str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:])]
    runs = {variant: [] for variant in VARIANTS}
    for repeat in range(args.repeats):
        for variant in VARIANTS:
            done = subprocess.run([*child, "--variant", variant], capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                print(f"page_probe: {variant} failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}",
                      file=sys.stderr)
                return 1
            runs[variant].append(json.loads(lines[-1][len("RESULT "):]))
            print(f"repeat {repeat} {variant}: median step {runs[variant][-1]['median_s'] * 1e3:.2f} ms", flush=True)
    medians = {variant: statistics.median(run["median_s"] for run in rs) for variant, rs in runs.items()}
    record = {"command": "python3 bench/page_probe.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "device": runs["none"][0]["device"],
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "workload_id": workloads.workload_id(args), "steps": args.steps, "warmup": args.warmup,
              "runs": runs, "median_s": medians,
              "against_none": {variant: medians[variant] / medians["none"] for variant in VARIANTS}}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    for variant in VARIANTS:
        print(f"{variant}: {medians[variant] * 1e3:.2f} ms, {record['against_none'][variant]:.3f}x none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
