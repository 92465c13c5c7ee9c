"""Measures the launch hook's CPU cost per kernel launch: a launch-bound loop of tiny kernels (each
torch.add of two small tensors into a third, cycling over --tensors triples) in mode none, um and
deepum without a budget (the engine asleep), deepum awake without a budget (wake_percent 0: the
hook on every launch), and deepum with a budget of --budget-fraction of the bytes the loop touches
(deepum awake reports them). Each case runs in its own process (deepum.enable()
must precede CUDA) under the guard (bench/guard.py) and deepum's fuse at its default.

With --allocating, each launch writes a new tensor instead (c = torch.add(a, b)): it also takes one
block from the caching allocator and gives the previous one back, so the figures include the
allocation path (deepum's allocator hook sees every block).

Per case, over --repeats timed repeats of --launches launches (after one untimed repeat):
wall_ns_per_launch (wall time of a repeat, the device synchronized, over its launches) and
hook_ns_per_launch (deepum.stats()'s hook_ns over its launches in the repeat; None in mode none,
which runs no hook), each as the list and its median, and launches_seen (the hook's count of
launches per repeat). extra_wall_ns_per_launch: a case's median less mode none's.

    python3 bench/hook_cost.py -o bench/results/hook_cost/hook_cost.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from guard import child_env  # noqa: E402

CASES = {
    # name: (deepum.enable() mode, under a budget, DeepUMConfig fields)
    "none": ("none", False, {}),
    "um": ("um", False, {}),
    "deepum": ("deepum", False, {}),                           # asleep: nothing near the capacity
    "deepum_awake": ("deepum", False, {"wake_percent": 0}),    # the hook on every launch, no budget
    "deepum_budget": ("deepum", True, {}),
}
"""The cases in the order they run; deepum_budget's capacity comes from deepum_awake's touched bytes
(an engine asleep sees no launch, so it counts none)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="JSON record to write")
    parser.add_argument("--launches", type=int, default=20_000, help="kernel launches per repeat (default 20000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per case (default 5)")
    parser.add_argument("--tensors", type=int, default=64,
                        help="triples of tensors the launches cycle over (default 64)")
    parser.add_argument("--elements", type=int, default=256, help="float32 elements per tensor (default 256)")
    parser.add_argument("--allocating", action="store_true",
                        help="each launch allocates its output (and frees the one before)")
    parser.add_argument("--budget-fraction", type=float, default=1.0,
                        help="deepum_budget's capacity as a fraction of the bytes the loop touches (default 1)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated cases to run, in the order of CASES (deepum_budget needs deepum_awake)")
    parser.add_argument("--case", choices=list(CASES), default=None,
                        help="run one case in this process and write its figures to --output (the driver's call)")
    parser.add_argument("--capacity", type=int, default=None, help="bytes of the budget (with --case deepum_budget)")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("launches", "repeats", "tensors", "elements"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not 0 < args.budget_fraction <= 1:
        parser.error(f"--budget-fraction must be in (0, 1], got {args.budget_fraction}")
    if (args.capacity is not None) != (args.case == "deepum_budget"):
        parser.error("--capacity goes with --case deepum_budget, and only with it")
    cases = args.cases.split(",")
    if any(c not in CASES for c in cases) or "none" not in cases:
        parser.error(f"--cases takes names among {', '.join(CASES)}, none among them")
    if "deepum_budget" in cases and "deepum_awake" not in cases:
        parser.error("--cases: deepum_budget takes its capacity from deepum_awake, so it needs it")
    args.cases = [c for c in CASES if c in cases]
    return args


def measure_launches(torch, device: str, launches: int, repeats: int, tensors: int, elements: int,
                     stats, mark_iteration, allocating: bool = False) -> dict:
    """Times `repeats` repeats of `launches` tiny kernels on `device` ("cuda", or "cpu" for tests)
    after one untimed repeat, each writing into an existing tensor or, `allocating`, a new one;
    stats() gives the hook's counters (launches, hook_ns; absent without a hook), mark_iteration()
    ends each repeat's iteration. Returns the per-repeat figures and medians
    (see the module's docstring) and touched_bytes (the most bytes of managed blocks one repeat
    touched; None without per-iteration figures)."""
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    a, b, c = ([torch.ones(elements, device=device) for _ in range(tensors)] for _ in range(3))

    def launch_all():
        for i in range(launches):
            k = i % tensors
            if allocating:
                c[k] = torch.add(a[k], b[k])
            else:
                torch.add(a[k], b[k], out=c[k])
        synchronize()

    launch_all()
    mark_iteration()
    wall, hook, seen = [], [], []
    for _ in range(repeats):
        before = stats()
        start = time.perf_counter()
        launch_all()
        wall.append((time.perf_counter() - start) * 1e9 / launches)
        after = stats()
        mark_iteration()
        count = after.get("launches", 0) - before.get("launches", 0)
        seen.append(count)
        hook.append((after["hook_ns"] - before["hook_ns"]) / count if count else None)
    rows = stats().get("per_iteration") or []
    hooked = [value for value in hook if value is not None]
    return {"wall_ns_per_launch": wall, "wall_ns_per_launch_median": statistics.median(wall),
            "hook_ns_per_launch": hook, "hook_ns_per_launch_median": statistics.median(hooked) if hooked else None,
            "launches_seen": seen, "touched_bytes": max((row["touched_bytes"] for row in rows), default=None)}


def run_case(args) -> dict:
    """One case in this process: deepum.enable() in the case's mode, then measure_launches on the GPU."""
    import deepum

    runtime_mode, _, fields = CASES[args.case]
    with deepum.enable(runtime_mode, capacity=args.capacity, config=deepum.DeepUMConfig(**fields)):
        import torch

        figures = measure_launches(torch, "cuda", args.launches, args.repeats, args.tensors, args.elements,
                                   deepum.stats, deepum.mark_iteration, args.allocating)
        figures.update(case=args.case, runtime_mode=runtime_mode, capacity_bytes=deepum.stats().get("capacity_bytes"),
                       device=torch.cuda.get_device_name(), torch_version=torch.__version__)
    return figures


def case_command(args, case: str, output: Path, capacity: int | None) -> list[str]:
    """The command line of one case's process, with the driver's sizes."""
    command = [sys.executable, str(Path(__file__).resolve()), "--case", case, "-o", str(output),
               "--launches", str(args.launches), "--repeats", str(args.repeats), "--tensors", str(args.tensors),
               "--elements", str(args.elements)] + (["--allocating"] if args.allocating else [])
    return command + (["--capacity", str(capacity)] if capacity is not None else [])


def budget_capacity(touched_bytes: int | None, fraction: float) -> int:
    """deepum_budget's capacity: `fraction` of the bytes deepum saw the loop touch (at least 1)."""
    if not touched_bytes:
        raise RuntimeError("deepum awake without a budget reported no touched bytes, so no budget can be set")
    return max(1, int(touched_bytes * fraction))


def assemble(cases: dict, command: str, budget_fraction: float, allocating: bool = False) -> dict:
    """The record: command, device, date, the budget fraction, whether launches allocate, each case's
    figures with extra_wall_ns_per_launch (its median less none's)."""
    base = cases["none"]["wall_ns_per_launch_median"]
    return {"command": command, "device": cases["none"].get("device"),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "budget_fraction": budget_fraction, "allocating": allocating,
            "cases": {name: dict(figures, extra_wall_ns_per_launch=figures["wall_ns_per_launch_median"] - base)
                      for name, figures in cases.items()}}


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.case is not None:
        args.output.write_text(json.dumps(run_case(args), indent=1))
        return 0
    command = shlex.join(["python3", "bench/hook_cost.py", *(sys.argv[1:] if argv is None else argv)])
    cases = {}
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases:
            budgeted = CASES[case][1]
            capacity = budget_capacity(cases["deepum_awake"]["touched_bytes"], args.budget_fraction) if budgeted else None
            output = Path(folder) / f"{case}.json"
            print("$", shlex.join(case_command(args, case, output, capacity)), flush=True)
            subprocess.run(case_command(args, case, output, capacity), check=True, env=child_env())
            cases[case] = json.loads(output.read_text())
    record = assemble(cases, command, args.budget_fraction, args.allocating)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    for name, figures in record["cases"].items():
        hook = figures["hook_ns_per_launch_median"]
        print(f"{name}: {figures['wall_ns_per_launch_median']:.0f} ns per launch "
              f"(+{figures['extra_wall_ns_per_launch']:.0f} over none), hook "
              f"{'–' if hook is None else f'{hook:.0f}'} ns per launch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
