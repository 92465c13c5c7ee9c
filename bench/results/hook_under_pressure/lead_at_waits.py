"""On a step timeline (.timeline.npz, deepum.runtime.timeline.StepTimeline), the kernels made to wait
for migrations: how far ahead the launching thread was when each was launched, how long the GPU idled
before it, and how soon after the last host-to-GPU copy it started; and for the worker's prefetch and
eviction calls, how long after each call the next copy of its direction began. Times in ms or µs as
printed.

Usage: python3 lead_at_waits.py ../step_timeline/call_b/gpt2_deepum.timeline.npz
"""
from __future__ import annotations

import sys

import numpy as np

from deepum.runtime.timeline import (CALL, CALL_OPS, D2H, H2D, KERNEL, LAUNCH, WAITED_FOR_MIGRATIONS,
                                     StepTimeline)


def percentiles(values: np.ndarray, *ps: float) -> tuple[float, ...]:
    return tuple(np.percentile(values, ps))


def main(path: str) -> None:
    timeline = StepTimeline.load(path)
    kernels = np.flatnonzero(timeline.kind == KERNEL)
    kernels = kernels[np.argsort(timeline.start[kernels], kind="stable")]
    k_start, k_end, k_id = timeline.start[kernels], timeline.end[kernels], timeline.value[kernels]
    launches = timeline.kind == LAUNCH
    launched_at = dict(zip(timeline.value[launches].tolist(), timeline.start[launches].tolist()))
    waits = dict(zip(timeline.value[launches].tolist(), timeline.detail[launches].tolist()))

    busy_until = np.maximum.accumulate(np.r_[k_start[:1], k_end[:-1]])
    idle_before = k_start - busy_until
    lead = np.array([s - launched_at.get(int(c), s) for s, c in zip(k_start, k_id)])
    waited = np.array([waits.get(int(c), 0) & WAITED_FOR_MIGRATIONS for c in k_id], dtype=bool)
    idle_s = idle_before[waited].clip(0).sum() / 1e9
    print(f"kernels {kernels.size} waited {waited.sum()} idle before them {idle_s:.3f} s")
    print("launching thread ahead at waited kernels, ms: median %.2f p10 %.2f p90 %.2f"
          % percentiles(lead[waited] / 1e6, 50, 10, 90))
    print("idle before waited kernels, ms: median %.3f p90 %.3f" % percentiles(idle_before[waited] / 1e6, 50, 90))
    _, copy_end = timeline.spans(H2D)
    copy_end = np.sort(copy_end)
    last_copy = np.searchsorted(copy_end, k_start[waited], side="right") - 1
    after_copy = (k_start[waited] - copy_end[last_copy]) / 1e3
    print("kernel start after the last copy in, us: median %.1f p90 %.1f" % percentiles(after_copy, 50, 90))

    for op, direction in (("prefetch", H2D), ("evict", D2H)):
        calls = (timeline.kind == CALL) & (timeline.detail == CALL_OPS.index(op))
        call_start, call_end = timeline.start[calls], timeline.end[calls]
        copy_start, _ = timeline.spans(direction)
        following = np.searchsorted(copy_start, call_start)
        found = following < copy_start.size
        delay = (copy_start[following[found]] - call_start[found]) / 1e3
        print(f"{op} calls {call_start.size} lasting us median %.0f; call to next copy us median %.0f p90 %.0f"
              % (np.median((call_end - call_start) / 1e3), *percentiles(delay, 50, 90)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
