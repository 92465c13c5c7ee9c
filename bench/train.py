"""Trains a workload for a fixed number of steps in one mode at one GPU budget and writes one JSON record.

Each mode needs its own process (deepum.enable() must precede CUDA), so bench/gpu_check.py and
bench/run_all.py call this script once per run. Random data, random initialisation, no downloads.

    python bench/train.py --workload gpt2 --mode deepum --capacity 8GiB --layers 24 --steps 20 -o out.json

--precision bf16 trains a transformer (gpt2, moe, bert) under bfloat16 autocast with fused AdamW
(bench/workloads.py); the default, fp32, trains in float32.

Modes (bench/modes.py): none (plain PyTorch), um, advise, deepum, deepum-no-prefetch,
deepum-no-pre-evict, deepum-no-invalidate and deepum-lru (the deepum ablations; deepum-lru evicts least
recently migrated blocks, DeepUM's rule), deepum-faults (tables that learn from the CUPTI fault log
instead of the kernels' arguments), and save_on_cpu (plain PyTorch with every tensor the forward pass
saves kept in pinned host memory: torch.autograd.graph.save_on_cpu(pin_memory=True)), checkpoint
(activation checkpointing over the workload's blocks) and cpu_offload (the optimizer's state and step
on the CPU: torchao's CPUOffloadOptimizer, or FSDP with CPUOffload(offload_params=True); --offload
picks one, bench/peer_methods.py).

The record (sizes in bytes, times in seconds, per-step figures averaged over the steps after warm-up):
- footprint_bytes: the peak bytes the model needs; torch.cuda.max_memory_reserved() without unified
  memory, the most bytes of managed blocks one iteration touches (deepum.stats()) with it, or the
  allocator's peak (deepum.stats()'s managed_bytes_peak) where the engine slept without pressure,
  on managed or device memory, and counted none;
- step_s (every step: between two synchronizations, or with --overlap-steps from its start to the next
  step's), step_s_median, step_s_spread (max - min), samples_per_s; overlap_steps (whether it ran so);
- faults_per_step, bytes_per_step (fault_h2d, prefetch_h2d, other_h2d, d2h as CUPTI saw them;
  prefetch and evict as the engine issued them), h2d_bytes_per_step, d2h_bytes_per_step;
- prefetch_coverage: prefetch_h2d / (prefetch_h2d + fault_h2d), the share of host-to-GPU bytes that
  arrived ahead of demand; kernel_prediction_accuracy: hits / (hits + misses) of the next-kernel
  predictor the prefetch chain follows; h2d_amplification: host-to-GPU bytes over the least that
  must come in (footprint - capacity), above 1 when prefetches go unused or blocks thrash. Which
  prefetched bytes were used is not observable block by block, so no byte-level accuracy is given;
- link_busy_s_per_step ({"h2d", "d2h"}: seconds the host link was busy migrating managed memory each
  way, deepum.stats()'s h2d_link_busy_ns and d2h_link_busy_ns), hook_s_per_step (CPU time of the
  launch hook), hook_split_s_per_step (its parts: scan, policy, wait, demand, submit; release and
  translate, two parts of policy; submit_command, submit_mark and submit_hand, the three of submit),
  hand_overs_per_step and handed_commands_per_step (the launches that handed moves to the worker, and
  the moves, a block each), repeated_plan_launches_per_step (launches of repeated iterations
  that matched the remembered launch at their place, DeepUMConfig.repeat_plans_percent) and
  worker_s_per_step (CPU time the worker spent issuing prefetches, evictions, discards, populations and
  host-mapping advice); gpu_busy_s_per_step (the time the GPU ran kernels, deepum.stats()'s
  gpu_busy_ns; None where the engine slept, as kernel records are off then) and gpu_idle_s_per_step
  (step_s_median less it: the GPU waiting on migrations or on the launching thread);
  launch_driver_s_per_step (the driver's time in the launch calls after the hook: the launching
  thread held by a full launch queue);
- bounds (bench/bounds.py): the least bytes that must move, the UVM-path and pinned-copy bounds and
  step_s_median over each; the in-memory step is this record's own in mode none, --reference's
  step_s_median otherwise (without it the bounds are the link's alone); the UVM rates are the
  calibration's, or with --uvm-rates a migration probe's (uvm_rates names which);
- enqueue_s (per step, the time until the step's code returned, every launch issued: the launching
  thread's share of the step) and enqueue_s_median (over the measured steps);
- enqueue_thread (per step) and enqueue_thread_median: the launching thread's enqueue split
  (bench/thread_time.py): run_s (user_s, sys_s), runqueue_s (runnable, waiting for a CPU), asleep_s
  (blocked in the kernel or waiting), voluntary and involuntary switches, minor faults; None where
  /proc gives no schedstat; thread_states (with --sample-thread-step K): per thread name, the
  scheduler states and kernel functions slept in (counts of samples) and the time run while the main
  thread issued step K;
- timeline (with --timeline-step K): step K's idle breakdown (deepum.capture_timeline: the GPU's
  idle time by what the kernel after each gap waited for, and by what ran meanwhile), each link
  direction's copies as runs (transfer_runs: h2d_runs, d2h_runs) and the names of its spans
  (OUTPUT.timeline.npz) and plot (OUTPUT.timeline.png), written beside the record;
- device_moment_reserve_bytes (with --device-moments: the bytes taken out of --capacity for the moments
  placed in plain GPU memory, an upper bound) and device_moment_reserved_bytes (what their pool
  reserved);
- peak_resident_bytes, offloaded_bytes_per_step (save_on_cpu: bytes copied out and back), losses,
  memory_method (how checkpoint and cpu_offload lowered peak memory, which offload implementation),
  peak_allocated_bytes (modes without unified memory: torch.cuda.max_memory_allocated()),
  parameter_sha256, precision, lockstep (whether it took turns with other processes: --turns), device,
  driver_version, torch_version, cuda_version, date, stats (deepum.stats()).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import statistics
import signal
import subprocess
import sys
import time
import typing
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("DEEPUM_NO_OVERSUBSCRIBE", "1")  # the benchmarks never go past GPU memory (bench/guard.py)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bounds  # noqa: E402
import lockstep  # noqa: E402
import peer_methods  # noqa: E402
import thread_time  # noqa: E402
import workloads  # noqa: E402
from modes import BY_NAME, GPU_MODES  # noqa: E402

import deepum  # noqa: E402
from deepum.config import DeepUMConfig  # noqa: E402
from deepum.runtime.timeline import D2H, H2D  # noqa: E402
from deepum.units import parse_size  # noqa: E402

BYTE_COUNTERS = ("fault_h2d_bytes", "prefetch_h2d_bytes", "other_h2d_bytes", "d2h_bytes", "prefetch_bytes",
                 "evict_bytes")
"""Per-iteration byte counters of deepum.stats() averaged into bytes_per_step."""
HOOK_PARTS = ("scan", "policy", "wait", "demand", "submit", "release", "translate", "submit_command", "submit_mark",
              "submit_hand")
"""The parts of the launch hook's time (stats() keys hook_<part>_ns) averaged into hook_split_s_per_step;
the first five add up to the hook's time, release and translate are parts of policy's, the last three
of submit's."""
WORKER_PARTS = ("prefetch", "evict", "discard", "populate", "map")
"""The kinds of move whose issuing time (stats() keys worker_<part>_ns) is averaged into worker_s_per_step."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=list(GPU_MODES), default="deepum")
    parser.add_argument("--capacity", default=None,
                        help="GPU budget for the unified-memory modes: bytes or 8GiB-style (default: free memory)")
    parser.add_argument("--config", default=None, help="DeepUMConfig JSON (e.g. from deepum tune)")
    parser.add_argument("--no-prefetch", action="store_true", help="deepum without correlation prefetch")
    parser.add_argument("--no-pre-evict", action="store_true", help="deepum without pre-eviction")
    parser.add_argument("--offload", choices=list(peer_methods.OFFLOAD_CHOICES), default="auto",
                        help="cpu_offload's implementation: torchao's CPUOffloadOptimizer, FSDP, or auto "
                             "(torchao where importable; default)")
    workloads.add_arguments(parser)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5, help="steps left out of the per-step figures")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True, help="JSON record to write")
    parser.add_argument("--record", default=None, metavar="TRACE",
                        help="also record the run's trace (docs/trace-format.md) into this .npz (unified-memory modes)")
    parser.add_argument("--warm-start", default=None, metavar="FILE",
                        help="mode deepum: load the learned state from FILE if it exists, save it there at exit")
    parser.add_argument("--reference", type=Path, default=None, metavar="RECORD",
                        help="the same workload's mode-none record: its step time is the bounds' in-memory step")
    parser.add_argument("--pinned-rates", type=Path, default=bounds.PINNED_PROBE, metavar="PROBE",
                        help="bench/pinned_copy_probe.py record for the pinned-copy bound (default: %(default)s)")
    parser.add_argument("--uvm-rates", type=Path, default=None, metavar="PROBE",
                        help="bench/migration_probe.py record whose rates (calls of --uvm-call-mib MiB) the UVM-path "
                             "bound takes instead of the bundled calibration's, e.g. measured in the same call")
    parser.add_argument("--uvm-call-mib", type=int, default=bounds.UVM_CALL_MIB,
                        help="the probe's call size for --uvm-rates (default %(default)s)")
    parser.add_argument("--timeline-step", type=int, default=None, metavar="K",
                        help="capture step K's timeline (unified-memory modes): its idle breakdown goes into the "
                             "record, its spans and plot beside it (OUTPUT.timeline.npz, OUTPUT.timeline.png)")
    parser.add_argument("--sample-thread-step", type=int, default=None, metavar="K",
                        help="sample every thread's scheduler state, kernel wait function and CPU time while the main "
                             "thread issues step K (bench/thread_time.py, in a process of its own); into the record")
    parser.add_argument("--overlap-steps", action="store_true",
                        help="issue the steps back to back, as a training loop that does not synchronize each step: "
                             "batches pinned and copied without blocking, losses read after the last step, each "
                             "step's time from its start to the next step's start (the last's: to the final "
                             "synchronization), so a step's CPU work overlaps the GPU's tail of the step before")
    parser.add_argument("--turns", default=None, metavar="R,W",
                        help="take turns at each step with other processes through these inherited pipe ends "
                             "(bench/lockstep.py; bench/no_pressure.py --lockstep passes it)")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_steps_and_capacity(parser, args)
    if args.offload != "auto" and args.mode != "cpu_offload":
        parser.error(f"--offload applies to mode cpu_offload, not {args.mode}")
    if args.warm_start is not None and BY_NAME[args.mode].runtime != "deepum":
        parser.error(f"--warm-start needs mode deepum's policy; mode {args.mode} has none")
    if args.record is not None and BY_NAME[args.mode].runtime == "none":
        parser.error(f"--record needs a unified-memory mode; mode {args.mode} runs without deepum")
    if args.timeline_step is not None:
        if BY_NAME[args.mode].runtime == "none":
            parser.error(f"--timeline-step needs a unified-memory mode; mode {args.mode} runs without deepum")
        if not 0 <= args.timeline_step < args.steps:
            parser.error(f"--timeline-step must be in [0, --steps), got {args.timeline_step}")
    if args.sample_thread_step is not None and not 0 <= args.sample_thread_step < args.steps:
        parser.error(f"--sample-thread-step must be in [0, --steps), got {args.sample_thread_step}")
    if args.overlap_steps:
        for flag, value in (("--timeline-step", args.timeline_step), ("--sample-thread-step", args.sample_thread_step),
                            ("--turns", args.turns)):
            if value is not None:
                parser.error(f"--overlap-steps times steps that no synchronization separates; {flag} needs them separated")
    try:
        args.turns = lockstep.Turns.parse(args.turns) if args.turns is not None else None
        workloads.sizes(args)
        args.deepum_config = deepum_config(args)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        args.uvm_link = bounds.uvm_link(args.uvm_rates, args.uvm_call_mib)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--uvm-rates: {exc}")
    args.reference_step_s = reference_step_s(parser, args.reference, workloads.workload_id(args)) if args.reference \
        else None
    return args


def check_steps_and_capacity(parser: argparse.ArgumentParser, args) -> None:
    """Checks --steps, --warmup and --capacity (parsed into bytes), which only the unified-memory
    modes take; errors exit with status 2 and one line on stderr."""
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    if not 0 <= args.warmup < args.steps:
        parser.error(f"--warmup must be in [0, --steps) so that at least one step is measured, got {args.warmup}")
    if args.capacity is not None:
        if BY_NAME[args.mode].runtime == "none":
            parser.error(f"--capacity applies to the unified-memory modes; mode {args.mode} runs without a budget")
        try:
            args.capacity = parse_size(args.capacity)
        except ValueError as exc:
            parser.error(f"bad --capacity: {exc}")


def reference_step_s(parser: argparse.ArgumentParser, path: Path, workload_id: str) -> float:
    """step_s_median of the mode-none record at `path` for the workload; errors exit with status 2."""
    try:
        reference = json.loads(path.read_text())
        step_s, mode, trained = float(reference["step_s_median"]), reference["mode"], reference["workload_id"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"--reference {path}: not a bench/train.py record ({exc})")
    if mode != "none" or trained != workload_id:
        parser.error(f"--reference {path} is mode {mode} of {trained!r}; it must be mode none of "
                             f"{workload_id!r}")
    return step_s


def deepum_config(args) -> DeepUMConfig:
    """The DeepUMConfig of --config with the switches of the mode and of --no-prefetch/--no-pre-evict."""
    config = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    switches = dict(BY_NAME[args.mode].config)
    if args.no_prefetch:
        switches["prefetch"] = False
    if args.no_pre_evict:
        switches["pre_evict"] = False
    return dataclasses.replace(config, **switches)


def _mean(rows: list[dict], key: str) -> float | None:
    values = [row[key] for row in rows if key in row]
    return sum(values) / len(values) if values else None


def _seconds(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def step_figures(step_s: list[float], per_iteration: list[dict], warmup: int, batch: int,
                 capacity: int | None, managed_peak: int | None = None) -> dict:
    """Step-time and traffic figures of a run: step times after `warmup` steps; per-iteration
    counters (deepum.stats()["per_iteration"], one row per step) of the same steps; footprint from
    the rows' touched_bytes, or managed_peak (bytes, the allocator's peak) where they touched nothing
    or there are none, because the engine slept without pressure (on managed or device memory)."""
    measured = step_s[warmup:]
    rows = per_iteration[warmup:len(step_s)]
    median = statistics.median(measured)
    figures = {
        "step_s": step_s, "step_s_median": median, "step_s_spread": max(measured) - min(measured),
        "step_s_min": min(measured), "step_s_max": max(measured), "samples_per_s": batch / median,
        "measured_steps": len(measured),
    }
    if not rows:
        return {**figures, "footprint_bytes": managed_peak}
    per_step = {key: _mean(rows, key) for key in BYTE_COUNTERS}
    h2d = sum(per_step[key] or 0 for key in ("fault_h2d_bytes", "prefetch_h2d_bytes", "other_h2d_bytes"))
    footprint = max(row["touched_bytes"] for row in rows) or managed_peak
    hits = sum(row.get("kernel_prediction_hits", 0) for row in rows)
    misses = sum(row.get("kernel_prediction_misses", 0) for row in rows)
    busy = {direction: _mean(rows, f"{direction}_link_busy_ns") for direction in ("h2d", "d2h")}
    gpu_busy = _seconds(_mean(rows, "gpu_busy_ns")) or None  # 0: no kernel records (asleep)
    figures.update({
        "footprint_bytes": footprint,
        "faults_per_step": _mean(rows, "gpu_page_faults"),
        "faults_by_step": [row.get("gpu_page_faults") for row in per_iteration],
        "bytes_per_step": per_step,
        "h2d_bytes_per_step": h2d,
        "d2h_bytes_per_step": per_step["d2h_bytes"],
        "prefetch_coverage": _ratio(per_step["prefetch_h2d_bytes"],
                                    (per_step["prefetch_h2d_bytes"] or 0) + (per_step["fault_h2d_bytes"] or 0)),
        "kernel_prediction_accuracy": _ratio(hits, hits + misses),
        "h2d_amplification": _ratio(h2d, max(0, footprint - capacity) if None not in (footprint, capacity) else None),
        "link_busy_s_per_step": {direction: _seconds(ns) for direction, ns in busy.items()},
        "hook_s_per_step": _seconds(_mean(rows, "hook_ns")),
        "hook_split_s_per_step": {part: _seconds(_mean(rows, f"hook_{part}_ns")) for part in HOOK_PARTS},
        "worker_s_per_step": {part: _seconds(_mean(rows, f"worker_{part}_ns")) for part in WORKER_PARTS},
        "gpu_busy_s_per_step": gpu_busy,
        "launch_driver_s_per_step": _seconds(_mean(rows, "launch_driver_ns")),
        "hand_overs_per_step": _mean(rows, "hand_overs"),
        "handed_commands_per_step": _mean(rows, "handed_commands"),
        "repeated_plan_launches_per_step": _mean(rows, "repeated_plan_launches"),
        "gpu_idle_s_per_step": None if gpu_busy is None else median - gpu_busy,
    })
    return figures


def parameter_digest(model) -> str:
    """sha256 over every parameter's bytes, in order: equal digests mean bitwise-equal parameters."""
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()


