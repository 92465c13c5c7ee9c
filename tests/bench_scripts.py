"""The bench/ scripts for CPU tests: imported from the checkout's bench/ folder (which is not a
package), and bench/train.py replaced by a stand-in script in the sweep drivers built on run_all."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import deepum  # noqa: F401  (the installed package first: the bench scripts put the checkout on sys.path)

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load(*names: str) -> tuple:
    """The bench modules `names`, imported with bench/ on sys.path, which is then restored."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        return tuple(importlib.import_module(name) for name in names)
    finally:
        sys.path[:] = saved


def use_stub_train(run_all, monkeypatch, stub: Path, source: str) -> Path:
    """Writes `source` to `stub` and makes run_all run it wherever it would run bench/train.py (with
    train.py's arguments); the native prebuild is skipped and no stub failure is asked for."""
    stub.write_text(source)
    real = run_all.train_command
    monkeypatch.setattr(run_all, "train_command", lambda *a: [sys.executable, str(stub), *real(*a)[2:]])
    monkeypatch.setattr(run_all, "prebuild", lambda: None)
    monkeypatch.delenv("STUB_FAIL", raising=False)
    return stub
