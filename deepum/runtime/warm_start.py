"""Warm start: what the deepum policy learned in one run, kept in a file for the next.

`deepum.enable(..., warm_start=PATH)` loads PATH (if it exists) before the first launch and writes the
learned state there at disable() or exit; `deepum run SCRIPT` does so by default with SCRIPT's
``.deepum-warm`` file beside it. The engine puts a loaded state on trial (driver_hooks/policy.hpp):
it is kept when the run launches the exec IDs it knows, and forgotten otherwise. Nothing here ever
stops a run: a missing file is a cold start; an unreadable, oversized, corrupt or foreign one is one
warning and a cold start. The layout is docs/warm-start.md's.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from ..specs.warm_state import MAX_BYTES

SUFFIX = ".deepum-warm"


def default_path(script: str | Path) -> Path:
    """The warm-start file of a script: beside it, its name plus SUFFIX."""
    script = Path(script)
    return script.with_name(script.name + SUFFIX)


def _warn(message: str) -> None:
    warnings.warn(f"deepum: {message}", stacklevel=3)


def read(path: str | Path, limit: int = MAX_BYTES) -> bytes | None:
    """The file's bytes, reading no more than `limit` + 1 of them; None (cold start) when it does not
    exist, and None with a warning when it cannot be read or is larger than `limit` bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn(f"warm start {path} ignored: cannot read it: {exc.strerror or exc}")
        return None
    if len(data) > limit:
        _warn(f"warm start {path} ignored: it is larger than {limit} bytes")
        return None
    return data


def load(engine, path: str | Path) -> None:
    """Loads `path` into `engine` (anything with load_state(bytes)) before its first launch; a bad
    state is one warning and a cold start."""
    data = read(path)
    if data is None:
        return
    try:
        engine.load_state(data)
    except ValueError as exc:
        _warn(f"warm start {path} ignored: {exc}")


def report_trial(trial: dict, path: str | Path) -> bool:
    """Warns when the trial (engine.warm_start()) forgot the loaded state; True once it is decided."""
    if trial["state"] == "forgotten":
        _warn(f"warm start {path} forgotten: in each of its first {trial['iterations']} iterations the run "
              f"launched exec IDs it did not know (last: {trial['known']} of {trial['launched']} known); "
              f"another model or memory layout. It is replaced at the end of this run.")
    return trial["state"] in ("kept", "forgotten", "cold")


def save(engine, path: str | Path, learned_bytes: int) -> None:
    """Writes engine.save_state() to `path` (replacing it whole, never half-written) unless nothing
    was learned (`learned_bytes`, the tables' size, is 0: a run under no pressure keeps the old file);
    a failure to write is one warning."""
    if learned_bytes == 0:
        return
    path = Path(path)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    try:
        partial.write_bytes(engine.save_state())
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        _warn(f"warm start {path} not written: {exc.strerror or exc}")
