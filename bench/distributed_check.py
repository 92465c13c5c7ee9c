"""Runs bench/distributed.py under torchrun once per mode, for DDP and FSDP, and compares the runs:
mode none without a budget (reference parameters of every rank, in-memory step time), deepum without
a budget (its overhead, and the footprint), then um and deepum at a per-rank budget of a fraction of
that footprint. Writes every run's record and distributed_check.json.

    python3 bench/distributed_check.py --out bench/results/distributed -- \\
        --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4
    python3 bench/distributed_check.py --smoke --out bench/results/distributed_smoke

Each run is `python -m torch.distributed.run --standalone --nproc-per-node N bench/distributed.py
...` with DEEPUM_NO_OVERSUBSCRIBE=1 (bench/guard.py), its output in RUN.log and RUN.err beside its
record RUN.json. The footprint is the largest over ranks of the deepum-without-budget run's per-rank
footprint (the most bytes of managed blocks one iteration touches, after the first two, or the
allocator's peak where the engine slept without pressure); the budget
--fraction of it is given to every rank (--capacity is per rank). A run that fails or passes
--timeout is recorded as such (status, returncode, the tail of its stderr) and the check goes on;
without a mode-none record or a footprint the runs that need them are recorded as skipped.

Every record of a check gains bitwise_equal_to_none: True when it has as many ranks as the mode-none
run of the same parallelism and every rank's parameter digest equals the same rank's digest there.

--smoke: one GPU, two ranks. NCCL refuses two ranks on one device, so the ranks talk over gloo (on
CUDA tensors), both on the first visible GPU (CUDA_VISIBLE_DEVICES is set to it for the children),
at small sizes unless workload flags are given, modes none and deepum (without a budget, then at
--fraction of the footprint). deepum.enable() divides its fuse (and its default capacity) by the
processes sharing a GPU, so each rank gets half of the GPU's share.

distributed_check.json: the command, nproc, fraction, backend, smoke, the workload flags, and per
parallelism (ddp, fsdp): footprint_bytes, capacity_bytes (per rank), and per run (none,
deepum_unbudgeted, then the --modes): status, world_size, step_s_median (the job's: the slowest
rank's median), ratio_to_none, bitwise_equal_to_none, faults_per_step_by_rank (measured steps),
gpu_page_faults_by_rank, cuda_errors_by_rank, peak_resident_bytes_by_rank, footprint_bytes_by_rank;
with both um and deepum, um_over_deepum (um's step over deepum's).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from guard import child_env  # the script's own folder is first on sys.path
from modes import BUDGETED_MODES

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from deepum.units import parse_size  # noqa: E402
SCRIPT = HERE / "distributed.py"
PARALLELS = ("ddp", "fsdp")
SMOKE_WORKLOAD = ["--layers", "2", "--hidden", "256", "--heads", "4", "--seq", "128", "--batch", "2",
                  "--vocab", "4096", "--steps", "6", "--warmup", "2"]
"""The smoke check's workload unless flags are given after --."""
RESERVED = ("--parallel", "--mode", "--capacity", "--backend", "--device", "-o", "--output")
"""distributed.py flags the check sets itself."""
TAIL_LINES = 40


def launch_command(nproc: int, script_args: list[str]) -> list[str]:
    """The torchrun command of one run of bench/distributed.py."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            str(SCRIPT), *script_args]


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(process: subprocess.Popen, grace_s: float = 30) -> None:
    """Ends a run that passed its time: SIGTERM to its process group (torchrun passes it on to the
    ranks), then SIGKILL to the group after grace_s."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run(name: str, out: Path, nproc: int, script_args: list[str], timeout_s: float, env: dict) -> dict:
    """Runs one job, named `name` (RUN.json, RUN.log, RUN.err in `out`); returns its record, or a
    failed/timeout record with the returncode and the tail of its stderr."""
    path, log, err = (out / f"{name}{suffix}" for suffix in (".json", ".log", ".err"))
    path.unlink(missing_ok=True)
    command = launch_command(nproc, [*script_args, "-o", str(path)])
    print(f"[{name}] $ {' '.join(command)}", flush=True)
    started = time.monotonic()
    with open(log, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env, start_new_session=True)
        try:
            returncode, status = process.wait(timeout=timeout_s), None
        except subprocess.TimeoutExpired:
            stop(process)
            returncode, status = process.returncode, "timeout"
    wall_s = time.monotonic() - started
    if status is None and returncode == 0:
        try:
            record = json.loads(path.read_text())
            print(f"[{name}] ok in {wall_s:.0f} s: step {record['step_s_median'] * 1e3:.1f} ms", flush=True)
            return record
        except (OSError, ValueError, KeyError, TypeError) as exc:
            status, reason = "failed", f"no readable record at {path}: {exc}"
    else:
        status = status or "failed"
        reason = f"passed --timeout {timeout_s:g} s" if status == "timeout" else f"exit status {returncode}"
    print(f"[{name}] {status} after {wall_s:.0f} s ({reason}); see {err}", flush=True)
    return {"status": status, "run": name, "returncode": returncode, "reason": reason, "wall_s": wall_s,
            "command": command, "stderr_tail": tail(err)}


