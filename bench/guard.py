"""The benchmarks never go past GPU memory: every training process they start runs with
DEEPUM_NO_OVERSUBSCRIBE=1 (unless the caller set the variable), which makes deepum.enable() refuse
the opt-in to oversubscribe the GPU (max_managed_bytes="host", oversubscribe=True)."""
from __future__ import annotations

import os

GUARD = "DEEPUM_NO_OVERSUBSCRIBE"


def child_env(environ=None) -> dict:
    """A copy of the environment (os.environ by default) for a training process, with the guard set
    unless it already is."""
    env = dict(os.environ if environ is None else environ)
    env.setdefault(GUARD, "1")
    return env
