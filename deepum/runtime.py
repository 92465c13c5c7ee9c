"""The GPU runtime's public face: `deepum.enable()` routes every CUDA allocation PyTorch makes, on
every thread, into CUDA managed memory under a hard cap (the fuse), in one of four modes:

- `none`: plain PyTorch, nothing routed;
- `um`: managed memory, the driver migrates pages on demand;
- `advise`: `um` plus per-data-type advice (parameters preferred on the GPU, inputs read-mostly) and,
  under budget pressure, each kernel's missing blocks (its intermediates) prefetched on its stream
  just before it instead of faulted;
- `deepum`: `um` plus correlation prefetching, pre-eviction and invalidation; the tables learn from
  the blocks each kernel's arguments cover or (learn_from "faults") from the CUPTI fault log, whose
  faults are attributed to launches by GPU time at each iteration mark.

enable() must run before the CUDA context exists (CUPTI's unified-memory counters record only when
configured after cuInit and before context creation); it says so clearly when it is too late.
torch and cuda-bindings are imported inside functions: importing this module needs neither.
"""
from __future__ import annotations

import ctypes
import dataclasses
import sys
import threading

from . import gpu, native_build
from .config import DeepUMConfig
from .fault_attribution import FaultLessons
from .units import format_bytes, parse_size

MODES = ("none", "um", "advise", "deepum")
DEFAULT_HEADROOM = 1 << 30
"""Bytes of free GPU memory the default capacity leaves for the context, cuBLAS workspaces, etc."""

PAGE_BYTES = 4096
"""CPU page size: the driver rounds advice ranges outwards to it."""


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


MODE_CODES = {"um": 1, "advise": 2, "deepum": 3}
"""Mode numbers of the online engine (driver_hooks/online.cpp)."""


def configure_before_context(config: RuntimeConfig) -> None:
    """The one point between cuInit and the creation of the CUDA context: builds (first use) and
    loads the online engine and configures CUPTI's unified-memory counters, the fault log."""
    global _engine
    _engine = native_build.load_torch_extension(native_build.ONLINE_ENGINE)
    _engine.configure_fault_log(config.device)


def _start_engine(settings: RuntimeConfig, limits: Limits, record: bool) -> None:
    """Starts the launch hook, the residency model under the capacity, (mode deepum) the
    correlation prefetcher with its worker and, with record, the trace recorder."""
    global _fault_lessons
    c = settings.config
    _engine.start(MODE_CODES[settings.mode], limits.capacity, settings.device, c.to_dict(),
                  c.prefetch, c.pre_evict, c.invalidate, c.learn_from == "accesses", record)
    _fault_lessons = FaultLessons() if settings.mode == "deepum" and c.learn_from == "faults" else None
    _iterations.clear()
    _iterations.append({**_engine.stats(), **_attribution_counts()})


def _learn_from_fault_log() -> None:
    """Attributes the fault log delivered since the last mark to launches and teaches the tables."""
    log = _engine.drain_fault_log()
    lessons = _fault_lessons.add(log["launch_correlation"], log["kernel_exec_id"], log["activity_correlation"],
                                 log["activity_start_ns"], log["activity_end_ns"], log["fault_t_ns"],
                                 log["fault_address"])
    _engine.learn_faults(*lessons)


def mark_iteration() -> None:
    """Marks the end of a training iteration: per-iteration figures in stats() are differences
    between consecutive marks (GPU page faults, migrated and prefetched bytes). enable() calls it
    after every optimizer step; a mark with no kernel launched since the last one is ignored."""
    with _lock:
        if _engine is None or _session is None or _session.config.mode == "none":
            return
        if _iterations and _engine.stats()["launches"] == _iterations[-1]["launches"]:
            return
        touched = _engine.next_iteration()
        _engine.flush_fault_log()
        if _fault_lessons is not None:
            _learn_from_fault_log()
        _iterations.append({**_engine.stats(), "touched_bytes": touched, **_attribution_counts()})


