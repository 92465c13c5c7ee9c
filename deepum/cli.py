"""The `deepum` command line: synth, info, replay, tune, report, demo, record and timeline.

Errors in what the user gave (a bad size, a missing or invalid file) print one line on stderr and
exit with status 2. Progress bars appear on stderr when it is a terminal.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path

from . import __version__
from .offline.calibration import Calibration
from .config import DeepUMConfig
from .units import format_bytes, parse_capacity, parse_size

DEMO_MODEL = "transformer"
DEMO_CAPACITY = 0.5


class CLIError(Exception):
    """A problem with the user's input: reported as one line, exit status 2."""


def _progress() -> bool:
    return sys.stderr.isatty()


@contextlib.contextmanager
def _input_errors(prefix: str = ""):
    """Turns a ValueError raised on the user's input into a CLIError (one line, exit status 2)."""
    try:
        yield
    except ValueError as exc:
        raise CLIError(f"{prefix}{exc}") from exc


def _load_trace(path: str):
    from .offline.trace_io import read_trace

    with _input_errors():  # TraceError is a ValueError that names the file, the array and the rule
        return read_trace(path)


def _capacity(text: str, trace) -> int:
    """Capacity in bytes from --capacity: bytes, a size like 8GiB, or a fraction of the footprint."""
    footprint = trace.footprint_bytes()
    with _input_errors(f"bad --capacity {text!r}: "):
        capacity = parse_capacity(text, footprint)
    block = int(trace.meta["block_bytes"])
    if capacity < block:
        raise CLIError(f"bad --capacity {text!r}: {format_bytes(capacity)} is less than one UM block "
                       f"({format_bytes(block)}); give a size like 8GiB or a fraction of the footprint "
                       f"({format_bytes(footprint)}) in (0, 1]")
    return capacity


def _config(args) -> DeepUMConfig:
    with _input_errors():
        config = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    switches = {name: False for name in ("prefetch", "pre_evict", "invalidate") if getattr(args, f"no_{name}", False)}
    return dataclasses.replace(config, **switches)


def _calibration(args) -> Calibration | None:
    if args.calibration is None:
        return None
    with _input_errors():
        return Calibration.load(args.calibration)


def _replay_inputs(args):
    """(trace, capacity in bytes, DeepUMConfig, Calibration or None) from a replaying command's arguments."""
    trace = _load_trace(args.trace)
    return trace, _capacity(args.capacity, trace), _config(args), _calibration(args)


def _npz_path(path: str) -> Path:
    if not path.endswith(".npz"):
        raise CLIError(f"trace file name must end with .npz, got {path!r}")
    return Path(path)


def cmd_synth(args) -> int:
    from .offline.synth import GENERATORS
    from .offline.trace_io import write_trace

    out = _npz_path(args.output)
    kwargs = {name: getattr(args, name) for name in args.generator_options if getattr(args, name) is not None}
    with _input_errors(f"cannot build {args.model} trace: "):
        trace = GENERATORS[args.model](**kwargs)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_trace(trace, out)
    print(f"{out}: {args.model}, {trace.num_kernels:,} kernels, {trace.num_accesses:,} block accesses, "
          f"{trace.iterations} iterations, footprint {format_bytes(trace.footprint_bytes())}")
    return 0


def cmd_info(args) -> int:
    from .offline.trace_summary import format_summary

    print(format_summary(_load_trace(args.trace)))
    return 0


def cmd_replay(args) -> int:
    from .offline.report import format_result, to_json
    from .offline.simulator import simulate

    trace, capacity, config, calibration = _replay_inputs(args)
    with _input_errors():  # a capacity too small for the trace's widest kernel
        result = simulate(trace, args.policy, capacity, config=config, calibration=calibration)
    print(to_json(result.to_dict()) if args.json else format_result(result.to_dict()))
    return 0