def skipped(name: str, reason: str) -> dict:
    print(f"[{name}] skipped: {reason}", flush=True)
    return {"status": "skipped", "run": name, "reason": reason}


def ok(record: dict | None) -> bool:
    return bool(record) and record.get("status") == "ok"


def bitwise_equal(record: dict, reference: dict) -> bool | None:
    """Whether every rank of `record` trained bitwise the same parameters as the same rank of
    `reference` (the mode-none run): equal world sizes and equal per-rank digests. None when either
    run has no record."""
    if not (ok(record) and ok(reference)):
        return None
    digests, expected = record["parameter_sha256_by_rank"], reference["parameter_sha256_by_rank"]
    return (record["world_size"] == reference["world_size"] and len(digests) == len(expected)
            and all(d is not None and d == e for d, e in zip(digests, expected)))


def faults_per_step(rank: dict) -> float | None:
    """A rank's mean GPU page faults per measured step, or None without them."""
    return rank.get("faults_per_step")


def summarize_run(record: dict, reference: dict | None) -> dict:
    """One run's line of the summary."""
    if not ok(record):
        return {key: record.get(key) for key in ("status", "reason", "returncode")}
    ranks = record["ranks"]
    none_step = reference["step_s_median"] if ok(reference) else None
    return {
        "status": "ok", "world_size": record["world_size"], "step_s_median": record["step_s_median"],
        "step_s_median_by_rank": record["step_s_median_by_rank"],
        "ratio_to_none": record["step_s_median"] / none_step if none_step else None,
        "bitwise_equal_to_none": record.get("bitwise_equal_to_none"),
        "capacity_bytes": record.get("capacity_bytes"),
        "faults_per_step_by_rank": [faults_per_step(rank) for rank in ranks],
        "gpu_page_faults_by_rank": [rank.get("gpu_page_faults") for rank in ranks],
        "cuda_errors_by_rank": [rank.get("cuda_errors") for rank in ranks],
        "peak_resident_bytes_by_rank": [rank.get("peak_resident_bytes") for rank in ranks],
        "footprint_bytes_by_rank": record.get("footprint_bytes_by_rank"),
    }


def summarize(runs: dict) -> dict:
    """The summary of one parallelism's runs ({"none": record, "deepum_unbudgeted": ..., mode: ...})."""
    reference = runs.get("none")
    lines = {name: summarize_run(record, reference) for name, record in runs.items()}
    summary = {"runs": lines}
    if lines.get("um", {}).get("status") == "ok" and lines.get("deepum", {}).get("status") == "ok":
        summary["um_over_deepum"] = lines["um"]["step_s_median"] / lines["deepum"]["step_s_median"]
    return summary


