"""Where step 12 of the committed timelines waited, by tenth of its GPU window, how long the copies in
and out took, and the worker's calls by tenth: the figures docs/results.md quotes for call F (and
for bench/results/validation_fb99d46/call_b).

    python3 bench/results/repeat_plans_gpu/analysis.py [TIMELINE.npz ...]

Defaults to call F's two timelines (the defaults, and repeat_plans_percent 95 with both fixes).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from deepum.runtime.timeline import CALL, CALL_OPS, D2H, H2D, StepTimeline  # noqa: E402

TENTHS = 10
SLOW_COPY_NS = 200_000
"""A copy in slower than this ran beside other traffic on the link (a 2 MiB block alone takes ~42 µs)."""


def waits_by_tenth(timeline: StepTimeline) -> dict[str, list[float]]:
    """Idle ms in each tenth of the GPU window: before the next kernel's launch call returned, and after
    it by what the kernel had been made to wait for."""
    gaps, (first, last) = timeline._gaps()
    rows: dict[str, list[float]] = defaultdict(lambda: [0.0] * TENTHS)
    for (start, end, cause, _), cut in zip(gaps, timeline._cut_at_launch(gaps)):
        tenth = min(TENTHS - 1, int(TENTHS * (start - first) / (last - first)))
        launched = start if cut is None else cut
        rows["idle before the next launch"][tenth] += (launched - start) / 1e6
        rows[f"{cause} after launch"][tenth] += (end - launched) / 1e6
    return rows


def copies(timeline: StepTimeline, kind: int) -> dict:
    """A direction's copies: median µs a copy, ms in all, and the copies slower than SLOW_COPY_NS (how
    many, their ms, and where the median of them started, as a fraction of the GPU window)."""
    chosen = timeline.kind == kind
    starts, took = timeline.start[chosen], timeline.end[chosen] - timeline.start[chosen]
    kernels, kernel_ends = timeline.spans(0)
    first, last = kernels.min(), kernel_ends.max()
    slow = took > SLOW_COPY_NS
    return {"copies": int(chosen.sum()), "median_us": float(np.median(took)) / 1e3, "ms": took.sum() / 1e6,
            "slow": int(slow.sum()), "slow_ms": took[slow].sum() / 1e6,
            "slow_at": float(np.median((starts[slow] - first) / (last - first))) if slow.any() else None}


def calls_by_tenth(timeline: StepTimeline) -> dict[str, tuple[list[float], list[float]]]:
    """Per op, the worker's calls that began in each tenth of the GPU window: their ms (summed over the
    threads that made them) and their MiB."""
    kernels, kernel_ends = timeline.spans(0)
    first, last = kernels.min(), kernel_ends.max()
    chosen = timeline.kind == CALL
    tenth = np.clip((TENTHS * (timeline.start[chosen] - first) // (last - first)).astype(int), 0, TENTHS - 1)
    took = (timeline.end[chosen] - timeline.start[chosen]) / 1e6
    mib = timeline.value[chosen] / 2**20
    ops = timeline.detail[chosen]
    return {CALL_OPS[op]: (np.bincount(tenth[ops == op], took[ops == op], TENTHS).tolist(),
                           np.bincount(tenth[ops == op], mib[ops == op], TENTHS).tolist())
            for op in np.unique(ops)}


def main(paths: list[str]) -> None:
    paths = paths or [str(HERE / "call_f" / f"{name}_t12.timeline.npz") for name in ("defaults", "repeat95")]
    for path in paths:
        timeline = StepTimeline.load(path)
        print(path)
        for name, row in waits_by_tenth(timeline).items():
            print(f"  {name:32s} " + " ".join(f"{ms:5.1f}" for ms in row) + f"   all {sum(row):6.1f} ms")
        for kind, name in ((H2D, "in"), (D2H, "out")):
            c = copies(timeline, kind)
            slow_at = "–" if c["slow_at"] is None else f"{c['slow_at']:.2f}"
            print(f"  copies {name}: {c['copies']}, median {c['median_us']:.1f} µs, {c['ms']:.1f} ms in all; "
                  f"over {SLOW_COPY_NS // 1000} µs: {c['slow']}, {c['slow_ms']:.1f} ms, from {slow_at} of the window")
        for op, (took, mib) in calls_by_tenth(timeline).items():
            print(f"  {op + ' calls, ms':32s} " + " ".join(f"{ms:5.0f}" for ms in took) + f"   all {sum(took):6.0f} ms")
            print(f"  {op + ' calls, MiB':32s} " + " ".join(f"{m:5.0f}" for m in mib) + f"   all {sum(mib):6.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
