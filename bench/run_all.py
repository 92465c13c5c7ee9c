"""Runs the GPU benchmark sweep: workloads x modes x budgets, one bench/train.py process per run, then
writes the report (results.json, results.md and PNG plots) over every record in the output folder.

For each workload: mode none and save_on_cpu without a budget (the in-memory reference and PyTorch's
own offload), deepum without a budget (its overhead, and the footprint: the most bytes one
iteration touches), then every unified-memory mode at each budget, a fraction of that footprint.
The deepum ablations run only at --ablation-budgets (they change nothing when everything fits).

The UVM-path bound of the report takes the bundled calibration's migration rates, or with
--uvm-rates PROBE a bench/migration_probe.py record's (best of the same machine, run just before).

Safety: a workload whose in-memory peak is above half of the free GPU memory gets no
unified-memory runs (deepum's fuse would refuse them anyway); keep sizes modest.

    python3 bench/run_all.py --out bench/results/gpu                       # the default sweep
    python3 bench/run_all.py --out bench/results/gpu --workloads gpt2 --size "gpt2=--layers 12 --hidden 768"
    python3 bench/run_all.py --out bench/results/gpu --report-only         # redraw from the records
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_report  # noqa: E402
import bounds  # noqa: E402
from guard import child_env  # noqa: E402
import physical_limit  # noqa: E402
import workloads  # noqa: E402
from modes import ABLATIONS, GPU_MODES, SWEEP_MODES, UNBUDGETED_MODES  # noqa: E402

from deepum.units import format_bytes  # noqa: E402

SWEEP_SIZES = {
    # workload: train.py flags of its sweep size; working sets of a few GiB keep a sweep at budgets
    # 0.75 and 0.5 (44 runs) under 8 minutes of H200 time: each run costs some 6 s of start-up, and
    # um at half the footprint spent 0.4 s per GB of working set per step (bench/results/gpu_check/)
    "gpt2": "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2",
    "bert-large": "--layers 12 --seq 128 --batch 8",
    "resnet152": "--batch 16 --image 224",
    "dlrm": "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048",
}
PROBE_MODE = "deepum"
PREBUILD = ("from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); "
            "n.load_torch_extension(n.ONLINE_ENGINE)")
"""Builds deepum's native libraries into their on-disk cache (a first build inside a run would count
against that run's timeout)."""
PREBUILD_TIMEOUT_S = 900


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def checked_workloads(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """The comma-separated workload names of `text`; none, or an unknown one, exits with status 2."""
    names = split_list(text)
    unknown = [name for name in names if name not in workloads.WORKLOADS]
    if unknown or not names:
        parser.error(f"unknown or no workload(s) {unknown}; choose from {', '.join(workloads.WORKLOADS)}")
    return names


def _fractions(text: str) -> list[float]:
    try:
        values = [float(item) for item in split_list(text)]
    except ValueError:
        values = []
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"budgets must be fractions in (0, 1] separated by commas, got {text!r}")
    return sorted(set(values), reverse=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "gpu", help="folder for records and report")
    parser.add_argument("--workloads", default=",".join(SWEEP_SIZES),
                        help=f"comma-separated, from {', '.join(sorted(workloads.WORKLOADS))} (default: %(default)s)")
    parser.add_argument("--modes", default=",".join(SWEEP_MODES),
                        help=f"comma-separated, from {', '.join(GPU_MODES)} (default: %(default)s)")
    parser.add_argument("--budgets", type=_fractions, default=[1.0, 0.75, 0.5],
                        help="capacities as fractions of the footprint (default 1,0.75,0.5)")
    parser.add_argument("--ablation-budgets", type=_fractions, default=[0.5],
                        help="budgets at which the deepum ablations run (default 0.5)")
    parser.add_argument("--size", action="append", default=[], metavar="WORKLOAD=FLAGS",
                        help='train.py sizing flags replacing a workload\'s sweep size, e.g. "gpt2=--layers 12"')
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=240, help="seconds one run may take (default 240)")
    parser.add_argument("--resume", action="store_true", help="keep successful records already in --out")
    parser.add_argument("--dry-run", action="store_true", help="print the runs without starting them")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report from the records")
    parser.add_argument("--calibration", default="h200", help="link bandwidths for the physical limit")
    parser.add_argument("--dirty-fraction", type=float, default=1.0,
                        help="share of evicted bytes that must be copied out (physical limit; default 1)")
    parser.add_argument("--uvm-rates", type=Path, default=None, metavar="PROBE",
                        help="bench/migration_probe.py record (ideally of the same machine, just before) whose rates "
                             "the UVM-path bound takes instead of the calibration's; passed to every budgeted run")
    parser.add_argument("--uvm-call-mib", type=int, default=bounds.UVM_CALL_MIB,
                        help="the probe's call size for --uvm-rates (default %(default)s)")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: unknown workloads or modes, bad sizes and step counts exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.workloads, args.modes = split_list(args.workloads), split_list(args.modes)
    for kind, given, known in (("workload", args.workloads, workloads.WORKLOADS), ("mode", args.modes, GPU_MODES)):
        unknown = [item for item in given if item not in known]
        if unknown or not given:
            parser.error(f"unknown or no {kind}(s) {unknown}; choose from {', '.join(known)}")
    if not 0 <= args.warmup < args.steps:
        parser.error(f"need 0 <= --warmup < --steps, got --warmup {args.warmup} --steps {args.steps}")
    if not set(args.ablation_budgets) <= set(args.budgets):
        parser.error(f"--ablation-budgets {args.ablation_budgets} must be among --budgets {args.budgets}")
    if not 0 <= args.dirty_fraction <= 1:
        parser.error(f"--dirty-fraction must be in [0, 1], got {args.dirty_fraction}")
    args.sizes = workload_sizes(parser, args.workloads, args.size)
    try:
        args.uvm_link = bounds.uvm_link(args.uvm_rates, args.uvm_call_mib) if args.uvm_rates else None
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--uvm-rates: {exc}")
    return args