def cmd_tune(args) -> int:
    from .offline.report import format_tradeoff, plot_tradeoff, to_json
    from .offline.tune import TIME_TOLERANCE, tune

    trace, capacity, config, calibration = _replay_inputs(args)
    budget = None
    if args.budget_bytes is not None:
        with _input_errors(f"bad --budget-bytes {args.budget_bytes!r}: "):
            budget = parse_size(args.budget_bytes)
    with _input_errors():  # nothing fits the budget, or a capacity too small for the trace
        result = tune(trace, capacity, budget_bytes=budget, base_config=config, calibration=calibration,
                      progress=_progress())
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(result.to_dict(trace_path=str(args.trace)), indent=2) + "\n")
    png = out.with_suffix(".png")
    plot_tradeoff(result, png)
    best = result.best
    print(f"replayed {len(result.candidates)} configurations at capacity {format_bytes(capacity)}; "
          f"Pareto frontier of time against table memory (* = chosen: smallest tables within "
          f"{TIME_TOLERANCE:.0%} of the fastest{', within budget' if budget is not None else ''}):")
    print(format_tradeoff(result))
    print(f"chosen: lookahead {best.config.lookahead}, block tables {best.config.block_rows} rows x "
          f"{best.config.block_ways} ways x {best.config.block_successors} successors, "
          f"{best.config.exec_records} exec records; {best.time_s:.4f} s, {format_bytes(best.table_bytes)} of tables")
    print(f"wrote {out} and {png}")
    return 0


def _print_comparison(results: dict) -> None:
    """The policy table, the faults and time per iteration, and deepum's figures once warmed up."""
    from .offline.report import format_comparison, format_per_iteration, format_warmup

    print(format_comparison(results))
    print()
    print(format_per_iteration(results))
    warmup = format_warmup(results)
    if warmup:
        print()
        print(warmup)


def cmd_report(args) -> int:
    from .offline.report import run_policies, write_report

    trace, capacity, config, calibration = _replay_inputs(args)
    with _input_errors():  # a capacity too small for the trace's widest kernel
        results = run_policies(trace, capacity, config=config, calibration=calibration, progress=_progress())
    paths = write_report(results, args.output, trace_name=Path(args.trace).name)
    _print_comparison(results)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def cmd_demo(args) -> int:
    from .offline.report import run_policies, write_report
    from .offline.synth import GENERATORS
    from .offline.trace_io import write_trace

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    trace = GENERATORS[DEMO_MODEL]()
    trace_path = out / "trace.npz"
    write_trace(trace, trace_path)
    footprint = trace.footprint_bytes()
    capacity = parse_capacity(DEMO_CAPACITY, footprint)
    print(f"default {DEMO_MODEL} trace: {trace.num_kernels:,} kernels, {trace.num_accesses:,} block accesses, "
          f"{trace.iterations} iterations, footprint {format_bytes(footprint)}; "
          f"capacity {format_bytes(capacity)} ({DEMO_CAPACITY:g} of the footprint)")
    results = run_policies(trace, capacity, progress=_progress())
    _print_comparison(results)
    print("(iteration 0 fills deepum's tables; its optimizer step also allocates Adam's state, which moves the "
          "caching allocator's later blocks and so changes most kernels' execution IDs: iteration 1 is the first "
          "with the steady layout, learnt during it, and iteration 2 on is the steady state)")
    paths = write_report(results, out, trace_name=trace_path.name)
    print(f"wrote {trace_path}, {', '.join(str(p) for p in paths)}")
    return 0


def cmd_record(args) -> int:
    from .runtime.record_script import run_recorded

    if not Path(args.script).is_file():
        raise CLIError(f"no such script: {args.script}")
    if not args.output.endswith(".npz"):
        raise CLIError(f"the trace must be a .npz file, got {args.output!r}")
    run_recorded(args.script, args.script_args, args.output, mode=args.mode, capacity=args.capacity,
                 config=args.config)
    print(f"wrote {args.output}")
    return 0


def cmd_timeline(args) -> int:
    from .offline.timeline import write_chrome_trace

    trace = _load_trace(args.trace)
    with _input_errors():
        count = write_chrome_trace(trace, args.output)
    print(f"wrote {args.output} ({count:,} events; open it in ui.perfetto.dev or chrome://tracing)")
    return 0


def _add_capacity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--capacity", required=True, metavar="SIZE",
                   help="GPU memory for UM data: bytes, a size like 8GiB or 512MiB, or a fraction of the "
                        "trace's footprint in (0, 1] like 0.5")