class _ManagedAllocator:
    """The managed-memory allocator library, its PyTorch MemPool and the counters it keeps."""

    def __init__(self, device: int):
        import torch

        self.path = native_build.build_library(native_build.MANAGED_ALLOCATOR)
        self.lib = ctypes.CDLL(str(self.path))
        for name, restype in (("deepum_max_managed_bytes", ctypes.c_size_t),
                              ("deepum_bytes_in_use", ctypes.c_size_t),
                              ("deepum_peak_bytes", ctypes.c_size_t),
                              ("deepum_segments_allocated", ctypes.c_uint64),
                              ("deepum_segments_freed", ctypes.c_uint64),
                              ("deepum_refusals", ctypes.c_uint64),
                              ("deepum_last_refused_bytes", ctypes.c_size_t),
                              ("deepum_bytes_in_use_at_refusal", ctypes.c_size_t),
                              ("deepum_driver_failures", ctypes.c_uint64),
                              ("deepum_last_driver_error", ctypes.c_int),
                              ("deepum_segments", ctypes.c_size_t)):
            getattr(self.lib, name).restype = restype
        self.lib.deepum_set_max_managed_bytes.argtypes = [ctypes.c_size_t]
        self.lib.deepum_segments.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.pluggable = torch.cuda.memory.CUDAPluggableAllocator(str(self.path), "deepum_malloc", "deepum_free")
        with torch.cuda.device(device):
            self.pool = torch.cuda.MemPool(self.pluggable.allocator())
        self.device = device

    def counter(self, name: str) -> int:
        return int(getattr(self.lib, f"deepum_{name}")())

    def set_max_managed_bytes(self, nbytes: int) -> None:
        self.lib.deepum_set_max_managed_bytes(nbytes)

    def segments(self) -> list[tuple[int, int]]:
        while True:
            room = self.counter("segments_allocated") - self.counter("segments_freed") + 16
            buffer = (ctypes.c_uint64 * (2 * room))()
            live = self.lib.deepum_segments(buffer, room)
            if live <= room:
                return [(buffer[2 * i], buffer[2 * i + 1]) for i in range(live)]


class _AdviceHooks:
    """Mode advise, automatically: at each outermost module call, advises the module's parameters
    (once per storage) and marks its input tensors read-mostly until the call returns."""

    def __init__(self, device: int):
        from torch.nn.modules import module as nn_module

        self.device = device
        self.advised: set[tuple[int, int]] = set()
        self.local = threading.local()
        self.handles = [nn_module.register_module_forward_pre_hook(self._before),
                        nn_module.register_module_forward_hook(self._after, always_call=True)]

    def _before(self, module, args):
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if depth == 0:
            _advise_parameters(module, self.device, self.advised)
            self.local.inputs = _advise_inputs(args, self.device, "read_mostly")

    def _after(self, module, args, output):
        depth = getattr(self.local, "depth", 0)
        if depth == 0:  # the hooks were installed while this call was under way
            return
        self.local.depth = depth - 1
        if depth == 1:
            for address, nbytes in self.local.inputs:
                gpu.advise(address, nbytes, "unset_read_mostly", self.device)
            self.local.inputs = []

    def remove(self):
        for handle in self.handles:
            handle.remove()


class Session:
    """An enabled runtime. enable() returns one; `with deepum.enable(...):` disables on exit and adds
    the fuse's explanation to an out-of-memory error the fuse caused."""

    def __init__(self, config: RuntimeConfig, limits: Limits | None):
        self.config = config
        self.limits = limits
        self.record: str | None = None
        self.step_hook = None  # marks an iteration after every optimizer step (UM modes)
        self.refusals_at_start = _allocator.counter("refusals") if _allocator else 0

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc is not None and _allocator is not None and hasattr(exc, "add_note"):
            import torch

            if isinstance(exc, torch.OutOfMemoryError) and _allocator.counter("refusals") > self.refusals_at_start:
                exc.add_note(_last_fuse_message())
        if _session is self:
            disable()
        return False