def workload_sizes(parser: argparse.ArgumentParser, names: list[str], size_items: list[str]) -> dict[str, list[str]]:
    """train.py sizing flags per workload: its SWEEP_SIZES entry unless a WORKLOAD=FLAGS item of
    --size replaces it; bad items exit with status 2."""
    sizes = dict(SWEEP_SIZES)
    for item in size_items:
        name, sep, flags = item.partition("=")
        if not sep or name not in workloads.WORKLOADS:
            parser.error(f"--size wants WORKLOAD=FLAGS with a known workload, got {item!r}")
        sizes[name] = flags
    checked = {}
    for name in names:
        flags = shlex.split(sizes.get(name, ""))
        check = argparse.ArgumentParser(add_help=False)
        workloads.add_arguments(check)
        known, rest = check.parse_known_args(["--workload", name, *flags])
        if rest:
            parser.error(f"--size for {name}: not a sizing flag: {' '.join(rest)}")
        try:
            workloads.sizes(known)
        except ValueError as exc:
            parser.error(f"--size for {name}: {exc}")
        checked[name] = flags
    return checked


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a script that trains each workload at one budget beside its references
    (bench/warm_start_gpu.py, bench/early_steps.py); check_budget_arguments checks them."""
    parser.add_argument("--workloads", default=",".join(SWEEP_SIZES),
                        help=f"comma-separated, from {', '.join(sorted(workloads.WORKLOADS))} (default: %(default)s)")
    parser.add_argument("--size", action="append", default=[], metavar="WORKLOAD=FLAGS",
                        help='train.py sizing flags replacing a workload\'s sweep size, e.g. "gpt2=--layers 12"')
    parser.add_argument("--budget", type=float, default=0.5, help="capacity as a fraction of the footprint (default 0.5)")
    parser.add_argument("--footprint-from", type=Path, default=None, metavar="FOLDER",
                        help="a sweep folder whose <workload>_deepum_full.json gives the footprint "
                             "(default: measure it with an unbudgeted deepum run)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs without starting them")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the summary from the records in --out without running anything")


def check_budget_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """add_budget_arguments' arguments, checked: unknown workloads, a budget outside (0, 1] and bad
    sizes exit with status 2. Every step is measured (no warm-up) and no record is reused."""
    args.workloads = checked_workloads(parser, args.workloads)
    if not 0 < args.budget <= 1:
        parser.error(f"--budget must be in (0, 1], got {args.budget}")
    args.sizes = workload_sizes(parser, args.workloads, args.size)
    args.warmup, args.resume = 0, False


def sized_args(args, workload: str) -> argparse.Namespace:
    """train.py's parsed sizing arguments of a workload (for its workload_id)."""
    parser = argparse.ArgumentParser()
    workloads.add_arguments(parser)
    return parser.parse_args(["--workload", workload, *args.sizes[workload]])