def _add_policy_options(p: argparse.ArgumentParser, switches: bool) -> None:
    p.add_argument("--config", metavar="FILE", help="DeepUMConfig JSON (a config object or `deepum tune` output)")
    p.add_argument("--calibration", metavar="NAME|FILE",
                   help="cost calibration: a bundled name such as h200 or a JSON file (default: h200)")
    if switches:
        p.add_argument("--no-prefetch", action="store_true", help="deepum policy without correlation prefetch")
        p.add_argument("--no-pre-evict", action="store_true", help="deepum policy without pre-eviction")
        p.add_argument("--no-invalidate", action="store_true", help="deepum policy without invalidation")


def _add_synth(sub) -> None:
    from .offline.synth import GENERATORS, generator_options

    p = sub.add_parser("synth", help="write a synthetic training trace",
                       description="Synthesize the kernel and access trace of a model's training loop.")
    models = p.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name in GENERATORS:
        m = models.add_parser(name, help=f"{name} training trace")
        m.add_argument("-o", "--output", required=True, metavar="TRACE.npz", help="trace file to write")
        names = []
        for option, kind, default, text in generator_options(name):
            names.append(option)
            flag = "--" + option.replace("_", "-")
            if kind is bool:
                m.add_argument(flag, dest=option, action=argparse.BooleanOptionalAction, default=None,
                               help=f"{text} (default {default})")
            else:
                m.add_argument(flag, dest=option, type=kind, default=None, metavar=option.upper(),
                               help=f"{text} (default {default})")
        m.set_defaults(func=cmd_synth, generator_options=names)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepum",
        description="DeepUM correlation prefetching for CUDA Unified Memory: synthesize and inspect traces, "
                    "replay them against the um / deepum / oracle policies, tune the tables, report.")
    parser.add_argument("--version", action="version", version=f"deepum {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_synth(sub)

    p = sub.add_parser("info", help="summarize a trace")
    p.add_argument("trace", metavar="TRACE.npz")
    p.set_defaults(func=cmd_info)

    from .offline.simulator import POLICIES

    p = sub.add_parser("replay", help="replay a trace under one policy")
    p.add_argument("trace", metavar="TRACE.npz")
    p.add_argument("--policy", required=True, choices=POLICIES)
    _add_capacity(p)
    _add_policy_options(p, switches=True)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_replay)

    from .offline.tune import TIME_TOLERANCE

    p = sub.add_parser("tune", help="search lookahead and table sizes",
                       description="Staged search over lookahead and table sizes by replay; chooses the "
                                   f"smallest tables whose simulated time is within {100 * TIME_TOLERANCE:g}% of "
                                   "the fastest.")
    p.add_argument("trace", metavar="TRACE.npz")
    _add_capacity(p)
    p.add_argument("-o", "--output", default="best.json", metavar="best.json",
                   help="result file (default best.json); the trade-off plot goes next to it as .png")
    p.add_argument("--budget-bytes", metavar="SIZE", help="most table memory the chosen config may use")
    _add_policy_options(p, switches=False)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("report", help="replay um, deepum and oracle; write plots and a summary")
    p.add_argument("trace", metavar="TRACE.npz")
    _add_capacity(p)
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the PNGs, summary.md "
                                                                       "and results.json")
    _add_policy_options(p, switches=True)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("record", help="run a training script under deepum on the GPU and record its trace",
                       description="Runs SCRIPT unchanged as __main__ after deepum.enable(record=...): the trace "
                                   "holds its kernels, their accesses, faults, memory events and migrations. "
                                   "Iterations end at each optimizer step.")
    p.add_argument("-o", "--output", required=True, metavar="TRACE.npz", help="trace file to write")
    p.add_argument("--mode", default="deepum", choices=("um", "advise", "deepum"))
    p.add_argument("--capacity", default=None, metavar="SIZE", help="GPU budget (default: the free memory)")
    p.add_argument("--config", default=None, metavar="FILE", help="DeepUMConfig JSON for mode deepum")
    p.add_argument("script", metavar="SCRIPT")
    p.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("timeline", help="a recorded trace as Chrome-trace / Perfetto JSON")
    p.add_argument("trace", metavar="TRACE.npz")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("demo", help=f"the default {DEMO_MODEL} trace replayed at half its footprint under "
                                    "every policy, with a report")
    p.add_argument("-o", "--output", default="deepum-demo", metavar="DIR", help="output directory "
                                                                               "(default deepum-demo)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return args.func(args)
    except CLIError as exc:
        print(f"deepum: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deepum: interrupted", file=sys.stderr)
        return 130
