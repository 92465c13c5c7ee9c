"""Speed of the synthetic trace generators: wall seconds of `deepum synth` on large models.

Each case runs the command line in a fresh process (imports, generation, validation and the
compressed write included; the JIT cache warm, after one untimed run) and keeps the best of REPEATS
runs. With `--baseline DIR` the same cases also run against another source tree (e.g. an export of an
earlier revision: `git archive REV | tar -x -C DIR`), and the traces of the two trees are compared
array by array. Without it, the baseline figures already in the results file are kept.

Run: python bench/synth_speed.py [--repeats N] [--baseline DIR --baseline-revision REV]
Writes bench/results/synth_speed.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from deepum.offline.trace_format import ARRAY_DTYPES
from deepum.offline.trace_io import read_trace
from replay_throughput import machine, source_revision  # the script's own folder is first on sys.path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "synth_speed.json"
CASES = {
    "transformer-1000-layers": ["transformer", "--layers", "1000"],
    "cnn-resnet152": ["cnn", "--depth", "152"],
}


def run_synth(source: Path, case: list[str], output: Path) -> float:
    """Wall seconds of one `python -m deepum synth ...` whose `deepum` package comes from `source`."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, "-m", "deepum", "synth", *case, "-o", str(output)]
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=output.parent, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def best_of(source: Path, case: list[str], output: Path, repeats: int) -> dict:
    """One untimed run (it fills the JIT cache), then the best and every one of `repeats` timed runs."""
    run_synth(source, case, output)
    runs = [run_synth(source, case, output) for _ in range(repeats)]
    return {"best_s": min(runs), "runs_s": runs}


def identical(a: Path, b: Path) -> bool:
    """Whether two trace files hold equal arrays (values and dtypes) and equal metadata."""
    x, y = read_trace(a), read_trace(b)
    for name in ARRAY_DTYPES:
        p, q = getattr(x, name), getattr(y, name)
        if (p is None) != (q is None):
            return False
        if p is not None and (p.dtype != q.dtype or not np.array_equal(p, q)):
            return False
    return x.meta == y.meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case, best kept (default 3)")
    parser.add_argument("--baseline", type=Path, help="another source tree to time the same cases against")
    parser.add_argument("--baseline-revision", help="the revision the baseline tree was exported from")
    args = parser.parse_args()

    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    record = {"command": "python bench/synth_speed.py " + " ".join(sys.argv[1:]), "machine": machine(),
              "repeats": args.repeats, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, case in CASES.items():
            now = tmp / f"{name}.npz"
            row = {"synth_args": case, "revision": source_revision(), **best_of(ROOT, case, now, args.repeats)}
            if args.baseline is not None:
                before = tmp / f"{name}-baseline.npz"
                row["baseline"] = {"revision": args.baseline_revision,
                                   **best_of(args.baseline.resolve(), case, before, args.repeats)}
                row["baseline"]["identical_trace"] = identical(before, now)
            else:
                kept = previous.get("cases", {}).get(name, {}).get("baseline")
                if kept is not None:
                    row["baseline"] = kept
            if "baseline" in row:
                row["speedup"] = row["baseline"]["best_s"] / row["best_s"]
            record["cases"][name] = row
            line = f"{name:26s} {row['best_s']:7.2f} s"
            if "baseline" in row:
                line += (f"   baseline ({row['baseline']['revision']}) {row['baseline']['best_s']:7.2f} s"
                         f"   speed-up {row['speedup']:.1f}x")
            print(line)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
