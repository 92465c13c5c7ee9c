"""Trains a workload for a fixed number of steps in one deepum mode and writes one JSON record.

Each mode needs its own process (deepum.enable() must precede CUDA), so bench/gpu_check.py and
bench/run_all.py call this script once per mode. Random data, random initialisation, no downloads.

    python bench/train.py --mode deepum --capacity 8GiB --layers 24 --hidden 1024 --steps 20 -o out.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import deepum  # noqa: E402
from deepum.runtime import MODES  # noqa: E402


def gpt2_model(torch, layers: int, hidden: int, heads: int, vocab: int, seq: int):
    """A GPT-2-style decoder: token and position embeddings, pre-norm blocks of causal attention
    (explicit matmul + softmax, deterministic) and a 4x MLP, a final norm and a tied LM head."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(-1, -2)) / (c // heads) ** 0.5
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            attn = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))

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


def parameter_digest(model) -> str:
    """sha256 over every parameter's bytes, in order: equal digests mean bitwise-equal parameters."""
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="deepum")
    parser.add_argument("--capacity", default=None, help="GPU budget: bytes or 8GiB-style (default: free memory)")
    parser.add_argument("--config", default=None, help="DeepUMConfig JSON (e.g. from deepum tune)")
    parser.add_argument("--no-prefetch", action="store_true")
    parser.add_argument("--no-pre-evict", action="store_true")
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5, help="steps left out of the step-time figures")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)

    import dataclasses
    config = deepum.DeepUMConfig.load(args.config) if args.config else deepum.DeepUMConfig()
    config = dataclasses.replace(config, prefetch=not args.no_prefetch, pre_evict=not args.no_pre_evict)
    session = deepum.enable(args.mode, capacity=args.capacity, config=config)

    import torch

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = gpt2_model(torch, args.layers, args.hidden, args.heads, args.vocab, args.seq).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    generator = torch.Generator(device="cpu").manual_seed(args.seed + 1)
    batches = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=generator) for _ in range(4)]

    step_s, losses = [], []
    for step in range(args.steps):
        tokens = batches[step % len(batches)].cuda(non_blocking=False)
        torch.cuda.synchronize()
        start = time.perf_counter()
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        torch.cuda.synchronize()
        step_s.append(time.perf_counter() - start)
        losses.append(float(loss))
        deepum.mark_iteration()
        print(f"step {step} {step_s[-1] * 1e3:.1f} ms loss {losses[-1]:.4f}", flush=True)

    stats = deepum.stats()
    measured = step_s[args.warmup:] or step_s
    record = {
        "workload": "gpt2", "layers": args.layers, "hidden": args.hidden, "seq": args.seq, "batch": args.batch,
        "mode": args.mode, "capacity_bytes": stats.get("capacity_bytes"),
        "footprint_bytes": torch.cuda.max_memory_reserved() if args.mode == "none" else stats.get("managed_bytes_peak"),
        "step_s": step_s, "step_s_median": statistics.median(measured),
        "step_s_spread": (max(measured) - min(measured)) if len(measured) > 1 else 0.0,
        "samples_per_s": args.batch / statistics.median(measured),
        "losses": losses, "parameter_sha256": parameter_digest(model),
        "device": torch.cuda.get_device_name(), "stats": stats, "config": config.to_dict(),
    }
    session.__exit__(None, None, None)
    Path(args.output).write_text(json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