def check_parallel(parallel: str, args, extra: list[str], env: dict) -> dict:
    """none, deepum without a budget, then the --modes at the budget, for one parallelism."""
    common = ["--parallel", parallel, *(["--backend", args.backend] if args.backend else []), *extra]

    def one(mode: str, tag: str = "", capacity: int | None = None) -> dict:
        script_args = [*common, "--mode", mode, *([] if capacity is None else ["--capacity", str(capacity)])]
        return run(f"{parallel}_{mode}{tag}", args.out, args.nproc, script_args, args.timeout, env)

    runs = {"none": one("none")}
    footprint = None
    if args.capacity is not None:
        capacity = args.capacity
    else:
        runs["deepum_unbudgeted"] = one("deepum", "_unbudgeted") if ok(runs["none"]) else \
            skipped(f"{parallel}_deepum_unbudgeted", "mode none failed: no reference")
        footprint = runs["deepum_unbudgeted"].get("footprint_bytes") if ok(runs["deepum_unbudgeted"]) else None
        capacity = int(footprint * args.fraction) if footprint else None
    for mode in args.modes:
        if capacity is None:
            runs[mode] = skipped(f"{parallel}_{mode}", "no footprint: deepum without a budget did not finish")
        else:
            runs[mode] = one(mode, capacity=capacity)
    for name, record in runs.items():
        if ok(record):
            record["bitwise_equal_to_none"] = bitwise_equal(record, runs["none"])
            record["check"] = {"run": name, "footprint_bytes": footprint, "fraction": args.fraction}
            (args.out / f"{parallel}_{name}.json").write_text(json.dumps(record, indent=1, default=str))
    return {"footprint_bytes": footprint, "capacity_bytes": capacity,
            "footprint_from": "deepum without a budget: the largest rank footprint (most managed bytes one "
                              "iteration touches, after the first two)", **summarize(runs)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the records and distributed_check.json")
    parser.add_argument("--nproc", type=int, default=2, help="ranks (processes) per run (default: %(default)s)")
    parser.add_argument("--parallel", default="ddp,fsdp", help="ddp, fsdp or both (default: %(default)s)")
    parser.add_argument("--modes", default=None,
                        help="modes to run under the budget (default: um,deepum; with --smoke: deepum)")
    parser.add_argument("--fraction", type=float, default=0.5, help="per-rank budget as a fraction of the footprint")
    parser.add_argument("--capacity", default=None, metavar="SIZE",
                        help="per-rank budget as a size (e.g. 6GiB), in place of --fraction: the run of deepum "
                             "without a budget is then left out")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default=None,
                        help="process group backend (default: distributed.py's, nccl; gloo with --smoke)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true",
                        help="one GPU: two ranks over gloo on the first visible GPU, small sizes, none and deepum")
    parser.add_argument("workload_args", nargs=argparse.REMAINDER,
                        help="distributed.py's workload flags after -- (--layers, --steps, ...)")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.parallel = [name for name in args.parallel.split(",") if name]
    unknown = [name for name in args.parallel if name not in PARALLELS]
    if unknown or not args.parallel:
        parser.error(f"--parallel: {', '.join(unknown) or 'none given'}; choose from {', '.join(PARALLELS)}")
    modes = args.modes if args.modes is not None else ("deepum" if args.smoke else "um,deepum")
    args.modes = [mode for mode in modes.split(",") if mode]
    unknown = [mode for mode in args.modes if mode not in BUDGETED_MODES]
    if unknown:
        parser.error(f"--modes: {', '.join(unknown)} cannot run under a budget; choose from {', '.join(BUDGETED_MODES)}")
    if args.nproc < 1:
        parser.error(f"--nproc must be at least 1, got {args.nproc}")
    if not 0 < args.fraction <= 1:
        parser.error(f"--fraction must be in (0, 1], got {args.fraction}")
    if args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    if args.capacity is not None:
        try:
            args.capacity = parse_size(args.capacity)
        except ValueError as exc:
            parser.error(f"bad --capacity: {exc}")
        if args.capacity <= 0:
            parser.error(f"--capacity must be positive, got {args.capacity}")
    if args.smoke:
        if args.backend == "nccl":
            parser.error("--smoke puts two ranks on one GPU, which NCCL refuses; it runs over gloo")
        args.backend = "gloo"
    extra = [a for a in args.workload_args if a != "--"]
    reserved = [a for a in extra if a.split("=")[0] in RESERVED]
    if reserved:
        parser.error(f"{', '.join(reserved)}: set by the check itself, not after --")
    args.workload_args = extra or (list(SMOKE_WORKLOAD) if args.smoke else [])
    return args


def smoke_env(env: dict) -> dict:
    """The environment with CUDA_VISIBLE_DEVICES narrowed to its first device (0 when unset)."""
    visible = env.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return {**env, "CUDA_VISIBLE_DEVICES": visible or "0"}


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = smoke_env(child_env()) if args.smoke else child_env()
    summary = {"command": [sys.argv[0], *(sys.argv[1:] if argv is None else argv)], "nproc": args.nproc,
               "fraction": args.fraction, "backend": args.backend, "smoke": args.smoke,
               "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"), "workload_args": args.workload_args,
               "modes": args.modes, "parallel": {}}
    for parallel in args.parallel:
        summary["parallel"][parallel] = check_parallel(parallel, args, args.workload_args, env)
        (args.out / "distributed_check.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
