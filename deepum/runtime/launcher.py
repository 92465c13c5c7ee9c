"""Runs an unchanged training script under deepum: the engine of `deepum run`.

deepum.enable() runs first, before the script can touch CUDA; then the script runs in this process
as __main__, the way `python script.py ARGS` runs it: sys.argv is [script, *ARGS] and the script's
own folder is first on sys.path. enable() marks an iteration at every optimizer step; the launcher
also times the steps. When the script ends (returns, calls sys.exit, raises or is interrupted) the
launcher disables deepum, prints a short summary on stderr and writes the stats JSON if asked; the
exit status is the script's, as Python would give it.

Under a launcher such as torchrun (ranks.py) every rank runs this: each writes its own stats file
(rank_summary.rank_path), and the summaries are gathered on rank 0, which prints one line per rank
and a total and writes the gathered file (rank_summary.py; docs/distributed.md).
"""
from __future__ import annotations

import dataclasses
import json
import os
import runpy
import statistics
import sys
import time
import traceback
from pathlib import Path

from ..units import format_bytes
from . import rank_summary, ranks, session


class LaunchSetupError(Exception):
    """deepum could not start (no GPU runtime, a bad size, a refused setting): nothing of the script ran."""


@dataclasses.dataclass
class Outcome:
    """What a launched script did: its exit status, the host clock (time.perf_counter) at each of its
    optimizer steps, whether steps could be counted (not without torch), and deepum.stats() at its end."""

    status: int
    step_times: list[float]
    stats: dict | None
    steps_counted: bool = True


def step_hook_registrar():
    """torch's global optimizer step post-hook registration, or None without torch."""
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except ImportError:
        return None
    return register_optimizer_step_post_hook


def exit_status(code) -> int:
    """The process exit status Python gives for SystemExit(code): None is 0, an integer is itself,
    anything else is printed on stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """The traceback Python would print for the script's uncaught exception: from the script's own
    frame on, without the launcher's and runpy's frames above it (none for a syntax error, whose
    message names the line itself)."""
    tb = exc.__traceback__
    target = os.path.realpath(script)
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _run_as_main(script: str, script_args: list[str]) -> int:
    """Runs `script` as __main__ with its argv and sys.path[0]; the status Python would exit with."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *script_args]
    folder = os.path.dirname(os.path.realpath(script))
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.append(folder)
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        return exit_status(exc.code)
    except BaseException as exc:  # the script's own error or an interrupt: reported as Python reports it
        _print_script_traceback(exc, script)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def _synchronize() -> None:
    """Waits for the GPU work the script queued, so that the stats count all of it (best effort: a
    GPU in an error state is left to disable() to report)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - the stats are taken as they are
        pass


def launch(script: str, script_args: list[str], *, enable_kwargs: dict) -> Outcome:
    """Enables deepum with `enable_kwargs`, runs the script and disables deepum; LaunchSetupError
    when deepum cannot start. An interrupted script ends with status 130; a failure to disable is
    reported on one line and makes a status of 0 into 1."""
    try:
        session.enable(**enable_kwargs)
    except (ImportError, RuntimeError, ValueError, OSError) as exc:
        raise LaunchSetupError(str(exc)) from exc
    step_times: list[float] = []
    registrar = step_hook_registrar()
    handle = registrar(lambda optimizer, args, kwargs: step_times.append(time.perf_counter())) if registrar else None
    outcome = Outcome(1, step_times, None, steps_counted=handle is not None)
    try:
        outcome.status = _run_as_main(script, script_args)
    finally:
        if handle is not None:
            handle.remove()
        _synchronize()
        try:
            outcome.stats = session.stats()
        except Exception as exc:  # noqa: BLE001 - the script's status stays what it was
            print(f"deepum run: error: cannot read deepum's stats: {exc}", file=sys.stderr)
        try:
            session.disable()
        except Exception as exc:  # noqa: BLE001 - the script's status stays what it was
            print(f"deepum run: error: deepum did not stop cleanly: {exc}", file=sys.stderr)
            outcome.status = outcome.status or 1
    return outcome


def median_step_s(step_times: list[float]) -> float | None:
    """Median time between consecutive optimizer steps; None with fewer than two steps."""
    gaps = [later - earlier for earlier, later in zip(step_times, step_times[1:])]
    return statistics.median(gaps) if gaps else None


def prefetch_coverage(stats: dict | None) -> float | None:
    """prefetch_h2d / (prefetch_h2d + fault_h2d): the share of bytes brought to the GPU ahead of
    demand; None when nothing came to the GPU either way."""
    if not stats:
        return None
    prefetched, faulted = stats.get("prefetch_h2d_bytes", 0), stats.get("fault_h2d_bytes", 0)
    return prefetched / (prefetched + faulted) if prefetched + faulted else None


def run_figures(script: str, script_args: list[str], outcome: Outcome) -> dict:
    """The launcher's own figures: what ran, how it ended, its steps and the coverage."""
    return {"script": script, "argv": [script, *script_args], "exit_status": outcome.status,
            "optimizer_steps": len(outcome.step_times) if outcome.steps_counted else None,
            "step_s": [later - earlier for earlier, later in zip(outcome.step_times, outcome.step_times[1:])],
            "step_s_median": median_step_s(outcome.step_times),
            "prefetch_coverage": prefetch_coverage(outcome.stats)}


