"""The arguments the bench scripts that replay a recorded trace on the CPU share: --trace, --capacity
and --config, and for those that summarize from one iteration on, --from-iteration; checked (one line
and exit status 2 for each bad one)."""
from __future__ import annotations

import argparse
from pathlib import Path

from deepum.config import DeepUMConfig
from deepum.offline.trace_format import BLOCK_BYTES
from deepum.offline.trace_io import read_trace
from deepum.units import parse_size


def add(parser: argparse.ArgumentParser, capacity: bool = True) -> None:
    """Adds --trace, --capacity (unless `capacity` is False) and --config to `parser`."""
    parser.add_argument("--trace", type=Path, required=True, help="a recorded trace (.npz)")
    if capacity:
        parser.add_argument("--capacity", required=True, help="the budget: bytes or 6GiB-style")
    parser.add_argument("--config", type=Path, default=None, help="DeepUMConfig JSON (default: the defaults)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Parses args.capacity (where add() added it) into bytes (at least one 2 MiB block), reads the
    trace into args.trace_data and the config into args.deepum_config; errors exit through parser.error."""
    if hasattr(args, "capacity"):
        try:
            args.capacity = parse_size(args.capacity)
        except ValueError as exc:
            parser.error(f"--capacity: {exc}")
        if args.capacity < BLOCK_BYTES:
            parser.error(f"--capacity must hold at least one 2 MiB block, got {args.capacity} bytes")
    try:
        args.trace_data = read_trace(args.trace)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--trace {args.trace}: {exc}")
    try:
        args.deepum_config = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    except (OSError, ValueError, TypeError) as exc:
        parser.error(f"--config {args.config}: {exc}")


def add_from_iteration(parser: argparse.ArgumentParser) -> None:
    """Adds --from-iteration (default 2), the first iteration whose launches are summarized."""
    parser.add_argument("--from-iteration", type=int, default=2,
                        help="first iteration whose launches are summarized (default %(default)s)")


def check_from_iteration(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """args.from_iteration must name one of args.trace_data's iterations (after check())."""
    iterations = int(args.trace_data.iteration_first_kernel.size)
    if not 0 <= args.from_iteration < iterations:
        parser.error(f"--from-iteration must be in [0, {iterations}), the trace's iterations")