def footprint(args, workload: str) -> int | None:
    """Managed bytes one unbudgeted deepum step touches: from --footprint-from's record, or measured."""
    if args.footprint_from is not None:
        path = args.footprint_from / f"{run_name(workload, PROBE_MODE, None)}.json"
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise SystemExit(f"--footprint-from: cannot read {path}: {exc}") from None
        if record.get("workload_id") != workloads.workload_id(sized_args(args, workload)):
            raise SystemExit(f"--footprint-from: {path} is of another size ({record.get('workload_id')})")
        return record.get("footprint_bytes")
    probe = run_one(args, workload, PROBE_MODE, None, None)
    return probe.get("footprint_bytes") if probe.get("status") == "ok" else None


def budget_capacity(args, workload: str, none: dict) -> tuple[int | str | None, dict | None]:
    """The capacity of a workload's budgeted runs once its none record `none` ran: args.budget times its
    footprint (a placeholder in a dry run); or None and the result that ends the workload: skipped (none
    was unsafe) or failed (no footprint)."""
    reason = unsafe_reason(none)
    if reason:
        return None, {"status": "skipped", "reason": reason}
    size = footprint(args, workload)
    if not size and not args.dry_run:
        return None, {"status": "failed", "reason": "no footprint"}
    return (max(1, int(args.budget * size)) if size else f"<{args.budget:g} x footprint>"), None


def results_by_workload(args, measure, recorded) -> dict | int:
    """A budget script's result per workload: recorded(args, workload) with --report-only, else
    measure(args, workload) once the native libraries are built; instead, the exit status when there
    is nothing to write (the build failed: 1; a dry run: 0)."""
    if args.report_only:
        return {workload: recorded(args, workload) for workload in args.workloads}
    if not ready_to_run(args):
        return 1
    results = {workload: measure(args, workload) for workload in args.workloads}
    return 0 if args.dry_run else results


def budget_summary(args, argv, script: str, measure, recorded, fields: dict) -> dict | int:
    """A budget script's results per workload (results_by_workload), written with `fields` to its
    summary <out>/<script's stem>.json under the header of summary_header; the results, or the exit
    status when there is nothing to write."""
    results = results_by_workload(args, measure, recorded)
    if isinstance(results, int):
        return results
    summary = args.out / f"{Path(script).stem}.json"
    header = summary_header(args.out, summary, script_command(script, argv), args.report_only)
    summary.write_text(json.dumps({**header, **fields, "workloads": results}, indent=1))
    return results


def summary_header(out: Path, summary: Path, command: str, report_only: bool) -> dict:
    """The command, device and date of a budget script's summary file `summary`: this run's (the device
    from a none record in `out`), or with report_only those of the summary already there, beside the
    report's own command and date."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if report_only:
        try:
            earlier = json.loads(summary.read_text())
        except (OSError, json.JSONDecodeError):
            earlier = {}
        return {**{key: earlier.get(key) for key in ("command", "device", "date")},
                "report_command": command, "report_date": now}
    device = next((r["device"] for r in (json.loads(p.read_text()) for p in out.glob("*_none_full.json"))
                   if r.get("status") == "ok"), None)
    return {"command": command, "device": device, "date": now}


def run_name(workload: str, mode: str, budget: float | None) -> str:
    """File stem of one run, e.g. gpt2_deepum_b0.50 or gpt2_none_full."""
    return f"{workload}_{mode}_{'full' if budget is None else f'b{budget:.2f}'}"


def train_command(args, workload: str, mode: str, output: Path, capacity: int | str | None,
                  reference: Path | None) -> list[str]:
    """bench/train.py's command line for one run at args.steps, args.warmup and args.sizes; reference:
    the workload's mode-none record (train.py --reference), or None."""
    command = [sys.executable, str(HERE / "train.py"), "--workload", workload, "--mode", mode, "-o", str(output),
               "--steps", str(args.steps), "--warmup", str(args.warmup), *args.sizes[workload]]
    if reference is not None:
        command += ["--reference", str(reference)]
    command += deepum_config_flags(args, mode)
    return command + (["--capacity", str(capacity), *uvm_rate_flags(args)] if capacity is not None else [])


def deepum_config_flags(args, mode: str) -> list[str]:
    """train.py's --config for a deepum run where the driver has a --deepum-config (no_pressure.py);
    none otherwise."""
    config = getattr(args, "deepum_config_file", None)
    return ["--config", str(config)] if mode == "deepum" and config else []


