"""Can a read-mostly duplicate be evicted without a copy? Builds bench/probes/duplicates.cu and runs
its cases (plain migration; a read-mostly duplicate dropped by a prefetch to the host, or by withdrawing
the advice; a duplicate written by a kernel) at each call size, each run its own process; writes one
JSON record (times in seconds, GPU memory in use in bytes, contents checked in every case).

    python3 bench/duplicates.py --mib 2048 -o bench/results/duplicates/duplicates.json

Safety: the buffer is refused above a quarter of the free GPU memory; nothing goes past GPU memory.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import link_paths  # noqa: E402

CHUNKS_MIB = (2, 64)
CASES = ("migrate", "dup_prefetch", "dup_unset", "written")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=2048, help="managed buffer moved in each case, MiB")
    parser.add_argument("--repeats", type=int, default=2, help="runs at each call size")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated cases to run ('written' takes minutes: every write faults)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.mib < 64 or args.mib % 64 or args.repeats < 1:
        parser.error("--mib must be a multiple of 64, at least 64; --repeats at least 1")
    cases = args.cases.split(",")
    if not cases or any(c not in CASES for c in cases):
        parser.error(f"--cases takes names among {', '.join(CASES)}")

    import torch

    link_paths.refuse_past_a_quarter_of_free(parser, args.mib, torch)
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        binary = link_paths.build(Path(folder) / "duplicates", "duplicates.cu")
        for repeat in range(args.repeats):
            for chunk in CHUNKS_MIB:
                done = link_paths.run_probe(binary, [str(args.mib << 20), str(chunk << 20), *cases])
                for line in done.splitlines():
                    runs.append({"repeat": repeat, **json.loads(line)})
                    print(json.dumps(runs[-1]), flush=True)
    link_paths.write_record(args.output, torch, runs=runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
