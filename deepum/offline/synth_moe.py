"""The synthetic mixture-of-experts transformer: the GPT-2-like model with each block's feed-forward half
replaced by `experts` experts behind a router. Routing is data-dependent: each step, each layer's router
sends its tokens to `active` of the experts, drawn from `routing_seed`, so which experts' weights a step
touches (and the launches of its expert kernels) changes from step to step."""
from __future__ import annotations

import numpy as np

from .synth_stream import F32, I64, Stream, Tensor, check_dtype, check_sizes, new_writer, train
from .synth_transformer import _GPT
from .trace_format import Trace


class _MoEGPT(_GPT):
    """GPT-2-like decoder whose feed-forward halves are top-k routed experts (fixed expert capacity: each
    active expert runs on tokens * top_k / active token slots), trained with fused Adam."""

    def __init__(self, stream: Stream, layers, hidden, heads, seq, batch, vocab, experts, active, top_k,
                 routing_seed, dtype_bytes):
        self.E, self.active, self.top_k = experts, active, top_k
        super().__init__(stream, layers, hidden, heads, seq, batch, vocab, dtype_bytes)
        self.slots = self.T * top_k // active  # tokens each active expert runs on
        self._routing_rng = np.random.default_rng(routing_seed)
        self.routed: dict[Tensor, list[int]] = {}  # a layer's router weight -> the experts it uses this step

    @staticmethod
    def parameter_count(layers, hidden, seq, vocab, experts) -> int:
        """The dense model's parameters less its feed-forward halves, plus a router and `experts` of them."""
        dense_mlp, router = 8 * hidden * hidden + 5 * hidden, hidden * experts
        return (_GPT.parameter_count(layers, hidden, seq, vocab)
                + layers * (experts * dense_mlp + router - dense_mlp))

    def _mlp_params(self) -> dict:
        H = self.H
        return {"router_w": self._param(H * self.E, normal=True),
                "experts": [{name: self._param(numel, normal=normal) for name, numel, normal in (
                    ("fc1_w", 4 * H * H, True), ("fc1_b", 4 * H, False), ("fc2_w", 4 * H * H, True),
                    ("fc2_b", H, False))} for _ in range(self.E)]}

    def begin_iteration(self, iteration: int) -> None:
        self.routed = {p["router_w"]: sorted(self._routing_rng.choice(self.E, self.active, replace=False).tolist())
                       for p in self.layers}

    def _mlp_forward(self, p: dict, h2: Tensor) -> tuple[dict, Tensor]:
        s, T, H, d, k = self.s, self.T, self.H, self.d, self.top_k
        logits, gates, slots = s.empty(T * self.E * d), s.empty(T * k * F32), s.empty(T * k * I64)
        s.launch(self.n["gemm_fwd"], reads=[h2, p["router_w"]], writes=[logits], flops=2 * T * self.E * H)
        s.launch("gatherTopK", reads=[logits], writes=[gates, slots])
        out = s.empty(T * H * d)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[out])
        saved = {"logits": logits, "gates": gates, "slots": slots, "experts": []}
        for slot, e in enumerate(self.routed[p["router_w"]]):
            w = p["experts"][e]
            index, gate = self._slot_parts(slots, gates, slot)
            xe = s.empty(self.slots * H * d)
            s.launch("indexSelectLargeIndex", reads=[h2, index], writes=[xe])
            f1 = self._linear(xe, w["fc1_w"], w["fc1_b"], 4 * H, H, self.slots)
            g = self._elementwise("vectorized_elementwise_kernel<gelu>", f1)
            ye = self._linear(g, w["fc2_w"], w["fc2_b"], H, 4 * H, self.slots)
            s.launch("indexAddLargeIndex", reads=[ye, index, gate], updates=[out])
            saved["experts"].append({"expert": e, "xe": xe, "f1": f1, "g": g, "ye": ye})
        return saved, out

    def _slot_parts(self, slots: Tensor, gates: Tensor, slot: int) -> tuple[Tensor, Tensor]:
        """The token indices and gate values of one active expert's slots."""
        return slots.part(slot * self.slots * I64, self.slots * I64), gates.part(slot * self.slots * F32,
                                                                                 self.slots * F32)

    def _mlp_backward(self, p: dict, v: dict, dx3: Tensor, h2: Tensor) -> Tensor:
        s, T, H = self.s, self.T, self.H
        dh2, dgates = s.empty(h2.nbytes), s.empty(v["gates"].nbytes)
        s.launch("vectorized_elementwise_kernel<fill>", writes=[dh2])
        for slot, saved in reversed(list(enumerate(v["experts"]))):
            w = p["experts"][saved["expert"]]
            index, gate = self._slot_parts(v["slots"], v["gates"], slot)
            dye = s.empty(saved["ye"].nbytes)
            s.launch("indexSelectLargeIndex", reads=[dx3, index, gate], writes=[dye])
            s.launch("reduce_kernel<sum>", reads=[dx3, index, saved["ye"]],
                     writes=[self._slot_parts(v["slots"], dgates, slot)[1]])
            s.free(saved["ye"])
            dg = self._linear_backward(dye, saved["g"], w["fc2_w"], w["fc2_b"], H, 4 * H, self.slots)
            s.free(dye, saved["g"])
            df1 = self._elementwise("vectorized_elementwise_kernel<gelu_backward>", dg, saved["f1"])
            s.free(dg, saved["f1"])
            dxe = self._linear_backward(df1, saved["xe"], w["fc1_w"], w["fc1_b"], 4 * H, H, self.slots)
            s.free(df1, saved["xe"])
            s.launch("indexAddLargeIndex", reads=[dxe, index], updates=[dh2])
            s.free(dxe)
        dlogits = s.empty(v["logits"].nbytes)
        s.launch("gatherTopK_backward", reads=[dgates, v["slots"], v["gates"], v["logits"]], writes=[dlogits])
        s.free(dgates, v["gates"], v["slots"], v["logits"])
        s.launch(self.n["gemm_dgrad"], reads=[dlogits, p["router_w"]], updates=[dh2], flops=2 * T * self.E * H)
        s.launch(self.n["gemm_wgrad"], reads=[dlogits, h2], updates=[self.grad[p["router_w"]]],
                 flops=2 * T * self.E * H)
        s.free(dlogits)
        return dh2