def uvm_rate_flags(args) -> list[str]:
    """train.py's flags for the sweep's --uvm-rates (the UVM-path bound at a migration probe's rates);
    none without it, or for the drivers built on run_one and train_command that have no such option."""
    probe = getattr(args, "uvm_rates", None)
    return ["--uvm-rates", str(probe), "--uvm-call-mib", str(args.uvm_call_mib)] if probe else []


def in_memory_reference(args, workload: str) -> Path | None:
    """The workload's successful mode-none record, whose step time bounds the other runs (train.py
    --reference), or None."""
    path = args.out / f"{run_name(workload, 'none', None)}.json"
    try:
        return path if json.loads(path.read_text()).get("status") == "ok" else None
    except (OSError, json.JSONDecodeError):
        return None


def run_one(args, workload: str, mode: str, budget: float | None, capacity: int | str | None,
            repeat: int = 0, stem: str | None = None) -> dict:
    """Runs bench/train.py once in the sweep (run_train); the record has the budget. repeat > 0: a
    repetition of that run, its files named with the suffix _r<repeat>; `stem` replaces run_name's."""
    name = (stem or run_name(workload, mode, budget)) + (f"_r{repeat}" if repeat else "")
    reference = in_memory_reference(args, workload) if mode != "none" else None
    command = train_command(args, workload, mode, args.out / f"{name}.json", capacity, reference)
    return run_train(args, name, command, workload, mode, {"budget_fraction": budget})


def run_train(args, name: str, command: list[str], workload: str, mode: str, fields: dict) -> dict:
    """Runs a bench/train.py command writing <args.out>/<name>.json (or, with args.resume, reuses a
    successful record there; with args.dry_run only prints it) under the guard (bench/guard.py) and
    args.timeout seconds; returns the record with status "ok", "failed" or "timeout", the run's name,
    command, wall_s (seconds) and `fields`. Writes the record back and the run's output to
    <args.out>/logs/<name>.log."""
    path = args.out / f"{name}.json"
    if args.resume and path.exists():
        record = json.loads(path.read_text())
        if record.get("status") == "ok":
            print(f"[{name}] kept from an earlier sweep", flush=True)
            return record
    print(f"[{name}] {shlex.join(command[1:])}", flush=True)
    if args.dry_run:
        return {"status": "planned", "run": name}
    path.unlink(missing_ok=True)
    log = run_log(args, name)
    start = time.monotonic()
    with log.open("w") as sink:
        try:
            code = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, timeout=args.timeout,
                                  env=child_env()).returncode
        except subprocess.TimeoutExpired:
            code = None
    return finished_run(args, name, command, workload, mode, fields, code, time.monotonic() - start)


def run_log(args, name: str) -> Path:
    """<args.out>/logs/<name>.log, its folder made."""
    log = args.out / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return log


def finished_run(args, name: str, command: list[str], workload: str, mode: str, fields: dict, code: int | None,
                 wall: float) -> dict:
    """The record of a finished bench/train.py run (exit status `code`, None after a timeout; `wall`
    seconds): the one it wrote if it succeeded, else a failure record with the tail of its log; with
    the run's name, command, wall_s and `fields`, written back to <args.out>/<name>.json."""
    path, log = args.out / f"{name}.json", args.out / "logs" / f"{name}.log"
    if code == 0 and path.exists():
        record = json.loads(path.read_text())
    else:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        record = {"status": "timeout" if code is None else "failed", "workload": workload, "mode": mode,
                  "returncode": code, "error": "\n".join(tail) or f"no output (exit status {code})"}
        print(f"[{name}] {record['status']} after {wall:.0f} s; see {log}", flush=True)
    record.update(run=name, **fields, command=shlex.join(command[1:]), wall_s=wall)
    path.write_text(json.dumps(record, indent=1, default=str))
    return record


def skipped(args, name: str, workload: str, mode: str, reason: str, fields: dict) -> dict:
    """The record of a run that did not start (<args.out>/<name>.json unless args.dry_run), with `fields`."""
    print(f"[{name}] skipped: {reason}", flush=True)
    record = {"status": "skipped", "run": name, "workload": workload, "mode": mode, **fields, "error": reason}
    if not args.dry_run:
        (args.out / f"{name}.json").write_text(json.dumps(record, indent=1))
    return record


