"""Does migrating managed memory on one thread slow kernel launches on another? Builds
bench/probes/launch_contention.cu and runs it in each migration mode, the modes alternated --repeats
times, each run its own process; writes one JSON record (times in microseconds).

    python3 bench/launch_contention.py --mib 1024 --launches 20000 -o bench/results/step_timeline/launch_contention.json

Modes: none (launches alone), calls (a second thread evicts and brings back 2 MiB blocks, one
cudaMemPrefetchAsync each), ordered (the same, each group of moves ordered after an event of the
launching stream, as the engine orders its worker's moves), batch (16 blocks per
cudaMemPrefetchBatchAsync), context and ordered_context (calls and ordered, the mover in a CUDA
context of its own on the same GPU), words_context (ordered_context, ordered by a pinned word the
launching stream writes instead of an event), green (calls, the mover in a green context of 8 SMs),
mapped_blocks and mapped_whole (no mover: the buffer mapped from the host beforehand, one advice per
2 MiB block or one for the whole buffer), ioctl (calls, each block moved by a synchronous UVM_MIGRATE
on the unified-memory driver's file the CUDA driver opened: no CUDA call on the mover's thread) and
ordered_ioctl (the same, each group after the CPU sees a pinned word the launching stream writes).
--kernel-us makes each kernel spin, so that the GPU runs behind the launches and the ordering waits
are real. Safety: the buffer is refused above a quarter of the free GPU memory; nothing goes past GPU
memory.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import link_paths  # noqa: E402

MODES = ("none", "calls", "ordered", "batch", "context", "ordered_context", "words_context", "green", "mapped_blocks",
         "mapped_whole", "ioctl", "ordered_ioctl")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="managed buffer the mover cycles through, MiB")
    parser.add_argument("--launches", type=int, default=20000, help="kernel launches per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode, alternated")
    parser.add_argument("--kernel-us", type=int, default=0, help="each kernel spins about this long, microseconds")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes to run (default all)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.mib < 32 or args.launches < 1 or args.repeats < 1 or not 0 <= args.kernel_us <= 10_000:
        parser.error("--mib must be at least 32, --launches and --repeats at least 1, --kernel-us in 0..10000")
    modes = args.modes.split(",")
    if not modes or any(mode not in MODES for mode in modes):
        parser.error(f"--modes must name some of {', '.join(MODES)}, got {args.modes!r}")

    import torch

    link_paths.refuse_past_a_quarter_of_free(parser, args.mib, torch)
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        binary = link_paths.build(Path(folder) / "launch_contention", "launch_contention.cu", libraries=("cuda",))
        for repeat in range(args.repeats):
            for mode in modes:
                arguments = [mode, str(args.mib << 20), str(args.launches), str(args.kernel_us * 1000)]
                runs.append({"repeat": repeat, **link_paths.probe(binary, arguments)})
                print(json.dumps(runs[-1]), flush=True)
    summary = {mode: {key: statistics.median(r[key] for r in runs if r["migration"] == mode)
                      for key in ("launch_call_us_mean", "launch_call_us_median", "launch_call_us_p99",
                                  "launch_thread_us", "migrated_gb", "migration_call_us_mean",
                                  "order_wait_call_us_mean", "group_sync_us_mean")}
               for mode in modes}
    link_paths.write_record(args.output, torch, medians_by_mode=summary, runs=runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
