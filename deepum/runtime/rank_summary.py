"""`deepum run` on every rank of a torch.distributed job: each rank's summary gathered on rank 0.

Each rank publishes a small JSON record of its run (exit status, steps, a few key stats) into a
c10d key-value store under a key of its rank; rank 0 waits for the others' records, bounded in time
as a whole, and prints one stderr line per rank and a total line. The store is passed in (any object
with c10d Store's set/get/wait), so that all of this runs against a small stand-in in the tests;
open_store() finds the real one: the torchrun agent's store, alive until every worker has exited, or
else the default process group's store while torch.distributed is initialized.
"""
from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from ..units import format_bytes

GATHER_TIMEOUT_S = 60.0
"""Seconds rank 0 waits, in all, for the other ranks' records."""
LAST_LOOK_S = 0.01
"""Seconds rank 0 looks for each record still to come once the wait is over (so at most
GATHER_TIMEOUT_S + LAST_LOOK_S * world size in all)."""
KEY_STATS = ("mode", "device", "processes_on_device", "capacity_bytes", "gpu_page_faults", "fault_h2d_bytes",
             "prefetch_h2d_bytes", "d2h_bytes")
"""The stats (deepum.stats() keys) a rank's record carries."""
RUN_FIGURES = ("exit_status", "optimizer_steps", "step_s_median", "prefetch_coverage")
"""The launcher's run figures (launcher.run_figures() keys) a rank's record carries."""


def rank_path(path: str | Path, rank: int) -> Path:
    """The per-rank file of a --stats-json PATH: `.rankN` before the suffix (stats.json ->
    stats.rank1.json; a name without a suffix gets it at the end)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def record(rank: int, local_rank: int, figures: Mapping, stats: Mapping | None) -> dict:
    """A rank's record: its ranks, its run figures of RUN_FIGURES and its stats of KEY_STATS
    (sizes in bytes, times in seconds; None where a figure is missing)."""
    stats = stats or {}
    return {"rank": rank, "local_rank": local_rank, **{key: figures.get(key) for key in RUN_FIGURES},
            **{key: stats.get(key) for key in KEY_STATS}}


def key_prefix(environ: Mapping[str, str] | None = None) -> str:
    """Store keys of this run: the torchrun run id and restart count keep runs and restarts apart."""
    environ = os.environ if environ is None else environ
    return (f"deepum/run-summary/{environ.get('TORCHELASTIC_RUN_ID', 'none')}/"
            f"{environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/")


def open_store(environ: Mapping[str, str] | None = None, timeout_s: float = GATHER_TIMEOUT_S):
    """A c10d store all ranks of the job reach, or None: a client of the torchrun agent's store
    (TORCHELASTIC_USE_AGENT_STORE=True, MASTER_ADDR, MASTER_PORT), else the default process
    group's store while torch.distributed is initialized. Failures to connect give None."""
    environ = os.environ if environ is None else environ
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    timeout = datetime.timedelta(seconds=timeout_s)
    agent_store = environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    if agent_store and environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        try:
            # A client only (is_master False): the agent hosts the server until every worker exits.
            return dist.TCPStore(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), is_master=False,
                                 timeout=timeout)
        except Exception:  # noqa: BLE001 - no summary gathering is not a failure of the run
            return None
    try:
        if dist.is_available() and dist.is_initialized():
            return dist.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001
        return None
    return None


def publish(store, prefix: str, entry: dict) -> bool:
    """Puts a rank's record into the store under its rank; whether that worked."""
    try:
        store.set(f"{prefix}{entry['rank']}", json.dumps(entry, default=str))
        return True
    except Exception:  # noqa: BLE001 - the rank then prints its own summary
        return False