def driver_version() -> str | None:
    """The NVIDIA driver version nvidia-smi reports, or None without nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


class OffloadCounter:
    """torch.autograd.graph.save_on_cpu(pin_memory=True), counting the bytes of GPU tensors it
    offloads (each crosses the link out in forward and back in backward)."""

    def __init__(self, torch):
        self.offload = torch.autograd.graph.save_on_cpu(pin_memory=True)
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self.offload.unpack_hook)
        self.bytes = 0

    def _pack(self, tensor):
        if tensor.device.type != "cpu":
            self.bytes += tensor.numel() * tensor.element_size()
        return self.offload.pack_hook(tensor)


def training_step(workload, model, optimizer, zero_grad_to_none: bool = True, forward_scope=None):
    """One whole training step of `workload` as a function of its batch: zero_grad, the loss (computed
    inside `forward_scope`, a reusable context manager, when given), backward, the optimizer step;
    returns the loss."""
    scope = forward_scope if forward_scope is not None else contextlib.nullcontext()

    def step(batch):
        optimizer.zero_grad(set_to_none=zero_grad_to_none)
        with scope:
            loss = workload.loss_fn(model, batch)
        loss.backward()
        optimizer.step()
        return loss

    return step


class TimedSteps(typing.NamedTuple):
    """Per step, in seconds: the whole step (between two synchronizations), and the time until step()
    returned, every launch of the step issued (the launching thread's share; the rest of the step the
    CPU waited for the GPU) and that time's split (thread_time.ThreadTimes.split(), None without
    schedstat); the losses; the captured step's timeline (deepum.capture_timeline) and the sampled
    step's thread states (thread_time.sample's counts), if asked for."""

    step_s: list
    enqueue_s: list
    enqueue_thread: list
    losses: list
    timeline: typing.Any = None
    thread_states: dict | None = None


class ThreadSampler:
    """bench/thread_time.py sampling this process's threads from a process of its own: started at once,
    sampling between begin() and end(), its counts read by end(); a context manager that leaves no
    process behind."""

    def __init__(self, output: Path):
        self.output = output
        self.process = subprocess.Popen([sys.executable, str(HERE / "thread_time.py"), "--pid", str(os.getpid()),
                                         "-o", str(output)], stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != thread_time.READY:  # its signal handlers are set
            raise RuntimeError(f"bench/thread_time.py did not start (exit status {self.process.wait()})")

    def begin(self):
        self.process.send_signal(signal.SIGUSR1)

    def end(self) -> dict:
        self.process.terminate()
        self.process.wait(timeout=30)
        counts = json.loads(self.output.read_text())
        self.output.unlink()
        return counts

    def __enter__(self) -> "ThreadSampler":
        return self

    def __exit__(self, *exc) -> None:
        """Ends the sampler if the steps ended before its step (an error): no process is left behind."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.output.unlink(missing_ok=True)


