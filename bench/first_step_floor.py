"""A warm start's first step against the floor plain PyTorch sets, across calls: every
warm_start_gpu.json found under the folders given (bench/warm_start_gpu.py's summaries), per workload and
budget, the warm run's first step over its steady step (as measured and past start-up) beside plain
PyTorch's own first step over that steady step. No memory policy's first step is shorter than plain
PyTorch's with the model in memory, so where that floor exceeds the target (1.25x) the target cannot be
met (warm_start_gpu.first_step_figures).

Writes <out>/first_step_floor.json (command, date, one row per summary and workload: its path, device
and date, the budget, the step times in seconds and the ratios, the trial, whether the runs trained
bitwise alike) and <out>/first_step_floor.png (per row: the floor, the warm first step and the same past
start-up, on a log scale, with the target). A folder that does not exist, a summary that does not parse
and folders holding no summary exit with status 2 and one line.

    python3 bench/first_step_floor.py bench/results/warm_start_mapped bench/results/first_step_floor \\
        --out bench/results/first_step_floor
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run_all  # noqa: E402
import warm_start_gpu  # noqa: E402

SUMMARY = "warm_start_gpu.json"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders searched for warm_start_gpu.json")
    parser.add_argument("--out", type=Path, required=True, help="folder for first_step_floor.json and .png")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"not a folder: {folder}")
    return args


def summaries(folders: list[Path]) -> list[tuple[Path, dict]]:
    """Every summary under `folders`, by path; raises ValueError naming one that does not parse."""
    found = []
    for path in sorted({p for folder in folders for p in folder.rglob(SUMMARY)}):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {path}: {exc}") from None
    return found


def rows(found: list[tuple[Path, dict]]) -> list[dict]:
    """One row per workload that ran in each summary, its figures recomputed from the step times."""
    table = []
    for path, summary in found:
        for workload, result in summary.get("workloads", {}).items():
            if result.get("status") != "ok":
                continue
            none, warm = result["step_s"]["none"], result["step_s"]["warm"]
            table.append({
                "summary": str(path), "device": summary.get("device"), "date": summary.get("date"),
                "budget_fraction": summary.get("budget_fraction"), "workload": workload,
                "none_first_step_s": none[0], "none_steady_step_s": warm_start_gpu.steady(none),
                **warm_start_gpu.first_step_figures(none, warm),
                "trial": (result.get("warm_trial") or {}).get("state"), "bitwise_equal": result.get("bitwise_equal"),
            })
    return table


def plot(table: list[dict], path: Path) -> None:
    """Per row, the floor as a bar and the warm first step (measured, past start-up) as marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['workload']} at {r['budget_fraction']:g} ({r['date'][:10]})" for r in table]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(table) + 1.5))
    positions = range(len(table))
    ax.barh(positions, [r["in_memory_first_vs_warm_steady"] for r in table], color="tab:gray",
            label="floor: plain PyTorch's first step")
    ax.scatter([r["warm_first_vs_steady"] for r in table], positions, color="tab:green", zorder=3,
               label="warm first step")
    ax.scatter([max(r["warm_first_vs_steady_past_start_up"], 1e-2) for r in table], positions, color="tab:blue",
               marker="x", zorder=3, label="warm first step past start-up")
    ax.axvline(warm_start_gpu.TARGET_FIRST_VS_STEADY, color="tab:red", linestyle="--", label="target")
    ax.set_xscale("log")
    ax.set_yticks(list(positions), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("x the warm run's steady step")
    ax.set_title("A warm start's first step and the floor plain PyTorch sets")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        found = summaries(args.folders)
    except ValueError as exc:
        print(f"first_step_floor.py: {exc}", file=sys.stderr)
        return 2
    table = rows(found)
    if not table:
        print(f"first_step_floor.py: no {SUMMARY} with a workload that ran under "
              f"{', '.join(map(str, args.folders))}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    command = run_all.script_command("first_step_floor.py", argv)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    reachable = sum(r["target_reachable"] for r in table)
    (args.out / "first_step_floor.json").write_text(json.dumps(
        {"command": command, "date": now, "target_first_vs_steady": warm_start_gpu.TARGET_FIRST_VS_STEADY,
         "rows_reachable": reachable, "rows": table}, indent=1))
    plot(table, args.out / "first_step_floor.png")
    print(f"{'workload':<11} {'budget':>6} {'date':>10} {'floor':>7} {'warm first':>10} {'past start-up':>13} "
          f"{'trial':>9}")
    for r in table:
        print(f"{r['workload']:<11} {r['budget_fraction']:>6g} {r['date'][:10]:>10} "
              f"{r['in_memory_first_vs_warm_steady']:>6.2f}x {r['warm_first_vs_steady']:>9.2f}x "
              f"{r['warm_first_vs_steady_past_start_up']:>12.2f}x {r['trial']!s:>9}")
    print(f"target {warm_start_gpu.TARGET_FIRST_VS_STEADY}x reachable by its floor in {reachable} of {len(table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
