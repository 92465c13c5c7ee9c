"""How far does each of deepum's settings move a recorded trace's replay? One setting at a time over the
given values, the others at --config's (the defaults unless given).

Replays --trace under policy deepum at --capacity (deepum.offline.simulator.simulate) once at the
base settings and once per value of each --knob KEY=V1,V2,... (values as JSON: 64, true, "evict"),
and writes one JSON record: command, the CPU, the source revision, date, trace, capacity, and per
replay the setting changed, the median simulated time of an iteration (s), bytes in and out (GB)
over the iterations from --from-iteration on, the bytes kernels used over the host mapping a step
(GB, the whole run's mean) and the time's ratio to the base's; also printed as a table.

    python3 bench/knob_sweep.py --trace bench/results/unbudgeted_traces/call_a/bert_trace.npz \\
        --capacity 3794796544 --from-iteration 3 --knob lookahead=16,64,128 --knob far_prefetches='"evict"' \\
        -o bench/results/knob_sweep/bert_fp32_half.json
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from deepum.config import DeepUMConfig  # noqa: E402
from deepum.offline.simulator import simulate  # noqa: E402
import replay_arguments  # noqa: E402
from replay_throughput import cpu_model, source_revision  # noqa: E402

GB = 1e9


def knob(text: str) -> tuple[str, list]:
    """KEY=V1,V2,... as (KEY, [values]), each value read as JSON."""
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=V1,V2,...")
    try:
        return key, [json.loads(value) for value in values.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: each value must be JSON (64, true, \"evict\")") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    replay_arguments.add(parser)
    parser.add_argument("--knob", type=knob, action="append", required=True, metavar="KEY=V1,V2,...",
                        help="a DeepUMConfig key and the values to replay it at (repeatable)")
    replay_arguments.add_from_iteration(parser)
    parser.add_argument("-o", "--output", type=Path, required=True)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: each knob's values must make a valid DeepUMConfig with the base's other
    settings; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    replay_arguments.check(parser, args)
    replay_arguments.check_from_iteration(parser, args)
    args.settings = []
    keys = {field.name for field in dataclasses.fields(DeepUMConfig)}
    for key, values in args.knob:
        if key not in keys:
            parser.error(f"--knob {key}: not a DeepUMConfig key")
        for value in values:
            try:
                args.settings.append(((key, value), dataclasses.replace(args.deepum_config, **{key: value})))
            except (TypeError, ValueError) as exc:
                parser.error(f"--knob {key}={json.dumps(value)}: {exc}")
    return args


def figures(result, from_iteration: int) -> dict:
    """The replay's median iteration time (s), bytes in and out (GB) from `from_iteration` on, and the
    bytes used over the host mapping a step (GB)."""
    steady = result.per_iteration[from_iteration:]
    return {"time_s": statistics.median(i["time_s"] for i in steady),
            "h2d_gb": statistics.median(i["h2d_bytes"] for i in steady) / GB,
            "d2h_gb": statistics.median(i["d2h_bytes"] for i in steady) / GB,
            "host_mapped_gb": result.host_mapped_bytes / max(len(result.per_iteration), 1) / GB}


def sweep(trace, capacity: int, base: DeepUMConfig, settings: list, from_iteration: int) -> list[dict]:
    """The base's replay, then one per (setting, config) of `settings`, each with its ratio to the base."""
    rows = [{"setting": None if setting is None else dict([setting]),
             **figures(simulate(trace, "deepum", capacity, config=config), from_iteration)}
            for setting, config in [(None, base), *settings]]
    for row in rows:
        row["time_vs_base"] = row["time_s"] / rows[0]["time_s"]
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = sweep(args.trace_data, args.capacity, args.deepum_config, args.settings, args.from_iteration)
    print(f"{'setting':36s} {'time s':>8s} {'x base':>7s} {'in GB':>6s} {'out GB':>7s} {'mapped GB':>10s}")
    for row in rows:
        setting = "base" if row["setting"] is None else " ".join(f"{k}={json.dumps(v)}" for k, v in row["setting"].items())
        print(f"{setting:36s} {row['time_s']:8.4f} {row['time_vs_base']:7.3f} {row['h2d_gb']:6.2f} "
              f"{row['d2h_gb']:7.2f} {row['host_mapped_gb']:10.2f}")
    record = {"command": shlex.join(["python3", "bench/knob_sweep.py", *(argv if argv is not None else sys.argv[1:])]),
              "device": f"CPU ({cpu_model()}), the simulator", "revision": source_revision(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trace": str(args.trace), "capacity_bytes": args.capacity, "from_iteration": args.from_iteration,
              "base": args.deepum_config.to_dict(), "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
