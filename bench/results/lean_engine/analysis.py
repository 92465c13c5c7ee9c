"""The figures of this folder's README from its records: call B's step against the hook's added spin
(least squares, the machine's drift stood for two ways), and both calls' steps by the turn before them.

    python3 bench/results/lean_engine/analysis.py
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SPIN_S = {"this_tree": 0.0, "spin4": 4e-6, "spin8": 8e-6}  # added to each launch the hook sees


def pairs(call: str):
    """(tree, deepum record, the none record beside it) of every pair of a call."""
    for deepum_path in sorted((HERE / call).glob("gpt2_*/gpt2_deepum_c*.json")):
        none_path = deepum_path.with_name(deepum_path.name.replace("deepum_c6138363904", "none_full"))
        yield (deepum_path.parent.name.removeprefix("gpt2_"), json.loads(deepum_path.read_text()),
               json.loads(none_path.read_text()))


def spin_fit() -> None:
    rows = []
    for tree, deepum, none in pairs("call_b"):
        launches = deepum["stats"]["launches"] / deepum["steps"]
        rows.append((SPIN_S[tree] * launches, deepum["hook_s_per_step"], deepum["step_s_median"], none["step_s_median"]))
    spin, hook, step, none = (np.array(column) * 1e3 for column in zip(*rows))
    for name, drift in (("the none run beside it", none), ("the hook's other parts", hook - spin)):
        a, _, _ = np.linalg.lstsq(np.c_[spin, drift, np.ones_like(spin)], step, rcond=None)[0]
        print(f"step per ms of spin, the drift stood for by {name}: {a:.2f} ms")


def turn_order() -> None:
    """Even steps: none goes first (after its own step), deepum after none; odd steps the other way."""
    none_ratios, deepum_ratios = [], []
    for call in ("call_a", "call_b"):
        for _, deepum, none in pairs(call):
            first = max(deepum["warmup"], none["warmup"])

            def median(record, parity):
                steps = record["step_s"]
                return statistics.median(steps[i] for i in range(first, len(steps)) if i % 2 == parity)

            none_ratios.append(median(none, 1) / median(none, 0))
            deepum_ratios.append(median(deepum, 0) / median(deepum, 1))
    for who, ratios in (("none after deepum", none_ratios), ("deepum after none", deepum_ratios)):
        print(f"{who} / after its own step: median {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} pairs)")


if __name__ == "__main__":
    spin_fit()
    turn_order()