def issued(step, batch, timed: TimedSteps) -> tuple:
    """step(batch) on the launching thread: appends to `timed` the time until it returned and the
    thread's split of that time (None without schedstat); returns the loss and when it started."""
    before = thread_time.read()
    start = time.perf_counter()
    loss = step(batch)
    timed.enqueue_s.append(time.perf_counter() - start)
    after = thread_time.read()
    timed.enqueue_thread.append((after - before).split() if before and after else None)
    return loss, start


def timed_steps(steps: int, device, make_batch, step, synchronize, label: str = "",
                timeline_step: int | None = None, turns: lockstep.Turns | None = None,
                sample_thread_step: int | None = None, sampler_output: Path | None = None,
                overlap: bool = False) -> TimedSteps:
    """Runs `steps` training steps: the batch make_batch(i) moved to `device`, then step(batch) (the
    whole step: zero_grad, forward, backward, optimizer step; returns the loss) timed between two
    synchronize() calls, then deepum.mark_iteration(). Step `timeline_step`'s timeline is captured;
    every thread is sampled while the main thread issues step `sample_thread_step` (a ThreadSampler
    writing sampler_output). With `turns`, each step waits for its turn and ends it (bench/lockstep.py).
    With `overlap` (none of those three), no synchronization separates the steps: see overlapped_steps."""
    if overlap:
        return overlapped_steps(steps, device, make_batch, step, synchronize, label)
    timed = TimedSteps([], [], [], [])
    with ThreadSampler(sampler_output) if sample_thread_step is not None else contextlib.nullcontext() as sampler:
        for index in range(steps):
            if turns is not None:
                turns.take()
            batch = tuple(t.to(device) for t in make_batch(index))
            capture = deepum.capture_timeline() if index == timeline_step else contextlib.nullcontext()
            sampled = sampler is not None and index == sample_thread_step
            with capture as captured:
                synchronize()
                if sampled:
                    sampler.begin()
                loss, start = issued(step, batch, timed)
                if sampled:
                    timed = timed._replace(thread_states=sampler.end())
                synchronize()
                timed.step_s.append(time.perf_counter() - start)
            if captured is not None:
                timed = timed._replace(timeline=captured.timeline)
            timed.losses.append(loss.item())
            deepum.mark_iteration()
            print(f"{label}step {index} {timed.step_s[-1] * 1e3:.1f} ms loss {timed.losses[-1]:.4f}", flush=True)
            if turns is not None:
                turns.give()
    return timed


