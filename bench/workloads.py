"""Training workloads for the benchmarks, sized by flags, with random data and random initialisation.

Families: a GPT-2-style decoder, the same decoder with mixture-of-experts feed-forward layers
(MoE), a BERT-Large-style encoder with an MLM head, ResNet-152 and a DLRM-like recommender with
large embedding tables. `build(torch, args)` returns a Workload whose `make_batch(step)` gives the
step's inputs (CPU tensors, deterministic in the seed and step) and whose `loss_fn(model, batch)`
runs the forward pass and returns the scalar loss. Every model uses only operations that have
deterministic CUDA implementations (explicit matmul + softmax attention, mean pooling instead of
AdaptiveAvgPool2d, experts' tokens gathered with index_select and summed back with index_add), so
torch.use_deterministic_algorithms(True) holds and equal parameter digests across modes mean
bitwise-equal training.

Precision (--precision): fp32 trains in float32 with each family's own optimizer; bf16 trains the
transformers the way users do, the forward pass under bfloat16 autocast (parameters and optimizer
state stay float32) with fused AdamW.

torch is passed in, never imported here: importing this module needs no torch.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Callable

WORKLOADS = {
    # name: (family, default sizes); the flags of SIZE_FLAGS override the defaults.
    "gpt2": ("gpt2", dict(layers=24, hidden=1024, heads=16, seq=1024, batch=8, vocab=50304)),
    "gpt2-l": ("gpt2", dict(layers=36, hidden=1280, heads=20, seq=1024, batch=2, vocab=50304)),
    "gpt2-xl": ("gpt2", dict(layers=48, hidden=1600, heads=25, seq=1024, batch=1, vocab=50304)),
    "moe": ("moe", dict(layers=24, hidden=1024, heads=16, seq=1024, batch=4, vocab=50304, experts=8)),
    "bert-large": ("bert", dict(layers=24, hidden=1024, heads=16, seq=512, batch=8, vocab=30522)),
    "resnet152": ("resnet152", dict(batch=32, image=224, classes=1000)),
    "dlrm": ("dlrm", dict(batch=2048, tables=8, rows=4_000_000, dim=128, lookups=32, dense_features=13,
                          bottom_mlp="512,256", top_mlp="1024,512,256")),
}
"""Workload names accepted by --workload. gpt2-l and gpt2-xl are GPT-2 Large and XL, at batches whose
footprints (about 31 and 43 GiB with Adam) stay under deepum's fuse of half the free memory of an
H200 (gpt2-xl not of an H100); gpt2 keeps the sizes bench/gpu_check.py was written against. moe is
gpt2 with each block's feed-forward layer replaced by `experts` experts of the same shape, top-2
routed (MOE_TOP_K)."""

SIZE_FLAGS = {
    # flag: (type, help); which flags a family reads is in its defaults above.
    "layers": (int, "transformer blocks"),
    "hidden": (int, "transformer width"),
    "heads": (int, "attention heads (must divide --hidden)"),
    "seq": (int, "tokens per sequence"),
    "batch": (int, "samples per step"),
    "vocab": (int, "vocabulary size"),
    "experts": (int, "experts per mixture-of-experts layer (MoE)"),
    "image": (int, "image side in pixels (ResNet)"),
    "classes": (int, "output classes (ResNet)"),
    "tables": (int, "embedding tables (DLRM)"),
    "rows": (int, "rows per embedding table (DLRM)"),
    "dim": (int, "embedding dimension (DLRM; also the bottom MLP's output)"),
    "lookups": (int, "random rows summed per table per sample (DLRM)"),
    "dense_features": (int, "dense input features (DLRM)"),
    "bottom_mlp": (str, "hidden widths of the bottom MLP, comma-separated (DLRM)"),
    "top_mlp": (str, "hidden widths of the top MLP, comma-separated (DLRM)"),
}

TRANSFORMER_FAMILIES = ("gpt2", "moe", "bert")
"""Families that --precision bf16 applies to."""

PRECISIONS = ("fp32", "bf16")
"""--precision choices; fp32 is the default and leaves workload ids as they were."""

MOE_TOP_K = 2
"""Experts each token is routed to in the MoE workload."""

DISTINCT_BATCHES = 2
"""Random batches generated per run and cycled through (generating one per step would put CPU work
in the loop)."""

MLM_FRACTION = 0.15
"""Share of BERT positions masked and predicted."""

MASK_TOKEN = 103
"""BERT's [MASK] id, written at the masked positions."""


