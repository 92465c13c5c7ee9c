"""The replaying subcommands: replay, tune, report and demo."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..units import counted, format_bytes, parse_capacity, parse_size
from . import common
from .common import CLIError

DEMO_MODEL = "transformer"
DEMO_CAPACITY = 0.5

POLICY_HELP = {
    "um": "the driver alone: demand faults in batches, its in-block prefetcher, eviction of the least "
          "recently migrated block",
    "advise": "um plus, under budget pressure, each kernel's missing blocks prefetched just before it",
    "deepum": "correlation prefetch of the predicted next kernels' blocks, pre-eviction and invalidation of "
              "freed blocks (each switchable off with --no-prefetch, --no-pre-evict, --no-invalidate)",
    "oracle": "knows the future: prefetches the next `lookahead` kernels' blocks (the config's lookahead), "
              "evicts the block used furthest ahead and maps from the host what deepum's host mapping "
              "maps; a reference for deepum's copies",
}


def config_source(args) -> str:
    """Where the replay's config came from, in words (for summary.md and results.json)."""
    switches = [option for option in common.SWITCHES if getattr(args, common.field_dest(option), False)]
    source = f"--config {args.config}" if args.config else "the defaults"
    return source + (f" with {', '.join(switches)}" if switches else "")


def cmd_replay(args) -> int:
    from ..offline.report import format_result, to_json
    from ..offline.simulator import simulate

    trace, capacity, config, calibration = common.replay_inputs(args)
    if args.policy != "deepum":
        common.refuse_switches(args, f"policy {args.policy}")
    if args.policy in ("deepum", "oracle"):
        common.lookahead_note(config, trace)
    with common.input_errors():  # a capacity too small for the trace's widest kernel
        result = simulate(trace, args.policy, capacity, config=config, calibration=calibration)
    print(to_json(result.to_dict()) if args.json else format_result(result.to_dict()))
    return 0


def tune_outputs(given: str) -> tuple[Path, Path]:
    """(result JSON, trade-off plot beside it) of tune's -o, both checked before the search."""
    out = common.output_file(given)
    if out.suffix.lower() == ".png":
        raise CLIError(f"-o {given}: the result is JSON; give a .json name (the plot goes beside it as .png)")
    png = out.with_suffix(".png")
    common.output_file(str(png), "-o (its plot)")
    return out, png