def synth_moe(layers: int = 8, hidden: int = 1024, heads: int = 16, seq: int = 1024, batch: int = 4,
              vocab: int = 50304, experts: int = 8, active: int = 4, top_k: int = 2, routing_seed: int = 0,
              iterations: int = 12, seed: int = 0, dtype_bytes: int = 2) -> Trace:
    """Trace of a mixture-of-experts GPT-2-like transformer trained with Adam: each layer's router sends
    each token to top_k experts among `active` of its `experts`, drawn anew each step and layer from
    routing_seed; the other experts' weights are touched only by the optimizer step."""
    check_sizes(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab, experts=experts,
                active=active, top_k=top_k, iterations=iterations)
    check_dtype(dtype_bytes)
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    if not top_k <= active <= experts:
        raise ValueError(f"need top_k ({top_k}) <= active ({active}) <= experts ({experts})")
    if not isinstance(routing_seed, int) or isinstance(routing_seed, bool) or routing_seed < 0:
        raise ValueError(f"routing_seed must be a non-negative integer, got {routing_seed!r}")
    config = dict(layers=layers, hidden=hidden, heads=heads, seq=seq, batch=batch, vocab=vocab, experts=experts,
                  active=active, top_k=top_k, routing_seed=routing_seed, iterations=iterations, seed=seed,
                  dtype_bytes=dtype_bytes)
    writer = new_writer("moe", config, _MoEGPT.parameter_count(layers, hidden, seq, vocab, experts))
    stream = Stream(writer, seed, dtype_bytes)
    model = _MoEGPT(stream, layers, hidden, heads, seq, batch, vocab, experts, active, top_k, routing_seed,
                    dtype_bytes)
    train(writer, model, iterations)
    return writer.finish()