@dataclasses.dataclass
class Workload:
    """A model ready to train. make_batch(step) -> tuple of CPU tensors; loss_fn(model, batch) ->
    scalar loss tensor; make_optimizer(torch, model) -> a torch optimizer; info: the sizes and
    implementation details recorded with the results; blocks: the model's repeated units in forward
    order (transformer layers, ResNet bottlenecks, DLRM's two MLPs), which activation checkpointing
    recomputes and FSDP wraps one by one (bench/peer_methods.py)."""

    model: object
    make_batch: Callable[[int], tuple]
    loss_fn: Callable[[object, tuple], object]
    make_optimizer: Callable[[object, object], object]
    batch: int
    info: dict
    blocks: list


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds --workload and the sizing flags (default: the workload's own sizes)."""
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="gpt2",
                        help="model to train (default gpt2)")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32 (default), or bf16: bfloat16 autocast with fused AdamW (transformers)")
    parser.add_argument("--device-moments", type=float, default=None, metavar="FRACTION",
                        help="bf16 only, a probe: AdamW's moments of the parameters that make up the first "
                             "FRACTION (0 to 1) of the parameters' bytes, in model order, in plain GPU memory "
                             "outside unified memory (train.py takes their segments out of --capacity)")
    for name, (kind, text) in SIZE_FLAGS.items():
        parser.add_argument(_flag(name), dest=name, type=kind, default=None, help=text)


def sizes(args) -> tuple[str, dict]:
    """(family, sizes): the workload's defaults overridden by the flags that were given."""
    if args.workload not in WORKLOADS:
        raise ValueError(f"unknown workload {args.workload!r}; choose one of {', '.join(sorted(WORKLOADS))}")
    family, defaults = WORKLOADS[args.workload]
    given = {name: getattr(args, name) for name in SIZE_FLAGS if getattr(args, name, None) is not None}
    foreign = sorted(set(given) - set(defaults))
    if foreign:
        raise ValueError(f"{', '.join(_flag(name) for name in foreign)} not used by workload {args.workload}; "
                         f"its sizes are {', '.join(_flag(name) for name in sorted(defaults))}")
    values = {**defaults, **given}
    for name, value in values.items():
        if isinstance(value, int) and value < 1:
            raise ValueError(f"{_flag(name)} must be a positive integer, got {value}")
    if family in TRANSFORMER_FAMILIES and values["hidden"] % values["heads"]:
        raise ValueError(f"--heads {values['heads']} must divide --hidden {values['hidden']}")
    if family == "moe" and values["experts"] < MOE_TOP_K:
        raise ValueError(f"--experts must be at least {MOE_TOP_K} (top-{MOE_TOP_K} routing), got {values['experts']}")
    fraction = device_moments(args)
    if fraction and (_precision(args) != "bf16" or not 0 < fraction <= 1):
        raise ValueError(f"--device-moments must be in (0, 1] and needs --precision bf16, got {fraction}")
    if _precision(args) != "fp32" and family not in TRANSFORMER_FAMILIES:
        raise ValueError(f"--precision {_precision(args)} applies to the transformers "
                         f"({', '.join(TRANSFORMER_FAMILIES)}), not to {family}")
    if family == "dlrm":
        for name in ("bottom_mlp", "top_mlp"):
            values[name] = _widths(values[name], name)
    return family, values


