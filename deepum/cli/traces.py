"""The subcommands that make, read and convert traces: synth, info, timeline and record."""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from ..units import counted, format_bytes, parse_size
from . import common
from .common import CLIError


def _whole(minimum: int, what: str):
    """argparse type: an integer no less than `minimum` (argparse names the option in its error)."""
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
        return value

    read.__name__ = what
    return read


def cmd_synth(args) -> int:
    from tqdm import tqdm

    from ..offline.synth import GENERATORS
    from ..offline.synth_estimate import check_fits
    from ..offline.synth_stream import monitored
    from ..offline.trace_io import write_trace

    out = common.output_file(args.output, suffix=".npz")
    kwargs = {name: getattr(args, name) for name in args.generator_options if getattr(args, name) is not None}
    with common.input_errors(f"cannot build {args.model} trace: "):
        estimate = check_fits(args.model, kwargs)
    with tqdm(total=estimate.kernels, desc=f"synth {args.model}", unit="kernel", unit_scale=True,
              disable=not common.progress()) as bar:
        with monitored(bar.update), common.input_errors(f"cannot build {args.model} trace: "):
            trace = GENERATORS[args.model](**kwargs)
        bar.total = trace.num_kernels  # the estimate's total, corrected now that the count is known
        bar.update(trace.num_kernels - bar.n)
    write_trace(trace, out)
    print(f"{out}: {args.model}, {counted(trace.num_kernels, 'kernel')}, "
          f"{counted(trace.num_accesses, 'block access', 'block accesses')}, "
          f"{counted(trace.iterations, 'iteration')}, footprint {format_bytes(trace.footprint_bytes())}")
    return 0


def cmd_info(args) -> int:
    from ..offline.trace_summary import format_summary

    print(format_summary(common.load_trace(args.trace)))
    return 0


def cmd_timeline(args) -> int:
    from ..offline.timeline import write_chrome_trace

    trace = common.load_trace(args.trace)
    out = common.output_file(args.output)
    with common.input_errors():
        count = write_chrome_trace(trace, out)
    print(f"wrote {out} ({counted(count, 'event')}; open it in ui.perfetto.dev or chrome://tracing)")
    return 0


def gpu_missing() -> str | None:
    """Why `deepum record` cannot run here (no PyTorch, no CUDA GPU, no cuda-bindings), or None."""
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed (pip install 'deepum[gpu]')"
    import torch

    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA GPU"
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        return "cuda-bindings is not installed (pip install 'deepum[gpu]')"
    return None


def cmd_record(args) -> int:
    from ..config import DeepUMConfig

    if not Path(args.script).is_file():
        raise CLIError(f"no such script: {args.script}")
    common.output_file(args.output, suffix=".npz")
    if args.capacity is not None:
        with common.input_errors(f"bad --capacity {args.capacity!r}: "):
            parse_size(args.capacity)
    if args.config is not None:
        if args.mode != "deepum":
            raise CLIError(f"--config applies to mode deepum only, not to mode {args.mode}")
        with common.input_errors():
            DeepUMConfig.load(args.config)
    reason = gpu_missing()
    if reason:
        raise CLIError(f"record runs the script on a CUDA GPU, and here {reason}")
    from ..runtime.record_script import RecordSetupError, run_recorded

    try:
        run_recorded(args.script, args.script_args, args.output, mode=args.mode, capacity=args.capacity,
                     config=args.config)
    except RecordSetupError as exc:
        raise CLIError(f"cannot start deepum: {exc}") from exc
    print(f"wrote {args.output}")
    return 0


def _add_synth(sub) -> None:
    from ..offline.synth import GENERATORS, generator_options
    from ..offline.synth_stream import MATMUL_FLOPS_PER_S

    p = sub.add_parser("synth", help="write a synthetic training trace",
                       description="Synthesizes the kernel and access trace of a model's training loop. Sizes the "
                                   "machine's memory cannot hold are refused before any work; a progress bar "
                                   "shows on a terminal.")
    models = p.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name in GENERATORS:
        m = models.add_parser(name, help=f"{name} training trace", description=f"Writes a {name} training trace.")
        m.add_argument("-o", "--output", required=True, metavar="TRACE.npz", help="trace file to write")
        names = []
        for option, kind, default, text in generator_options(name):
            names.append(option)
            flag = "--" + option.replace("_", "-")
            if kind is bool:
                m.add_argument(flag, dest=option, action=argparse.BooleanOptionalAction, default=None,
                               help=f"{text} (default {default})")
            elif option == "dtype_bytes":
                m.add_argument(flag, dest=option, type=int, choices=sorted(MATMUL_FLOPS_PER_S), default=None,
                               help=f"{text} (default {default})")
            elif kind is int:
                kind = _whole(0, "a non-negative integer") if option.endswith("seed") else _whole(1, "a positive integer")
                m.add_argument(flag, dest=option, type=kind, default=None, metavar=option.upper(),
                               help=f"{text} (default {default})")
            else:
                m.add_argument(flag, dest=option, type=kind, default=None, metavar=option.upper(),
                               help=f"{text} (default {default})")
        m.set_defaults(func=cmd_synth, generator_options=names)


def add_synth_info(sub) -> None:
    _add_synth(sub)

    p = sub.add_parser("info", help="summarize a trace",
                       description="Prints a trace's headline numbers: kernels, exec IDs, iterations, accesses, "
                                   "blocks, footprint, recorded groups and meta.")
    p.add_argument("trace", metavar="TRACE.npz", help="trace file")
    p.set_defaults(func=cmd_info)


def add_timeline_record(sub) -> None:
    p = sub.add_parser("timeline", help="a recorded trace as Chrome-trace / Perfetto JSON",
                       description="Writes a trace recorded on a GPU (`deepum record`) as Chrome-trace JSON: "
                                   "kernels, migrations by cause and GPU page faults on one time line, for "
                                   "ui.perfetto.dev or chrome://tracing. A synthetic trace has no GPU times.")
    p.add_argument("trace", metavar="TRACE.npz", help="trace file recorded on a GPU")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json", help="JSON file to write")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("record", help="run a training script under deepum on the GPU and record its trace",
                       description="Runs SCRIPT unchanged as __main__ after deepum.enable(record=...): the trace "
                                   "holds its kernels, their accesses, faults, memory events and migrations. "
                                   "Iterations end at each optimizer step. Needs PyTorch with a CUDA GPU and "
                                   "cuda-bindings (pip install 'deepum[gpu]').")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.npz", help="trace file to write")
    p.add_argument("--mode", default="deepum", choices=("um", "advise", "deepum"),
                   help="unified-memory mode the script runs under (default deepum)")
    p.add_argument("--capacity", default=None, metavar="SIZE", help="GPU budget (default: the free memory)")
    p.add_argument("--config", default=None, metavar="FILE", help="DeepUMConfig JSON for mode deepum")
    p.add_argument("script", metavar="SCRIPT", help="the training script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's arguments")
    p.set_defaults(func=cmd_record)
