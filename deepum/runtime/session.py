"""The GPU runtime's public face: `deepum.enable()` routes every CUDA allocation PyTorch makes, on
every thread, into CUDA managed memory under a hard cap (the fuse), in one of four modes:

- `none`: plain PyTorch, nothing routed;
- `um`: managed memory, the driver migrates pages on demand;
- `advise`: `um` plus per-data-type advice (parameters preferred on the GPU, inputs read-mostly) and,
  under budget pressure, each kernel's missing blocks (its intermediates) prefetched on its stream
  just before it instead of faulted;
- `deepum`: `um` plus correlation prefetching, pre-eviction and invalidation; the tables learn from
  the blocks each kernel's arguments cover or (learn_from "faults") from the CUPTI fault log, whose
  faults are attributed to launches by GPU time at each iteration mark. Where the fuse cannot pass
  the capacity, no block could ever have to move, and its segments come from device memory instead
  (deepum/specs/sleep.py, serves_device_memory).

enable() must run before the CUDA context exists (CUPTI's unified-memory counters record only when
configured after cuInit and before context creation); it says so clearly when it is too late.
torch and cuda-bindings are imported inside functions: importing this module needs neither.
"""
from __future__ import annotations

import atexit
import dataclasses
import sys
import threading
from pathlib import Path

from ..config import DeepUMConfig
from ..specs.sleep import serves_device_memory
from . import gpu, host_heap, host_memory, native_build, ranks, warm_start as warm
from .advice import AdviceHooks
from .deferred_frees import FUSE_SHARE_DIVISOR, DeferredFrees, routing_holds_frees
from .allocator import ManagedAllocator
from .fault_attribution import FaultLessons
from .pool_scopes import PoolScopes, keep_collectives_off_record_stream
from .profiler_guard import ProfilerGuard
from .limits import (DEFAULT_HEADROOM, Limits, RuntimeConfig, TooLateError, allocator_conf_problem, fuse_message,
                     resolve_limits, too_late_reason)


def configure_before_context(config: RuntimeConfig) -> None:
    """The one point between cuInit and the creation of the CUDA context: builds (first use) and
    loads the online engine and configures CUPTI's unified-memory counters, the fault log."""
    global _engine
    _engine = native_build.load_torch_extension(native_build.online_engine())
    _engine.configure_fault_log(config.device)


def _start_engine(settings: RuntimeConfig, limits: Limits, record: bool, warm_start: str | None,
                  device_memory: bool) -> None:
    """Starts the launch hook, the residency model under the capacity, (mode deepum) the
    correlation prefetcher with its worker, loading the warm-start file if there is one, and, with
    record, the trace recorder. With device_memory (the session's segments are device memory) the
    engine sleeps for good and neither hook is installed."""
    global _fault_lessons, _host_heap_kept
    c = settings.config
    if host_heap.keeps_host_heap(settings.mode, c.keep_host_heap, device_memory) and not _host_heap_kept:
        _host_heap_kept = host_heap.keep()
    _engine.start(settings.mode, limits.capacity, settings.device, c.to_dict(), record, device_memory)
    if warm_start is not None:
        warm.load(_engine, warm_start)
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
    between consecutive marks, and the fault log's figures (GPU page faults, migrated bytes, link
    time) are binned by when each transfer or fault began. enable() calls it after every optimizer
    step; a mark with nothing done since the last one is ignored: no kernel launched or, while the
    engine sleeps (launches unseen), no managed allocation made. It flushes no CUPTI buffer unless
    the policy learns from faults. In a session on device memory nothing is counted: only the blocks
    PyTorch held back are released (deferred_frees.py)."""
    with _lock:
        if _engine is None or _session is None or _session.config.mode == "none":
            return
        counted = not _session.device_memory
        if counted and _iterations and not mark_counts(_engine.stats(), _iterations[-1]):
            return
        if _session.deferred_frees is not None:
            _session.deferred_frees.release_if_pending()
        if not counted:
            return
        touched = _engine.next_iteration()
        _engine.mark_iteration_time()
        if _session.warm_start is not None and not _session.warm_start_decided:
            _session.warm_start_decided = warm.report_trial(_engine.warm_start(), _session.warm_start)
        if _fault_lessons is not None:
            _engine.flush_fault_log()
            _learn_from_fault_log()
        _iterations.append({**_engine.stats(), "touched_bytes": touched, **_attribution_counts()})


def running_engine():
    """The online engine of the enabled session; RuntimeError when no session runs one (mode none)."""
    with _lock:
        if _engine is None or _session is None or _session.config.mode == "none":
            raise RuntimeError("no deepum engine runs: enable() a session in mode um, advise or deepum first")
        return _engine


def mark_counts(now: dict, last_mark: dict) -> bool:
    """Whether an iteration mark with engine counters `now` ends an iteration begun at `last_mark`:
    a kernel was launched since, or, while the engine sleeps (its launches unseen), a tensor was
    allocated in deepum's managed segments since."""
    progress = "managed_allocations" if now["asleep"] else "launches"
    return now[progress] != last_mark[progress]