def workload_id(args) -> str:
    """A canonical name for the workload at its sizes, e.g. "gpt2 batch=4 heads=16 ..." (with
    " precision=bf16" when not fp32); records with the same id trained the same model on the same
    data in the same way."""
    family, values = sizes(args)
    text = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(values.items()))
    precision = _precision(args)
    moments = device_moments(args)
    return (f"{family} {text}" + ("" if precision == "fp32" else f" precision={precision}")
            + (f" device_moments={moments}" if moments else ""))


def build(torch, args, device="cpu", seed: int = 0) -> Workload:
    """The workload named by args.workload at the sizes of `sizes(args)`, its parameters initialised
    on `device` from `seed` (data from seed + 1), trained at args.precision."""
    family, values = sizes(args)
    torch.manual_seed(seed)
    with torch.device(device):
        workload = _BUILDERS[family](torch, values, seed + 1)
    if _precision(args) == "bf16":
        workload = _bf16_autocast(torch, workload, torch.device(device).type, device_moments(args))
    return workload


def _precision(args) -> str:
    return getattr(args, "precision", None) or "fp32"


def device_moments(args) -> float:
    """--device-moments, 0 where not given."""
    return getattr(args, "device_moments", None) or 0.0


MiB = 1 << 20


def device_moment_parameters(model, fraction: float) -> list:
    """The parameters whose AdamW moments --device-moments FRACTION places in plain GPU memory: the
    longest prefix, in model order, of at most FRACTION of the parameters' bytes."""
    params = list(model.parameters())
    limit = fraction * sum(p.numel() * p.element_size() for p in params)
    chosen, total = [], 0
    for p in params:
        total += p.numel() * p.element_size()
        if total > limit:
            break
        chosen.append(p)
    return chosen


