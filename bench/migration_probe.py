"""Do unified-memory migrations in opposite directions overlap? Times host->GPU prefetches alone,
GPU->host evictions alone, and both issued together on two streams from two threads, over two
managed buffers, in calls of several sizes. Writes one JSON record (rates in GB/s, times in s).

    python3 bench/migration_probe.py -o bench/results/gpu_check/migration_probe.json

Safety: the two buffers (2 x --gib GiB of managed memory) must stay under a quarter of the free GPU
memory, far below the fuse's half.
"""
from __future__ import annotations

import argparse
import datetime
import json
import threading
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of each managed buffer in GiB")
    parser.add_argument("--chunks-mib", default="2,16,64,2048", help="migration call sizes to try, in MiB")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    import torch
    from cuda.bindings import runtime as rt
    from um_calls import check, locations

    size = int(args.gib * 2**30) // (2 << 20) * (2 << 20)
    free, _total = torch.cuda.mem_get_info()
    if 2 * size > free // 4:
        raise SystemExit(f"2 x {args.gib} GiB of managed memory is more than a quarter of the free "
                         f"{free / 2**30:.1f} GiB: use a smaller --gib")
    inbound = check(rt.cudaMallocManaged(size, rt.cudaMemAttachGlobal))
    outbound = check(rt.cudaMallocManaged(size, rt.cudaMemAttachGlobal))
    streams = [check(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking)) for _ in range(2)]

    gpu, host = locations(rt)

    def move(pointer, to, chunk, stream):
        for offset in range(0, size, chunk):
            check(rt.cudaMemPrefetchAsync(pointer + offset, min(chunk, size - offset), to, 0, stream))

    def place():  # inbound on the host, outbound on the GPU
        move(inbound, host, size, streams[0])
        move(outbound, gpu, size, streams[0])
        check(rt.cudaDeviceSynchronize())

    def timed(work) -> float:
        place()
        start = time.perf_counter()
        work()
        check(rt.cudaDeviceSynchronize())
        return time.perf_counter() - start

    for _ in range(2):  # populate both buffers on both sides once
        move(inbound, gpu, size, streams[0])
        move(outbound, gpu, size, streams[0])
        place()
    rows = {}
    for chunk_mib in (int(c) for c in args.chunks_mib.split(",")):
        chunk = chunk_mib << 20
        for _ in range(2):  # the second round is kept
            t_in = timed(lambda: move(inbound, gpu, chunk, streams[0]))
            t_out = timed(lambda: move(outbound, host, chunk, streams[1]))

            def both():
                thread = threading.Thread(target=move, args=(outbound, host, chunk, streams[1]))
                thread.start()
                move(inbound, gpu, chunk, streams[0])
                thread.join()

            t_both = timed(both)
        rows[str(chunk_mib)] = {"in_GBps": size / t_in / 1e9, "out_GBps": size / t_out / 1e9,
                                "in_s": t_in, "out_s": t_out, "both_s": t_both,
                                "both_over_in_plus_out": t_both / (t_in + t_out)}
        print(chunk_mib, "MiB calls:", {k: round(v, 3) for k, v in rows[str(chunk_mib)].items()}, flush=True)
    record = {"device": torch.cuda.get_device_name(), "buffer_bytes": size,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "by_call_mib": rows,
              "overlap": all(row["both_s"] < 0.9 * (row["in_s"] + row["out_s"]) for row in rows.values())}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
