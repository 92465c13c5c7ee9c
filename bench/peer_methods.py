"""How bench/train.py sets up a workload's model and optimizer in each mode of bench/modes.py: as
built (none, save_on_cpu and the unified-memory modes), with activation checkpointing over the
workload's blocks (checkpoint), or with the optimizer's state and step on the CPU (cpu_offload).

cpu_offload uses torchao's CPUOffloadOptimizer where torchao is importable (parameters and gradients
stay on the GPU; each parameter of at least its minimal_size elements gets a pinned host copy that the
workload's optimizer updates on the CPU, then copied back), else FSDP with
CPUOffload(offload_params=True) on one GPU: a process group of world size 1 (a FileStore in a
temporary folder), one FSDP unit per block and one at the root, parameters on the host between uses
and the optimizer stepping the host copies. torchao cannot copy sparse gradients (DLRM's embeddings)
to the host; FSDP's flat parameters are not made for them either.

torch is passed in, never imported here: importing this module needs no torch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
import tempfile
from typing import Callable

TORCHAO = "torchao CPUOffloadOptimizer"
FSDP = "FSDP CPUOffload(offload_params=True)"
OFFLOAD_CHOICES = {"auto": None, "torchao": TORCHAO, "fsdp": FSDP}
"""train.py --offload values: the implementation cpu_offload uses (auto: torchao if importable)."""


@dataclasses.dataclass
class Training:
    """What bench/train.py trains.

    model: the module loss_fn calls (a wrapper of the workload's model for FSDP).
    optimizer: its optimizer; zero_grad(set_to_none=zero_grad_to_none) before each step
        (CPUOffloadOptimizer takes only True).
    method: how the mode lowers peak GPU memory, for the record (None: it does not).
    digest_scope(): a context in which the workload's model holds the full trained parameters.
    close(): releases what the set-up holds (FSDP's process group).
    """

    model: object
    optimizer: object
    zero_grad_to_none: bool = False
    method: str | None = None
    digest_scope: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    close: Callable[[], None] = lambda: None


def prepare(torch, mode: str, workload, device: str, offload: str = "auto") -> Training:
    """The Training of `mode` for `workload` (built on `device`); offload: an OFFLOAD_CHOICES key."""
    if mode == "checkpoint":
        count = checkpoint_blocks(torch, workload.blocks)
        return Training(workload.model, workload.make_optimizer(torch, workload.model),
                        method=f"activation checkpointing over {count} blocks")
    if mode == "cpu_offload":
        implementation = offload_implementation(OFFLOAD_CHOICES[offload])
        if implementation == TORCHAO:
            return _torchao_offload(torch, workload)
        return _fsdp_offload(torch, workload, device)
    return Training(workload.model, workload.make_optimizer(torch, workload.model))


def checkpoint_blocks(torch, blocks: list) -> int:
    """Makes each block's forward run under torch.utils.checkpoint.checkpoint (non-reentrant): its
    activations are dropped after forward and recomputed in backward. Returns the number of blocks."""
    from torch.utils.checkpoint import checkpoint

    for block in blocks:
        block.forward = functools.partial(checkpoint, block.forward, use_reentrant=False)
    return len(blocks)


def torchao_offload_optimizer():
    """torchao's CPUOffloadOptimizer class, or None where torchao is not importable."""
    for module in ("torchao.optim", "torchao.prototype.low_bit_optim"):
        try:
            return getattr(__import__(module, fromlist=["CPUOffloadOptimizer"]), "CPUOffloadOptimizer")
        except (ImportError, AttributeError):
            continue
    return None


def offload_implementation(requested: str | None) -> str:
    """TORCHAO or FSDP: the one requested, or (None) torchao where importable; TORCHAO requested
    without torchao is a RuntimeError."""
    available = torchao_offload_optimizer() is not None
    if requested == TORCHAO and not available:
        raise RuntimeError("--offload torchao: torchao's CPUOffloadOptimizer is not importable")
    return requested or (TORCHAO if available else FSDP)


def optimizer_recipe(optimizer) -> tuple[type, dict]:
    """(class, keyword arguments) that build an optimizer like `optimizer` over other parameters:
    its defaults that its class's constructor takes."""
    cls = type(optimizer)
    accepted = inspect.signature(cls.__init__).parameters
    return cls, {key: value for key, value in optimizer.defaults.items() if key in accepted}


def _torchao_offload(torch, workload) -> Training:
    cls, kwargs = optimizer_recipe(workload.make_optimizer(torch, workload.model))
    optimizer = torchao_offload_optimizer()(workload.model.parameters(), cls, **kwargs)
    return Training(workload.model, optimizer, zero_grad_to_none=True, method=TORCHAO)


def single_process_group(torch, backend: str) -> Callable[[], None]:
    """Starts torch.distributed's default process group of world size 1, rank 0, over a FileStore in
    a temporary folder; returns the function that destroys it and removes the folder."""
    dist = torch.distributed
    folder = tempfile.mkdtemp(prefix="peer_store_")
    store = dist.FileStore(os.path.join(folder, "store"), 1)
    dist.init_process_group(backend, store=store, rank=0, world_size=1)

    def close():
        dist.destroy_process_group()
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)

    return close


def _fsdp_offload(torch, workload, device: str) -> Training:
    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    close = single_process_group(torch, "nccl" if device == "cuda" else "gloo")
    blocks = {id(block) for block in workload.blocks}
    model = FullyShardedDataParallel(
        workload.model, cpu_offload=CPUOffload(offload_params=True), use_orig_params=True,
        auto_wrap_policy=functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda module: id(module) in blocks),
        device_id=torch.device(device))
    if device == "cuda":  # the build's copy of the parameters on the GPU is gone: the peak starts here
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return Training(model, workload.make_optimizer(torch, model), method=FSDP,
                    digest_scope=lambda: FullyShardedDataParallel.summon_full_params(model), close=close)