def cmd_tune(args) -> int:
    from ..offline.report import format_tradeoff, to_json
    from ..offline.report_plots import plot_tradeoff
    from ..offline.tune import TIME_TOLERANCE, tune

    trace, capacity, config, calibration = common.replay_inputs(args)
    budget = None
    if args.budget_bytes is not None:
        with common.input_errors(f"bad --budget-bytes {args.budget_bytes!r}: "):
            budget = parse_size(args.budget_bytes)
    out, png = tune_outputs(args.output)
    with common.input_errors():  # nothing fits the budget, or a capacity too small for the trace
        result = tune(trace, capacity, budget_bytes=budget, base_config=config, calibration=calibration,
                      progress=common.progress())
    out.write_text(to_json(result.to_dict(trace_path=str(args.trace)), indent=2) + "\n")
    plot_tradeoff(result, png)
    best = result.best
    print(f"replayed {counted(len(result.candidates), 'configuration')} at capacity {format_bytes(capacity)}; "
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
    from ..offline.report import format_comparison, format_per_iteration, format_warmup

    print(format_comparison(results))
    print()
    print(format_per_iteration(results))
    warmup = format_warmup(results)
    if warmup:
        print()
        print(warmup)


def cmd_report(args) -> int:
    from ..offline.report import run_policies, write_report

    trace, capacity, config, calibration = common.replay_inputs(args)
    out = common.output_folder(args.output)
    common.lookahead_note(config, trace)
    with common.input_errors():  # a capacity too small for the trace's widest kernel
        results = run_policies(trace, capacity, config=config, calibration=calibration, progress=common.progress())
    paths = write_report(results, out, trace_name=Path(args.trace).name, config_source=config_source(args))
    _print_comparison(results)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def cmd_demo(args) -> int:
    from ..offline.report import run_policies, write_report
    from ..offline.synth import GENERATORS
    from ..offline.trace_io import write_trace

    out = common.output_folder(args.output)
    trace = GENERATORS[DEMO_MODEL]()
    trace_path = out / "trace.npz"
    write_trace(trace, trace_path)
    footprint = trace.footprint_bytes()
    capacity = parse_capacity(DEMO_CAPACITY, footprint)
    print(f"default {DEMO_MODEL} trace: {counted(trace.num_kernels, 'kernel')}, "
          f"{counted(trace.num_accesses, 'block access', 'block accesses')}, "
          f"{counted(trace.iterations, 'iteration')}, footprint {format_bytes(footprint)}; "
          f"capacity {format_bytes(capacity)} ({DEMO_CAPACITY:g} of the footprint)")
    results = run_policies(trace, capacity, progress=common.progress())
    # The report is written before the tables are printed, so that a reader that stops early (a closed
    # pipe) still finds the folder complete.
    paths = write_report(results, out, trace_name=trace_path.name, config_source="the defaults")
    _print_comparison(results)
    print("(iteration 0 fills deepum's tables; its optimizer step also allocates Adam's state, which moves the "
          "caching allocator's later blocks and so changes most kernels' execution IDs: iteration 1 is the first "
          "with the steady layout, learnt during it, and iteration 2 on is the steady state)")
    print(f"wrote {trace_path}, {', '.join(str(p) for p in paths)}")
    return 0


def _result_keys() -> str:
    from ..offline.simulator import SimResult

    names = [f.name for f in dataclasses.fields(SimResult) if f.name != "timeline"]
    return "--json keys (docs/simulator.md explains each): " + ", ".join(names)


def _policy_help() -> str:
    return "policies:\n" + "\n".join(f"  {name}: {text}" for name, text in POLICY_HELP.items())


def add_parsers(sub) -> None:
    from ..offline.simulator import POLICIES
    from ..offline.tune import TIME_TOLERANCE

    assert set(POLICIES) == set(POLICY_HELP), "every policy needs its help text"
    p = sub.add_parser("replay", help="replay a trace under one policy",
                       description="Replays a trace on the model of the UVM driver under one policy at a given "
                                   "capacity and prints the figures (times are simulated).",
                       epilog=f"{_policy_help()}\n\n{_result_keys()}\n\n{common.config_epilog()}")
    p.add_argument("trace", metavar="TRACE.npz", help="trace file")
    p.add_argument("--policy", required=True, choices=POLICIES, metavar="{" + ",".join(POLICIES) + "}",
                   help="the prefetch and eviction policy replayed (described below)")
    common.add_capacity(p)
    common.add_policy_options(p, switches=True)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (keys below)")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("tune", help="search lookahead and table sizes",
                       description="Staged search over lookahead and table sizes by replay of the deepum policy; "
                                   f"chooses the smallest tables whose simulated time is within "
                                   f"{100 * TIME_TOLERANCE:g}% of the fastest.",
                       epilog=common.config_epilog())
    p.add_argument("trace", metavar="TRACE.npz", help="trace file")
    common.add_capacity(p)
    p.add_argument("-o", "--output", default="best.json", metavar="best.json",
                   help="result file (JSON; default best.json); the trade-off plot goes beside it as .png")
    p.add_argument("--budget-bytes", metavar="SIZE", help="most table memory the chosen config may use")
    common.add_policy_options(p, switches=False)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("report", help="replay um, deepum and oracle; write plots and a summary",
                       description="Replays the trace under um, deepum and oracle at one capacity, prints the "
                                   "comparison and writes faults_per_iteration.png, timeline.png, "
                                   "time_breakdown.png, summary.md and results.json into a folder. The config "
                                   "applies to deepum, and its lookahead to oracle too; the switches to deepum.",
                       epilog=f"{_policy_help()}\n\n{common.config_epilog()}")
    p.add_argument("trace", metavar="TRACE.npz", help="trace file")
    common.add_capacity(p)
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the PNGs, summary.md "
                                                                       "and results.json (created if absent)")
    common.add_policy_options(p, switches=True)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("demo", help=f"the default {DEMO_MODEL} trace replayed at half its footprint under "
                                    "every policy, with a report",
                       description=f"Synthesizes the default {DEMO_MODEL} trace, replays it at "
                                   f"{DEMO_CAPACITY:g} of its footprint under um, deepum and oracle with the "
                                   "default config, prints the comparison and writes the trace and the report "
                                   "(as `deepum report` does) into a folder.")
    p.add_argument("-o", "--output", default="deepum-demo", metavar="DIR", help="output folder "
                                                                               "(default deepum-demo)")
    p.set_defaults(func=cmd_demo)
