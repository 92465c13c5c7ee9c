"""deepum: train PyTorch models larger than GPU memory through CUDA Unified Memory, with
DeepUM-style correlation prefetching; plus offline trace replay, tuning and reports.

Online: `deepum.enable(...)` before any CUDA work, `deepum.stats()` for the figures.
Importing the package is cheap: the config, calibration and size helpers load at once; the runtime,
the trace tools and the simulator load on first use, and plotting (matplotlib), torch and the native
extension load only inside the functions that need them.
"""
from __future__ import annotations

import importlib

from .offline.calibration import Calibration
from .config import DeepUMConfig
from .units import format_bytes, parse_capacity, parse_size

__version__ = "0.1.0"

# Public names served lazily: name -> module that defines it.
_LAZY = {
    "enable": "runtime.session",
    "disable": "runtime.session",
    "is_enabled": "runtime.session",
    "stats": "runtime.session",
    "mark_iteration": "runtime.session",
    "advise_model": "runtime.advice",
    "RuntimeConfig": "runtime.limits",
    "TooLateError": "runtime.limits",
    "Trace": "offline.trace_format",
    "TraceError": "offline.trace_format",
    "read_trace": "offline.trace_io",
    "write_trace": "offline.trace_io",
    "summarize": "offline.trace_summary",
    "POLICIES": "offline.simulator",
    "simulate": "offline.simulator",
    "GENERATORS": "offline.synth",
}

__all__ = ["Calibration", "DeepUMConfig", "format_bytes", "parse_capacity", "parse_size",
           "__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'deepum' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
