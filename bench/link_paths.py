"""Which unified-memory path across the host link is fastest? Builds bench/probes/link_paths.cu with nvcc
and runs its probes, each in its own process, writing one JSON record (rates in GB/s, times in s):

- evictions (GPU -> host) from 1, 2, 4 and 8 native threads on disjoint ranges, in calls of 2 MiB and
  64 MiB, the first time (host backing allocated then) and again: does the rate scale with threads
  (CPU page-table work) and does populated host backing help;
- the same evictions issued from CPUs of the GPU's NUMA node and, where the host has another, of a far one;
- an optimizer-like update (each element read and written once) migrated in and out, against the
  kernel working over the link on host-preferred memory (remote mapping);
- a read-only pass migrated in and evicted, against a read-mostly duplicate dropped without a copy;
- with --uvm-calls, the evictions again as the unified-memory driver's own UVM_MIGRATE
  (bench/probes/uvm_ioctl.hpp: no lock of the CUDA driver), and half the memory going out while the
  other half comes in, each alone and both at once from two threads, through cudaMemPrefetchAsync and
  through UVM_MIGRATE: does either direction's rate, or their overlap, owe to the CUDA driver?

    python3 bench/link_paths.py --gib 2 -o bench/results/link_paths/link_paths.json

Safety: each probe allocates --gib GiB of managed memory at most, refused above a quarter of the free
GPU memory; nothing goes past GPU memory.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

THREADS = (1, 2, 4, 8)
CHUNKS_MIB = (2, 64)


def build(output: Path, source: str = "link_paths.cu", libraries: tuple[str, ...] = ()) -> Path:
    """Compiles bench/probes/`source` into `output`, linked with `libraries` (names without "lib")."""
    from deepum.runtime.native_build import find_nvcc

    subprocess.run([str(find_nvcc()), "-std=c++17", "-O2", "-arch=native", "-o", str(output),
                    str(HERE / "probes" / source), *(f"-l{name}" for name in libraries)], check=True)
    return output


def gpu_pci_bus_id() -> str:
    """GPU 0's PCI address as sysfs names it (domain of 4 hex digits), from nvidia-smi; "" if unknown."""
    try:
        text = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    domain, _, rest = text.partition(":")
    return f"{domain[-4:]}:{rest}".lower()


def numa_cpus(gpu_pci_bus_id: str) -> tuple[set[int] | None, set[int] | None]:
    """CPUs of the GPU's NUMA node and of another node (None where the host does not say)."""
    def cpus(node: int) -> set[int]:
        text = Path(f"/sys/devices/system/node/node{node}/cpulist").read_text().strip()
        out = set()
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
        return out

    try:
        node = int(Path(f"/sys/bus/pci/devices/{gpu_pci_bus_id}/numa_node").read_text())
        nodes = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    except (OSError, ValueError):
        return None, None
    if node < 0:
        return None, None
    far = next((n for n in nodes if n != node), None)
    return cpus(node), (cpus(far) if far is not None else None)


def run_probe(binary: Path, args: list[str], cpus: set[int] | None = None) -> str:
    """Runs a probe binary (on `cpus` if given); its standard output."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=True,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None).stdout


def probe(binary: Path, args: list[str], cpus: set[int] | None = None) -> dict:
    """A probe's one JSON line, parsed."""
    return json.loads(run_probe(binary, args, cpus))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="managed memory per probe, GiB")
    parser.add_argument("--uvm-calls", action="store_true", help="also the unified-memory driver's own calls")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    import torch

    size = int(args.gib * 2**30) // (64 << 20) * (64 << 20)
    refuse_past_a_quarter_of_free(parser, size >> 20, torch, option=f"--gib {args.gib}")
    near, far = numa_cpus(gpu_pci_bus_id())
    records = []
    with tempfile.TemporaryDirectory() as folder:
        binary = build(Path(folder) / "link_paths", libraries=("cuda",))
        for chunk in CHUNKS_MIB:
            for threads in THREADS:
                records.append(probe(binary, ["evict-threads", str(size), str(threads), str(chunk << 20)]))
                print(json.dumps(records[-1]), flush=True)
        for name, cpus in (("near", near), ("far", far)):
            if cpus:
                record = probe(binary, ["evict-threads", str(size), "4", str(64 << 20)], cpus)
                records.append({**record, "cpus": name})
                print(json.dumps(records[-1]), flush=True)
        for mode in ("remote", "read-mostly"):
            records.append(probe(binary, [mode, str(size)]))
            print(json.dumps(records[-1]), flush=True)
        if args.uvm_calls:
            for chunk in CHUNKS_MIB:
                for threads in THREADS:
                    records.append(probe(binary, ["evict-threads-uvm", str(size), str(threads), str(chunk << 20)]))
                    print(json.dumps(records[-1]), flush=True)
                records.append(probe(binary, ["in-and-out", str(size), str(chunk << 20)]))
                print(json.dumps(records[-1]), flush=True)
    write_record(args.output, torch, numa_node_cpus={"near": sorted(near) if near else None,
                                                     "far": sorted(far) if far else None}, records=records)
    return 0


def refuse_past_a_quarter_of_free(parser: argparse.ArgumentParser, mib: int, torch, option: str | None = None) -> None:
    """A usage error (exit status 2) when `mib` MiB of managed memory is more than a quarter of the
    free GPU memory: a probe never goes near the GPU's memory. `option` names the request in the
    message (default "--mib MIB")."""
    free, _total = torch.cuda.mem_get_info()
    if mib << 20 > free // 4:
        parser.error(f"{option or f'--mib {mib}'} is more than a quarter of the free {free >> 20} MiB")


def write_record(output: Path, torch, **fields) -> None:
    """Writes a probe's JSON record: the command, the device, the date and the torch version, then `fields`."""
    result = {
        "command": " ".join(["python3", *sys.argv]),
        "device": torch.cuda.get_device_name(0),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch_version": torch.__version__,
        **fields,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
