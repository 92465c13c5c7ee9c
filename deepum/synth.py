"""Synthetic training traces: a GPT-2-like transformer and a ResNet, launched kernel by kernel.

Each generator plays one PyTorch training loop (zero_grad, forward, backward, optimizer step) against
the caching-allocator model, so tensor addresses, reuse of freed memory and allocator events look like
a real run. A kernel's accesses are the exact 4 KiB pages of the tensor extents it reads and writes,
grouped by 2 MiB block; its execution ID hashes its name and its tensor arguments, so the same layer
gets the same ID every iteration once the allocator repeats itself (from iteration 1 on: the first
optimizer step allocates the optimizer state). Durations follow a roofline for an H100/H200-class GPU
with seeded jitter. Model set-up (parameter initialisation) comes before iteration 0 (iteration -1).
"""
from __future__ import annotations

import hashlib
import inspect
import typing

import numpy as np

from deepum.offline.caching_allocator import CachingAllocator
from deepum.offline.trace_format import PAGES_PER_BLOCK, Trace
from deepum.offline.trace_writer import TraceWriter

# Roofline of the modelled GPU.
MATMUL_FLOPS_PER_S = {2: 400e12, 4: 100e12}    # dense tensor-core GEMM/conv throughput by element bytes (bf16, tf32)
HBM_BYTES_PER_S = 2.5e12                        # memory-bound kernels: bytes read + written over this
H2D_BYTES_PER_S = 25e9                          # input copies from host memory
KERNEL_FLOOR_S = 4e-6                           # shortest kernel (launch and tail)
JITTER_SIGMA = 0.05                             # lognormal sigma of the per-launch duration jitter

# PyTorch's multi_tensor_apply: elements per chunk, chunks per launch, tensors per launch by list depth.
_MTA_CHUNK = 65536
_MTA_BLOCKS = 320
_MTA_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}

_F32 = 4
_I64 = 8
_READ, _WRITE, _UPDATE = 0, 1, 2


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
    first = address >> 12
    last = (address + nbytes - 1) >> 12
    first_block = first // PAGES_PER_BLOCK
    counts = last // PAGES_PER_BLOCK - first_block + 1
    owner = np.repeat(np.arange(address.shape[0]), counts)
    block = first_block[owner] + np.arange(owner.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    low = np.maximum(first[owner], block * PAGES_PER_BLOCK)
    high = np.minimum(last[owner] + 1, (block + 1) * PAGES_PER_BLOCK)
    order = np.argsort(low, kind="stable")
    low, high, block, write = low[order], high[order], block[order], writes[owner][order]
    covered = np.concatenate(([0], np.maximum.accumulate(high)[:-1]))
    fresh = np.maximum(high - np.maximum(low, covered), 0)
    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    return (block[starts], np.add.reduceat(fresh, starts).astype(np.int16),
            np.logical_or.reduceat(write, starts))


class _Stream:
    """One CUDA stream of a training process: allocates through the caching-allocator model and
    launches kernels into a TraceWriter with their accesses, execution IDs and modelled durations."""

    def __init__(self, writer: TraceWriter, seed: int, dtype_bytes: int):
        self.writer = writer
        self.allocator = CachingAllocator(on_event=writer.add_mem_event)
        self.flops_per_s = MATMUL_FLOPS_PER_S[dtype_bytes]
        self._rng = np.random.default_rng(seed)
        self._accesses: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

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
        args = np.array([(t.address, t.nbytes, mode) for mode, group in
                         ((_READ, reads), (_WRITE, writes), (_UPDATE, updates)) for t in group], dtype=np.int64)
        key = exec_id(name, args)
        accesses = self._accesses.get(key)
        if accesses is None:
            accesses = extent_accesses(args[:, 0], args[:, 1], args[:, 2] != _READ)
            self._accesses[key] = accesses
        moved = float(args[:, 1].sum() + args[args[:, 2] == _UPDATE, 1].sum())
        seconds = max(flops / self.flops_per_s, moved / bytes_per_s, KERNEL_FLOOR_S)
        seconds *= self._rng.lognormal(0.0, JITTER_SIGMA)
        self.writer.add_kernel(key, name, int(round(seconds * 1e9)), *accesses)

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


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_dtype(dtype_bytes: int) -> None:
    if dtype_bytes not in MATMUL_FLOPS_PER_S:
        raise ValueError(f"dtype_bytes must be one of {sorted(MATMUL_FLOPS_PER_S)} (bf16, fp32), got {dtype_bytes!r}")


def _writer(model: str, config: dict, parameters: int) -> TraceWriter:
    notes = f"synthetic {model}: " + " ".join(f"{key}={value}" for key, value in config.items())
    return TraceWriter(source="synthetic", notes=notes, record_memory_events=True,
                       extra_meta={"model": {"generator": model, **config, "parameters": parameters}})


class _Model:
    """Parameters (initialised on the device at construction) and their persistent gradient buffers."""

    def __init__(self, stream: _Stream, dtype_bytes: int):
        self.s, self.d = stream, dtype_bytes
        self.n = _names(dtype_bytes)
        self.params: list[Tensor] = []
        self.grad: dict[Tensor, Tensor] = {}

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
        dloss = s.empty(_F32)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[dloss])
        dlsm = s.empty(saved["lsm"].nbytes)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[dlsm])
        s.launch("nll_loss_backward_reduce_cuda_kernel_2d", reads=[dloss, saved["targets"], saved["total_weight"]],
                 updates=[dlsm])
        s.free(dloss, saved["loss"], saved["total_weight"], saved["targets"])
        dlogits = self._elementwise("cunn_SoftMaxBackward<LogSoftMax>", dlsm, saved["lsm"])
        s.free(dlsm, saved["lsm"])
        return dlogits

    def zero_grad(self) -> None:
        """optimizer.zero_grad(set_to_none=False): one foreach zero over every gradient buffer."""
        self.s.multi_tensor("multi_tensor_apply_kernel<foreach_zero>", [list(self.grad.values())], ["write"], self.d)