_lock = threading.RLock()
_session: Session | None = None
_allocator: _ManagedAllocator | None = None   # kept for the process: tensors may outlive a session
_prepared = False                             # configure_before_context() ran in this process
_advice: _AdviceHooks | None = None
_engine = None                                # the online engine extension, once loaded
_iterations: list[dict] = []                  # engine counters at enable() and at each mark_iteration()
_fault_lessons: FaultLessons | None = None    # learn_from "faults": the fault log's attribution
_observer_attached = False
_refusals_reported = 0


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError("deepum's GPU modes need PyTorch with CUDA: pip install 'deepum[gpu]'") from exc
    if not torch.cuda.is_available():
        raise RuntimeError("deepum's GPU modes need a CUDA GPU, and PyTorch sees none "
                           "(torch.cuda.is_available() is false)")
    return torch


def _last_fuse_message() -> str:
    return fuse_message(_allocator.counter("max_managed_bytes"), _allocator.counter("bytes_in_use_at_refusal"),
                        _allocator.counter("last_refused_bytes"))


def _on_out_of_memory(device, requested, device_allocated, device_free) -> None:
    """PyTorch's out-of-memory observer: names the fuse on stderr when it caused the failure.
    It may run under the caching allocator's lock, so it touches nothing but the counters."""
    global _refusals_reported
    refusals = _allocator.counter("refusals") if _allocator else 0
    if refusals > _refusals_reported:
        _refusals_reported = refusals
        sys.stderr.write(_last_fuse_message() + "\n")


def _check_not_too_late(torch, device: int) -> None:
    gpu.driver_init()
    count = gpu.device_count()
    if device >= count:
        raise ValueError(f"device {device} does not exist: the driver sees {count} CUDA device(s)")
    reason = too_late_reason(torch.cuda.is_initialized(), gpu.primary_context_active(device),
                             gpu.current_context_exists(), _prepared)
    if reason:
        raise TooLateError(reason)


def enable(mode: str = "deepum", *, capacity: int | str | None = None, max_managed_bytes: int | str | None = None,
           config: DeepUMConfig | str | None = None, device: int = 0, headroom: int | str = DEFAULT_HEADROOM,
           record: str | None = None) -> Session:
    """Starts the runtime (see RuntimeConfig for the arguments) and returns its Session, which can
    also be used as a context manager. Call it before any CUDA work in the process.

    config: a DeepUMConfig or the path of a JSON file (e.g. written by `deepum tune`).
    record: path of a trace (.npz, docs/trace-format.md) written at disable(): kernels, their accesses
        from their arguments, faults, memory events and migrations; call deepum.mark_iteration()
        after each training step so that the trace has iterations."""
    global _session, _allocator, _prepared, _advice, _observer_attached
    if isinstance(config, (str, bytes)) or hasattr(config, "__fspath__"):
        config = DeepUMConfig.load(config)
    settings = RuntimeConfig(mode=mode, capacity=capacity, max_managed_bytes=max_managed_bytes, device=device,
                             headroom=headroom, config=config or DeepUMConfig())
    if record is not None and settings.mode == "none":
        raise ValueError("record= needs a unified-memory mode (um, advise or deepum): mode none runs no launch hook")
    if record is not None and not str(record).endswith(".npz"):
        raise ValueError(f"record= must name a .npz trace file, got {record!r}")
    with _lock:
        if _session is not None:
            raise RuntimeError(f"deepum is already enabled (mode {_session.config.mode}); "
                               f"call deepum.disable() first")
        if settings.mode == "none":
            _session = Session(settings, None)
            return _session
        torch = _import_torch()
        if _allocator is None:
            native_build.build_library(native_build.MANAGED_ALLOCATOR)  # build errors before CUDA is touched
        _check_not_too_late(torch, settings.device)
        if not _prepared:
            configure_before_context(settings)
            _prepared = True
        torch.cuda.init()
        free_bytes, _total = torch.cuda.mem_get_info(settings.device)
        limits = Limits(free_at_enable=free_bytes,
                        capacity=resolve_capacity(settings.capacity, free_bytes, settings.headroom),
                        max_managed_bytes=resolve_max_managed_bytes(settings.max_managed_bytes, free_bytes))
        if _allocator is None:
            _allocator = _ManagedAllocator(settings.device)
        elif _allocator.device != settings.device:
            raise RuntimeError(f"deepum's managed pool lives on device {_allocator.device}; "
                               f"it cannot move to device {settings.device} within one process")
        if not _observer_attached:
            torch._C._cuda_attach_out_of_memory_observer(_on_out_of_memory)
            _observer_attached = True
        _allocator.set_max_managed_bytes(limits.max_managed_bytes)
        torch._C._cuda_beginAllocateToPool(settings.device, _allocator.pool.id)
        try:
            _start_engine(settings, limits, record is not None)
            if settings.mode == "advise":
                _advice = _AdviceHooks(settings.device)
        except BaseException:
            torch._C._cuda_endAllocateToPool(settings.device, _allocator.pool.id)
            raise
        _session = Session(settings, limits)
        _session.record = record
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _session.step_hook = register_optimizer_step_post_hook(lambda optimizer, args, kwargs: mark_iteration())
        return _session