class Session:
    """An enabled runtime. enable() returns one; `with deepum.enable(...):` disables on exit and adds
    the fuse's explanation to an out-of-memory error the fuse caused."""

    def __init__(self, config: RuntimeConfig, limits: Limits | None):
        self.config = config
        self.limits = limits
        self.placement: ranks.Placement | None = None  # under a launcher: this process's place in the job
        self.record: str | None = None
        self.warm_start: str | None = None  # the warm-start file (mode deepum)
        self.warm_start_decided = False     # its trial has ended (or nothing was loaded)
        self.device_memory = False  # its segments are device memory: no hook, no iteration counted
        self.step_hook = None  # marks an iteration after every optimizer step (UM modes)
        self.scopes: PoolScopes | None = None  # the routing, and PyTorch's own pool scopes beside it
        self.profiler_guard: ProfilerGuard | None = None
        self.deferred_frees: DeferredFrees | None = None  # PyTorch before 2.13: record_stream'd frees
        self.refusals_at_start = _allocator.counter("refusals") if _allocator else 0

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc is not None and _allocator is not None and hasattr(exc, "add_note"):
            import torch

            if isinstance(exc, torch.OutOfMemoryError) and _allocator.counter("refusals") > self.refusals_at_start:
                exc.add_note(_last_fuse_message())
        if _session is self:
            if exc is None:
                disable()
            else:  # the error that ended the block stays the one raised
                try:
                    disable()
                except Exception as teardown:
                    if hasattr(exc, "add_note"):
                        exc.add_note(f"deepum.disable() after it also failed: {teardown}")
        return False


_lock = threading.RLock()
_session: Session | None = None
_allocator: ManagedAllocator | None = None    # kept for the process: tensors may outlive a session
_prepared = False                             # configure_before_context() ran in this process
_advice: AdviceHooks | None = None
_engine = None                                # the online engine extension, once loaded
_iterations: list[dict] = []                  # engine counters at enable() and at each mark_iteration()
_fault_lessons: FaultLessons | None = None    # learn_from "faults": the fault log's attribution
_observer_attached = False
_refusals_reported = 0
_free_at_first_enable: int | None = None      # the safety rule's "free GPU memory at start"
_exit_hook_registered = False
_host_heap_kept = False                       # host_heap.keep() took effect in this process


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
    session = _session
    return fuse_message(_allocator.counter("max_managed_bytes"), _allocator.counter("bytes_in_use_at_refusal"),
                        _allocator.counter("last_refused_bytes"),
                        oversubscribe=bool(session and session.limits and session.limits.oversubscribe))


def _on_out_of_memory(device, requested, device_allocated, device_free) -> None:
    """PyTorch's out-of-memory observer: names the fuse on stderr when it caused the failure.
    It may run under the caching allocator's lock, so it touches nothing but the counters."""
    global _refusals_reported
    refusals = _allocator.counter("refusals") if _allocator else 0
    if refusals > _refusals_reported:
        _refusals_reported = refusals
        sys.stderr.write(_last_fuse_message() + "\n")