# ------------------------------------------------------------------------------------------- transformer

class _GPT(_Model):
    """GPT-2-like decoder (tied LM head, unfused attention) trained with fused Adam."""

    def __init__(self, stream: _Stream, layers, hidden, heads, seq, batch, vocab, dtype_bytes):
        super().__init__(stream, dtype_bytes)
        self.L, self.H, self.A, self.S, self.B, self.V = layers, hidden, heads, seq, batch, vocab
        self.T = batch * seq
        H = hidden
        self.wte = self._param(vocab * H, normal=True)
        self.wpe = self._param(seq * H, normal=True)
        self.layers = [{name: self._param(numel, normal=normal) for name, numel, normal in (
            ("ln1_w", H, False), ("ln1_b", H, False), ("qkv_w", 3 * H * H, True), ("qkv_b", 3 * H, False),
            ("proj_w", H * H, True), ("proj_b", H, False), ("ln2_w", H, False), ("ln2_b", H, False),
            ("fc1_w", 4 * H * H, True), ("fc1_b", 4 * H, False), ("fc2_w", 4 * H * H, True),
            ("fc2_b", H, False))} for _ in range(layers)]
        self.lnf_w = self._param(H, normal=False)
        self.lnf_b = self._param(H, normal=False)
        self.mask = stream.empty(seq * seq)                 # causal mask buffer, bool
        stream.launch("triu_tril_kernel", writes=[self.mask])
        self._allocate_grads()
        self.exp_avg: list[Tensor] = []
        self.exp_avg_sq: list[Tensor] = []

    @staticmethod
    def parameter_count(layers, hidden, seq, vocab) -> int:
        """Parameters of the model: embeddings, 12H^2 + 13H per layer, final layer norm."""
        return vocab * hidden + seq * hidden + layers * (12 * hidden * hidden + 13 * hidden) + 2 * hidden

    # forward / backward building blocks; each returns new tensors and frees nothing it did not create

    def _linear(self, x: Tensor, w: Tensor, b: Tensor, out: int, inp: int) -> Tensor:
        y = self.s.empty(self.T * out * self.d)
        self.s.launch(self.n["gemm_fwd"], reads=[x, w, b], writes=[y], flops=2 * self.T * out * inp)
        return y

    def _linear_backward(self, dy: Tensor, x: Tensor, w: Tensor, b: Tensor, out: int, inp: int) -> Tensor:
        s, flops = self.s, 2 * self.T * out * inp
        dx = s.empty(self.T * inp * self.d)
        s.launch(self.n["gemm_dgrad"], reads=[dy, w], writes=[dx], flops=flops)
        s.launch(self.n["gemm_wgrad"], reads=[dy, x], updates=[self.grad[w]], flops=flops)
        s.launch("reduce_kernel<sum>", reads=[dy], updates=[self.grad[b]])
        return dx

    def _layer_norm(self, x: Tensor, w: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        y, mean, rstd = self.s.empty(x.nbytes), self.s.empty(self.T * _F32), self.s.empty(self.T * _F32)
        self.s.launch("vectorized_layer_norm_kernel", reads=[x, w, b], writes=[y, mean, rstd])
        return y, mean, rstd

    def _layer_norm_backward(self, dy, x, mean, rstd, w, b) -> Tensor:
        dx = self.s.empty(x.nbytes)
        self.s.launch("layer_norm_grad_input_kernel", reads=[dy, x, mean, rstd, w], writes=[dx])
        self.s.launch("GammaBetaBackwardCUDAKernel", reads=[dy, x, mean, rstd],
                      updates=[self.grad[w], self.grad[b]])
        return dx

    def forward(self) -> dict:
        s, T, H, d = self.s, self.T, self.H, self.d
        ids, targets, pos = s.empty(T * _I64), s.empty(T * _I64), s.empty(self.S * _I64)
        s.launch("[memcpy HtoD]", writes=[ids], bytes_per_s=H2D_BYTES_PER_S)
        s.launch("[memcpy HtoD]", writes=[targets], bytes_per_s=H2D_BYTES_PER_S)
        s.launch("elementwise_kernel<arange>", writes=[pos])
        tok = self._elementwise("indexSelectLargeIndex", self.wte, ids, nbytes=T * H * d)
        pe = self._elementwise("indexSelectLargeIndex", self.wpe, pos, nbytes=self.S * H * d)
        x = self._elementwise("vectorized_elementwise_kernel<add>", tok, pe)
        s.free(tok, pe)
        saved = {"ids": ids, "targets": targets, "pos": pos, "x0": x, "layers": []}
        for p in self.layers:
            layer, x = self._block_forward(p, x)
            saved["layers"].append(layer)
        saved["xL"] = x
        saved["hf"], saved["meanf"], saved["rstdf"] = self._layer_norm(x, self.lnf_w, self.lnf_b)
        logits = s.empty(T * self.V * d)
        s.launch(self.n["gemm_fwd"], reads=[saved["hf"], self.wte], writes=[logits], flops=2 * T * self.V * H)
        saved["lsm"] = self._elementwise("cunn_SoftMaxForward<LogSoftMax>", logits)
        s.free(logits)
        saved["loss"], saved["total_weight"] = s.empty(_F32), s.empty(_F32)
        s.launch("nll_loss_forward_reduce_cuda_kernel_2d", reads=[saved["lsm"], targets],
                 writes=[saved["loss"], saved["total_weight"]])
        return saved

    def _block_forward(self, p: dict, x: Tensor) -> tuple[dict, Tensor]:
        s, T, H, d, B, A, S = self.s, self.T, self.H, self.d, self.B, self.A, self.S
        attention_flops = 2 * B * A * S * S * (H // A)
        h1, mean1, rstd1 = self._layer_norm(x, p["ln1_w"], p["ln1_b"])
        qkv = self._linear(h1, p["qkv_w"], p["qkv_b"], 3 * H, H)
        scores = s.empty(B * A * S * S * d)
        s.launch(self.n["gemm_fwd"], reads=[qkv], writes=[scores], flops=attention_flops)
        scaled = self._elementwise("vectorized_elementwise_kernel<mul>", scores)
        s.free(scores)
        masked = self._elementwise("elementwise_kernel<masked_fill>", scaled, self.mask)
        s.free(scaled)
        probs = self._elementwise("cunn_SoftMaxForward", masked)
        s.free(masked)
        ctx = s.empty(T * H * d)
        s.launch(self.n["gemm_fwd"], reads=[probs, qkv], writes=[ctx], flops=attention_flops)
        y = self._elementwise("unrolled_elementwise_kernel<copy>", ctx)
        s.free(ctx)
        a = self._linear(y, p["proj_w"], p["proj_b"], H, H)
        x2 = self._elementwise("vectorized_elementwise_kernel<add>", x, a)
        s.free(a)
        h2, mean2, rstd2 = self._layer_norm(x2, p["ln2_w"], p["ln2_b"])
        f1 = self._linear(h2, p["fc1_w"], p["fc1_b"], 4 * H, H)
        g = self._elementwise("vectorized_elementwise_kernel<gelu>", f1)
        f2 = self._linear(g, p["fc2_w"], p["fc2_b"], H, 4 * H)
        x3 = self._elementwise("vectorized_elementwise_kernel<add>", x2, f2)
        s.free(f2)
        return dict(x=x, h1=h1, mean1=mean1, rstd1=rstd1, qkv=qkv, probs=probs, y=y, x2=x2, h2=h2,
                    mean2=mean2, rstd2=rstd2, f1=f1, g=g), x3

    def backward(self, saved: dict) -> None:
        s, T, H, d = self.s, self.T, self.H, self.d
        dlogits = self._loss_backward(saved)
        dhf = s.empty(T * H * d)
        s.launch(self.n["gemm_dgrad"], reads=[dlogits, self.wte], writes=[dhf], flops=2 * T * self.V * H)
        s.launch(self.n["gemm_wgrad"], reads=[dlogits, saved["hf"]], updates=[self.grad[self.wte]],
                 flops=2 * T * self.V * H)
        s.free(dlogits, saved["hf"])
        dx = self._layer_norm_backward(dhf, saved["xL"], saved["meanf"], saved["rstdf"], self.lnf_w, self.lnf_b)
        s.free(dhf, saved["xL"], saved["meanf"], saved["rstdf"])
        for p, layer in zip(reversed(self.layers), reversed(saved["layers"])):
            dx = self._block_backward(p, layer, dx)
        s.launch("reduce_kernel<sum>", reads=[dx], updates=[self.grad[self.wpe]])
        s.launch("embedding_backward_feature_kernel", reads=[dx, saved["ids"]], updates=[self.grad[self.wte]])
        s.free(dx, saved["ids"], saved["pos"])

    def _block_backward(self, p: dict, v: dict, dx3: Tensor) -> Tensor:
        s, H, B, A, S = self.s, self.H, self.B, self.A, self.S
        attention_flops = 2 * B * A * S * S * (H // A)
        dg = self._linear_backward(dx3, v["g"], p["fc2_w"], p["fc2_b"], H, 4 * H)
        s.free(v["g"])
        df1 = self._elementwise("vectorized_elementwise_kernel<gelu_backward>", dg, v["f1"])
        s.free(dg, v["f1"])
        dh2 = self._linear_backward(df1, v["h2"], p["fc1_w"], p["fc1_b"], 4 * H, H)
        s.free(df1, v["h2"])
        dx2b = self._layer_norm_backward(dh2, v["x2"], v["mean2"], v["rstd2"], p["ln2_w"], p["ln2_b"])
        s.free(dh2, v["x2"], v["mean2"], v["rstd2"])
        dx2 = self._elementwise("vectorized_elementwise_kernel<add>", dx3, dx2b)
        s.free(dx3, dx2b)
        dy = self._linear_backward(dx2, v["y"], p["proj_w"], p["proj_b"], H, H)
        s.free(v["y"])
        dctx = self._elementwise("unrolled_elementwise_kernel<copy>", dy)
        s.free(dy)
        dprobs = s.empty(v["probs"].nbytes)
        s.launch(self.n["gemm_dgrad"], reads=[dctx, v["qkv"]], writes=[dprobs], flops=attention_flops)
        dv = s.empty(dctx.nbytes)
        s.launch(self.n["gemm_wgrad"], reads=[v["probs"], dctx], writes=[dv], flops=attention_flops)
        s.free(dctx)
        dmasked = self._elementwise("cunn_SoftMaxBackward", dprobs, v["probs"])
        s.free(dprobs, v["probs"])
        dscaled = self._elementwise("elementwise_kernel<masked_fill>", dmasked, self.mask)
        s.free(dmasked)
        dscores = self._elementwise("vectorized_elementwise_kernel<mul>", dscaled)
        s.free(dscaled)
        dq, dk = s.empty(dv.nbytes), s.empty(dv.nbytes)
        s.launch(self.n["gemm_dgrad"], reads=[dscores, v["qkv"]], writes=[dq], flops=attention_flops)
        s.launch(self.n["gemm_wgrad"], reads=[dscores, v["qkv"]], writes=[dk], flops=attention_flops)
        s.free(dscores, v["qkv"])
        dqkv = self._elementwise("CatArrayBatchedCopy", dq, dk, dv, nbytes=3 * dv.nbytes)
        s.free(dq, dk, dv)
        dh1 = self._linear_backward(dqkv, v["h1"], p["qkv_w"], p["qkv_b"], 3 * H, H)
        s.free(dqkv, v["h1"])
        dxb = self._layer_norm_backward(dh1, v["x"], v["mean1"], v["rstd1"], p["ln1_w"], p["ln1_b"])
        s.free(dh1, v["x"], v["mean1"], v["rstd1"])
        dx = self._elementwise("vectorized_elementwise_kernel<add>", dx2, dxb)
        s.free(dx2, dxb)
        return dx

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


def synth_transformer(layers: int = 12, hidden: int = 1024, heads: int = 16, seq: int = 1024, batch: int = 4,
                      vocab: int = 50304, iterations: int = 4, seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a GPT-2-like transformer trained with Adam: `iterations` steps of batch x seq tokens.

    Sizes are in elements; dtype_bytes is the bytes per element of parameters, activations, gradients
    and optimizer state (2 bf16, 4 fp32).
    """
    _check_sizes(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab,
                 iterations=iterations)
    _check_dtype(dtype_bytes)
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    config = dict(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab,
                  iterations=iterations, seed=seed, dtype_bytes=dtype_bytes)
    writer = _writer("transformer", config, _GPT.parameter_count(layers, hidden, seq, vocab))
    stream = _Stream(writer, seed, dtype_bytes)
    model = _GPT(stream, layers, hidden, heads, seq, batch, vocab, dtype_bytes)
    _train(writer, model, iterations)
    return writer.finish()


# ---------------------------------------------------------------------------------------------------- cnn

RESNET_LAYOUTS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
_CLASSES = 1000


class _ResNet(_Model):
    """torchvision-style ResNet with bottleneck blocks (stride on the 3x3 conv), trained with SGD + momentum."""

    def __init__(self, stream: _Stream, depth, width, image, batch, dtype_bytes):
        super().__init__(stream, dtype_bytes)
        self.N, self.image = batch, image
        self.stem = self._conv_bn(3, width, 7, 2, image)
        size = image // 4
        channels = width
        self.blocks = []
        for stage, count in enumerate(RESNET_LAYOUTS[depth]):
            planes = width << stage
            for i in range(count):
                stride = 2 if stage and i == 0 else 1
                block = {"conv1": self._conv_bn(channels, planes, 1, 1, size),
                         "conv2": self._conv_bn(planes, planes, 3, stride, size),
                         "conv3": self._conv_bn(planes, 4 * planes, 1, 1, size // stride)}
                if i == 0:
                    block["down"] = self._conv_bn(channels, 4 * planes, 1, stride, size)
                self.blocks.append(block)
                channels, size = 4 * planes, size // stride
        self.channels, self.size = channels, size
        self.fc_w = self._param(_CLASSES * channels, normal=True)
        self.fc_b = self._param(_CLASSES, normal=False)
        self._allocate_grads()
        self.momentum: list[Tensor] = []

    @staticmethod
    def parameter_count(depth, width) -> int:
        """Parameters: bias-free convolutions, batch-norm scale and shift, the 1000-class classifier."""
        count = 3 * width * 49 + 2 * width
        channels = width
        for stage, blocks in enumerate(RESNET_LAYOUTS[depth]):
            planes = width << stage
            for i in range(blocks):
                count += channels * planes + planes * planes * 9 + planes * 4 * planes + 2 * (6 * planes)
                if i == 0:
                    count += channels * 4 * planes + 2 * 4 * planes
                channels = 4 * planes
        return count + _CLASSES * channels + _CLASSES

    def _conv_bn(self, cin: int, cout: int, k: int, stride: int, size: int) -> dict:
        """A convolution (input `size` x `size`) and its batch norm: weights and running statistics."""
        layer = {"cin": cin, "cout": cout, "k": k, "stride": stride, "out": size // stride,
                 "w": self._param(cout * cin * k * k, normal=True),
                 "gamma": self._param(cout, normal=False), "beta": self._param(cout, normal=False)}
        layer["running"] = [self.s.empty(cout * _F32), self.s.empty(cout * _F32), self.s.empty(_I64)]
        for buffer in layer["running"]:
            self.s.launch("vectorized_elementwise_kernel<fill>", writes=[buffer])
        return layer

    def _conv_flops(self, c: dict) -> float:
        return 2 * self.N * c["cout"] * c["out"] ** 2 * c["cin"] * c["k"] ** 2

    def _conv_bn_forward(self, c: dict, x: Tensor, relu: bool) -> dict:
        s = self.s
        act = self.N * c["cout"] * c["out"] ** 2 * self.d
        y = s.empty(act)
        s.launch(self.n["conv_fwd"], reads=[x, c["w"]], writes=[y], flops=self._conv_flops(c))
        z, mean, invstd = s.empty(act), s.empty(c["cout"] * _F32), s.empty(c["cout"] * _F32)
        s.launch("vectorized_elementwise_kernel<add>", updates=[c["running"][2]])
        s.launch("cudnn::bn_fw_tr_1C11_kernel_NCHW", reads=[y, c["gamma"], c["beta"]],
                 writes=[z, mean, invstd], updates=c["running"][:2])
        if relu:
            s.launch("vectorized_elementwise_kernel<relu>", updates=[z])
        return {"y": y, "z": z, "mean": mean, "invstd": invstd}

    def _bn_backward(self, c: dict, v: dict, dz: Tensor) -> Tensor:
        dy = self.s.empty(dz.nbytes)
        self.s.launch("cudnn::bn_bw_1C11_kernel_new", reads=[dz, v["y"], c["gamma"], v["mean"], v["invstd"]],
                      writes=[dy], updates=[self.grad[c["gamma"]], self.grad[c["beta"]]])
        self.s.free(v["y"], v["mean"], v["invstd"])
        return dy

    def _conv_backward(self, c: dict, dy: Tensor, x: Tensor, input_grad: bool = True) -> Tensor | None:
        s, flops = self.s, self._conv_flops(c)
        dx = None
        if input_grad:
            dx = s.empty(self.N * c["cin"] * (c["out"] * c["stride"]) ** 2 * self.d)
            s.launch(self.n["conv_dgrad"], reads=[dy, c["w"]], writes=[dx], flops=flops)
        s.launch(self.n["conv_wgrad"], reads=[dy, x], updates=[self.grad[c["w"]]], flops=flops)
        return dx

    def _conv_bn_backward(self, c: dict, v: dict, dz: Tensor, x: Tensor) -> Tensor:
        """Batch-norm then convolution backward from the grad of the batch norm's output; returns the
        grad of the convolution's input `x`."""
        dy = self._bn_backward(c, v, dz)
        dx = self._conv_backward(c, dy, x)
        self.s.free(dy)
        return dx

    def _relu_backward(self, dz: Tensor, z: Tensor) -> Tensor:
        dr = self.s.empty(dz.nbytes)
        self.s.launch("vectorized_elementwise_kernel<threshold_backward>", reads=[dz, z], writes=[dr])
        return dr

    def forward(self) -> dict:
        s, N, d = self.s, self.N, self.d
        img, targets = s.empty(N * 3 * self.image ** 2 * d), s.empty(N * _I64)
        s.launch("[memcpy HtoD]", writes=[img], bytes_per_s=H2D_BYTES_PER_S)
        s.launch("[memcpy HtoD]", writes=[targets], bytes_per_s=H2D_BYTES_PER_S)
        stem = self._conv_bn_forward(self.stem, img, relu=True)
        pooled_size = N * self.stem["cout"] * (self.image // 4) ** 2
        x, indices = s.empty(pooled_size * d), s.empty(pooled_size * _I64)
        s.launch("max_pool_forward_nchw", reads=[stem["z"]], writes=[x, indices])
        saved = {"img": img, "targets": targets, "stem": stem, "indices": indices, "p": x, "blocks": []}
        for block in self.blocks:
            v = {"x": x}
            for name in ("conv1", "conv2", "conv3"):
                v[name] = self._conv_bn_forward(block[name], x, relu=name != "conv3")
                x = v[name]["z"]
            identity = v["x"]
            if "down" in block:
                v["down"] = self._conv_bn_forward(block["down"], v["x"], relu=False)
                identity = v["down"]["z"]
            s.launch("vectorized_elementwise_kernel<add>", reads=[identity], updates=[x])
            if "down" in block:
                s.free(v["down"].pop("z"))
            s.launch("vectorized_elementwise_kernel<relu>", updates=[x])
            saved["blocks"].append(v)
        pooled = s.empty(N * self.channels * d)
        s.launch("reduce_kernel<mean>", reads=[x], writes=[pooled])
        logits = s.empty(N * _CLASSES * d)
        s.launch(self.n["gemm_fwd"], reads=[pooled, self.fc_w, self.fc_b], writes=[logits],
                 flops=2 * N * _CLASSES * self.channels)
        lsm = s.empty(logits.nbytes)
        s.launch("cunn_SoftMaxForward<LogSoftMax>", reads=[logits], writes=[lsm])
        s.free(logits)
        loss, total_weight = s.empty(_F32), s.empty(_F32)
        s.launch("nll_loss_forward_reduce_cuda_kernel_2d", reads=[lsm, targets], writes=[loss, total_weight])
        saved.update(pooled=pooled, lsm=lsm, loss=loss, total_weight=total_weight)
        return saved

    def backward(self, saved: dict) -> None:
        s, N, d = self.s, self.N, self.d
        dlogits = self._loss_backward(saved)
        dpooled = s.empty(saved["pooled"].nbytes)
        flops = 2 * N * _CLASSES * self.channels
        s.launch(self.n["gemm_dgrad"], reads=[dlogits, self.fc_w], writes=[dpooled], flops=flops)
        s.launch(self.n["gemm_wgrad"], reads=[dlogits, saved["pooled"]], updates=[self.grad[self.fc_w]], flops=flops)
        s.launch("reduce_kernel<sum>", reads=[dlogits], updates=[self.grad[self.fc_b]])
        s.free(dlogits, saved["pooled"])
        dx = s.empty(N * self.channels * self.size ** 2 * d)
        s.launch("elementwise_kernel<avg_pool_backward>", reads=[dpooled], writes=[dx])
        s.free(dpooled)
        for block, v in zip(reversed(self.blocks), reversed(saved["blocks"])):
            dx = self._block_backward(block, v, dx)
        s.free(saved["p"])
        stem = saved["stem"]
        dz = s.empty(stem["z"].nbytes)
        s.launch("max_pool_backward_nchw", reads=[dx, saved["indices"]], writes=[dz])
        s.free(dx, saved["indices"])
        dr = self._relu_backward(dz, stem["z"])
        s.free(dz, stem["z"])
        dy = self._bn_backward(self.stem, stem, dr)
        s.free(dr)
        self._conv_backward(self.stem, dy, saved["img"], input_grad=False)
        s.free(dy, saved["img"])

    def _block_backward(self, block: dict, v: dict, dout: Tensor) -> Tensor:
        s = self.s
        z1, z2, out = v["conv1"]["z"], v["conv2"]["z"], v["conv3"]["z"]
        dr3 = self._relu_backward(dout, out)
        s.free(dout, out)
        dz2 = self._conv_bn_backward(block["conv3"], v["conv3"], dr3, z2)
        dr2 = self._relu_backward(dz2, z2)
        s.free(dz2, z2)
        dz1 = self._conv_bn_backward(block["conv2"], v["conv2"], dr2, z1)
        s.free(dr2)
        dr1 = self._relu_backward(dz1, z1)
        s.free(dz1, z1)
        dx = self._conv_bn_backward(block["conv1"], v["conv1"], dr1, v["x"])
        s.free(dr1)
        identity_grad = dr3
        if "down" in block:
            identity_grad = self._conv_bn_backward(block["down"], v["down"], dr3, v["x"])
        total = s.empty(dx.nbytes)
        s.launch("vectorized_elementwise_kernel<add>", reads=[dx, identity_grad], writes=[total])
        s.free(dx, dr3)
        if "down" in block:
            s.free(identity_grad)
        return total

    def step(self) -> None:
        """PyTorch's foreach SGD (momentum 0.9, weight decay): the first step clones the momentum buffers."""
        s, grads = self.s, list(self.grad.values())
        decayed = [s.empty(g.nbytes) for g in grads]
        s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [grads, self.params, decayed],
                       ["read", "read", "write"], self.d)
        if not self.momentum:
            for g in decayed:
                self.momentum.append(s.empty(g.nbytes))
                s.launch("unrolled_elementwise_kernel<copy>", reads=[g], writes=[self.momentum[-1]])
        else:
            s.multi_tensor("multi_tensor_apply_kernel<foreach_mul>", [self.momentum], ["update"], self.d)
            s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [self.momentum, decayed],
                           ["update", "read"], self.d)
        s.multi_tensor("multi_tensor_apply_kernel<foreach_add>", [self.params, self.momentum],
                       ["update", "read"], self.d)
        s.free(*decayed)


def synth_cnn(depth: int = 50, width: int = 64, image: int = 224, batch: int = 32, iterations: int = 4,
              seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a ResNet (bottleneck blocks, 1000 classes) trained with SGD + momentum: `iterations`
    steps of `batch` images of `image` x `image` pixels; width is the stem's channels."""
    _check_sizes(depth=depth, width=width, image=image, batch=batch, iterations=iterations)
    _check_dtype(dtype_bytes)
    if depth not in RESNET_LAYOUTS:
        raise ValueError(f"depth must be one of {sorted(RESNET_LAYOUTS)}, got {depth}")
    if image % 32:
        raise ValueError(f"image must be a multiple of 32 (five stride-2 stages), got {image}")
    config = dict(depth=depth, width=width, image=image, batch=batch, iterations=iterations, seed=seed,
                  dtype_bytes=dtype_bytes)
    writer = _writer("cnn", config, _ResNet.parameter_count(depth, width))
    stream = _Stream(writer, seed, dtype_bytes)
    model = _ResNet(stream, depth, width, image, batch, dtype_bytes)
    _train(writer, model, iterations)
    return writer.finish()


# ------------------------------------------------------------------------------------------ registry

def _train(writer: TraceWriter, model, iterations: int) -> None:
    """The training loop: zero_grad, forward, backward, optimizer step, once per iteration."""
    for _ in range(iterations):
        writer.begin_iteration()
        model.zero_grad()
        model.backward(model.forward())
        model.step()


GENERATORS = {"transformer": synth_transformer, "cnn": synth_cnn}

_HELP = {
    "transformer": {
        "layers": "transformer blocks",
        "hidden": "model width (elements)",
        "heads": "attention heads (must divide hidden)",
        "seq": "sequence length (tokens)",
        "batch": "sequences per iteration",
        "vocab": "vocabulary size",
    },
    "cnn": {
        "depth": f"ResNet depth, one of {', '.join(map(str, sorted(RESNET_LAYOUTS)))}",
        "width": "channels of the stem (ResNet: 64)",
        "image": "image side (pixels, a multiple of 32)",
        "batch": "images per iteration",
    },
}
_COMMON_HELP = {
    "iterations": "training iterations to generate",
    "seed": "seed of the duration jitter",
    "dtype_bytes": "bytes per element: 2 (bf16) or 4 (fp32)",
}


def generator_options(name: str) -> list[tuple[str, type, object, str]]:
    """(option, type, default, help) of each size option of generator `name`, in signature order."""
    if name not in GENERATORS:
        raise ValueError(f"unknown generator {name!r}; choose from {', '.join(GENERATORS)}")
    helps = {**_COMMON_HELP, **_HELP[name]}
    return [(p.name, type(p.default), p.default, helps[p.name])
            for p in inspect.signature(GENERATORS[name]).parameters.values()]
