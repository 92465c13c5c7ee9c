"""`deepum run`: an unchanged training script under deepum, in the manner of `python script.py` (the
engine is deepum.runtime.launcher). Every argument is checked before the script starts; a bad one, a
missing PyTorch or GPU, or a deepum that cannot start prints one line and exits with status 2.
Afterwards the exit status is the script's."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..config import DeepUMConfig
from ..runtime import ranks
from ..runtime.limits import HOST, MODES, OversubscriptionRefused, RuntimeConfig
from ..runtime.warm_start import default_path
from ..units import parse_size
from . import common
from .common import CLIError
from .traces import gpu_missing

DESCRIPTION = """\
Runs SCRIPT unchanged as __main__, the way `python SCRIPT ARGS` does (its argv is SCRIPT ARGS, its \
folder first on sys.path), after deepum.enable(): every CUDA allocation of the script goes into \
managed memory, and every optimizer step marks an iteration. When the script ends, a summary goes \
to stderr (optimizer steps, median step time, GPU page faults, bytes moved each way, prefetch \
coverage) and, with --stats-json, deepum.stats() with the run's figures under "run" to a file. The \
exit status is the script's. Also `python -m deepum run ...`.
Under torchrun (`torchrun --nproc-per-node N -m deepum run [options] SCRIPT ARGS`) every rank runs \
under deepum on the device LOCAL_RANK modulo the number of GPUs; sizes given (--capacity, \
--max-managed-bytes) are per rank, and ranks sharing a GPU split its free memory. Each rank writes \
--stats-json FILE with .rankN before the suffix, rank 0 also FILE with every rank's figures, and \
rank 0 prints one summary line per rank (docs/distributed.md).
Needs PyTorch with a CUDA GPU and cuda-bindings (pip install 'deepum[gpu]') in every mode but none.
Managed memory stays within half of the free GPU memory unless --max-managed-bytes host (up to what \
the host can back) or --oversubscribe is given; DEEPUM_NO_OVERSUBSCRIBE=1 refuses both."""


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run an unchanged training script under deepum", description=DESCRIPTION)
    p.add_argument("--mode", default="deepum", choices=MODES, help="deepum mode (default deepum)")
    p.add_argument("--capacity", metavar="SIZE",
                   help="GPU memory for managed data, e.g. 8GiB, per rank under torchrun (default: the free "
                        "memory, or the rank's share of it, less 1 GiB)")
    p.add_argument("--max-managed-bytes", metavar="SIZE|host",
                   help="the cap on managed memory, per rank under torchrun (default: half of the free GPU "
                        "memory, or of the rank's share of it); host: up to what the host can back, past GPU memory")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow --max-managed-bytes past GPU memory (up to what the host can back); alone, the "
                        "same as --max-managed-bytes host")
    p.add_argument("--config", metavar="FILE", help="DeepUMConfig JSON for mode deepum (e.g. `deepum tune` output)")
    p.add_argument("--record", metavar="TRACE.npz", help="also record the run's trace into this file")
    p.add_argument("--stats-json", metavar="FILE",
                   help="write deepum.stats() and the run's figures here at the end (under torchrun: "
                        "FILE with .rankN before the suffix on each rank, and every rank's figures in FILE on rank 0)")
    warm = p.add_mutually_exclusive_group()
    warm.add_argument("--warm-start", metavar="FILE",
                      help="mode deepum: the learned state to start from and to write at the end (default: "
                           "SCRIPT.deepum-warm beside the script; a file of another model is ignored with a warning)")
    warm.add_argument("--no-warm-start", action="store_true",
                      help="mode deepum: start cold and write no learned state")
    p.add_argument("script", metavar="SCRIPT", nargs="?", help="the training script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's arguments")
    p.set_defaults(func=cmd_run)


def _size(option: str, text: str | None, host: bool = False) -> None:
    """CLIError naming the option unless `text` is absent, a positive size, or (host) the word host."""
    if text is None or (host and text.strip().lower() == HOST):
        return
    with common.input_errors(f"bad {option} {text!r}: "):
        if parse_size(text) <= 0:
            raise ValueError("must be positive" + (f", or {HOST}" if host else ""))


def enable_kwargs(args) -> dict:
    """deepum.enable()'s arguments from the command line, every one checked; CLIError for a bad one."""
    _size("--capacity", args.capacity)
    _size("--max-managed-bytes", args.max_managed_bytes, host=True)
    try:
        RuntimeConfig(mode=args.mode, capacity=args.capacity, max_managed_bytes=args.max_managed_bytes,
                      oversubscribe=args.oversubscribe)
    except (ValueError, OversubscriptionRefused) as exc:
        raise CLIError(str(exc)) from exc
    if args.config is not None:
        if args.mode != "deepum":
            raise CLIError(f"--config applies to mode deepum only, not to mode {args.mode}")
        with common.input_errors():
            DeepUMConfig.load(args.config)
    if args.record is not None:
        if args.mode == "none":
            raise CLIError("--record needs a unified-memory mode (um, advise or deepum): mode none runs no launch hook")
        common.output_file(args.record, option="--record", suffix=".npz")
    return {"mode": args.mode, "capacity": args.capacity, "max_managed_bytes": args.max_managed_bytes,
            "oversubscribe": args.oversubscribe, "config": args.config, "record": args.record,
            "warm_start": warm_start_path(args)}


def warm_start_path(args) -> str | None:
    """The warm-start file: --warm-start, else (mode deepum) SCRIPT.deepum-warm beside the script; None
    with --no-warm-start or in another mode (CLIError for --warm-start there)."""
    if args.mode != "deepum":
        if args.warm_start is not None:
            raise CLIError(f"--warm-start applies to mode deepum only, not to mode {args.mode}")
        return None
    if args.no_warm_start:
        return None
    if args.warm_start is not None:
        return str(common.output_file(args.warm_start, option="--warm-start"))
    return str(default_path(args.script))


def cmd_run(args) -> int:
    if args.script is None:
        raise CLIError("run needs the training script: deepum run [options] SCRIPT [ARGS] (see deepum run --help)")
    if not Path(args.script).is_file():
        raise CLIError(f"no such script: {args.script}")
    try:
        ranks.from_environment()
    except ValueError as exc:
        raise CLIError(f"cannot run under this launcher: {exc}") from exc
    kwargs = enable_kwargs(args)
    if args.stats_json is not None:
        common.output_file(args.stats_json, option="--stats-json")
    if args.mode != "none":
        reason = gpu_missing()
        if reason:
            raise CLIError(f"run in mode {args.mode} needs a CUDA GPU, and here {reason}")
    from ..runtime.launcher import LaunchSetupError, run_script

    try:
        return run_script(args.script, args.script_args, enable_kwargs=kwargs, stats_json=args.stats_json)
    except LaunchSetupError as exc:
        raise CLIError(f"cannot start deepum: {exc}") from exc