def device_moment_bytes(params: list) -> int:
    """An upper bound on the GPU memory PyTorch's caching allocator reserves for the two moments of
    each of `params`: a tensor of 1 MiB or more rounded up to 2 MiB (those under 10 MiB share 20 MiB
    segments: one more such segment), the smaller ones together rounded up to 2 MiB."""
    large = small = 0
    for p in params:
        size = p.numel() * p.element_size()
        if size >= MiB:
            large += 2 * -(-size // (2 * MiB)) * 2 * MiB
        else:
            small += 2 * -(-size // 512) * 512
    return large + 20 * MiB + -(-small // (2 * MiB)) * 2 * MiB


def device_moment_reserve(torch, args) -> int:
    """device_moment_bytes of the workload's --device-moments choice (0 without it), from a build on
    the meta device: no memory, no CUDA."""
    fraction = device_moments(args)
    if not fraction:
        return 0
    return device_moment_bytes(device_moment_parameters(build(torch, args, device="meta").model, fraction))


def _fused_adamw_moments_on_device(fraction: float):
    """make_optimizer: fused AdamW whose state for device_moment_parameters(model, fraction) is made
    now, as AdamW makes it at its first step, in a MemPool of plain GPU memory (the optimizer keeps the
    pool as `device_moment_pool`)."""
    def make(torch, model):
        optimizer = _fused_adamw(torch, model)
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            for p in device_moment_parameters(model, fraction):
                optimizer.state[p] = {
                    "step": torch.tensor(0.0, dtype=torch.float32, device=p.device),
                    "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                }
        optimizer.device_moment_pool = pool
        return optimizer

    return make


def _fused_adamw(torch, model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)


def _bf16_autocast(torch, workload: Workload, device_type: str, device_moments: float = 0.0) -> Workload:
    """The workload trained as users train transformers: forward under bfloat16 autocast, fused AdamW
    (with device_moments, part of its state in plain GPU memory: _fused_adamw_moments_on_device)."""
    plain_loss = workload.loss_fn

    def loss_fn(model, batch):
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            return plain_loss(model, batch)

    make_optimizer = _fused_adamw_moments_on_device(device_moments) if device_moments else _fused_adamw
    info = dict(workload.info, precision="bf16", optimizer="fused AdamW")
    if device_moments:
        info["device_moments"] = device_moments
    return dataclasses.replace(workload, loss_fn=loss_fn, make_optimizer=make_optimizer, info=info)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _widths(text, name: str) -> list[int]:
    if isinstance(text, list):
        return text
    try:
        widths = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        widths = []
    if not widths or min(widths) < 1:
        raise ValueError(f"{_flag(name)} must be positive widths separated by commas, e.g. 512,256; "
                         f"got {text!r}")
    return widths


def _batches(torch, seed: int, make: Callable) -> Callable[[int], tuple]:
    """make_batch(step): DISTINCT_BATCHES batches made by make(generator), cycled."""
    cache: dict[int, tuple] = {}

    def make_batch(step: int) -> tuple:
        index = step % DISTINCT_BATCHES
        if index not in cache:
            generator = torch.Generator(device="cpu").manual_seed(seed * 1000 + index)
            with torch.device("cpu"):
                cache[index] = make(generator)
        return cache[index]

    return make_batch


def _adam(torch, model):
    return torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)


def _attention(torch, q, k, v, causal: bool):
    """softmax(q k^T / sqrt(d)) v over (batch, heads, tokens, d), explicit and deterministic."""
    scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    if causal:
        t = q.shape[-2]
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def _split_heads(x, heads: int):
    """(b, t, 3c) -> q, k, v of shape (b, heads, t, c / heads)."""
    b, t, c3 = x.shape
    return x.view(b, t, 3, heads, c3 // 3 // heads).permute(2, 0, 3, 1, 4)


def _mlp(torch, hidden: int):
    """The transformer's feed-forward layer: hidden -> 4 x hidden, GELU, -> hidden."""
    nn = torch.nn
    return nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))


def moe_layer(torch, hidden: int, experts: int):
    """A mixture-of-experts feed-forward layer: a router scores each token for every expert (4x MLPs,
    as in gpt2), the token goes to its MOE_TOP_K best, and their outputs are summed weighted by the
    softmax of the chosen scores. forward(x (..., hidden)) -> (..., hidden)."""
    nn = torch.nn

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(hidden, experts, bias=False)
            self.experts = nn.ModuleList(_mlp(torch, hidden) for _ in range(experts))

        def forward(self, x):
            tokens = x.reshape(-1, hidden)
            scores, chosen = self.router(tokens).topk(MOE_TOP_K, dim=-1)        # (tokens, top-k)
            weights = scores.softmax(-1).reshape(-1)                           # by token * top-k + slot
            out = torch.zeros_like(tokens)
            for index, expert in enumerate(self.experts):
                token, slot = (chosen == index).nonzero(as_tuple=True)
                weight = weights.index_select(0, token * MOE_TOP_K + slot).unsqueeze(-1)
                contribution = expert(tokens.index_select(0, token)) * weight  # autocast may give bfloat16
                out = out.index_add(0, token, contribution.to(out.dtype))
            return out.view_as(x)

    return MoE()


def gpt2_model(torch, layers: int, hidden: int, heads: int, vocab: int, seq: int, feed_forward=None):
    """A GPT-2-style decoder: token and position embeddings, pre-norm blocks of causal attention and
    a feed-forward layer (feed_forward(), default a 4x MLP), a final norm and a tied LM head.
    forward(idx) -> logits (batch, tokens, vocab)."""
    nn = torch.nn
    feed_forward = feed_forward or (lambda: _mlp(torch, hidden))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.mlp = feed_forward()

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = _split_heads(self.qkv(self.ln1(x)), heads)
            attn = _attention(torch, q, k, v, causal=True)
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(hidden)
            for embedding in (self.tok, self.pos):
                nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's initialisation

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            return self.ln(x) @ self.tok.weight.t()

    return GPT()


def _build_gpt2(torch, s: dict, seed: int) -> Workload:
    feed_forward = (lambda: moe_layer(torch, s["hidden"], s["experts"])) if "experts" in s else None
    model = gpt2_model(torch, s["layers"], s["hidden"], s["heads"], s["vocab"], s["seq"], feed_forward)
    vocab = s["vocab"]

    def make(generator):
        return (torch.randint(0, vocab, (s["batch"], s["seq"] + 1), generator=generator),)

    def loss_fn(model, batch):
        (tokens,) = batch
        logits = model(tokens[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))

    return Workload(model, _batches(torch, seed, make), loss_fn, _adam, s["batch"], dict(s), list(model.blocks))


def bert_model(torch, layers: int, hidden: int, heads: int, vocab: int, seq: int):
    """A BERT-style encoder: token, position and segment embeddings, post-norm blocks of
    bidirectional attention and a 4x MLP, and the MLM head (dense, GELU, norm, decoder tied to the
    token embedding). forward(tokens, segments, positions) -> logits (batch, masked, vocab) at the
    masked `positions` only."""
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = _split_heads(self.qkv(x), heads)
            attn = _attention(torch, q, k, v, causal=False)
            x = self.ln1(x + self.proj(attn.transpose(1, 2).reshape(b, t, c)))
            return self.ln2(x + self.fc2(nn.functional.gelu(self.fc1(x))))

    class BERT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
            self.seg = nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden))
            self.decoder_bias = nn.Parameter(torch.zeros(vocab))
            for embedding in (self.tok, self.pos, self.seg):
                nn.init.normal_(embedding.weight, std=0.02)  # BERT's initialisation

        def forward(self, tokens, segments, positions):
            t = tokens.shape[1]
            x = self.ln(self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device)) + self.seg(segments))
            for layer in self.layers:
                x = layer(x)
            picked = torch.gather(x, 1, positions.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
            return self.head(picked) @ self.tok.weight.t() + self.decoder_bias

    return BERT()


def _build_bert(torch, s: dict, seed: int) -> Workload:
    model = bert_model(torch, s["layers"], s["hidden"], s["heads"], s["vocab"], s["seq"])
    batch, seq, vocab = s["batch"], s["seq"], s["vocab"]
    masked = max(1, round(MLM_FRACTION * seq))

    def make(generator):
        tokens = torch.randint(0, vocab, (batch, seq), generator=generator)
        segments = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).contiguous()
        positions = torch.rand(batch, seq, generator=generator).argsort(-1)[:, :masked].sort(-1).values
        labels = torch.gather(tokens, 1, positions)
        tokens = tokens.scatter(1, positions, MASK_TOKEN % vocab)
        return tokens, segments, positions, labels

    def loss_fn(model, batch):
        tokens, segments, positions, labels = batch
        logits = model(tokens, segments, positions)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), labels.reshape(-1))

    info = dict(s, masked_per_sequence=masked)
    return Workload(model, _batches(torch, seed, make), loss_fn, _adam, batch, info, list(model.layers))