def unsafe_reason(reference: dict | None) -> str | None:
    """Why the unified-memory runs of a workload must not start (safety rule), or None."""
    if not reference or reference.get("status") != "ok":
        return None
    peak, free = reference.get("footprint_bytes"), reference.get("gpu_free_bytes_at_start")
    if peak and free and peak > free // 2:
        return (f"in-memory peak {format_bytes(peak)} is above half of the free GPU memory "
                f"({format_bytes(free // 2)}): managed memory must stay below it; use smaller sizes")
    return None


def sweep_workload(args, workload: str) -> None:
    """All runs of one workload, in order: references, the footprint probe, then the budgets."""
    records = {mode: run_one(args, workload, mode, None, None) for mode in UNBUDGETED_MODES if mode in args.modes}
    um_modes = [mode for mode in args.modes if mode not in UNBUDGETED_MODES]
    if not um_modes:
        return
    reason = unsafe_reason(records.get("none"))
    if reason:
        for mode in um_modes:
            skipped(args, run_name(workload, mode, None), workload, mode, reason, {"budget_fraction": None})
        return
    probe = run_one(args, workload, PROBE_MODE, None, None)
    footprint = probe.get("footprint_bytes") if probe.get("status") == "ok" else None
    why = "reported none" if probe.get("status") == "ok" else "did not succeed"
    for budget in args.budgets:
        for mode in um_modes:
            if mode in ABLATIONS and budget not in args.ablation_budgets:
                continue
            if args.dry_run:
                run_one(args, workload, mode, budget, f"<{budget:g} x footprint>")
            elif not footprint:
                skipped(args, run_name(workload, mode, budget), workload, mode,
                        f"no footprint: the unbudgeted {PROBE_MODE} run {why}", {"budget_fraction": budget})
            else:
                run_one(args, workload, mode, budget, max(1, int(budget * footprint)))


def prebuild() -> str | None:
    """Builds the native libraries once, in a process of its own; returns why it failed, or None."""
    print("building deepum's native libraries (cached after the first time)", flush=True)
    try:
        done = subprocess.run([sys.executable, "-c", PREBUILD], cwd=HERE.parent, capture_output=True, text=True,
                              timeout=PREBUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the native build took more than {PREBUILD_TIMEOUT_S} s"
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]


def prebuilt() -> bool:
    """prebuild(); when it fails, one line on stderr says why no unified-memory run can start.
    Whether it succeeded."""
    failure = prebuild()
    if failure:
        print(f"cannot build deepum's native libraries, so no unified-memory run can start: {failure}",
              file=sys.stderr)
    return not failure


def script_command(script: str, argv) -> str:
    """The command line that ran bench/<script> with `argv` (None: this process's arguments), for records."""
    return shlex.join(["python3", f"bench/{script}", *(sys.argv[1:] if argv is None else argv)])


def ready_to_run(args) -> bool:
    """Unless args.dry_run, makes args.out and builds the native libraries (prebuilt()); False when
    the build failed."""
    if args.dry_run:
        return True
    args.out.mkdir(parents=True, exist_ok=True)
    return prebuilt()


def json_records(folder: Path, pattern: str, keep) -> list[dict]:
    """The JSON objects of the files in `folder` matching `pattern`, in name order, that keep(record)
    accepts; files that are not JSON objects are skipped."""
    records = []
    for path in sorted(folder.glob(pattern)):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and keep(data):
            records.append(data)
    return records


def load_records(folder: Path) -> list[dict]:
    """The records this script wrote into the folder (<name>.json with "run" and "status"), by name;
    other JSON there (results.json, bench/gpu_check.py's output, bench/peers.py's records, which
    have "peer") is left alone."""
    return json_records(folder, "*.json", lambda data: "run" in data and "status" in data and "peer" not in data)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.dry_run:
        args.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python3", "bench/run_all.py", *(sys.argv[1:] if argv is None else argv)])
    if not args.report_only:
        if not args.dry_run and set(args.modes) - set(UNBUDGETED_MODES) and not prebuilt():
            return 1
        for workload in args.workloads:
            sweep_workload(args, workload)
    if args.dry_run:
        return 0
    link = physical_limit.Link.from_calibration(args.calibration)
    uvm = args.uvm_link or link
    records = bounds.annotate(physical_limit.annotate(load_records(args.out), link, args.dirty_fraction), uvm,
                              bounds.pinned_link(), args.dirty_fraction,
                              bounds.uvm_source(args.uvm_rates, args.calibration))
    if not records:
        print(f"no records in {args.out}", file=sys.stderr)
        return 1
    paths = bench_report.write_report(records, args.out, command)
    print(bench_report.headline_text(bench_report.headline(records)))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
