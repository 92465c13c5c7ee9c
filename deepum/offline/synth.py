"""Synthetic training traces, launched kernel by kernel: a GPT-2-like transformer and a ResNet, and three
irregular ones: the transformer on bucketed sequence lengths (the step that repeats is a cycle of buckets
back), a U-Net (long skip connections) and a mixture of experts (routing that changes every step).

Each generator plays one PyTorch training loop (zero_grad, forward, backward, optimizer step) against
the caching-allocator model, so tensor addresses, reuse of freed memory and allocator events look like
a real run. A kernel's accesses are the exact 4 KiB pages of the tensor extents it reads and writes,
grouped by 2 MiB block; its execution ID hashes its name and its tensor arguments, so the same layer
gets the same ID every iteration once the allocator repeats itself (from iteration 1 on: the first
optimizer step allocates the optimizer state). Durations follow a roofline for an H100/H200-class GPU
with seeded jitter. Model set-up (parameter initialisation) comes before iteration 0 (iteration -1).
"""
from __future__ import annotations

import inspect

from .synth_bucketed import synth_bucketed
from .synth_cnn import RESNET_LAYOUTS, synth_cnn
from .synth_moe import synth_moe
from .synth_transformer import synth_transformer
from .synth_unet import synth_unet

__all__ = ["GENERATORS", "generator_options", "synth_bucketed", "synth_cnn", "synth_moe", "synth_transformer",
           "synth_unet"]

GENERATORS = {"transformer": synth_transformer, "cnn": synth_cnn, "bucketed": synth_bucketed, "unet": synth_unet,
              "moe": synth_moe}

_TRANSFORMER_HELP = {
    "layers": "transformer blocks",
    "hidden": "model width (elements)",
    "heads": "attention heads (must divide hidden)",
    "seq": "sequence length (tokens)",
    "batch": "sequences per iteration",
    "vocab": "vocabulary size",
}
_HELP = {
    "transformer": _TRANSFORMER_HELP,
    "bucketed": {
        **_TRANSFORMER_HELP,
        "seq": "longest sequence length (tokens): the first bucket's",
        "buckets": "sequence-length buckets, taken in turn (step i pads to seq * (buckets - i % buckets) "
                   "// buckets tokens); 2 alternates two shapes",
    },
    "unet": {
        "levels": "poolings of the encoder (and upsamplings of the decoder)",
        "width": "channels of the top level (doubling per level down)",
        "image": "image side (pixels, a multiple of 2**levels)",
        "batch": "images per iteration",
        "classes": "classes per pixel",
    },
    "moe": {
        **_TRANSFORMER_HELP,
        "experts": "experts per block (each a 4 x hidden feed-forward network)",
        "active": "experts a block's router sends tokens to in a step, drawn anew each step and block "
                  "(each runs on batch * seq * top_k / active token slots)",
        "top_k": "experts each token goes to",
        "routing_seed": "seed of the routing (which experts each step and block uses)",
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
