"""What does bringing a dead block back to the GPU cost? Times, over one managed buffer, the ways a
block whose contents no longer matter can reach the GPU again:

- copy: its pages are on the host (evicted with a copy); prefetch to the GPU copies them back;
- discarded: it was discarded to the host (invalidation); prefetch to the GPU;
- populate: its pages are on the host; discard-and-prefetch to the GPU (no copy: fresh pages);
- discarded_populate: discarded to the host, then discard-and-prefetch to the GPU;
- discarded_write: discarded to the host, then a GPU write (cudaMemsetAsync) faults it in;
- drop: resident on the GPU, discarded to the host (the time of the discard itself);
- with --uvm-calls, the same through the unified-memory driver's own calls (bench/uvm_ioctls.py):
  uvm_drop (UVM_DISCARD, then UVM_MIGRATE to the host), uvm_discarded (dropped so, then prefetched to
  the GPU), uvm_populate (on the host; UVM_DISCARD, then UVM_MIGRATE to the GPU) and
  uvm_discarded_populate (dropped so, then populated so).

Writes one JSON record (rates in GB/s of buffer, times in s).

    python3 bench/populate_probe.py -o bench/results/gpu_check/populate_probe.json

Safety: the buffer (--gib GiB of managed memory) must stay under a quarter of the free GPU memory.
"""
from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="size of the managed buffer in GiB")
    parser.add_argument("--chunk-mib", type=int, default=64, help="bytes per migration call, in MiB")
    parser.add_argument("--uvm-calls", action="store_true", help="also the unified-memory driver's own calls")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    import torch
    from cuda.bindings import runtime as rt
    from um_calls import check, locations

    chunk = args.chunk_mib << 20
    size = int(args.gib * 2**30) // chunk * chunk
    free, _total = torch.cuda.mem_get_info()
    if size > free // 4:
        raise SystemExit(f"{args.gib} GiB of managed memory is more than a quarter of the free "
                         f"{free / 2**30:.1f} GiB: use a smaller --gib")
    buffer = check(rt.cudaMallocManaged(size, rt.cudaMemAttachGlobal))
    stream = check(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))

    gpu, host = locations(rt)
    starts = range(buffer, buffer + size, chunk)

    def prefetch(to):
        for start in starts:
            check(rt.cudaMemPrefetchAsync(start, chunk, to, 0, stream))

    def discard(to):
        for start in starts:
            check(rt.cudaMemDiscardAndPrefetchBatchAsync([start], [chunk], 1, [to], [0], 1, 0, stream))

    uvm = None
    if args.uvm_calls:
        from cuda.bindings import driver
        from uvm_ioctls import UvmFile

        uuid = check(driver.cuDeviceGetUuid(check(driver.cuDeviceGet(0))))
        uvm = UvmFile(bytes(uuid.bytes))

    def uvm_discard(to_gpu: bool):
        """discard(), through the unified-memory driver: UVM_DISCARD, then UVM_MIGRATE."""
        for start in starts:
            if not (uvm.discard(start, chunk) and uvm.migrate(start, chunk, to_gpu)):
                raise RuntimeError(f"the unified-memory driver refused a discard to the {'GPU' if to_gpu else 'host'}")

    def write():
        for start in starts:
            check(rt.cudaMemsetAsync(start, 1, chunk, stream))

    def sync():
        check(rt.cudaStreamSynchronize(stream))

    def timed(prepare, work) -> float:
        write()  # real data on the GPU, then the case's starting point
        sync()
        prepare()
        sync()
        start = time.perf_counter()
        work()
        sync()
        return time.perf_counter() - start

    cases = {
        "copy": (lambda: prefetch(host), lambda: prefetch(gpu)),
        "discarded": (lambda: discard(host), lambda: prefetch(gpu)),
        "populate": (lambda: prefetch(host), lambda: discard(gpu)),
        "discarded_populate": (lambda: discard(host), lambda: discard(gpu)),
        "discarded_write": (lambda: discard(host), write),
        "drop": (lambda: None, lambda: discard(host)),
    }
    if uvm:
        cases.update({
            "uvm_drop": (lambda: None, lambda: uvm_discard(False)),
            "uvm_discarded": (lambda: uvm_discard(False), lambda: prefetch(gpu)),
            "uvm_populate": (lambda: prefetch(host), lambda: uvm_discard(True)),
            "uvm_discarded_populate": (lambda: uvm_discard(False), lambda: uvm_discard(True)),
        })
    rows = {}
    for name, (prepare, work) in cases.items():
        seconds = min(timed(prepare, work) for _ in range(3))
        rows[name] = {"s": seconds, "GBps": size / seconds / 1e9}
        print(name, {k: round(v, 4) for k, v in rows[name].items()}, flush=True)
    record = {"device": torch.cuda.get_device_name(), "buffer_bytes": size, "call_bytes": chunk,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cases": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1))
    check(rt.cudaFree(buffer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
