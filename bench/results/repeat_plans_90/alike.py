"""How alike a recorded trace's iterations launch: per iteration, its launches, and the share of its
places at which it launched the same kernel (execution ID) on the same blocks as the iteration 1, 2, 3,
4 and 6 before it ("len" where the two differ in launches). Plans are not in a trace, so this is the
launches' part of what repeated plans compare.

    python3 bench/results/repeat_plans_90/alike.py TRACE.npz
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from deepum.offline.trace_io import read_trace  # noqa: E402

BACKS = (1, 2, 3, 4, 6)


def iterations(path: str) -> list[list[tuple]]:
    """Each iteration's launches as (execution ID, sorted blocks)."""
    trace = read_trace(path)
    launches: dict[int, list[tuple]] = {}
    for k, (exec_id, iteration) in enumerate(zip(trace.kernel_exec_id.tolist(), trace.kernel_iteration.tolist())):
        blocks = trace.access_block[trace.access_offsets[k]:trace.access_offsets[k + 1]]
        launches.setdefault(iteration, []).append((exec_id, tuple(sorted(set(blocks.tolist())))))
    return [launches[i] for i in sorted(launches)]


def main() -> None:
    runs = iterations(sys.argv[1])
    print("launches", " ".join(str(len(r)) for r in runs))
    for back in BACKS:
        shares = []
        for i, now in enumerate(runs):
            before = runs[i - back] if i >= back else None
            shares.append("-" if before is None else "len" if len(before) != len(now) else
                          f"{100 * sum(a == b for a, b in zip(now, before)) / len(now):.0f}")
        print(f"back {back}: {' '.join(shares)}")


if __name__ == "__main__":
    main()
