"""deepum: train PyTorch models larger than GPU memory through CUDA Unified Memory, with
DeepUM-style correlation prefetching.

Online: `deepum.enable(...)` before any CUDA work, `deepum.stats()` for the figures; this package
exports that runtime API only. The offline tools (traces, synthetic traces, the simulator, tuning and
reports) live in deepum.offline and behind the `deepum` command line.
Importing the package is cheap: the config loads at once; the runtime loads on first use, and torch
and the native extension load only inside the functions that need them.
"""
from __future__ import annotations

import importlib

from .config import DeepUMConfig

__version__ = "0.1.0"

# Public names served lazily: name -> module that defines it.
_LAZY = {
    "enable": "runtime.session",
    "disable": "runtime.session",
    "is_enabled": "runtime.session",
    "stats": "runtime.session",
    "mark_iteration": "runtime.session",
    "capture_timeline": "runtime.timeline",
    "Session": "runtime.session",
    "advise_model": "runtime.advice",
    "TooLateError": "runtime.limits",
    "OversubscriptionRefused": "runtime.limits",
}

__all__ = ["DeepUMConfig", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'deepum' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
