"""What enable() settles before it starts: the runtime's settings (RuntimeConfig), the capacity and
the fuse (max_managed_bytes) from the free GPU memory, whether CUDA was set up too early, and what
the fuse says when it refuses an allocation."""
from __future__ import annotations

import dataclasses

from ..config import DeepUMConfig
from ..units import format_bytes, parse_size

MODES = ("none", "um", "advise", "deepum")
DEFAULT_HEADROOM = 1 << 30
"""Bytes of free GPU memory the default capacity leaves for the context, cuBLAS workspaces, etc."""


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """Settings of the GPU runtime; sizes are bytes or strings such as "8GiB" (stored as bytes).

    mode: one of MODES.
    capacity: GPU memory the runtime treats as available to managed data; None = the free GPU
        memory at enable() minus `headroom`. A smaller value emulates a smaller GPU.
    max_managed_bytes: the fuse, a hard cap on managed memory allocated at once; None = half of
        the free GPU memory at enable(). Values above that half are refused.
    device: CUDA device index.
    headroom: bytes the default capacity leaves free.
    config: the correlation prefetcher's configuration (mode deepum).
    """

    mode: str = "deepum"
    capacity: int | str | None = None
    max_managed_bytes: int | str | None = None
    device: int = 0
    headroom: int | str = DEFAULT_HEADROOM
    config: DeepUMConfig = dataclasses.field(default_factory=DeepUMConfig)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown deepum mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not isinstance(self.device, int) or isinstance(self.device, bool) or self.device < 0:
            raise ValueError(f"device must be a CUDA device index (0, 1, ...), got {self.device!r}")
        if not isinstance(self.config, DeepUMConfig):
            raise ValueError(f"config must be a DeepUMConfig, got {type(self.config).__name__}")
        for name in ("capacity", "max_managed_bytes", "headroom"):
            value = getattr(self, name)
            if value is None:
                continue
            nbytes = parse_size(value)
            if nbytes <= 0 and name != "headroom":
                raise ValueError(f"{name} must be positive, got {value!r}")
            object.__setattr__(self, name, nbytes)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What enable() settled on, in bytes."""

    free_at_enable: int
    capacity: int
    max_managed_bytes: int


class TooLateError(RuntimeError):
    """deepum.enable() was called after CUDA had been initialized in this process."""


def resolve_max_managed_bytes(requested: int | None, free_bytes: int) -> int:
    """The fuse in bytes: `requested`, or half of the free GPU memory when None. A request above
    half of the free memory is refused (a process that asks the driver for more managed memory
    than the GPU has free can hang the GPU for everyone)."""
    limit = free_bytes // 2
    if limit <= 0:
        raise ValueError(f"the GPU reports {format_bytes(free_bytes)} free: no room for managed memory")
    if requested is None:
        return limit
    if requested <= 0:
        raise ValueError(f"max_managed_bytes must be positive, got {requested}")
    if requested > limit:
        raise ValueError(
            f"max_managed_bytes={format_bytes(requested)} is above the safety limit of half the free GPU "
            f"memory ({format_bytes(limit)} of {format_bytes(free_bytes)} free): deepum never lets managed "
            f"allocations exceed it. Use a smaller value, or capacity= to emulate a smaller GPU.")
    return requested


def resolve_capacity(requested: int | None, free_bytes: int, headroom: int) -> int:
    """The capacity in bytes: `requested`, or the free GPU memory minus `headroom` when None;
    never more than the free memory."""
    if requested is None:
        capacity = free_bytes - headroom
        if capacity <= 0:
            raise ValueError(f"the GPU has {format_bytes(free_bytes)} free, less than the headroom of "
                             f"{format_bytes(headroom)}: pass capacity= or a smaller headroom=")
        return capacity
    if requested > free_bytes:
        raise ValueError(f"capacity={format_bytes(requested)} is more than the GPU has free "
                         f"({format_bytes(free_bytes)}); a capacity emulates a smaller GPU, never a larger one")
    return requested


def too_late_reason(torch_initialized: bool, primary_context_active: bool, current_context: bool,
                    prepared_by_deepum: bool) -> str | None:
    """Why enable() is too late, or None when it is not. Too late means CUDA was set up in this
    process before deepum got to configure it (prepared_by_deepum: an earlier enable() in this
    process did, so a new enable() after disable() is fine)."""
    if prepared_by_deepum:
        return None
    happened = [what for what, seen in (
        ("PyTorch has already initialized CUDA (torch.cuda.is_initialized() is true)", torch_initialized),
        ("the device's primary CUDA context already exists", primary_context_active),
        ("this thread already has a current CUDA context", current_context)) if seen]
    if not happened:
        return None
    return ("deepum.enable() came too late: " + "; ".join(happened) + ". CUPTI's unified-memory fault "
            "counters record only when configured before the CUDA context is created, and the managed "
            "pool must be in place before the first CUDA tensor. Call deepum.enable() at the top of the "
            "script, before any CUDA work: before model.cuda(), before creating CUDA tensors, before "
            "torch.cuda calls that touch the device and before other CUDA libraries (CuPy, ...) run.")


def fuse_message(max_managed_bytes: int, bytes_in_use: int, requested: int) -> str:
    """What deepum says when the fuse refuses an allocation."""
    return (f"deepum's managed-memory fuse refused an allocation of {format_bytes(requested)}: "
            f"{format_bytes(bytes_in_use)} of managed memory is in use and the cap (max_managed_bytes) "
            f"is {format_bytes(max_managed_bytes)}. The cap keeps managed memory at or below half of the "
            f"free GPU memory; reduce the batch or model size, or raise max_managed_bytes within that limit.")
