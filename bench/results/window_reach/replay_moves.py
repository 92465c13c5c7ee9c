"""The policy's moves on the recorded bf16 GPT-2 trace at half its footprint, per setting: blocks moved
per steady iteration by kind, hand-overs (launches deciding any move other than on demand) and the
moves decided in the launches before the optimizer's first (fused AdamW) launch. Replays the native
policy core launch by launch as bench/decision_repeats.py does (the trace's memory events between launches).

    python3 bench/results/window_reach/replay_moves.py > bench/results/window_reach/replay_moves.txt
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import decision_repeats  # noqa: E402
from deepum.config import DeepUMConfig  # noqa: E402
from deepum.offline.trace_io import read_trace  # noqa: E402

TRACE = ROOT / "bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz"
CAPACITY = 6138363904
SETTINGS = {"defaults": {}, "prefetch_batch 8": {"prefetch_batch": 8}, "lookahead 96": {"lookahead": 96},
            "recall 2, lookahead 96": {"recall_iterations": 2, "lookahead": 96},
            "recall 2, lookahead 256": {"recall_iterations": 2, "lookahead": 256},
            "recall 2, lookahead 256, prefetch_batch 32": {"recall_iterations": 2, "lookahead": 256, "prefetch_batch": 32}}
STEADY = range(4, 7)
BEFORE_OPTIMIZER = [(400, 100), (100, 32), (32, 0)]


def launch_moves(trace, config: DeepUMConfig) -> list[Counter]:
    """Each launch's moves by kind (blocks)."""
    plans, _, _ = decision_repeats.launch_plans(trace, CAPACITY, config)
    return [Counter(move for move, _ in plan) for _, _, plan in plans]


def summed(moves: list[Counter], launches) -> dict:
    return dict(sorted(sum((moves[k] for k in launches), Counter()).items()))


def main() -> None:
    trace = read_trace(TRACE)
    names = [trace.kernel_names[i] for i in trace.kernel_name_idx]
    firsts = trace.iteration_first_kernel.tolist() + [trace.num_kernels]
    for name, overrides in SETTINGS.items():
        moves = launch_moves(trace, DeepUMConfig(**overrides))
        print(f"== {name}")
        for it in STEADY:
            first, end = firsts[it], firsts[it + 1]
            optimizer = next(k for k in range(first, end) if "adam" in names[k].lower())
            hand_overs = sum(1 for k in range(first, end) if any(m != "demand" for m in moves[k]))
            before = "; ".join(f"-{far}..-{near}: {summed(moves, range(optimizer - far, optimizer - near))}"
                               for far, near in BEFORE_OPTIMIZER)
            print(f"iteration {it}: {summed(moves, range(first, end))}, hand-overs {hand_overs}; "
                  f"before the optimizer's first launch {before}")


if __name__ == "__main__":
    main()