def overlapped_steps(steps: int, device, make_batch, step, synchronize, label: str = "") -> TimedSteps:
    """Runs `steps` training steps as a loop that does not synchronize each step runs them, from a
    synchronized start: each batch made, pinned (on a GPU) and copied without blocking, step(batch)
    issued, deepum.mark_iteration(); the losses read after the last step. A step's time runs from its
    start (before its batch is made) to the next step's start, the last's to the final synchronize(),
    so the GPU's tail of one step (the optimizer's kernels) overlaps the CPU's issuing of the next."""
    timed = TimedSteps([], [], [], [])
    starts, pending = [], []
    synchronize()
    for index in range(steps):
        starts.append(time.perf_counter())
        batch = tuple((t.pin_memory().to(device, non_blocking=True) if device == "cuda" else t.to(device))
                      for t in make_batch(index))
        pending.append(issued(step, batch, timed)[0].detach())
        deepum.mark_iteration()
        print(f"{label}step {index} issued in {timed.enqueue_s[-1] * 1e3:.1f} ms", flush=True)
    synchronize()
    ends = starts[1:] + [time.perf_counter()]
    timed.step_s.extend(end - start for start, end in zip(starts, ends))
    timed.losses.extend(loss.item() for loss in pending)
    return timed


def train(torch, args, workload, device: str) -> dict:
    """Runs args.steps steps on `device` ("cuda", or "cpu" for tests), set up for args.mode by
    bench/peer_methods.py; returns step times, losses, (save_on_cpu) the bytes offloaded per step,
    the memory method and the trained parameters' digest."""
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    training = peer_methods.prepare(torch, args.mode, workload, device, args.offload)
    model, optimizer = training.model, training.optimizer
    offload = OffloadCounter(torch) if args.mode == "save_on_cpu" else None

    step = training_step(workload, model, optimizer, training.zero_grad_to_none,
                         offload.hooks if offload else None)
    timed = timed_steps(args.steps, device, workload.make_batch, step, synchronize,
                        timeline_step=args.timeline_step, turns=args.turns,
                        sample_thread_step=args.sample_thread_step,
                        sampler_output=Path(args.output).with_suffix(".thread_states.json"),
                        overlap=args.overlap_steps)
    with training.digest_scope():
        digest = parameter_digest(workload.model)
    training.close()
    return {"step_s": timed.step_s, "enqueue_s": timed.enqueue_s, "enqueue_thread": timed.enqueue_thread,
            "thread_states": timed.thread_states, "losses": timed.losses, "timeline": timed.timeline,
            "offloaded_bytes_per_step": offload.bytes / args.steps if offload else None,
            "memory_method": training.method, "parameter_sha256": digest,
            "device_moment_reserved_bytes": pool_reserved_bytes(getattr(optimizer, "device_moment_pool", None))}


