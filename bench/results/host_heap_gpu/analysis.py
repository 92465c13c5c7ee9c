"""The figures docs/results.md quotes from this folder's calls: the launching threads' time by tenth of
the launches in even and odd steps (call A's timelines), the sampled states of PyTorch's autograd
thread and the main thread (calls B and C), and each lockstep run's even and odd steps with the hook's
time (call C).

    python3 bench/results/host_heap_gpu/analysis.py
"""
from __future__ import annotations

import glob
import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from deepum.runtime.timeline import LAUNCH, LAUNCH_CALL, StepTimeline  # noqa: E402

TENTHS = 10
MEASURED = range(8, 24)
"""Steps of the lockstep runs split by parity: from the first repeated iteration on."""


def thread_by_tenth(path: Path) -> dict[str, list[float]]:
    """Per tenth of a step's launches, ms on the launching threads: the framework's own work before each
    launch, the hook and the rest of the launch call."""
    timeline = StepTimeline.load(path)
    hook_start, hook_end = timeline.spans(LAUNCH)
    call_start, call_end = timeline.spans(LAUNCH_CALL)
    count = min(hook_start.size, call_start.size)
    parts = {"framework": np.r_[0, hook_start[1:count] - call_end[:count - 1]],
             "hook": (hook_end - hook_start)[:count], "launch call": (call_end - call_start)[:count]}
    tenth = np.arange(count) * TENTHS // count
    return {name: np.bincount(tenth, ns, TENTHS).round(-5).tolist() for name, ns in parts.items()}


def sampled(path: Path) -> str:
    """The autograd thread's and the main thread's sampled states and wait functions."""
    threads = json.loads(path.read_text())["thread_states"]["threads"]
    return "; ".join(f"{name} {threads[name]['states']} {threads[name]['wchan']}" for name in ("pt_autograd_0", "main"))


def main() -> None:
    print("call A: the launching threads' ms by tenth of the step's launches")
    for path in sorted((HERE / "call_a" / "records").glob("gpt2_t*.timeline.npz")):
        for name, row in thread_by_tenth(path).items():
            print(f"  {path.name[:8]} {name:12s} " + " ".join(f"{ns / 1e6:5.1f}" for ns in row)
                  + f"   all {sum(row) / 1e6:6.1f}")
    for call, pattern in (("B", "call_b/records/gpt2_s*.json"), ("C", "call_c/records/gpt2_*.json")):
        print(f"call {call}: sampled threads")
        for path in sorted(HERE.glob(pattern)):
            record = json.loads(path.read_text())
            step = [int(s) for s in path.stem.split("_s")[1:]] or [12]
            print(f"  {path.stem}: step {step[0]} {record['step_s'][step[0]]:.4f} s; {sampled(path)}")
    print("call C: lockstep deepum runs, medians of the even and the odd steps, the hook a step")
    for tree in ("this_tree", "heap_off"):
        for path in sorted(glob.glob(str(HERE / "call_c" / "records" / "ab" / f"gpt2_{tree}" / "gpt2_deepum_*.json"))):
            record = json.loads(Path(path).read_text())
            steps = record["step_s"]
            even = statistics.median(steps[i] for i in MEASURED if i % 2 == 0)
            odd = statistics.median(steps[i] for i in MEASURED if i % 2 == 1)
            hook = statistics.median(x["hook_ns"] for x in record["stats"]["per_iteration"][MEASURED.start:]) / 1e6
            submit = statistics.median(x["hook_submit_ns"] for x in record["stats"]["per_iteration"][MEASURED.start:]) / 1e6
            print(f"  {tree:9s} {Path(path).stem:28s} even {even:.4f} odd {odd:.4f} s, hook {hook:.1f} ms "
                  f"(submit {submit:.1f}), heap kept {record['stats'].get('host_heap_kept')}")


if __name__ == "__main__":
    main()