RESNET152_BLOCKS = (3, 8, 36, 3)
"""Bottleneck blocks per stage of ResNet-152."""


def resnet152_model(torch, classes: int):
    """ResNet-152 (bottleneck blocks 3-8-36-3, expansion 4), from torchvision when it is importable,
    else a built-in definition with the same layout (module names, shapes and initialisation). The
    global average pool is a mean over height and width (AdaptiveAvgPool2d has no deterministic CUDA
    backward). Returns (model, "torchvision" or "built-in")."""
    nn = torch.nn

    class MeanPool(nn.Module):
        def forward(self, x):
            return x.mean((-2, -1), keepdim=True)

    try:
        import torchvision
    except ImportError:
        torchvision = None
    if torchvision is not None:
        model = torchvision.models.resnet152(weights=None, num_classes=classes)
        model.avgpool = MeanPool()
        return model, "torchvision"

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes: int, planes: int, stride: int):
            super().__init__()
            out = planes * self.expansion
            self.conv1, self.bn1 = nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3, self.bn3 = nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or inplanes != out:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(out))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            inplanes = 64
            for index, (planes, blocks) in enumerate(zip((64, 128, 256, 512), RESNET152_BLOCKS)):
                stride = 1 if index == 0 else 2
                stage = []
                for block in range(blocks):
                    stage.append(Bottleneck(inplanes, planes, stride if block == 0 else 1))
                    inplanes = planes * Bottleneck.expansion
                setattr(self, f"layer{index + 1}", nn.Sequential(*stage))
            self.avgpool = MeanPool()
            self.fc = nn.Linear(inplanes, classes)
            for m in self.modules():  # torchvision's initialisation
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet(), "built-in"


