"""The details of a lockstep call's records (bench/lockstep_ab.py's --out folder): per model and tree,
the pairs' ratios (deepum / `none`, each pair's median steps), the per-round ratios to the first tree's
pairs and deepum's and `none`'s run medians, the bytes each run moved a step (GB), the GPU's busy and
idle time and the hook's time a step, the UVM-path bound (bench/bounds.py, at the records' rates,
overlapped with the `none` step) against the `none` step and deepum's, the bytes brought in against
touched - capacity, each deepum run's even steps' median minus its odd steps' (steps 4 on, ms), and
whether every run is bitwise equal to `none` with no CUDA error. A call cut short
before its first round's end has no lockstep_ab.json: its models and trees are then its folders' names.

    python3 bench/lockstep_report.py FOLDER [FOLDER ...]
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bounds import uvm_path_s  # noqa: E402
from lockstep_ab import against_first, summary  # noqa: E402
from physical_limit import Link  # noqa: E402

GB = 1e9
VERSUS = (("against_first", "pairs"), ("deepum_against_first", "deepum's run medians"),
          ("none_against_first", "none's"))


def runs(folder: Path, mode: str) -> list[dict]:
    """The folder's records of one mode ("deepum" or "none"), in round order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"*_{mode}_*.json"))]


def call(out: Path) -> tuple[str, list[str], list[str]]:
    """The command, models and trees of the lockstep call whose records are in OUT: from its
    lockstep_ab.json, or else from its <model>_<tree> folders (the command then unknown)."""
    try:
        record = json.loads((out / "lockstep_ab.json").read_text())
        names = [(row["model"], row["tree"]) for row in record["rows"]]
        command = record["command"]
    except FileNotFoundError:
        names = [tuple(folder.parent.name.split("_", 1)) for folder in sorted(out.glob("*_*/no_pressure.json"))]
        command = "(no lockstep_ab.json)"
    if not names:
        raise ValueError(f"{out} holds no lockstep records")
    return (command, list(dict.fromkeys(model for model, _ in names)),
            list(dict.fromkeys(tree for _, tree in names)))


def against_bounds(deepum: list[dict], deepum_step_s: float, none_step_s: float) -> str | None:
    """The UVM-path bound of the first deepum run's bytes that must move, overlapped with the `none`
    step, as a multiple of that step and set against deepum's step; the median bytes brought in a
    step over touched - capacity. None when the runs carry no bounds."""
    bounds = deepum[0].get("bounds")
    if not bounds:
        return None
    link = Link(bounds["uvm_h2d_bytes_per_s"], bounds["uvm_d2h_bytes_per_s"])
    bound_s = uvm_path_s(bounds["min_h2d_bytes"], bounds["min_d2h_bytes"], none_step_s, link)
    h2d = statistics.median(r["h2d_bytes_per_step"] for r in deepum)
    return (f"UVM-path bound {bound_s:.4f} s ({link.h2d_bytes_per_s / GB:.1f} GB/s in,"
            f" {link.d2h_bytes_per_s / GB:.1f} out): {bound_s / none_step_s:.2f}x none, deepum"
            f" {deepum_step_s / bound_s:.2f}x it; H2D {h2d / bounds['min_h2d_bytes']:.2f}x (touched - capacity)")


def report(out: Path) -> None:
    """Prints the details of the lockstep call whose records are in OUT."""
    command, models, trees = call(out)
    print(f"{out}: {command}")
    rows = [row for row in summary(out, models, trees) if row["status"] == "ok"]
    against_first(rows)
    for row in rows:
        deepum, none = (runs(out / f"{row['model']}_{row['tree']}", mode) for mode in ("deepum", "none"))
        hashes = {r["parameter_sha256"][:12] for r in deepum + none}
        print(f"{row['model']} {row['tree']}: pairs {' '.join(f'{p:.3f}' for p in row['pairs'])},"
              f" median {row['pair_median']:.3f}")
        versus = "; ".join(f"{name} {row[key]['median']:.3f}, lower in {row[key]['lower']} of "
                           f"{len(row[key]['ratios'])}" for key, name in VERSUS if key in row)
        if versus:
            print(f"  against the first tree, by round: {versus}")
        print(f"  deepum {row['deepum_step_s']:.4f} s, none {row['none_step_s']:.4f} s;"
              f" H2D {statistics.median(r['h2d_bytes_per_step'] for r in deepum) / GB:.3f} GB,"
              f" D2H {statistics.median(r['d2h_bytes_per_step'] for r in deepum) / GB:.3f} GB a step;"
              f" GPU busy {statistics.median(r['gpu_busy_s_per_step'] for r in deepum):.4f} s,"
              f" idle {statistics.median(r['gpu_idle_s_per_step'] for r in deepum):.4f} s;"
              f" hook {statistics.median(r['hook_s_per_step'] for r in deepum) * 1e3:.1f} ms")
        bounds = against_bounds(deepum, row["deepum_step_s"], row["none_step_s"])
        if bounds:
            print(f"  {bounds}")
        parity = [statistics.median(r["step_s"][4::2]) - statistics.median(r["step_s"][5::2]) for r in deepum]
        print(f"  deepum's even steps minus odd, ms: {' '.join(f'{d * 1e3:.0f}' for d in parity)}")
        print(f"  parameters {sorted(hashes)} ({len(deepum)} deepum, {len(none)} none runs);"
              f" CUDA errors {sum(r['stats']['cuda_errors'] for r in deepum)};"
              f" faults a step {max(r['faults_per_step'] for r in deepum)}")


if __name__ == "__main__":
    try:
        for folder in sys.argv[1:]:
            report(Path(folder))
    except (OSError, ValueError, KeyError) as error:
        sys.exit(print(f"lockstep_report: {error}", file=sys.stderr) or 2)