def gather(store, prefix: str, own: dict, world_size: int, timeout_s: float = GATHER_TIMEOUT_S,
           clock=time.monotonic) -> tuple[list[dict], list[int]]:
    """Rank 0: the records of all ranks in rank order (its own is `own`) and the ranks whose
    record did not come within timeout_s seconds in all (plus LAST_LOOK_S a rank), or could not
    be read."""
    deadline = clock() + timeout_s
    entries, missing = [], []
    for rank in range(world_size):
        if rank == own["rank"]:
            entries.append(own)
            continue
        key = f"{prefix}{rank}"
        # Past the deadline a record already there is still taken: a short look, not a wait.
        remaining = max(deadline - clock(), LAST_LOOK_S)
        try:
            store.wait([key], datetime.timedelta(seconds=remaining))
            entries.append(json.loads(store.get(key)))
        except Exception:  # noqa: BLE001 - c10d raises its own errors on a timeout
            missing.append(rank)
    return entries, missing


def _number(value, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:,}{unit}"


def rank_line(entry: Mapping) -> str:
    """One stderr line for a rank's record."""
    steps, median = entry.get("optimizer_steps"), entry.get("step_s_median")
    line = f"deepum run [rank {entry['rank']}]: exited with status {entry.get('exit_status')}"
    if steps is not None:
        line += f" after {steps:,} optimizer step{'' if steps == 1 else 's'}"
        if median is not None:
            line += f", median step {median:.3f} s"
    mode = entry.get("mode")
    if mode in (None, "none"):
        return line + f"; mode {mode or 'none'}: nothing routed"
    coverage = entry.get("prefetch_coverage")
    return (line + f"; mode {mode} on device {entry.get('device')}"
            + (f" (shared by {entry['processes_on_device']} processes)" if (entry.get("processes_on_device") or 1) > 1
               else "")
            + f", capacity {format_bytes(entry.get('capacity_bytes') or 0)}, "
            f"{_number(entry.get('gpu_page_faults'))} GPU page faults, "
            f"{format_bytes(entry.get('fault_h2d_bytes') or 0)} to the GPU on faults, "
            f"{format_bytes(entry.get('prefetch_h2d_bytes') or 0)} prefetched, "
            f"{format_bytes(entry.get('d2h_bytes') or 0)} to the host; prefetch coverage "
            + (f"{coverage:.1%}" if coverage is not None else "n/a"))


def missing_line(rank: int, timeout_s: float) -> str:
    """The stderr line for a rank whose record never came."""
    return (f"deepum run [rank {rank}]: no summary within {timeout_s:g} s (the rank failed before its end, "
            f"is still running, or could not reach the store)")


def total_line(entries: list[dict], missing: list[int], world_size: int) -> str:
    """The stderr line over all ranks that reported."""
    statuses = sorted({entry.get("exit_status") for entry in entries}, key=str)
    steps = [entry.get("optimizer_steps") for entry in entries]
    line = (f"deepum run: {len(entries)} of {world_size} rank{'' if world_size == 1 else 's'} reported"
            + (f" (missing: {', '.join(map(str, missing))})" if missing else "")
            + f"; exit status{'' if len(statuses) == 1 else 'es'} {', '.join(map(str, statuses))}")
    if steps and None not in steps:
        line += f"; {sum(steps):,} optimizer steps in all"
    if any(entry.get("mode") not in (None, "none") for entry in entries):
        total = {key: sum(entry.get(key) or 0 for entry in entries)
                 for key in ("gpu_page_faults", "fault_h2d_bytes", "prefetch_h2d_bytes", "d2h_bytes")}
        line += (f"; {total['gpu_page_faults']:,} GPU page faults, {format_bytes(total['fault_h2d_bytes'])} to the "
                 f"GPU on faults, {format_bytes(total['prefetch_h2d_bytes'])} prefetched, "
                 f"{format_bytes(total['d2h_bytes'])} to the host")
    return line


def gathered_document(entries: list[dict], missing: list[int], world_size: int) -> dict:
    """What rank 0 writes to --stats-json PATH itself."""
    return {"world_size": world_size, "ranks": entries, "missing_ranks": missing}