def _build_resnet152(torch, s: dict, seed: int) -> Workload:
    model, implementation = resnet152_model(torch, s["classes"])

    def make(generator):
        images = torch.randn(s["batch"], 3, s["image"], s["image"], generator=generator)
        return images, torch.randint(0, s["classes"], (s["batch"],), generator=generator)

    def loss_fn(model, batch):
        images, labels = batch
        return torch.nn.functional.cross_entropy(model(images), labels)

    def sgd(torch, model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)

    bottlenecks = [block for stage in (model.layer1, model.layer2, model.layer3, model.layer4) for block in stage]
    return Workload(model, _batches(torch, seed, make), loss_fn, sgd, s["batch"],
                    dict(s, implementation=implementation), bottlenecks)


def dlrm_model(torch, tables: int, rows: int, dim: int, dense_features: int, bottom: list[int], top: list[int]):
    """A DLRM-like recommender: a bottom MLP over the dense features, one EmbeddingBag (sum of the
    looked-up rows, sparse gradients) per categorical feature, pairwise dot-product interactions of
    the dense and embedded vectors, and a top MLP to one logit. forward(dense (batch, features),
    indices (tables, batch, lookups)) -> logits (batch,)."""
    nn = torch.nn

    def mlp(widths: list[int], last_relu: bool):
        layers = []
        for i, (a, b) in enumerate(zip(widths, widths[1:])):
            layers.append(nn.Linear(a, b))
            if last_relu or i < len(widths) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    features = tables + 1
    pairs = torch.triu_indices(features, features, offset=1)

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = mlp([dense_features, *bottom, dim], last_relu=True)
            self.embeddings = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for _ in range(tables))
            for table in self.embeddings:  # DLRM's initialisation
                nn.init.uniform_(table.weight, -rows ** -0.5, rows ** -0.5)
            self.top = mlp([dim + features * (features - 1) // 2, *top, 1], last_relu=False)
            self.register_buffer("pairs", pairs[0] * features + pairs[1], persistent=False)

        def forward(self, dense, indices):
            vectors = [self.bottom(dense)] + [table(idx) for table, idx in zip(self.embeddings, indices)]
            x = torch.stack(vectors, 1)                                   # (batch, features, dim)
            dots = (x @ x.transpose(1, 2)).flatten(1).index_select(1, self.pairs)
            return self.top(torch.cat([vectors[0], dots], 1)).squeeze(1)

    return DLRM()


def _build_dlrm(torch, s: dict, seed: int) -> Workload:
    model = dlrm_model(torch, s["tables"], s["rows"], s["dim"], s["dense_features"], s["bottom_mlp"], s["top_mlp"])

    def make(generator):
        dense = torch.randn(s["batch"], s["dense_features"], generator=generator)
        indices = torch.randint(0, s["rows"], (s["tables"], s["batch"], s["lookups"]), generator=generator)
        return dense, indices, torch.randint(0, 2, (s["batch"],), generator=generator).float()

    def loss_fn(model, batch):
        dense, indices, labels = batch
        return torch.nn.functional.binary_cross_entropy_with_logits(model(dense, indices), labels)

    def sgd(torch, model):  # sparse gradients: only the looked-up rows are updated
        return torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)

    return Workload(model, _batches(torch, seed, make), loss_fn, sgd, s["batch"], dict(s), [model.bottom, model.top])


_BUILDERS = {"gpt2": _build_gpt2, "moe": _build_gpt2, "bert": _build_bert, "resnet152": _build_resnet152, "dlrm": _build_dlrm}
