"""Speed of the synthetic trace generators: wall seconds of `deepum synth` on large models.

Each case runs the command line in a fresh process (imports, generation, validation and the
compressed write included; the JIT cache warm, after one untimed run) and keeps the best of REPEATS
runs. With `--baseline DIR` the same cases also run against another source tree (e.g. an export of an
earlier revision: `git archive REV | tar -x -C DIR`), and the traces of the two trees are compared
array by array. Without it, the baseline figures already in the results file are kept. `--source DIR`
times another tree in place of this checkout (e.g. an export of a commit, when the checkout holds
changes not to be measured).

Run: python bench/synth_speed.py [--repeats N] [--source DIR --source-revision REV]
                                 [--baseline DIR --baseline-revision REV]
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


def interleaved(trees: dict[str, Path], case: list[str], outputs: dict[str, Path], repeats: int) -> dict:
    """Per tree: one untimed run (it fills the JIT cache), then `repeats` timed runs taken in turns
    with the other trees' (so that a change in the machine's load falls on all of them); the best and
    every run."""
    for name, tree in trees.items():
        run_synth(tree, case, outputs[name])
    runs = {name: [] for name in trees}
    for _ in range(repeats):
        for name, tree in trees.items():
            runs[name].append(run_synth(tree, case, outputs[name]))
    return {name: {"best_s": min(times), "runs_s": times} for name, times in runs.items()}


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
    parser.add_argument("--source", type=Path, default=ROOT, help="the source tree to time (default: this checkout)")
    parser.add_argument("--source-revision", help="the revision --source was exported from")
    parser.add_argument("--baseline", type=Path, help="another source tree to time the same cases against")
    parser.add_argument("--baseline-revision", help="the revision the baseline tree was exported from")
    args = parser.parse_args()

    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    record = {"command": "python bench/synth_speed.py " + " ".join(sys.argv[1:]), "machine": machine(),
              "repeats": args.repeats, "cases": {}}
    if args.source != ROOT:
        record["machine"]["revision"] = args.source_revision
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, case in CASES.items():
            trees = {"source": args.source.resolve()}
            if args.baseline is not None:
                trees["baseline"] = args.baseline.resolve()
            outputs = {tree: tmp / f"{name}-{tree}.npz" for tree in trees}
            timings = interleaved(trees, case, outputs, args.repeats)
            revision = source_revision() if args.source == ROOT else args.source_revision
            row = {"synth_args": case, "revision": revision, **timings["source"]}
            if args.baseline is not None:
                row["baseline"] = {"revision": args.baseline_revision, **timings["baseline"],
                                   "identical_trace": identical(outputs["baseline"], outputs["source"])}
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
