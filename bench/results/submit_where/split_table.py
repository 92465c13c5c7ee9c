"""Prints the hand-over's finer split (bench/probes/submit_where.patch) from this folder's records:
per run, µs a hand-over of each part, the thread's CPU time against the wall clock inside the
hand-over and its context switches, and the whole hook's CPU time against its wall clock.

    python3 bench/results/submit_where/split_table.py bench/results/submit_where/call_a
"""
import glob
import json
import sys
from pathlib import Path

PARTS = [("order", "submit_order_ns"), ("sort", "submit_sort_ns"), ("lock wait", "submit_lock_wait_ns"),
         ("lookups", "submit_lookup_ns"), ("after", "submit_after_ns"), ("hand", "submit_hand_ns"),
         ("worker lock", "hand_worker_wait_ns"), ("map lock", "hand_memory_wait_ns"),
         ("parts", "hand_parts_ns"), ("pools", "hand_pools_ns"), ("wall", "submit_wall_ns"),
         ("CPU", "submit_cpu_ns")]


def rows(folder: Path):
    for path in sorted(glob.glob(str(folder / "*" / "*_deepum_*.json"))):
        record = json.loads(Path(path).read_text())
        stats = record["stats"]
        handovers = stats["submits"]
        yield ([Path(path).parent.name, Path(path).stem.split("_")[-1], f"{record['step_s_median']:.4f}",
                f"{record['hook_split_s_per_step']['submit'] * 1e3:.1f}", f"{stats['submit_commands'] / handovers:.1f}"]
               + [f"{stats[key] / handovers / 1e3:.1f}" for _, key in PARTS]
               + [f"{stats['submit_vol_switches']}/{stats['submit_invol_switches']}",
                  f"{stats['hook_cpu_ns'] / stats['hook_ns']:.2f}"])


def main() -> None:
    header = (["tree", "run", "step s", "hand-over ms a step", "commands a hand-over"]
              + [f"{name} µs" for name, _ in PARTS] + ["switches vol/invol", "hook CPU / wall"])
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for row in rows(Path(sys.argv[1])):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
