"""Trains a workload data-parallel on every rank of a torchrun job, under DDP or FSDP, in one mode at
one per-rank GPU budget, and writes one JSON record for the whole job (rank 0 writes it).

    torchrun --standalone --nproc-per-node 2 bench/distributed.py --parallel ddp --mode deepum \\
        --capacity 4GiB --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4 \\
        -o out.json

Each rank calls deepum.enable(mode, capacity=--capacity) before any CUDA work, with no device
argument: under torchrun deepum.enable() picks device LOCAL_RANK % device_count itself (and divides
its fuse and default capacity by the processes sharing a GPU); the script then calls
torch.cuda.set_device on the same device. --capacity is per rank. The process group is
torch.distributed's default over torchrun's environment (backend nccl on cuda, gloo on cpu, or
--backend). Every rank builds the model from the same --seed (equal initial parameters; DDP also
broadcasts rank 0's at wrapping) and trains on its own data: rank r's batches are those of seed
--seed + r (rank 0's are those of bench/train.py at the same seed). Determinism as in train.py:
torch.use_deterministic_algorithms(True), no TF32, CUBLAS_WORKSPACE_CONFIG=:4096:8.

--parallel ddp wraps the model in DistributedDataParallel (device_ids=[device] on cuda); fsdp in
FullyShardedDataParallel with one unit per workload block (Workload.blocks) and one at the root,
use_orig_params=True, full sharding. --device cpu (with mode none) runs the same on the CPU, for tests.

Digest: parameter_sha256 of a rank is bench/train.py's parameter_digest of the full trained
parameters as that rank holds them: DDP's replica; for FSDP the full parameters gathered inside
FullyShardedDataParallel.summon_full_params on every rank (so every rank's FSDP digest covers the
whole model, not its shard). bench/distributed_check.py compares each rank with the same rank of the
mode-none run.

The record (sizes in bytes, times in seconds):
- status ("ok"), command ({"argv": sys.argv of rank 0, "world_size"}), parallel, mode, runtime_mode,
  world_size, backend, device_type (cuda, cpu), workload, workload_id, sizes, batch (per rank),
  global_batch, steps, warmup, seed, config (DeepUMConfig, mode deepum), capacity_bytes (the
  per-rank --capacity; None without one), env (the launch's CUDA_VISIBLE_DEVICES, NCCL_* and
  DEEPUM_NO_OVERSUBSCRIBE);
- step_s_median: the job's step, the largest of the ranks' step_s_median; footprint_bytes: the
  largest rank footprint; step_s_median_by_rank, parameter_sha256_by_rank, footprint_bytes_by_rank;
- ranks: one dict per rank, in rank order: rank, local_rank, device_index, device (name), the figures
  of train.py's step_figures (step_s of every step, step_s_median, spread, min, max, samples_per_s
  per rank, and in the unified-memory modes faults_per_step, faults_by_step, bytes_per_step, ...),
  losses, parameter_sha256, footprint_bytes (mode none: torch.cuda.max_memory_reserved(); the
  unified-memory modes: the most bytes of managed blocks one iteration touches,
  deepum.stats()["per_iteration"]'s touched_bytes, over the iterations after the first two, or the
  allocator's peak, managed_bytes_peak, where the engine slept without pressure and counted none),
  peak_resident_bytes (mode none: as footprint; else deepum.stats()'s), peak_allocated_bytes (mode
  none), capacity_bytes (the engine's, from deepum.stats()), gpu_page_faults, cuda_errors,
  prefetch_bytes, demand_prefetch_bytes, evict_bytes, discard_bytes (deepum.stats() totals), stats
  (a subset of deepum.stats(): STATS_KEYS, and per_iteration);
- device (rank 0's device name), driver_version, torch_version, cuda_version, nccl_version, date (UTC).
Figures are taken before the digest (summon_full_params allocates the full parameters).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("DEEPUM_NO_OVERSUBSCRIBE", "1")  # the benchmarks never go past GPU memory (bench/guard.py)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import train as bench_train  # noqa: E402
import workloads  # noqa: E402
from modes import BY_NAME, GPU_MODES, PEER_MODES  # noqa: E402

import deepum  # noqa: E402
from deepum.config import DeepUMConfig  # noqa: E402

PARALLELS = ("ddp", "fsdp")
MODES = tuple(name for name in GPU_MODES if name not in PEER_MODES)
"""Modes a distributed run takes: plain PyTorch (none) and the unified-memory modes."""
TORCHRUN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
STATS_KEYS = ("enabled", "mode", "device", "capacity_bytes", "max_managed_bytes", "free_bytes_at_enable",
              "managed_bytes_peak", "peak_resident_bytes", "launches", "hook_ns", "gpu_page_faults",
              "fault_h2d_bytes", "prefetch_h2d_bytes", "other_h2d_bytes", "d2h_bytes", "prefetch_calls",
              "prefetch_bytes", "demand_prefetch_calls", "demand_prefetch_bytes", "evict_calls", "evict_bytes",
              "discard_calls", "discard_bytes", "populate_calls", "populate_bytes", "kernel_prediction_hits",
              "kernel_prediction_misses", "cuda_errors", "last_cuda_error", "fuse_refusals",
              "driver_allocation_failures", "h2d_link_busy_ns", "d2h_link_busy_ns", "held_frees_releases")
"""deepum.stats() keys each rank's record keeps (with per_iteration)."""
TOTALS = ("gpu_page_faults", "cuda_errors", "prefetch_bytes", "demand_prefetch_bytes", "evict_bytes", "discard_bytes")
"""deepum.stats() totals copied to the top of each rank's figures."""
FOOTPRINT_SKIP = 2
"""Iterations left out of the unified-memory footprint (the first ones set up state)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", choices=PARALLELS, required=True, help="DistributedDataParallel or FSDP")
    parser.add_argument("--mode", choices=MODES, default="deepum")
    parser.add_argument("--capacity", default=None,
                        help="per-rank GPU budget for the unified-memory modes: bytes or 8GiB-style "
                             "(default: deepum.enable()'s)")
    parser.add_argument("--config", default=None, help="DeepUMConfig JSON (e.g. from deepum tune)")
    parser.add_argument("--bucket-memory", choices=("managed", "device"), default="managed",
                        help="ddp: where DDP's gradient buckets, which NCCL reads and writes, live: managed memory "
                             "like every tensor (default), or plain device memory outside the budget (DDP is "
                             "then built with find_unused_parameters=True, which keeps the buckets of its "
                             "construction instead of rebuilding them after the first step)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default=None,
                        help="process group backend (default: nccl on cuda, gloo on cpu)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="where to train (cpu: mode none only, for tests)")
    workloads.add_arguments(parser)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=4, help="steps left out of the per-step figures")
    parser.add_argument("--seed", type=int, default=0, help="model seed; rank r's data comes from seed + r")
    parser.add_argument("-o", "--output", required=True, help="JSON record to write (by rank 0)")
    return parser


def parse_args(argv=None, environ=None) -> argparse.Namespace:
    """The arguments, checked, and the torchrun environment; errors exit with status 2 and one line
    on stderr, before any process group starts."""
    environ = os.environ if environ is None else environ
    parser = build_parser()
    args = parser.parse_args(argv)
    bench_train.check_steps_and_capacity(parser, args)
    args.runtime_mode = BY_NAME[args.mode].runtime
    if args.device == "cpu" and args.runtime_mode != "none":
        parser.error(f"--device cpu runs mode none only; mode {args.mode} needs CUDA")
    if args.backend is None:
        args.backend = "nccl" if args.device == "cuda" else "gloo"
    if args.backend == "nccl" and args.device == "cpu":
        parser.error("--backend nccl needs --device cuda")
    if args.bucket_memory == "device" and (args.parallel != "ddp" or args.device != "cuda"):
        parser.error("--bucket-memory device applies to --parallel ddp on --device cuda")
    try:
        family, _ = workloads.sizes(args)
        args.deepum_config = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    if family == "dlrm":
        parser.error("workload dlrm trains sparse embedding gradients, which neither DDP's buckets nor FSDP's "
                     "flat parameters take here; choose a transformer or resnet152")
    missing = [name for name in TORCHRUN_ENV if name not in environ]
    if missing:
        parser.error(f"not started by torchrun ({', '.join(missing)} unset); run it as "
                     f"python -m torch.distributed.run --nproc-per-node N {Path(__file__).name} ...")
    args.rank, args.local_rank, args.world_size = (int(environ[name]) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"))
    return args


def wrap(torch, parallel: str, workload, device, bucket_memory: str = "managed"):
    """The workload's model wrapped for `parallel` on `device` (a torch.device); bucket_memory "device":
    DDP's gradient buckets in a pool of plain device memory (see --bucket-memory)."""
    if parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [device.index] if device.type == "cuda" else None
        if bucket_memory == "managed":
            return DistributedDataParallel(workload.model, device_ids=device_ids)
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            model = DistributedDataParallel(workload.model, device_ids=device_ids, find_unused_parameters=True)
        model.bucket_pool = pool  # the buckets' memory lives as long as the model
        return model
    import functools

    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    blocks = {id(block) for block in workload.blocks}
    return FullyShardedDataParallel(
        workload.model, use_orig_params=True,
        auto_wrap_policy=functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda module: id(module) in blocks),
        device_id=device)


