"""What enable() settles before it starts: the runtime's settings (RuntimeConfig), the capacity and
the fuse (max_managed_bytes) from the free GPU memory, the opt-in to go past GPU memory and its guard,
settings deepum cannot run under, whether CUDA was set up too early, and what the fuse says when it
refuses an allocation.

The fuse's rules:
- By default managed memory stays at or below half of the free GPU memory at enable(); a larger
  max_managed_bytes is refused. A model must then fit the GPU; `capacity` emulates a smaller one.
- Going past GPU memory is an explicit opt-in: max_managed_bytes="host" (the cap is what the host
  can back: available host memory less a margin, host_memory.py; never less than the default), or
  oversubscribe=True with a size up to that, or with no size (the same as "host"). A size above
  the GPU limit alone is refused, so that a mistyped size never oversubscribes the GPU unasked.
- Several processes on one GPU (a torch.distributed job with more local processes than GPUs,
  docs/distributed.md): when k processes of the job share the device, each one's figures come from
  1/k of the free GPU memory at its enable() (processes_on_device = k): its fuse defaults to and is
  limited by half of that share, and its default capacity is that share less the headroom, so that
  together they stay within the rule above. Sizes given are per process.
- The environment variable DEEPUM_NO_OVERSUBSCRIBE (any value but empty or 0) refuses the opt-in:
  shared machines, the test suite and the benchmarks set it, since a GPU driven far past its memory
  can stall every process on it.
"""
from __future__ import annotations

import dataclasses
import os

from ..config import DeepUMConfig
from ..units import format_bytes, parse_size

MODES = ("none", "um", "advise", "deepum")
DEFAULT_HEADROOM = 1 << 30
"""Bytes of free GPU memory the default capacity leaves for the context, cuBLAS workspaces, etc."""
OVERSUBSCRIBE_GUARD = "DEEPUM_NO_OVERSUBSCRIBE"
"""Environment variable that, set to anything but empty or 0, refuses going past GPU memory."""
HOST = "host"
"""max_managed_bytes value that opts in to managed memory up to what the host can back."""
ALLOCATOR_CONF_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
"""Environment variables PyTorch reads its caching allocator's settings from."""


class OversubscriptionRefused(RuntimeError):
    """Going past GPU memory was asked for while DEEPUM_NO_OVERSUBSCRIBE is set."""


def oversubscription_guarded(environ=None) -> bool:
    """Whether DEEPUM_NO_OVERSUBSCRIBE is set (to anything but empty or 0)."""
    value = (os.environ if environ is None else environ).get(OVERSUBSCRIBE_GUARD, "").strip()
    return value not in ("", "0")


def refuse_if_guarded(what: str) -> None:
    """OversubscriptionRefused naming the guard when it is set; `what` says what asked to go past GPU memory."""
    if oversubscription_guarded():
        raise OversubscriptionRefused(
            f"{what} asks deepum to let managed memory go past GPU memory, and {OVERSUBSCRIBE_GUARD}="
            f"{os.environ[OVERSUBSCRIBE_GUARD].strip()} forbids that here (it is set where oversubscribing a "
            f"shared GPU must never happen). Unset {OVERSUBSCRIBE_GUARD} to allow it, or keep managed memory "
            f"within the default cap (half of the free GPU memory) and use capacity= to emulate a smaller GPU.")


