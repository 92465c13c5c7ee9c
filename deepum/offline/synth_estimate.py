"""How large a synthetic trace will be, known before it is built: its kernels, access rows and the memory
building it takes, so that sizes the machine cannot hold are refused at once and a progress bar knows
its total.

The estimate counts what a generator would write (synth_stream.counting) at sizes small enough to
count quickly and extrapolates: a transformer grows linearly in its layers (counted at 1 and 2), every
generator in its iterations (counted at 1 and 2: the first iteration allocates the optimizer state,
the later ones repeat the second). Before counting, a lower bound from the parameter bytes alone
refuses sizes so large that even counting them would take long.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import resource

from ..units import counted, format_bytes
from .synth import GENERATORS
from .synth_cnn import _ResNet
from .synth_moe import _MoEGPT
from .synth_stream import counting
from .synth_transformer import _GPT
from .synth_unet import _UNet
from .trace_format import BLOCK_BYTES

# Bytes the writer holds at its peak (growing columns, the final arrays, validation and the compressed
# write) per access row, per kernel and per allocator event.
BYTES_PER_ACCESS = 32
BYTES_PER_KERNEL = 1200
BYTES_PER_MEM_EVENT = 250
# Memory the process holds besides the trace (interpreter, numpy, numba).
BASE_BYTES = 512 * 2**20

# The size a generator's trace grows linearly in, counted at 1 and 2 and extrapolated.
_LINEAR = {"transformer": "layers", "bucketed": "layers", "moe": "layers"}


def _parameters(model: str, sizes: dict) -> int:
    if model in ("transformer", "bucketed"):
        return _GPT.parameter_count(sizes["layers"], sizes["hidden"], sizes["seq"], sizes["vocab"])
    if model == "cnn":
        return _ResNet.parameter_count(sizes["depth"], sizes["width"])
    if model == "unet":
        return _UNet.parameter_count(sizes["levels"], sizes["width"], sizes["classes"])
    if model == "moe":
        return _MoEGPT.parameter_count(sizes["layers"], sizes["hidden"], sizes["seq"], sizes["vocab"], sizes["experts"])
    raise ValueError(f"unknown generator {model!r}")


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Kernels, access rows (an upper bound) and allocator events of a trace, and the bytes of memory
    building and writing it takes."""

    kernels: int
    accesses: int
    mem_events: int

    @property
    def memory_bytes(self) -> int:
        return (BASE_BYTES + self.accesses * BYTES_PER_ACCESS + self.kernels * BYTES_PER_KERNEL
                + self.mem_events * BYTES_PER_MEM_EVENT)

    def describe(self) -> str:
        return (f"about {counted(self.kernels, 'kernel')} and {counted(self.accesses, 'block access', 'block accesses')}"
                f", needing about {format_bytes(self.memory_bytes)} of memory")


def available_memory() -> int | None:
    """Bytes this process may still take: the smaller of the memory the system has available and what its
    address-space limit leaves; None when neither is known."""
    limits = []
    try:
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        used = 0
        try:
            with open(f"/proc/{os.getpid()}/statm") as file:
                used = int(file.read().split()[0]) * resource.getpagesize()
        except OSError:
            pass
        limits.append(max(0, soft - used))
    return min(limits) if limits else None


def _sizes(model: str, options: dict) -> dict:
    defaults = {p.name: p.default for p in inspect.signature(GENERATORS[model]).parameters.values()}
    return {**defaults, **options}


def _count(model: str, sizes: dict):
    with counting():
        return GENERATORS[model](**sizes)


def _total(counts, iterations: int) -> tuple[int, int]:
    """(kernels, accesses) of `iterations` iterations from counts of min(iterations, 2)."""
    def total(per: dict) -> int:
        later = per.get(1, 0)
        return per[-1] + per.get(0, 0) + max(0, iterations - 2) * later + (later if iterations >= 2 else 0)

    return total(counts.kernels), total(counts.accesses)


def estimate(model: str, **options) -> Estimate:
    """The Estimate of GENERATORS[model](**options); ValueError for sizes the generator refuses."""
    sizes = _sizes(model, options)
    iterations = sizes["iterations"]
    probe = {**sizes, "iterations": min(iterations, 2)} if isinstance(iterations, int) and iterations > 0 else sizes
    linear = _LINEAR.get(model)
    value = probe.get(linear)
    if linear is None or not isinstance(value, int) or isinstance(value, bool) or value <= 2:
        counts = _count(model, probe)
        kernels, accesses = _total(counts, iterations)
        return Estimate(kernels, accesses, counts.mem_events * max(1, iterations) // max(1, probe["iterations"]))
    one, two = _count(model, {**probe, linear: 1}), _count(model, {**probe, linear: 2})
    (k1, a1), (k2, a2) = _total(one, iterations), _total(two, iterations)
    events = (one.mem_events + (value - 1) * (two.mem_events - one.mem_events)) * iterations // probe["iterations"]
    return Estimate(k1 + (value - 1) * (k2 - k1), a1 + (value - 1) * (a2 - a1), events)


def check_fits(model: str, options: dict, available: int | None = None) -> Estimate:
    """The Estimate of the trace; ValueError naming the sizes when building it cannot fit in `available`
    bytes (default: what available_memory() says)."""
    available = available_memory() if available is None else available
    sizes = _sizes(model, options)
    shown = ", ".join(f"--{name.replace('_', '-')} {value}" for name, value in options.items())
    advice = f"give smaller sizes{f' than {shown}' if shown else ''}"
    if available is not None:
        try:
            parameter_blocks = _parameters(model, sizes) * sizes["dtype_bytes"] // BLOCK_BYTES
            floor = Estimate(0, parameter_blocks * (1 + 4 * max(1, int(sizes["iterations"]))), 0)
        except (KeyError, TypeError, ValueError):
            floor = None  # sizes the generator will refuse with its own message
        if floor is not None and floor.memory_bytes > available:
            raise ValueError(f"the trace would hold more than {floor.accesses:,} block accesses, needing more than "
                             f"{format_bytes(floor.memory_bytes)} of memory, and {format_bytes(available)} is "
                             f"available; {advice}")
    result = estimate(model, **options)
    if available is not None and result.memory_bytes > available:
        raise ValueError(f"the trace would hold {result.describe()}, and {format_bytes(available)} is available; "
                         f"{advice}")
    return result