def _place(device: int | None, placement: ranks.Placement | None) -> tuple[int, int]:
    """The device to use and how many of the job's processes share it: under a launcher, the
    LOCAL_RANK device unless `device` is given, shared by the local ranks that map to it; otherwise
    `device` or 0, unshared. Initializes the driver (no context)."""
    if placement is None:
        return (0 if device is None else device), 1
    gpu.driver_init()
    count = gpu.device_count()
    if count < 1:
        raise RuntimeError("the driver sees no CUDA device")
    chosen = ranks.device_for(placement.local_rank, count) if device is None else device
    return chosen, ranks.processes_on_device(placement.local_rank, placement.local_world_size, count)


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
           config: DeepUMConfig | str | None = None, device: int | None = None, headroom: int | str = DEFAULT_HEADROOM,
           record: str | None = None, oversubscribe: bool = False, warm_start: str | None = None) -> Session:
    """Starts the runtime (see RuntimeConfig for the arguments) and returns its Session, which can
    also be used as a context manager. Call it before any CUDA work in the process.

    Going past GPU memory is opt-in, in one of two spellings: max_managed_bytes="host" lets managed
    memory grow to what the host can back (its available memory less a margin; the value for most
    uses), and oversubscribe=True with a size sets that cap by hand (a size above the GPU's limit
    without it is refused, so a mistyped size never oversubscribes the GPU unasked). Either way
    capacity defaults to the free GPU memory less `headroom` and the engine keeps residency under it.
    The environment variable DEEPUM_NO_OVERSUBSCRIBE=1 refuses both (OversubscriptionRefused).
    Refused before anything starts: PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF or
    PYTORCH_ALLOC_CONF with expandable_segments:True) in a unified-memory mode.

    config: a DeepUMConfig or the path of a JSON file (e.g. written by `deepum tune`).
    device: the CUDA device; None: under a launcher such as torchrun (LOCAL_RANK set; ranks.py)
        the device LOCAL_RANK modulo the number of devices, otherwise 0. Under a launcher the
        processes of the job that share the device split its free memory (processes_on_device,
        RuntimeConfig), and once the session runs the device becomes torch's current device
        (torch.cuda.set_device), so the script's plain "cuda" tensors land in deepum's pool. A
        malformed launcher environment is a ValueError (mode none included). Docs: docs/distributed.md.
    record: path of a trace (.npz, docs/trace-format.md) written at disable(): kernels, their accesses
        from their arguments, faults, memory events and migrations; call deepum.mark_iteration()
        after each training step so that the trace has iterations.
    warm_start (mode deepum): path of the policy's learned state, loaded now if the file exists and
        written at disable() (or exit) if the run learned anything, so that the next run of the same
        model starts where this one ended (docs/warm-start.md). A state the run's first iterations do
        not match, or a bad file, is one warning and a cold start."""
    global _session, _allocator, _prepared, _advice, _observer_attached, _free_at_first_enable
    global _exit_hook_registered
    placement = ranks.from_environment()
    if isinstance(config, (str, bytes)) or hasattr(config, "__fspath__"):
        config = DeepUMConfig.load(config)
    settings = RuntimeConfig(mode=mode, capacity=capacity, max_managed_bytes=max_managed_bytes,
                             device=0 if device is None else device, headroom=headroom,
                             config=config or DeepUMConfig(), oversubscribe=oversubscribe)
    if record is not None and settings.mode == "none":
        raise ValueError("record= needs a unified-memory mode (um, advise or deepum): mode none runs no launch hook")
    if record is not None and not str(record).endswith(".npz"):
        raise ValueError(f"record= must name a .npz trace file, got {record!r}")
    if warm_start is not None and settings.mode != "deepum":
        raise ValueError(f"warm_start= applies to mode deepum, not to mode {settings.mode}")
    with _lock:
        if _session is not None:
            raise RuntimeError(f"deepum is already enabled (mode {_session.config.mode}); "
                               f"call deepum.disable() first")
        if settings.mode == "none":  # touches no GPU: the device is the one given, or 0
            _session = Session(settings, None)
            _session.placement = placement
            return _session
        problem = allocator_conf_problem()
        if problem:
            raise RuntimeError(problem)
        keep_collectives_off_record_stream()
        host_backed = host_memory.host_backed_bytes() if settings.oversubscribe else None
        torch = _import_torch()
        if _allocator is None:
            native_build.build_library(native_build.MANAGED_ALLOCATOR)  # build errors before CUDA is touched
        chosen, sharing = _place(device, placement)
        settings = dataclasses.replace(settings, device=chosen, processes_on_device=sharing)
        _check_not_too_late(torch, settings.device)
        if not _prepared:
            configure_before_context(settings)
            _prepared = True
        torch.cuda.init()
        if _free_at_first_enable is None:
            _free_at_first_enable = torch.cuda.mem_get_info(settings.device)[0]
        # Managed memory of earlier sessions, resident on the GPU, is not free now but counts within
        # the limits: they stay those of the process's first session. Processes sharing the device
        # each take their share of it (resolve_limits).
        limits = resolve_limits(settings, _free_at_first_enable, host_backed)
        if _allocator is None:
            _allocator = ManagedAllocator(settings.device)
        elif _allocator.device != settings.device:
            raise RuntimeError(f"deepum's managed pool lives on device {_allocator.device}; "
                               f"it cannot move to device {settings.device} within one process")
        if not _observer_attached:
            torch._C._cuda_attach_out_of_memory_observer(_on_out_of_memory)
            _observer_attached = True
        _allocator.set_max_managed_bytes(limits.max_managed_bytes)
        c = settings.config
        device_memory = serves_device_memory(
            settings.mode, limits.max_managed_bytes, limits.capacity, c.wake_percent, c.learn_from,
            c.device_memory_without_pressure, record is not None,
            warm_start is not None and Path(warm_start).is_file())
        other_kind_cached = _allocator.set_device_memory(device_memory)
        session = Session(settings, limits)
        session.placement = placement
        session.device_memory = device_memory
        session.scopes = PoolScopes(torch, _engine, settings.device, _allocator)
        if other_kind_cached:  # an earlier session's segments of the other kind: none of them is used again
            session.scopes.start_fresh_pool()
        session.scopes.route()
        try:
            _start_engine(settings, limits, record is not None, warm_start and str(warm_start), device_memory)
            if settings.mode == "advise":
                _advice = AdviceHooks(settings.device)
            if placement is not None:  # the script's plain "cuda" tensors go to this process's device
                torch.cuda.set_device(settings.device)
        except BaseException:
            _engine.stop()  # nothing stays running: start() may have succeeded before a later step failed
            session.scopes.unroute()
            raise
        session.scopes.install()
        session.profiler_guard = ProfilerGuard(torch, _engine)
        session.profiler_guard.install()
        if routing_holds_frees(torch.__version__):
            session.deferred_frees = DeferredFrees(torch, session.scopes.release_held_frees,
                                                   max(1, limits.max_managed_bytes // FUSE_SHARE_DIVISOR))
            session.deferred_frees.install()
        session.record = record
        session.warm_start = warm_start and str(warm_start)
        from torch.optim.optimizer import register_optimizer_step_post_hook

        session.step_hook = register_optimizer_step_post_hook(lambda optimizer, args, kwargs: mark_iteration())
        _session = session
        if not _exit_hook_registered:
            atexit.register(_disable_at_exit)
            _exit_hook_registered = True
        return _session


def _write_recording(session: "Session") -> None:
    import torch

    from ..offline.trace_io import write_trace
    from .recorder import trace_from_recording

    device = torch.cuda.get_device_name(session.config.device)
    trace = trace_from_recording(_engine.drain_recording(), device, session.limits.capacity,
                                 notes=f"recorded by deepum.enable(mode={session.config.mode!r})",
                                 extra_meta={"mode": session.config.mode})
    write_trace(trace, session.record)


def disable() -> None:
    """Stops routing allocations into managed memory (after synchronizing the device) and writes the
    trace of record=. Tensors already in managed memory stay valid; a later enable() in this process
    is allowed. Every step runs even if one fails (after a device-side assert, for example), so that
    nothing stays running; the first failure is raised at the end."""
    global _session, _advice
    with _lock:
        session = _session
        if session is None:
            return
        _session = None
        settings = session.config
        if settings.mode == "none":
            return
        import torch

        steps = [lambda: torch.cuda.synchronize(settings.device), session.step_hook.remove,
                 session.profiler_guard.remove, session.scopes.remove]
        if session.deferred_frees is not None:
            steps.insert(1, session.deferred_frees.remove)
        if session.warm_start is not None:
            steps.append(lambda: warm.save(_engine, session.warm_start, _engine.stats()["table_bytes"]))
        steps.append(_engine.stop)
        if session.record is not None:
            steps.append(lambda: _write_recording(session))
        steps.append(session.scopes.unroute)
        if _advice is not None:
            steps.append(_advice.remove)
        failure = None
        for step in steps:
            try:
                step()
            except Exception as exc:  # noqa: PERF203 - every step must run
                failure = failure or exc
        _advice = None
        if failure is not None:
            raise failure


def _disable_at_exit() -> None:
    """At interpreter exit, a session still enabled is disabled (its record= trace written), before
    CUDA is torn down."""
    try:
        disable()
    except Exception as exc:
        sys.stderr.write(f"deepum: disabling at exit failed: {exc}\n")


def is_enabled() -> bool:
    """Whether a deepum session is active (any mode, `none` included)."""
    return _session is not None


def active_device() -> int:
    """The device of the active session; 0 without one."""
    return _session.config.device if _session else 0


def managed_segments() -> list[tuple[int, int]]:
    """Live managed segments as (address, bytes), in address order ([] before the first enable)."""
    return _allocator.segments() if _allocator else []


def stats() -> dict:
    """The runtime's figures, in the manner of torch.cuda.memory_stats(). Sizes in bytes, times in
    nanoseconds; counters run from when the engine was first loaded in this process.

    Session:
    - ``enabled``, ``mode``, ``device``: whether a session runs, its mode and CUDA device.
    - ``capacity_bytes``: GPU memory the policy treats as available to managed data.
    - ``max_managed_bytes``: the fuse: most managed memory allocated at once.
    - ``oversubscribe``: whether the session may go past GPU memory (max_managed_bytes="host" or
      oversubscribe=True).
    - ``free_bytes_at_enable``: free GPU memory when enable() ran.
    - ``processes_on_device``: how many processes of the job share the device (1 outside a launcher);
      each one's capacity and fuse come from its 1/processes_on_device share of the free memory.
    - ``rank``, ``world_size``, ``local_rank``: under a launcher such as torchrun, this process's rank
      in the job, the job's number of processes, and its rank on this machine (RANK, WORLD_SIZE,
      LOCAL_RANK); None otherwise.

    Managed allocator:
    - ``managed_bytes_in_use``, ``managed_bytes_peak``: memory of deepum's segments allocated now, and
      at most: what the fuse counts (device memory included, where the segments come from it).
    - ``segments_allocated``, ``segments_freed``, ``segments_live``: the caching allocator's segments.
    - ``device_memory``: whether segments made now come from device memory instead of managed memory:
      the fuse cannot pass the capacity, so no block would ever have to move (deepum/specs/sleep.py,
      ``device_memory_without_pressure``). ``device_segments_allocated``: segments made so.
    - ``fuse_refusals``, ``fuse_last_refused_bytes``: requests the fuse refused, the last one's size.
    - ``driver_allocation_failures``: cudaMallocManaged (or cudaMalloc) calls that failed.
    - ``held_frees_releases``: releases of the record_stream'd blocks PyTorch before 2.13 holds back
      under the routing (deferred_frees.py), each with the device synchronized; None when the session's
      PyTorch holds none back.
    - ``host_heap_kept``: whether glibc's malloc keeps the host heap it has grown for the rest of the
      process (``DeepUMConfig.keep_host_heap``, set by the first deepum session under possible pressure;
      host_heap.py).

    Launch hook and policy (while the engine is loaded):
    - ``asleep``: whether the engine sleeps: the launch hook is off and the policy sees no launch while
      deepum's managed segments hold at most ``wake_percent`` of the capacity (deepum/specs/sleep.py);
      it wakes for good once they hold more, or when a learned state is loaded. A recording and
      learning from faults never sleep.
    - ``launch_hook_subscribed``: whether the launch hook holds CUPTI's callbacks (listening to module
      unloads only while asleep); ``allocator_hook_attached``: whether the caching allocator's trace
      hook is attached (once per process, never detached). A session on device memory installs
      neither, so it costs no CUPTI callback and no work per allocation; nor does it count iterations.
    - ``launches``: kernel launches the hook saw (none while asleep). ``hook_ns``: CPU time it spent on them,
      of which ``hook_scan_ns`` reading the arguments (the memory map's lock included),
      ``hook_policy_ns`` the policy's decision (the engine's lock included; of it ``hook_release_ns``
      telling the policy of freed segments' blocks and ``hook_translate_ns`` numbering the kernel's
      blocks for the policy and finding their migrations in flight), ``hook_wait_ns`` making the
      kernel's stream wait for its blocks' migrations, ``hook_demand_ns`` prefetching its missing blocks
      on its stream, ``hook_submit_ns`` handing the other moves to the worker (events recorded on the
      launching stream included; of it ``hook_submit_command_ns`` making their commands under the
      memory map's lock, ``hook_submit_mark_ns`` recording the marks and events they run after,
      ``hook_submit_hand_ns`` handing them to the worker and the move threads). ``hand_overs``: the
      launches that handed commands over; ``handed_commands``: the commands, a block's move each.
      ``launch_driver_ns``: time those launch calls took in the driver
      after the hook returned: long when the launch queue is full, the GPU far behind the launching
      thread.
    - ``worker_prefetch_ns``, ``worker_evict_ns``, ``worker_discard_ns``, ``worker_populate_ns``,
      ``worker_map_ns``: CPU time the worker thread spent issuing prefetches, evictions, discards,
      populations and host-mapping advice (with the copy out of a mapped block's resident pages). A
      migration to the host returns only once its copies are done and its pages are mapped on the host,
      so ``worker_evict_ns`` is the time evictions held the worker; with eviction threads, the sum of
      their time in the driver's evictions (threads side by side count each).
    - ``launches_without_arguments``: launches whose arguments could not be read (no accesses).
    - ``tensor_list_launches``: launches of PyTorch's foreach and fused-optimizer kernels whose tensor
      list was read slot by slot, only the tensors the launch's blocks use counted as accesses.
      ``tensor_list_fallbacks``: such launches whose list did not read as expected and was scanned
      whole (addresses left over from earlier launches then count as accesses too).
    - ``indexed_launches``: launches of indexed kernels (deepum/specs/indexed_kernels.py: embedding
      lookups, gathers, scatters), whose blocks host mapping may map whatever the span of their uses.
    - ``launches_ignored``: launches the engine stood aside from: on another device's context, on a
      stream being captured into a CUDA graph, or while a graph capture or another pool's scope was open.
    - ``param_info_failures_func``, ``param_info_failures_kernel``: kernels whose argument layout the
      driver would not give (as a function, as a library kernel).
    - ``resident_bytes``, ``peak_resident_bytes``: the policy's model of managed blocks on the GPU.
    - ``kernel_prediction_hits``, ``kernel_prediction_misses``: launches that matched, and did not
      match, the kernel the predictor expected next. ``table_bytes``: bytes its tables hold.
      ``repeated_plan_launches``: launches of repeated iterations (``DeepUMConfig.repeat_plans_percent``,
      each launch taking a remembered plan instead of a decision in full) that launched what the
      remembered iteration launched at their place.
    - ``warm_start``: with a warm-start file, the loaded state's trial: ``state`` ("cold": nothing
      loaded, "on_trial", "kept", "forgotten"), ``iterations`` on trial, exec IDs ``launched`` and
      ``known`` in the last of them, and ``trial``: (launched, known) of each iteration judged, in
      order; None without a file.

    Migrations the engine issued:
    - ``prefetch_calls``, ``prefetch_bytes``: prefetches of predicted blocks to the GPU.
    - ``demand_prefetch_calls``, ``demand_prefetch_bytes``: a kernel's missing blocks prefetched on
      its stream just before it.
    - ``evict_calls``, ``evict_bytes``: evictions to the host, with a copy.
    - ``discard_calls``, ``discard_bytes``: dead blocks dropped without a copy.
    - ``populate_calls``, ``populate_bytes``: dead blocks given fresh GPU pages instead of a copy.
    - ``segment_populate_calls``, ``segment_populate_bytes``: managed segments populated on the GPU as
      they were made while the engine slept (``populate_segments``; deepum/specs/sleep.py), one call
      each on the allocating stream, so that their first touches do not fault.
    - ``host_map_calls``, ``host_map_bytes``: ranges mapped from the host (``host_map_uses``): preferred
      location the host, accessed by the GPU, resident pages evicted with a copy (in ``evict_bytes``).
      ``host_unmap_calls``, ``host_unmap_bytes``: ranges whose mapping was withdrawn (they migrate again).
    - ``discards_cancelled``: discard choices cancelled because memory in the block was allocated again
      before the discard was issued. ``allocation_waits_for_discard``: allocations made to wait for a
      discard in flight in their block (their stream waits, not their thread).
      ``allocation_holds_for_discard``: allocations whose thread was held while the worker issued a
      discard in their block (until the discard's completion event was recorded; never with discard
      threads, which take their choices when they are handed them).
      ``managed_allocations``: allocations the caching allocator
      made in deepum's managed segments (tensors, not segments).
    - ``kernel_waits``: waits of a kernel's stream for its blocks' migrations; ``kernel_waits_unissued``:
      launches that needed a migration not yet issued (they may fault instead).
    - ``lane_waits``: waits of one migration stream for another's progress.
    - ``direct_eviction_refusals``: evictions the eviction threads (``eviction_threads``) issued and the
      unified-memory driver refused (the blocks stayed where they were); ``direct_eviction_wait_ns``:
      the threads' time waiting on the CPU for the work each eviction runs after, in nanoseconds.
      ``direct_prefetch_refusals``, ``direct_prefetch_wait_ns``: the same of the prefetch threads
      (``prefetch_threads``). ``direct_discard_refusals``, ``direct_discard_wait_ns``: of the discard
      threads (``discard_threads``), discards and populations whose discard the driver refused (they
      moved with a copy instead), and the threads' wait.
    - ``cuda_errors``, ``last_cuda_error``: failed CUDA calls of the engine (each falls back to a copy
      or a synchronization), the text of the last. ``injected_failures``: of those, the ones failed on
      purpose by the fault-injection build (environment variable DEEPUM_INJECT_FAULTS=N at first use).

    The fault log (CUPTI unified-memory counters):
    - ``gpu_page_faults``: GPU page faults.
    - ``fault_h2d_bytes``, ``prefetch_h2d_bytes``, ``other_h2d_bytes``: bytes migrated to the GPU on
      faults, by prefetches, and otherwise. ``d2h_bytes``: bytes migrated to the host.
    - ``h2d_link_busy_ns``, ``d2h_link_busy_ns``: time the host link was busy migrating managed memory
      to the GPU, and to the host: the union of the transfers' GPU time spans in each direction,
      exact whatever order CUPTI delivers them in, as long as a record comes within the last 4,096
      runs of its union and before its iteration's bin settles (the second mark after the one that
      closed it); a later one adds only its part past what was let go.
    - ``gpu_busy_ns``: time the GPU ran kernels, the union of CUPTI's kernel records' spans counted
      the same way; kernel records are on while the engine is awake (and for a recording or learning
      from faults), so it is 0 while the engine sleeps. A step's time less it is the GPU waiting: on
      migrations or on the launching thread.
    - ``fault_lessons``, ``faults_learned``: launches and blocks the tables learned from the fault log
      (learn_from "faults"); ``faults_attributed``, ``faults_unattributed``: faults given to a launch by
      GPU time, and not.

    ``per_iteration``: one dict per iteration mark, ``touched_bytes`` (distinct managed blocks the
    iteration used) and the change of each counter over the iteration; the fault log's counters count
    the faults and transfers that began between the two marks (CUPTI's times), however late their
    records arrive.
    """
    with _lock:
        session = _session
        figures = {
            "enabled": session is not None,
            "mode": session.config.mode if session else None,
            "device": session.config.device if session else None,
            "capacity_bytes": session.limits.capacity if session and session.limits else None,
            "max_managed_bytes": session.limits.max_managed_bytes if session and session.limits else None,
            "oversubscribe": bool(session and session.limits and session.limits.oversubscribe),
            "free_bytes_at_enable": session.limits.free_at_enable if session and session.limits else None,
            "processes_on_device": session.config.processes_on_device if session else None,
            "rank": session.placement.rank if session and session.placement else None,
            "world_size": session.placement.world_size if session and session.placement else None,
            "local_rank": session.placement.local_rank if session and session.placement else None,
            "held_frees_releases": session.deferred_frees.releases if session and session.deferred_frees else None,
            "host_heap_kept": _host_heap_kept,
        }
        names = ("bytes_in_use", "peak_bytes", "segments_allocated", "segments_freed", "refusals",
                 "last_refused_bytes", "driver_failures", "device_segments_allocated", "device_memory")
        counters = {name: _allocator.counter(name) if _allocator else 0 for name in names}
        if _engine is not None:  # counters since the engine was loaded; engine figures while it runs
            _engine.flush_fault_log()
            figures.update(_engine.stats())
            figures.update(_attribution_counts())
            figures["warm_start"] = _engine.warm_start() if session and session.warm_start is not None else None
            marks = _iterations
            figures["per_iteration"] = [
                {"touched_bytes": after["touched_bytes"],
                 **{key: after[key] - before[key] for key in _PER_ITERATION if key in after}, **logged}
                for before, after, logged in zip(marks, marks[1:], _engine.iteration_figures())]
    figures.update({
        "managed_bytes_in_use": counters["bytes_in_use"],
        "managed_bytes_peak": counters["peak_bytes"],
        "segments_allocated": counters["segments_allocated"],
        "segments_freed": counters["segments_freed"],
        "segments_live": counters["segments_allocated"] - counters["segments_freed"],
        "device_memory": bool(counters["device_memory"]),
        "device_segments_allocated": counters["device_segments_allocated"],
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


_PER_ITERATION = ("launches", "prefetch_bytes", "evict_bytes", "discard_bytes", "populate_bytes",
                  "segment_populate_bytes", "host_map_bytes", "launch_driver_ns",
                  "host_unmap_bytes", "prefetch_calls",
                  "kernel_prediction_hits", "kernel_prediction_misses", "repeated_plan_launches",
                  "kernel_waits", "lane_waits",
                  "direct_eviction_refusals", "direct_eviction_wait_ns",
                  "direct_prefetch_refusals", "direct_prefetch_wait_ns",
                  "direct_discard_refusals", "direct_discard_wait_ns", "hook_ns",
                  "hook_scan_ns", "hook_policy_ns", "hook_release_ns", "hook_translate_ns", "hook_wait_ns",
                  "hook_demand_ns", "hook_submit_ns", "hook_submit_command_ns", "hook_submit_mark_ns",
                  "hook_submit_hand_ns", "hand_overs", "handed_commands", "worker_prefetch_ns", "worker_evict_ns", "worker_discard_ns", "worker_populate_ns", "worker_map_ns",
                  "demand_prefetch_bytes", "allocation_waits_for_discard", "allocation_holds_for_discard",
                  "fault_lessons", "faults_learned",
                  "faults_attributed", "faults_unattributed")
"""Counters stats()["per_iteration"] gives as differences between marks; the fault log's (faults,
migrated bytes, link time) come binned by time from the engine's iteration_figures()."""