def allocator_conf_problem(environ=None) -> str | None:
    """Why deepum cannot run under PyTorch's allocator settings in the environment, or None.
    Expandable segments map GPU memory in place of cudaMalloc'd segments, a kind of memory deepum's
    managed pool and its engine do not handle."""
    environ = os.environ if environ is None else environ
    for name in ALLOCATOR_CONF_VARIABLES:
        value = environ.get(name, "")
        for item in value.split(","):
            key, _, setting = item.partition(":")
            if key.strip() == "expandable_segments" and setting.strip().lower() in ("true", "1"):
                return (f"deepum cannot run with {name}={value}: expandable segments replace the caching "
                        f"allocator's segments with mapped GPU memory, which is not managed memory, and deepum "
                        f"routes every allocation into managed segments of its own. Remove "
                        f"expandable_segments:True from {name} (or set it to False) for a deepum run.")
    return None


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """Settings of the GPU runtime; sizes are bytes or strings such as "8GiB" (stored as bytes).

    mode: one of MODES.
    capacity: GPU memory the runtime treats as available to managed data; None = the free GPU
        memory at enable() minus `headroom`. A smaller value emulates a smaller GPU.
    max_managed_bytes: the fuse, a hard cap on managed memory allocated at once; None = half of
        the free GPU memory at enable(). Values above that half are refused unless going past GPU
        memory was opted in to: "host" (what the host can back) or oversubscribe=True.
    oversubscribe: the opt-in to go past GPU memory: max_managed_bytes may then be any size up to
        what the host can back (None: that much, as "host"). "host" sets it. Refused while the
        environment variable DEEPUM_NO_OVERSUBSCRIBE is set.
    device: CUDA device index.
    headroom: bytes the default capacity leaves free.
    processes_on_device: how many processes of the job (this one included) share the device, at
        least 1; each takes 1/processes_on_device of the free GPU memory as the basis of its
        capacity and fuse (resolve_limits). enable() sets it from the launcher's placement.
    config: the correlation prefetcher's configuration (mode deepum).
    """

    mode: str = "deepum"
    capacity: int | str | None = None
    max_managed_bytes: int | str | None = None
    device: int = 0
    headroom: int | str = DEFAULT_HEADROOM
    config: DeepUMConfig = dataclasses.field(default_factory=DeepUMConfig)
    oversubscribe: bool = False
    processes_on_device: int = 1

    def __post_init__(self):
        if not isinstance(self.oversubscribe, bool):
            raise ValueError(f"oversubscribe must be True or False, got {self.oversubscribe!r}")
        if isinstance(self.max_managed_bytes, str) and self.max_managed_bytes.strip().lower() == HOST:
            refuse_if_guarded('max_managed_bytes="host"')
            object.__setattr__(self, "max_managed_bytes", None)
            object.__setattr__(self, "oversubscribe", True)
        elif self.oversubscribe:
            refuse_if_guarded("oversubscribe=True")
        if self.mode not in MODES:
            raise ValueError(f"unknown deepum mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if not isinstance(self.device, int) or isinstance(self.device, bool) or self.device < 0:
            raise ValueError(f"device must be a CUDA device index (0, 1, ...), got {self.device!r}")
        if (not isinstance(self.processes_on_device, int) or isinstance(self.processes_on_device, bool)
                or self.processes_on_device < 1):
            raise ValueError(f"processes_on_device must be a count of processes (1, 2, ...), "
                             f"got {self.processes_on_device!r}")
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
    oversubscribe: bool = False


class TooLateError(RuntimeError):
    """deepum.enable() was called after CUDA had been initialized in this process."""


def _past_gpu_hint() -> str:
    """How to go past GPU memory, or that it is switched off here."""
    if oversubscription_guarded():
        return (f" Going past GPU memory is switched off here ({OVERSUBSCRIBE_GUARD} is set).")
    return (' To go past GPU memory, opt in: max_managed_bytes="host" (up to what the host can back) or a '
            'larger max_managed_bytes with oversubscribe=True (deepum run: --max-managed-bytes host).')


def resolve_max_managed_bytes(requested: int | None, free_bytes: int, oversubscribe: bool = False,
                              host_backed: int | None = None) -> int:
    """The fuse in bytes.

    Without oversubscribe: `requested`, or half of the free GPU memory when None; a request above
    that half is refused (a process that asks the driver for more managed memory than the GPU has
    free can hang the GPU for everyone).
    With oversubscribe (refused while the guard is set): `requested`, or, when None, the larger of
    `host_backed` (what the host can back, host_memory.host_backed_bytes()) and that half; a request
    above that larger value is refused."""
    limit = free_bytes // 2
    if limit <= 0:
        raise ValueError(f"the GPU reports {format_bytes(free_bytes)} free: no room for managed memory")
    if requested is not None and requested <= 0:
        raise ValueError(f"max_managed_bytes must be positive, got {requested}")
    if not oversubscribe:
        if requested is None:
            return limit
        if requested > limit:
            raise ValueError(
                f"max_managed_bytes={format_bytes(requested)} is above the safety limit of half the free GPU "
                f"memory ({format_bytes(limit)} of {format_bytes(free_bytes)} free): deepum never lets managed "
                f"allocations exceed it unasked. Use a smaller value, or capacity= to emulate a smaller GPU."
                + _past_gpu_hint())
        return requested
    refuse_if_guarded("oversubscribe")
    if host_backed is None:
        raise ValueError("going past GPU memory needs what the host can back (host_backed)")
    ceiling = max(limit, host_backed)
    if requested is None:
        return ceiling
    if requested > ceiling:
        raise ValueError(
            f"max_managed_bytes={format_bytes(requested)} is more than the host can back: "
            f"{format_bytes(host_backed)} (available host memory less a margin for everything else) and "
            f"the GPU's limit of {format_bytes(limit)}, the larger of which is the most deepum allows. Free host "
            f'memory, use a smaller value, or max_managed_bytes="host" for that most.')
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


def resolve_limits(settings: RuntimeConfig, free_bytes: int, host_backed: int | None = None) -> Limits:
    """The capacity and the fuse of a process whose device had `free_bytes` free at enable() and
    is shared by settings.processes_on_device processes (k): both come from this process's share,
    free_bytes // k, as resolve_capacity() and resolve_max_managed_bytes() give them. A refusal
    names the share."""
    sharing = settings.processes_on_device
    share = free_bytes // sharing
    try:
        capacity = resolve_capacity(settings.capacity, share, settings.headroom)
        fuse = resolve_max_managed_bytes(settings.max_managed_bytes, share, settings.oversubscribe, host_backed)
    except ValueError as exc:
        if sharing == 1:
            raise
        raise ValueError(f"{exc} (with {sharing} processes of the job on the device, each one's figures come "
                         f"from its share of 1/{sharing} of the {format_bytes(free_bytes)} free: "
                         f"{format_bytes(share)})") from None
    return Limits(free_at_enable=free_bytes, capacity=capacity, max_managed_bytes=fuse,
                  oversubscribe=settings.oversubscribe)


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


def fuse_message(max_managed_bytes: int, bytes_in_use: int, requested: int, oversubscribe: bool = False) -> str:
    """What deepum says when the fuse refuses an allocation: how to stay within the cap and, unless
    the session already goes past GPU memory or the guard is set, how to go past it."""
    head = (f"deepum's managed-memory fuse refused an allocation of {format_bytes(requested)}: "
            f"{format_bytes(bytes_in_use)} of managed memory is in use and the cap (max_managed_bytes) "
            f"is {format_bytes(max_managed_bytes)}.")
    if oversubscribe:
        return (head + " The session goes past GPU memory and the cap is what the host can back (or the size "
                "given); reduce the batch or model size, or free host memory and raise max_managed_bytes.")
    return (head + " The cap keeps managed memory at or below half of the free GPU memory; reduce the batch or "
            "model size, or raise max_managed_bytes within that limit." + _past_gpu_hint())
