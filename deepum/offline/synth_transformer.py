"""The synthetic GPT-2-like transformer: its training trace, kernel by kernel."""
from __future__ import annotations

from .synth_stream import (F32, H2D_BYTES_PER_S, I64, Model, Stream, Tensor, check_dtype, check_sizes, new_writer,
                           train)
from .trace_format import Trace


class _GPT(Model):
    """GPT-2-like decoder (tied LM head, unfused attention) trained with fused Adam."""

    def __init__(self, stream: Stream, layers, hidden, heads, seq, batch, vocab, dtype_bytes):
        super().__init__(stream, dtype_bytes)
        self.L, self.H, self.A, self.S, self.B, self.V = layers, hidden, heads, seq, batch, vocab
        self.T = batch * seq
        H = hidden
        self.wte = self._param(vocab * H, normal=True)
        self.wpe = self._param(seq * H, normal=True)
        self.layers = [{**{name: self._param(numel, normal=normal) for name, numel, normal in (
            ("ln1_w", H, False), ("ln1_b", H, False), ("qkv_w", 3 * H * H, True), ("qkv_b", 3 * H, False),
            ("proj_w", H * H, True), ("proj_b", H, False), ("ln2_w", H, False), ("ln2_b", H, False))},
            **self._mlp_params()} for _ in range(layers)]
        self.lnf_w = self._param(H, normal=False)
        self.lnf_b = self._param(H, normal=False)
        self.mask = stream.empty(seq * seq)                 # causal mask buffer, bool
        stream.launch("triu_tril_kernel", writes=[self.mask])
        self._allocate_grads()

    @staticmethod
    def parameter_count(layers, hidden, seq, vocab) -> int:
        """Parameters of the model: embeddings, 12H^2 + 13H per layer, final layer norm."""
        return vocab * hidden + seq * hidden + layers * (12 * hidden * hidden + 13 * hidden) + 2 * hidden

    # forward / backward building blocks; each returns new tensors and frees nothing it did not create

    def _linear(self, x: Tensor, w: Tensor, b: Tensor, out: int, inp: int, tokens: int | None = None) -> Tensor:
        tokens = tokens or self.T
        y = self.s.empty(tokens * out * self.d)
        self.s.launch(self.n["gemm_fwd"], reads=[x, w, b], writes=[y], flops=2 * tokens * out * inp)
        return y

    def _linear_backward(self, dy: Tensor, x: Tensor, w: Tensor, b: Tensor, out: int, inp: int,
                         tokens: int | None = None) -> Tensor:
        tokens = tokens or self.T
        s, flops = self.s, 2 * tokens * out * inp
        dx = s.empty(tokens * inp * self.d)
        s.launch(self.n["gemm_dgrad"], reads=[dy, w], writes=[dx], flops=flops)
        s.launch(self.n["gemm_wgrad"], reads=[dy, x], updates=[self.grad[w]], flops=flops)
        s.launch("reduce_kernel<sum>", reads=[dy], updates=[self.grad[b]])
        return dx

    def _layer_norm(self, x: Tensor, w: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        y, mean, rstd = self.s.empty(x.nbytes), self.s.empty(self.T * F32), self.s.empty(self.T * F32)
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
        ids, targets, pos = s.empty(T * I64), s.empty(T * I64), s.empty(self.S * I64)
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
        saved["loss"], saved["total_weight"] = s.empty(F32), s.empty(F32)
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
        mlp, f2 = self._mlp_forward(p, h2)
        x3 = self._elementwise("vectorized_elementwise_kernel<add>", x2, f2)
        s.free(f2)
        return dict(x=x, h1=h1, mean1=mean1, rstd1=rstd1, qkv=qkv, probs=probs, y=y, x2=x2, h2=h2,
                    mean2=mean2, rstd2=rstd2, mlp=mlp), x3

    def _mlp_params(self) -> dict:
        """The parameters of one block's feed-forward half."""
        H = self.H
        return {name: self._param(numel, normal=normal) for name, numel, normal in (
            ("fc1_w", 4 * H * H, True), ("fc1_b", 4 * H, False), ("fc2_w", 4 * H * H, True), ("fc2_b", H, False))}

    def _mlp_forward(self, p: dict, h2: Tensor) -> tuple[dict, Tensor]:
        """The feed-forward half of a block on the normalised input h2: (saved tensors, output)."""
        H = self.H
        f1 = self._linear(h2, p["fc1_w"], p["fc1_b"], 4 * H, H)
        g = self._elementwise("vectorized_elementwise_kernel<gelu>", f1)
        return dict(f1=f1, g=g), self._linear(g, p["fc2_w"], p["fc2_b"], H, 4 * H)

    def _mlp_backward(self, p: dict, v: dict, dx3: Tensor, h2: Tensor) -> Tensor:
        """Backward of _mlp_forward from the grad of its output; frees what it saved, returns the grad of h2."""
        s, H = self.s, self.H
        dg = self._linear_backward(dx3, v["g"], p["fc2_w"], p["fc2_b"], H, 4 * H)
        s.free(v["g"])
        df1 = self._elementwise("vectorized_elementwise_kernel<gelu_backward>", dg, v["f1"])
        s.free(dg, v["f1"])
        dh2 = self._linear_backward(df1, h2, p["fc1_w"], p["fc1_b"], 4 * H, H)
        s.free(df1)
        return dh2

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
        dh2 = self._mlp_backward(p, v["mlp"], dx3, v["h2"])
        s.free(v["h2"])
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

def synth_transformer(layers: int = 12, hidden: int = 1024, heads: int = 16, seq: int = 1024, batch: int = 4,
                      vocab: int = 50304, iterations: int = 4, seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a GPT-2-like transformer trained with Adam: `iterations` steps of batch x seq tokens.

    Sizes are in elements; dtype_bytes is the bytes per element of parameters, activations, gradients
    and optimizer state (2 bf16, 4 fp32).
    """
    check_sizes(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab,
                 iterations=iterations)
    check_dtype(dtype_bytes)
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    config = dict(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab,
                  iterations=iterations, seed=seed, dtype_bytes=dtype_bytes)
    writer = new_writer("transformer", config, _GPT.parameter_count(layers, hidden, seq, vocab))
    stream = Stream(writer, seed, dtype_bytes)
    model = _GPT(stream, layers, hidden, heads, seq, batch, vocab, dtype_bytes)
    train(writer, model, iterations)
    return writer.finish()
