"""Copy rates between pinned host memory and the GPU: host to GPU alone, GPU to host alone, and both
at once on two streams (each direction's rate while the other runs, from its own stream's events).
The pinned-copy bound of bench/bounds.py reads the rates of both at once. No managed memory is used.
Writes one JSON record (rates in bytes per second, times in seconds).

    python3 bench/pinned_copy_probe.py -o bench/results/gpu_check/pinned_copy_probe.json
"""
from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

ROUNDS = 3
"""Timed rounds per case; the fastest is kept (the first also warms the copy path)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="bytes copied each way, in GiB")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    import torch

    size = int(args.gib * 2**30)
    host_in = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    host_out = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    gpu_in = torch.empty(size, dtype=torch.uint8, device="cuda")
    gpu_out = torch.empty(size, dtype=torch.uint8, device="cuda")
    streams = {"h2d": torch.cuda.Stream(), "d2h": torch.cuda.Stream()}
    copies = {"h2d": lambda: gpu_in.copy_(host_in, non_blocking=True),
              "d2h": lambda: host_out.copy_(gpu_out, non_blocking=True)}

    def seconds(directions: tuple[str, ...]) -> dict[str, float]:
        """Each direction's copy time (events on its own stream), all issued together."""
        torch.cuda.synchronize()
        events = {}
        for direction in directions:
            with torch.cuda.stream(streams[direction]):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                copies[direction]()
                end.record()
                events[direction] = (start, end)
        torch.cuda.synchronize()
        return {direction: start.elapsed_time(end) / 1e3 for direction, (start, end) in events.items()}

    def fastest(directions: tuple[str, ...]) -> dict[str, float]:
        rounds = [seconds(directions) for _ in range(ROUNDS)]
        return {direction: min(r[direction] for r in rounds) for direction in directions}

    alone = {**fastest(("h2d",)), **fastest(("d2h",))}
    both = fastest(("h2d", "d2h"))
    record = {
        "device": torch.cuda.get_device_name(), "bytes": size, "torch_version": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "alone_h2d_bytes_per_s": size / alone["h2d"], "alone_d2h_bytes_per_s": size / alone["d2h"],
        "both_h2d_bytes_per_s": size / both["h2d"], "both_d2h_bytes_per_s": size / both["d2h"],
        "alone_s": alone, "both_s": both,
        "overlap": max(both.values()) < 0.9 * (alone["h2d"] + alone["d2h"]),
    }
    print(json.dumps(record, indent=1))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