def pool_reserved_bytes(pool) -> int | None:
    """The bytes of the segments a torch.cuda.MemPool holds (None without a pool)."""
    return None if pool is None else sum(segment["total_size"] for segment in pool.snapshot())


def save_timeline(timeline, output: Path, step: int, step_s: float) -> dict:
    """Writes the captured step's spans and plot beside the record; returns the record's entry: the
    step, its time, its idle breakdown and each direction's transfer runs (deepum/runtime/timeline.py)
    and the two files' names."""
    spans, plot = output.with_suffix(".timeline.npz"), output.with_suffix(".timeline.png")
    timeline.save(spans)
    timeline.plot(plot, title=f"{output.stem}: step {step}, {step_s:.3f} s")
    return {"step": step, "step_s": step_s, **timeline.idle_breakdown(), "h2d_runs": timeline.transfer_runs(H2D),
            "d2h_runs": timeline.transfer_runs(D2H), "spans": spans.name, "plot": plot.name}


def reserve_device_moments(args, runtime_mode: str) -> int:
    """Bytes --device-moments puts in plain GPU memory (workloads.device_moment_reserve), taken out of
    --capacity so that the unified-memory modes use no more GPU memory in all; 0 without it."""
    if not workloads.device_moments(args):
        return 0
    import torch  # CUDA stays untouched: the reserve is sized on the meta device

    reserve = workloads.device_moment_reserve(torch, args)
    if runtime_mode != "none" and args.capacity is not None:
        if reserve >= args.capacity:
            raise SystemExit(f"train.py: --device-moments takes {reserve} bytes, more than --capacity {args.capacity}")
        args.capacity -= reserve
    return reserve


