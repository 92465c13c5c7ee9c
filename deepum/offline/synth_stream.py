"""What every synthetic generator builds on: one CUDA stream of a PyTorch training process, which
allocates through the caching-allocator model and launches kernels with their accesses, execution
IDs and durations from a roofline of an H100/H200-class GPU; the model skeleton (parameters and
their gradients) and the training loop."""
from __future__ import annotations

import contextvars
import hashlib
import typing

import numba
import numpy as np

from .caching_allocator import CachingAllocator
from .trace_format import PAGES_PER_BLOCK
from .trace_writer import TraceWriter

# Roofline of the modelled GPU.
MATMUL_FLOPS_PER_S = {2: 400e12, 4: 100e12}    # dense tensor-core GEMM/conv throughput by element bytes (bf16, tf32)
HBM_BYTES_PER_S = 2.5e12                        # memory-bound kernels: bytes read + written over this
H2D_BYTES_PER_S = 25e9                          # input copies from host memory
KERNEL_FLOOR_S = 4e-6                           # shortest kernel (launch and tail)
JITTER_SIGMA = 0.05                             # lognormal sigma of the per-launch duration jitter
_JITTER_BATCH = 4096                            # jitter factors drawn at a time

# PyTorch's multi_tensor_apply: elements per chunk, chunks per launch, tensors per launch by list depth.
_MTA_CHUNK = 65536
_MTA_BLOCKS = 320
_MTA_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}

# Set while a generator only counts what it would write (see counting()), and to a callable that hears
# of every MONITOR_EVERY launches while it writes (see monitored()).
_COUNTING: contextvars.ContextVar[bool] = contextvars.ContextVar("synth_counting", default=False)
_MONITOR: contextvars.ContextVar[typing.Callable[[int], None] | None] = contextvars.ContextVar(
    "synth_monitor", default=None)
MONITOR_EVERY = 1024

F32 = 4
I64 = 8
_READ, _WRITE, _UPDATE = 0, 1, 2                # argument modes, in the order launch() lists them


class Tensor(typing.NamedTuple):
    """A byte extent of device memory: a tensor or a part of one."""

    address: int
    nbytes: int

    def part(self, offset: int, nbytes: int) -> Tensor:
        """The `nbytes` bytes at byte `offset` of this extent."""
        if offset < 0 or nbytes <= 0 or offset + nbytes > self.nbytes:
            raise ValueError(f"part [{offset}, {offset + nbytes}) is outside an extent of {self.nbytes} bytes")
        return Tensor(self.address + offset, nbytes)


def exec_id(name: str, args: np.ndarray) -> int:
    """Stable 64-bit execution ID: blake2b of the kernel name and its (address, bytes, mode) arguments."""
    digest = hashlib.blake2b(name.encode(), digest_size=8)
    digest.update(np.ascontiguousarray(args, dtype="<i8").tobytes())
    return int.from_bytes(digest.digest(), "little")


