"""Runs an unchanged training script under deepum and records its trace: the engine of
`deepum record`. The script runs in this process as __main__ after deepum.enable(record=...)."""
from __future__ import annotations

import runpy
import sys

from . import session


class RecordSetupError(Exception):
    """deepum could not start (no GPU runtime, a bad capacity or config): nothing of the script ran."""


def run_recorded(script: str, script_args: list[str], output: str, mode: str = "deepum",
                 capacity: str | None = None, config: str | None = None) -> None:
    """Enables deepum (recording into `output`), runs `script` with `script_args` as its argv,
    and writes the trace when the script ends (also when it raises). RecordSetupError when deepum
    cannot start; an error of the script itself propagates unchanged."""
    try:
        session.enable(mode, capacity=capacity, config=config, record=output)
    except (ImportError, RuntimeError, ValueError, OSError) as exc:
        raise RecordSetupError(str(exc)) from exc
    saved_argv = sys.argv
    sys.argv = [script, *script_args]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved_argv
        session.disable()