def _write_recording(session: "Session") -> None:
    import torch

    from .recorder import trace_from_recording
    from .offline.trace_io import write_trace

    device = torch.cuda.get_device_name(session.config.device)
    trace = trace_from_recording(_engine.drain_recording(), device, session.limits.capacity,
                                 notes=f"recorded by deepum.enable(mode={session.config.mode!r})",
                                 extra_meta={"mode": session.config.mode})
    write_trace(trace, session.record)


def disable() -> None:
    """Stops routing allocations into managed memory (after synchronizing the device). Tensors
    already in managed memory stay valid; a later enable() in this process is allowed."""
    global _session, _advice
    with _lock:
        if _session is None:
            return
        settings = _session.config
        if settings.mode != "none":
            import torch

            torch.cuda.synchronize(settings.device)
            _session.step_hook.remove()
            _engine.stop()
            if _session.record is not None:
                _write_recording(_session)
            torch._C._cuda_endAllocateToPool(settings.device, _allocator.pool.id)
            if _advice is not None:
                _advice.remove()
                _advice = None
        _session = None


def is_enabled() -> bool:
    """Whether a deepum session is active (any mode, `none` included)."""
    return _session is not None


def managed_segments() -> list[tuple[int, int]]:
    """Live managed segments as (address, bytes), in address order ([] before the first enable)."""
    return _allocator.segments() if _allocator else []


def stats() -> dict:
    """The runtime's figures, like torch.cuda.memory_stats(): sizes in bytes, counts since the
    process started (managed_bytes_peak since the first enable)."""
    with _lock:
        session = _session
        figures = {
            "enabled": session is not None,
            "mode": session.config.mode if session else None,
            "device": session.config.device if session else None,
            "capacity_bytes": session.limits.capacity if session and session.limits else None,
            "max_managed_bytes": session.limits.max_managed_bytes if session and session.limits else None,
            "free_bytes_at_enable": session.limits.free_at_enable if session and session.limits else None,
        }
        names = ("bytes_in_use", "peak_bytes", "segments_allocated", "segments_freed", "refusals",
                 "last_refused_bytes", "driver_failures")
        counters = {name: _allocator.counter(name) if _allocator else 0 for name in names}
        if _engine is not None:  # counters since the engine was loaded; engine figures while it runs
            _engine.flush_fault_log()
            figures.update(_engine.stats())
            figures.update(_attribution_counts())
            marks = _iterations
            figures["per_iteration"] = [
                {"touched_bytes": after["touched_bytes"],
                 **{key: after[key] - before[key] for key in _PER_ITERATION if key in after}}
                for before, after in zip(marks, marks[1:])]
    figures.update({
        "managed_bytes_in_use": counters["bytes_in_use"],
        "managed_bytes_peak": counters["peak_bytes"],
        "segments_allocated": counters["segments_allocated"],
        "segments_freed": counters["segments_freed"],
        "segments_live": counters["segments_allocated"] - counters["segments_freed"],
        "fuse_refusals": counters["refusals"],
        "fuse_last_refused_bytes": counters["last_refused_bytes"],
        "driver_allocation_failures": counters["driver_failures"],
    })
    return figures