def digest_scope(torch, parallel: str, model):
    """A context in which the workload's model holds the full trained parameters on this rank."""
    if parallel == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel

        return FullyShardedDataParallel.summon_full_params(model)
    import contextlib

    return contextlib.nullcontext()


def parameter_digest(model) -> str:
    """bench/train.py's parameter_digest (sha256 over every parameter's float32 bytes, in order), over
    copies: a CPU parameter's own storage handed to numpy could no longer be resized, which FSDP
    does to free the full parameters after summon_full_params."""
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().float().cpu().clone().numpy().tobytes())
    return digest.hexdigest()


def footprint(torch, runtime_mode: str, per_iteration: list[dict], managed_peak: int | None = None) -> int | None:
    """Mode none: torch.cuda.max_memory_reserved(); unified memory: the most touched_bytes of an
    iteration after the first FOOTPRINT_SKIP (all iterations when there are no more), or managed_peak
    (bytes, the allocator's peak) where they touched nothing or there are none, because the engine
    slept without pressure (on managed or device memory)."""
    if runtime_mode == "none":
        return torch.cuda.max_memory_reserved()
    rows = per_iteration[FOOTPRINT_SKIP:] or per_iteration
    return max((row["touched_bytes"] for row in rows), default=0) or managed_peak


def train_rank(torch, args, device) -> tuple[dict, object]:
    """Builds, wraps and trains this rank's model; returns its figures (see the module docstring) and
    the workload."""
    dist = torch.distributed
    cuda = device.type == "cuda"
    synchronize = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    # Rank r's data: the batches of seed + r, taken from a workload built on the meta device (no memory);
    # the model itself is built from --seed on every rank.
    make_batch = workloads.build(torch, args, device="meta", seed=args.seed + args.rank).make_batch
    workload = workloads.build(torch, args, device=device, seed=args.seed)
    model = wrap(torch, args.parallel, workload, device, args.bucket_memory)
    optimizer = workload.make_optimizer(torch, model)

    step = bench_train.training_step(workload, model, optimizer, zero_grad_to_none=False)
    timed = bench_train.timed_steps(args.steps, device, make_batch, step, synchronize, f"rank {args.rank} ")
    step_s, losses = timed.step_s, timed.losses
    stats = deepum.stats()
    per_iteration = stats.get("per_iteration", [])
    figures = {
        "rank": args.rank, "local_rank": args.local_rank, "device_index": device.index,
        "device": torch.cuda.get_device_name(device) if cuda else (platform.processor() or platform.machine()),
        **bench_train.step_figures(step_s, per_iteration, args.warmup, workload.batch, stats.get("capacity_bytes"),
                                   stats.get("managed_bytes_peak")),
        "losses": losses, "capacity_bytes": stats.get("capacity_bytes"),
        **{key: stats.get(key) for key in TOTALS},
        "stats": {**{key: stats[key] for key in STATS_KEYS if key in stats}, "per_iteration": per_iteration},
    }
    if cuda:
        figures["footprint_bytes"] = footprint(torch, args.runtime_mode, per_iteration, stats.get("managed_bytes_peak"))
        if args.runtime_mode == "none":
            figures["peak_resident_bytes"] = figures["footprint_bytes"]
            figures["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        else:
            figures["peak_resident_bytes"] = stats.get("peak_resident_bytes")
    else:
        figures["footprint_bytes"] = figures["peak_resident_bytes"] = None
    dist.barrier()
    with digest_scope(torch, args.parallel, model):
        figures["parameter_sha256"] = parameter_digest(workload.model)
    return figures, workload


def job_record(args, ranks: list[dict], workload, versions: dict) -> dict:
    """The job's record from every rank's figures (rank order)."""
    footprints = [rank["footprint_bytes"] for rank in ranks]
    return {
        "status": "ok", "command": {"argv": list(sys.argv), "world_size": args.world_size},
        "parallel": args.parallel, "mode": args.mode, "runtime_mode": args.runtime_mode,
        "bucket_memory": args.bucket_memory if args.parallel == "ddp" else None,
        "world_size": args.world_size, "backend": args.backend, "device_type": args.device,
        "workload": args.workload, "workload_id": workloads.workload_id(args), "sizes": workload.info,
        "batch": workload.batch, "global_batch": workload.batch * args.world_size,
        "steps": args.steps, "warmup": args.warmup, "seed": args.seed,
        "config": args.deepum_config.to_dict() if args.runtime_mode == "deepum" else None,
        "capacity_bytes": args.capacity,
        "env": {key: value for key, value in os.environ.items()
                if key in ("CUDA_VISIBLE_DEVICES", "DEEPUM_NO_OVERSUBSCRIBE") or key.startswith("NCCL_")},
        "step_s_median": max(rank["step_s_median"] for rank in ranks),
        "footprint_bytes": max(footprints) if None not in footprints else None,
        "step_s_median_by_rank": [rank["step_s_median"] for rank in ranks],
        "parameter_sha256_by_rank": [rank["parameter_sha256"] for rank in ranks],
        "footprint_bytes_by_rank": footprints,
        "ranks": ranks,
        "device": ranks[0]["device"], **versions,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    with deepum.enable(args.runtime_mode, capacity=args.capacity, config=args.deepum_config):
        import torch

        if args.device == "cuda":
            device = torch.device("cuda", args.local_rank % torch.cuda.device_count())
            torch.cuda.set_device(device)  # deepum.enable() picks the same device under torchrun
        else:
            device = torch.device("cpu")
        torch.use_deterministic_algorithms(True)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        dist = torch.distributed
        dist.init_process_group(args.backend, **({"device_id": device} if args.backend == "nccl" else {}))
        try:
            figures, workload = train_rank(torch, args, device)
            ranks = [None] * args.world_size
            dist.all_gather_object(ranks, figures)
            dist.barrier()
        finally:
            dist.destroy_process_group()
        versions = {"driver_version": bench_train.driver_version() if args.device == "cuda" else None,
                    "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                    "nccl_version": ".".join(map(str, torch.cuda.nccl.version()))
                    if args.backend == "nccl" else None}
    if args.rank == 0:
        output = Path(args.output)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(job_record(args, ranks, workload, versions), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
