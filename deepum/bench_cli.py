"""`deepum bench`: the GPU training benchmark of a source checkout (bench/ beside this package).

    deepum bench train --workload gpt2 --mode deepum --capacity 8GiB -o run.json   # one run (bench/train.py)
    deepum bench sweep --out bench/results/gpu                                      # the sweep (bench/run_all.py)
    deepum bench report bench/results/gpu                                           # report from the records

Each action runs the script with the same Python in a new process (deepum.enable() must come
before CUDA in a process of its own) and passes the remaining arguments through; `--help` after the
action shows the script's own options. Returns the script's exit status.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def bench_dir() -> Path:
    """The benchmark scripts: bench/ beside the package in a checkout, else bench/ in the current
    directory (an installed package run from a clone)."""
    beside = Path(__file__).resolve().parent.parent / "bench"
    return beside if (beside / "train.py").is_file() else Path.cwd() / "bench"


ACTIONS = {
    "train": ("train.py", "train one workload in one mode at one budget; writes one JSON record"),
    "sweep": ("run_all.py", "sweep workloads x modes x budgets; writes records, results.md and plots"),
    "report": ("run_all.py", "rewrite results.json, results.md and the plots from the records in a folder"),
}


class BenchError(Exception):
    """The benchmark scripts are missing (an installed package rather than a checkout)."""


def script_command(action: str, rest: list[str], folder: Path | None = None) -> list[str]:
    """The command line that runs `action` with the pass-through arguments `rest`, from the scripts
    in `folder` (default: bench_dir())."""
    script, _ = ACTIONS[action]
    path = (folder or bench_dir()) / script
    if not path.is_file():
        raise BenchError(f"deepum bench needs the benchmark scripts of a source checkout ({path} is missing); "
                         f"run it in a clone of the repository")
    if action == "report":
        if len(rest) < 1 or rest[0].startswith("-"):
            raise BenchError("deepum bench report needs the folder of the records, e.g. bench/results/gpu")
        rest = ["--out", rest[0], "--report-only", *rest[1:]]
    return [sys.executable, str(path), *rest]


def cmd_bench(args) -> int:
    try:
        command = script_command(args.action, args.rest)
    except BenchError as exc:
        print(f"deepum: error: {exc}", file=sys.stderr)
        return 2
    return subprocess.run(command).returncode


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Adds `bench` to the `deepum` sub-commands (an argparse subparsers object)."""
    p = subparsers.add_parser("bench", help="GPU training benchmark: one run, the sweep, or its report",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=list(ACTIONS), help="; ".join(f"{k}: {v[1]}" for k, v in ACTIONS.items()))
    p.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the script (see: deepum bench ACTION --help)")
    p.set_defaults(func=cmd_bench)
    return p