def main(argv=None) -> int:
    args = parse_args(argv)
    runtime_mode = BY_NAME[args.mode].runtime
    device_moment_reserve = reserve_device_moments(args, runtime_mode)
    with deepum.enable(runtime_mode, capacity=args.capacity, config=args.deepum_config, record=args.record,
                       warm_start=args.warm_start):
        import torch

        free_at_start, total = torch.cuda.mem_get_info()
        torch.use_deterministic_algorithms(True)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        workload = workloads.build(torch, args, device="cuda", seed=args.seed)
        run = train(torch, args, workload, "cuda")
        stats = deepum.stats()
        record = {
            "status": "ok", "workload": args.workload, "family": workloads.sizes(args)[0],
            "workload_id": workloads.workload_id(args),
            "sizes": workload.info, "batch": workload.batch, "mode": args.mode, "runtime_mode": runtime_mode,
            "config": args.deepum_config.to_dict() if runtime_mode == "deepum" else None,
            "capacity_bytes": stats.get("capacity_bytes"), "steps": args.steps, "warmup": args.warmup,
            "seed": args.seed,
            **step_figures(run["step_s"], stats.get("per_iteration", []), args.warmup, workload.batch,
                           stats.get("capacity_bytes"), stats.get("managed_bytes_peak")),
            "enqueue_s": run["enqueue_s"], "enqueue_s_median": statistics.median(run["enqueue_s"][args.warmup:]),
            "enqueue_thread": run["enqueue_thread"],
            "enqueue_thread_median": thread_time.summarize([s for s in run["enqueue_thread"][args.warmup:] if s]),
            "thread_states": run["thread_states"],
            "losses": run["losses"], "offloaded_bytes_per_step": run["offloaded_bytes_per_step"],
            "memory_method": run["memory_method"], "precision": args.precision,
            "parameter_sha256": run["parameter_sha256"], "lockstep": args.turns is not None,
            "overlap_steps": args.overlap_steps,
            "device_moment_reserve_bytes": device_moment_reserve or None,
            "device_moment_reserved_bytes": run["device_moment_reserved_bytes"],
            "device": torch.cuda.get_device_name(), "driver_version": driver_version(),
            "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu_free_bytes_at_start": stats.get("free_bytes_at_enable") or free_at_start, "gpu_total_bytes": total,
            "stats": stats,
        }
        if runtime_mode == "none":
            record["footprint_bytes"] = record["peak_resident_bytes"] = torch.cuda.max_memory_reserved()
            record["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        else:
            record.setdefault("footprint_bytes", None)
            record["peak_resident_bytes"] = stats.get("peak_resident_bytes")
        if run["timeline"] is not None:
            record["timeline"] = save_timeline(run["timeline"], Path(args.output), args.timeline_step,
                                               run["step_s"][args.timeline_step])
        in_memory_step_s = record["step_s_median"] if args.mode == "none" else args.reference_step_s
        record["bounds"] = bounds.record_bounds(record, in_memory_step_s, args.uvm_link,
                                                bounds.pinned_link(args.pinned_rates),
                                                uvm_rates=bounds.uvm_source(args.uvm_rates))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except lockstep.LockstepEnded as exc:
        sys.exit(f"train.py: {exc}")