def extent_accesses(address: np.ndarray, nbytes: np.ndarray, writes: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One kernel's accesses from the byte extents it touches: (int64 blocks ascending, int16 distinct
    4 KiB pages of each block over all extents, bool written by any extent)."""
    return _extent_accesses(np.ascontiguousarray(address, np.int64), np.ascontiguousarray(nbytes, np.int64),
                            np.ascontiguousarray(writes, np.bool_))


@numba.njit(cache=True)
def _extent_accesses(address, nbytes, writes):
    """extent_accesses compiled: cut each extent at block boundaries into page ranges [low, high), sweep
    them by first page (the union's new pages of each range are those past every earlier range's end)
    and sum them per block."""
    first = address >> 12
    last = (address + nbytes - 1) >> 12
    pieces = 0
    for i in range(address.shape[0]):
        pieces += last[i] // PAGES_PER_BLOCK - first[i] // PAGES_PER_BLOCK + 1
    low = np.empty(pieces, np.int64)
    high = np.empty(pieces, np.int64)
    written = np.empty(pieces, np.bool_)
    k = 0
    for i in range(address.shape[0]):
        for block in range(first[i] // PAGES_PER_BLOCK, last[i] // PAGES_PER_BLOCK + 1):
            low[k] = max(first[i], block * PAGES_PER_BLOCK)
            high[k] = min(last[i] + 1, (block + 1) * PAGES_PER_BLOCK)
            written[k] = writes[i]
            k += 1
    order = np.argsort(low, kind="mergesort")
    blocks = np.empty(pieces, np.int64)
    pages = np.zeros(pieces, np.int16)
    write = np.zeros(pieces, np.bool_)
    rows = 0
    covered = 0
    for j in range(pieces):
        piece = order[j]
        block = low[piece] // PAGES_PER_BLOCK
        if rows == 0 or blocks[rows - 1] != block:
            blocks[rows] = block
            rows += 1
        fresh = high[piece] - max(low[piece], covered)
        if fresh > 0:
            pages[rows - 1] += fresh
            covered = high[piece]
        write[rows - 1] |= written[piece]
    return blocks[:rows].copy(), pages[:rows].copy(), write[:rows].copy()


class Counts:
    """What a generator would write, counted instead of written: kernels, access rows and allocator
    events, per iteration (-1 is the set-up before the first)."""

    def __init__(self):
        self.kernels: dict[int, int] = {-1: 0}
        self.accesses: dict[int, int] = {-1: 0}
        self.mem_events = 0
        self._iteration = -1

    def begin_iteration(self) -> None:
        self._iteration += 1
        self.kernels[self._iteration] = self.accesses[self._iteration] = 0

    def add_launch(self, args: np.ndarray) -> None:
        """Counts a launch of the extents `args` (address, bytes, mode) and the blocks they cover."""
        order = np.argsort(args[:, 0], kind="stable")
        first = args[order, 0] >> 21
        last = (args[order, 0] + args[order, 1] - 1) >> 21
        # The blocks of the union of the extents: each one adds those past every earlier one's last block.
        reach = np.maximum.accumulate(last)
        fresh = last[1:] - np.maximum(first[1:], reach[:-1] + 1) + 1
        self.kernels[self._iteration] += 1
        self.accesses[self._iteration] += int(last[0] - first[0] + 1 + np.maximum(fresh, 0).sum())

    def add_mem_event(self, action: int, address: int, nbytes: int) -> None:
        self.mem_events += 1

    def finish(self) -> Counts:
        return self


class counting:
    """Context in which generators return the Counts of their trace instead of the trace."""

    def __enter__(self):
        self._token = _COUNTING.set(True)

    def __exit__(self, *exc):
        _COUNTING.reset(self._token)


class monitored:
    """Context in which generators call `monitor(launches)` every MONITOR_EVERY launches."""

    def __init__(self, monitor: typing.Callable[[int], None]):
        self._monitor = monitor

    def __enter__(self):
        self._token = _MONITOR.set(self._monitor)

    def __exit__(self, *exc):
        _MONITOR.reset(self._token)


class Stream:
    """One CUDA stream of a training process: allocates through the caching-allocator model and
    launches kernels into a TraceWriter with their accesses, execution IDs and modelled durations."""

    def __init__(self, writer: TraceWriter, seed: int, dtype_bytes: int):
        self.writer = writer
        self.allocator = CachingAllocator(on_event=writer.add_mem_event)
        self.flops_per_s = MATMUL_FLOPS_PER_S[dtype_bytes]
        self._rng = np.random.default_rng(seed)
        self._accesses: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._jitter: list[float] = []
        self._jitter_at = 0
        self._counts = writer if isinstance(writer, Counts) else None
        self._monitor = _MONITOR.get()
        self._launches = 0

    def empty(self, nbytes: int) -> Tensor:
        """A new uninitialised tensor of `nbytes` bytes."""
        return Tensor(self.allocator.malloc(nbytes), nbytes)

    def free(self, *tensors: Tensor) -> None:
        """Drop the last reference to each tensor (its block goes back to the allocator cache)."""
        for tensor in tensors:
            self.allocator.free(tensor.address)

    def launch(self, name: str, reads=(), writes=(), updates=(), flops: float = 0.0,
               bytes_per_s: float = HBM_BYTES_PER_S) -> None:
        """Launch a kernel that reads `reads`, writes `writes` and reads then writes `updates`.

        Duration: max(flops / GEMM throughput, bytes moved / `bytes_per_s`, 4 us) times the jitter.
        """
        extents = [(t.address, t.nbytes, mode) for mode, group in enumerate((reads, writes, updates))
                   for t in group]
        args = np.array(extents, dtype=np.int64).reshape(-1, 3)
        if self._counts is not None:
            self._counts.add_launch(args)
            return
        if self._monitor is not None:
            self._launches += 1
            if self._launches == MONITOR_EVERY:
                self._monitor(self._launches)
                self._launches = 0
        key = exec_id(name, args)
        accesses = self._accesses.get(key)
        if accesses is None:
            accesses = extent_accesses(args[:, 0], args[:, 1], args[:, 2] != _READ)
            self._accesses[key] = accesses
        moved = float(sum(n for _, n, _ in extents) + sum(n for _, n, mode in extents if mode == _UPDATE))
        seconds = max(flops / self.flops_per_s, moved / bytes_per_s, KERNEL_FLOOR_S)
        seconds *= self._next_jitter()
        self.writer.add_kernel(key, name, int(round(seconds * 1e9)), *accesses)

    def _next_jitter(self) -> float:
        """The next duration jitter factor; drawn in batches, the same sequence as one draw per launch."""
        if self._jitter_at == len(self._jitter):
            self._jitter = self._rng.lognormal(0.0, JITTER_SIGMA, _JITTER_BATCH).tolist()
            self._jitter_at = 0
        self._jitter_at += 1
        return self._jitter[self._jitter_at - 1]

    def multi_tensor(self, name: str, lists: list[list[Tensor]], modes: list[str], elem_bytes: int) -> None:
        """PyTorch's multi_tensor_apply over parallel tensor lists: one launch per group of 65536-element
        chunks (at most 320 chunks, and a number of tensors that depends on the list count, per launch).
        `modes[i]` is "read", "write" or "update" (read then written in place) for list i."""
        depth = len(lists)
        chunk_bytes = _MTA_CHUNK * elem_bytes
        pending: list[tuple[int, int, int]] = []       # (tensor index, first byte, bytes)
        tensors_in_launch = 0
        chunks_in_launch = 0

        def flush():
            parts = {mode: [lists[i][t].part(lo, n) for t, lo, n in pending for i in range(depth) if modes[i] == mode]
                     for mode in ("read", "write", "update")}
            self.launch(name, reads=parts["read"], writes=parts["write"], updates=parts["update"])
            pending.clear()

        for t, tensor in enumerate(lists[0]):
            chunks = -(-tensor.nbytes // chunk_bytes)
            done = 0
            tensors_in_launch += 1
            while done < chunks:
                take = min(chunks - done, _MTA_BLOCKS - chunks_in_launch)
                lo = done * chunk_bytes
                pending.append((t, lo, min((done + take) * chunk_bytes, tensor.nbytes) - lo))
                done += take
                chunks_in_launch += take
                blocks_full = chunks_in_launch == _MTA_BLOCKS
                tensors_full = done == chunks and tensors_in_launch == _MTA_TENSORS[depth]
                last = t == len(lists[0]) - 1 and done == chunks
                if blocks_full or tensors_full or last:
                    flush()
                    chunks_in_launch = 0
                    tensors_in_launch = 0 if done == chunks else 1


def _names(dtype_bytes: int) -> dict[str, str]:
    """Kernel names of cuBLAS / cuDNN / ATen kernels for the element type."""
    tag = {2: "bf16bf16_bf16f32_f32", 4: "tf32f32_tf32f32_f32"}[dtype_bytes]
    gemm = f"sm90_xmma_gemm_{tag}_{{}}_n_tilesize128x128x64_cublas"
    conv = f"sm90_xmma_{{}}_implicit_gemm_{tag}_nhwckrsc_nhwc_tilesize128x128x64"
    return {"gemm_fwd": gemm.format("tn"), "gemm_dgrad": gemm.format("nn"), "gemm_wgrad": gemm.format("nt"),
            "conv_fwd": conv.format("fprop"), "conv_dgrad": conv.format("dgrad"),
            "conv_wgrad": conv.format("wgrad")}


def check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_dtype(dtype_bytes: int) -> None:
    if dtype_bytes not in MATMUL_FLOPS_PER_S:
        raise ValueError(f"dtype_bytes must be one of {sorted(MATMUL_FLOPS_PER_S)} (bf16, fp32), got {dtype_bytes!r}")


def new_writer(model: str, config: dict, parameters: int) -> TraceWriter | Counts:
    if _COUNTING.get():
        return Counts()
    notes = f"synthetic {model}: " + " ".join(f"{key}={value}" for key, value in config.items())
    return TraceWriter(source="synthetic", notes=notes, record_memory_events=True,
                       extra_meta={"model": {"generator": model, **config, "parameters": parameters}})


class Model:
    """Parameters (initialised on the device at construction), their persistent gradient buffers and,
    unless a model steps otherwise, fused Adam's state."""

    def __init__(self, stream: Stream, dtype_bytes: int):
        self.s, self.d = stream, dtype_bytes
        self.n = _names(dtype_bytes)
        self.params: list[Tensor] = []
        self.grad: dict[Tensor, Tensor] = {}
        self.exp_avg: list[Tensor] = []
        self.exp_avg_sq: list[Tensor] = []

    def _param(self, numel: int, normal: bool) -> Tensor:
        """A parameter of `numel` elements, drawn from a normal distribution or filled with a constant."""
        t = self.s.empty(numel * self.d)
        self.s.launch("distribution_elementwise_grid_stride_kernel<normal>" if normal
                      else "vectorized_elementwise_kernel<fill>", writes=[t])
        self.params.append(t)
        return t

    def _allocate_grads(self) -> None:
        self.grad = {p: self.s.empty(p.nbytes) for p in self.params}

    def _elementwise(self, name: str, *inputs: Tensor, nbytes: int | None = None) -> Tensor:
        y = self.s.empty(nbytes or inputs[0].nbytes)
        self.s.launch(name, reads=inputs, writes=[y])
        return y

    def _loss_backward(self, saved: dict) -> Tensor:
        """Backward of cross-entropy (log-softmax + NLL): frees the loss head's saved tensors and
        returns the gradient of the logits."""
        s = self.s
        dloss = s.empty(F32)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[dloss])
        dlsm = s.empty(saved["lsm"].nbytes)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[dlsm])
        s.launch("nll_loss_backward_reduce_cuda_kernel_2d", reads=[dloss, saved["targets"], saved["total_weight"]],
                 updates=[dlsm])
        s.free(dloss, saved["loss"], saved["total_weight"], saved["targets"])
        dlogits = self._elementwise("cunn_SoftMaxBackward<LogSoftMax>", dlsm, saved["lsm"])
        s.free(dlsm, saved["lsm"])
        return dlogits

    def begin_iteration(self, iteration: int) -> None:
        """What changes from one training step to the next (a batch's shape, routing); nothing here."""

    def step(self) -> None:
        """Fused Adam; the first step allocates and zeroes exp_avg and exp_avg_sq (PyTorch's lazy state)."""
        if not self.exp_avg:
            for p in self.params:
                for state in (self.exp_avg, self.exp_avg_sq):
                    state.append(self.s.empty(p.nbytes))
                    self.s.launch("vectorized_elementwise_kernel<fill>", writes=[state[-1]])
        self.s.multi_tensor("multi_tensor_apply_kernel<FusedAdam>",
                            [self.params, list(self.grad.values()), self.exp_avg, self.exp_avg_sq],
                            ["update", "read", "update", "update"], self.d)

    def zero_grad(self) -> None:
        """optimizer.zero_grad(set_to_none=False): one foreach zero over every gradient buffer."""
        self.s.multi_tensor("multi_tensor_apply_kernel<foreach_zero>", [list(self.grad.values())], ["write"], self.d)


def train(writer: TraceWriter, model, iterations: int) -> None:
    """The training loop: zero_grad, forward, backward, optimizer step, once per iteration."""
    for iteration in range(iterations):
        writer.begin_iteration()
        model.begin_iteration(iteration)
        model.zero_grad()
        model.backward(model.forward())
        model.step()