def _attribution_counts() -> dict:
    """Faults of the log attributed to a launch and not (learn_from "faults"; zero otherwise)."""
    lessons = _fault_lessons
    return {"faults_attributed": lessons.faults_attributed if lessons else 0,
            "faults_unattributed": lessons.faults_unattributed if lessons else 0}


_PER_ITERATION = ("launches", "gpu_page_faults", "fault_h2d_bytes", "prefetch_h2d_bytes", "other_h2d_bytes",
                  "d2h_bytes", "prefetch_bytes", "evict_bytes", "discard_bytes", "populate_bytes", "prefetch_calls", "kernel_prediction_hits",
                  "kernel_prediction_misses", "kernel_waits", "lane_waits", "hook_ns", "demand_prefetch_bytes",
                  "allocation_waits_for_discard", "fault_lessons", "faults_learned", "faults_attributed",
                  "faults_unattributed")


def _managed_storages(tensors, min_bytes: int = 1):
    """(address, bytes) of the distinct managed storages behind CUDA tensors."""
    seen = {}
    for tensor in tensors:
        if not tensor.is_cuda:
            continue
        storage = tensor.untyped_storage()
        address, nbytes = storage.data_ptr(), storage.nbytes()
        if nbytes >= min_bytes and address not in seen and gpu.memory_type(address) == gpu.MEMORY_TYPE_MANAGED:
            seen[address] = nbytes
    return list(seen.items())


def _tensors_in(value):
    """Tensors found in nested tuples, lists and dict values."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)


def _advise_parameters(model, device: int, advised: set) -> tuple[int, int]:
    """Preferred location and accessed-by `device` for the model's managed parameters not yet in
    `advised`; returns (tensors, bytes) advised now."""
    count = total = 0
    for address, nbytes in _managed_storages(model.parameters()):
        if (address, nbytes) in advised:
            continue
        gpu.advise(address, nbytes, "preferred_location", device)
        gpu.advise(address, nbytes, "accessed_by", device)
        advised.add((address, nbytes))
        count, total = count + 1, total + nbytes
    return count, total


def _advise_inputs(inputs, device: int, advice: str) -> list[tuple[int, int]]:
    """Applies `advice` to the whole pages inside each managed input tensor (never to a page it
    shares with other data); returns the advised (address, bytes) ranges."""
    ranges = []
    for address, nbytes in _managed_storages(_tensors_in(inputs), min_bytes=PAGE_BYTES):
        start = -(-address // PAGE_BYTES) * PAGE_BYTES
        end = (address + nbytes) // PAGE_BYTES * PAGE_BYTES
        if end > start:
            gpu.advise(start, end - start, advice, device)
            ranges.append((start, end - start))
    return ranges


def advise_model(model, inputs=None, device: int | None = None) -> dict:
    """Mode advise by hand (Appl. Sci. 2021): the model's managed parameters get preferred location
    and accessed-by `device` (default: the session's device), and the managed `inputs` (tensors,
    nested in lists/tuples/dicts) get read-mostly. Tensors not in managed memory are skipped.
    Returns the tensors and bytes advised."""
    if device is None:
        device = _session.config.device if _session else 0
    parameter_count, parameter_bytes = _advise_parameters(model, device, set())
    input_ranges = _advise_inputs(inputs, device, "read_mostly") if inputs is not None else []
    return {"parameter_storages": parameter_count, "parameter_bytes": parameter_bytes,
            "input_ranges": len(input_ranges), "input_bytes": sum(n for _, n in input_ranges)}
