"""The details of a lockstep call's records (bench/lockstep_ab.py's --out folder): per model and tree,
the pairs' ratios (deepum / `none`, each pair's median steps), the per-round ratios to the first tree's
pairs and deepum's and `none`'s run medians, the bytes each run moved a step (GB), the GPU's busy and
idle time and the hook's time a step, each deepum run's even steps' median minus its odd steps'
(steps 4 on, ms), and whether every run is bitwise equal to `none` with no CUDA error.

    python3 bench/lockstep_report.py FOLDER [FOLDER ...]
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lockstep_ab import against_first, summary  # noqa: E402

GB = 1e9
VERSUS = (("against_first", "pairs"), ("deepum_against_first", "deepum's run medians"),
          ("none_against_first", "none's"))


def runs(folder: Path, mode: str) -> list[dict]:
    """The folder's records of one mode ("deepum" or "none"), in round order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"*_{mode}_*.json"))]


def report(out: Path) -> None:
    """Prints the details of the lockstep call whose records are in OUT."""
    record = json.loads((out / "lockstep_ab.json").read_text())
    print(f"{out}: {record['command']}")
    models = list(dict.fromkeys(row["model"] for row in record["rows"]))
    trees = list(dict.fromkeys(row["tree"] for row in record["rows"]))
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
        parity = [statistics.median(r["step_s"][4::2]) - statistics.median(r["step_s"][5::2]) for r in deepum]
        print(f"  deepum's even steps minus odd, ms: {' '.join(f'{d * 1e3:.0f}' for d in parity)}")
        print(f"  parameters {sorted(hashes)} ({len(deepum)} deepum, {len(none)} none runs);"
              f" CUDA errors {sum(r['stats']['cuda_errors'] for r in deepum)};"
              f" faults a step {max(r['faults_per_step'] for r in deepum)}")


if __name__ == "__main__":
    for folder in sys.argv[1:]:
        report(Path(folder))