def summary(script: str, outcome: Outcome) -> list[str]:
    """The lines printed on stderr when the script has ended."""
    stats = outcome.stats or {}
    steps = len(outcome.step_times)
    median = median_step_s(outcome.step_times)
    line = f"deepum run: {Path(script).name} exited with status {outcome.status}"
    if outcome.steps_counted:
        line += (f" after {steps:,} optimizer step{'' if steps == 1 else 's'}"
                 + (f", median step {median:.3f} s" if median is not None else ""))
    mode = stats.get("mode")
    if mode in (None, "none"):
        return [line + " (mode none: nothing routed)"]
    line += (f"; mode {mode}, capacity {format_bytes(stats['capacity_bytes'])}, "
             f"managed memory cap {format_bytes(stats['max_managed_bytes'])}"
             + (" (past GPU memory)" if stats.get("oversubscribe") else ""))
    to_gpu = sum(stats.get(key, 0) for key in ("fault_h2d_bytes", "prefetch_h2d_bytes", "other_h2d_bytes"))
    coverage = prefetch_coverage(stats)
    moved = (f"deepum run: {stats.get('gpu_page_faults', 0):,} GPU page faults; to the GPU {format_bytes(to_gpu)} "
             f"({format_bytes(stats.get('fault_h2d_bytes', 0))} on faults, "
             f"{format_bytes(stats.get('prefetch_h2d_bytes', 0))} prefetched), to the host "
             f"{format_bytes(stats.get('d2h_bytes', 0))}; prefetch coverage "
             + (f"{coverage:.1%}" if coverage is not None else "n/a (nothing moved to the GPU)"))
    if stats.get("device_memory"):
        moved += ("; segments in device memory, the engine asleep (the managed memory cap cannot pass the "
                  "capacity, so nothing could ever have to move)")
    elif stats.get("asleep"):
        moved += "; the engine slept throughout (managed memory never came near the capacity)"
    return [line, moved]


def write_stats_json(path: str | Path, script: str, script_args: list[str], outcome: Outcome) -> None:
    """deepum.stats() at the script's end with the launcher's figures under "run"."""
    document = {**(outcome.stats or {}), "run": run_figures(script, script_args, outcome)}
    Path(path).write_text(json.dumps(document, indent=1, default=str) + "\n")


def _write_or_report(write, path, status: int) -> int:
    """Runs write(); on an OSError one line naming the file, and a status of 0 becomes 1."""
    try:
        write()
    except OSError as exc:
        print(f"deepum run: error: cannot write --stats-json {path}: {exc.strerror or exc}", file=sys.stderr)
        return status or 1
    return status


def _finish_rank(script: str, script_args: list[str], outcome: Outcome, placement: ranks.Placement,
                 stats_json: str | None, timeout_s: float) -> int:
    """Under a launcher: this rank's stats file, its record published, and on rank 0 the gathered
    summary lines and file. A rank that cannot take part in the gathering prints its own lines."""
    status = outcome.status
    rank = placement.rank
    if stats_json is not None:
        own_path = rank_summary.rank_path(stats_json, rank)
        status = _write_or_report(lambda: write_stats_json(own_path, script, script_args, outcome), own_path, status)
    entry = rank_summary.record(rank, placement.local_rank, run_figures(script, script_args, outcome), outcome.stats)
    store = rank_summary.open_store(timeout_s=timeout_s)
    prefix = rank_summary.key_prefix()
    if rank != 0:
        if store is None or not rank_summary.publish(store, prefix, entry):
            for line in summary(script, outcome):
                print(line.replace("deepum run:", f"deepum run [rank {rank}]:", 1), file=sys.stderr)
        return status
    if store is None:  # no store: rank 0 speaks for itself alone
        for line in summary(script, outcome):
            print(line.replace("deepum run:", "deepum run [rank 0]:", 1), file=sys.stderr)
        entries, missing = [entry], [other for other in range(placement.world_size) if other != rank]
    else:
        entries, missing = rank_summary.gather(store, prefix, entry, placement.world_size, timeout_s)
        lines = {item["rank"]: rank_summary.rank_line(item) for item in entries}
        lines.update({other: rank_summary.missing_line(other, timeout_s) for other in missing})
        for other in sorted(lines):
            print(lines[other], file=sys.stderr)
        print(rank_summary.total_line(entries, missing, placement.world_size), file=sys.stderr)
    if stats_json is not None:
        document = rank_summary.gathered_document(entries, missing, placement.world_size)
        status = _write_or_report(lambda: Path(stats_json).write_text(json.dumps(document, indent=1, default=str)
                                                                      + "\n"), stats_json, status)
    return status


def run_script(script: str, script_args: list[str], *, enable_kwargs: dict, stats_json: str | None = None,
               gather_timeout_s: float = rank_summary.GATHER_TIMEOUT_S) -> int:
    """launch(), then the summary on stderr and the stats JSON; the script's exit status (1 when
    the script succeeded but its stats could not be written). Under a launcher (LOCAL_RANK set),
    the per-rank files and the summary gathered on rank 0, which waits at most gather_timeout_s
    seconds in all for the other ranks."""
    placement = ranks.from_environment()
    outcome = launch(script, script_args, enable_kwargs=enable_kwargs)
    if placement is not None:
        return _finish_rank(script, script_args, outcome, placement, stats_json, gather_timeout_s)
    for line in summary(script, outcome):
        print(line, file=sys.stderr)
    if stats_json is not None:
        try:
            write_stats_json(stats_json, script, script_args, outcome)
        except OSError as exc:
            print(f"deepum run: error: cannot write --stats-json {stats_json}: {exc.strerror or exc}", file=sys.stderr)
            return outcome.status or 1
    return outcome.status
