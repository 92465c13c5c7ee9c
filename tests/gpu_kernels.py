"""The GPU tests' kernels (kernels/access_patterns.cu), compiled by CuPy's RawModule and wrapped as
functions of torch tensors, launched on PyTorch's current stream; with their numpy counterparts.

CuPy is imported at the first launch, never at import: a script must call deepum.enable() (which
must precede CUDA) before it launches one of these. CuPy then shares PyTorch's primary context, and
it allocates nothing: every buffer is a torch tensor, passed by its data_ptr().
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent.parent / "kernels" / "access_patterns.cu"
KERNELS = ("touch_pages", "gather_sum", "checksum")
PAGE_BYTES = 4096
WORDS_PER_PAGE = PAGE_BYTES // 4
THREADS = 256
MASK64 = (1 << 64) - 1


@functools.lru_cache(maxsize=None)
def _module():
    import cupy

    module = cupy.RawModule(code=SOURCE.read_text())
    return {name: module.get_function(name) for name in KERNELS}


def _launch(name: str, grid: int, block: int, args: tuple) -> None:
    """Launch kernel `name` on PyTorch's current stream."""
    import cupy
    import torch

    kernel = _module()[name]
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        kernel((grid,), (block,), args)


def _words(tensor) -> int:
    """32-bit words in a contiguous CUDA tensor."""
    if not tensor.is_cuda or not tensor.is_contiguous():
        raise ValueError("the kernels take contiguous CUDA tensors")
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes % 4:
        raise ValueError(f"a tensor of {nbytes} bytes is not a whole number of 32-bit words")
    return nbytes // 4


def _pointer(tensor) -> np.uint64:
    return np.uint64(tensor.data_ptr())


def touch_pages(tensor, first_page: int, pages: int, stride: int = 1, *, seed: int = 0, write: bool = False,
                sum_into=None) -> None:
    """Touch pages first_page, first_page + stride, ... (`pages` of them, 4 KiB pages counted from the
    tensor's first byte), one thread each: write=True fills each with the pattern of `seed` (see
    `pattern`); otherwise adds each page's words into `sum_into` (a CUDA int64 tensor of one element)."""
    if pages <= 0 or stride <= 0 or first_page < 0:
        raise ValueError("pages and stride must be positive and first_page >= 0")
    if (first_page + (pages - 1) * stride + 1) * WORDS_PER_PAGE > _words(tensor):
        raise ValueError("the pages run past the end of the tensor")
    if not write and (sum_into is None or sum_into.dtype.itemsize != 8):
        raise ValueError("reading pages needs sum_into, a CUDA tensor of one 64-bit element")
    total = np.uint64(0) if write else _pointer(sum_into)
    _launch("touch_pages", -(-pages // THREADS), THREADS,
            (_pointer(tensor), np.int64(first_page), np.int64(pages), np.int64(stride), np.uint32(seed),
             np.int32(1 if write else 0), total))


def gather_sum(pointers, words: int, out) -> None:
    """out[b] += the checksum of the first `words` words of the buffer whose address is pointers[b]
    (`pointers`: a CUDA int64 tensor of addresses; `out`: a CUDA int64 tensor as long)."""
    if pointers.dtype.itemsize != 8 or out.dtype.itemsize != 8 or out.numel() < pointers.numel():
        raise ValueError("pointers and out must be CUDA tensors of 64-bit elements, out at least as long")
    _words(pointers)
    _words(out)
    _launch("gather_sum", pointers.numel(), THREADS, (_pointer(pointers), np.int64(pointers.numel()),
                                                      np.int64(words), _pointer(out)))


def checksum(tensor) -> int:
    """The checksum of the tensor's words (see `weighted_checksum`), computed on the GPU."""
    import torch

    words = _words(tensor)
    out = torch.zeros(1, dtype=torch.int64, device=tensor.device)
    _launch("checksum", min(-(-words // THREADS), 1024), THREADS, (_pointer(tensor), np.int64(words), _pointer(out)))
    return int(out.item()) & MASK64


# --- numpy counterparts ------------------------------------------------------------------------

def pattern(seed: int, first_word: int, count: int) -> np.ndarray:
    """The words the pattern of `seed` puts at word indices first_word .. first_word + count - 1."""
    x = np.arange(first_word, first_word + count, dtype=np.uint64).astype(np.uint32)
    x += np.uint32((seed * 0x9E3779B9) & 0xFFFFFFFF)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def weighted_checksum(words: np.ndarray, first_word: int = 0) -> int:
    """Sum over the words of value times ((index & 0xffff) + 1), modulo 2**64."""
    index = np.arange(first_word, first_word + words.shape[0], dtype=np.uint64)
    return int((words.astype(np.uint64) * ((index & np.uint64(0xFFFF)) + np.uint64(1))).sum(dtype=np.uint64))


def word_sum(words: np.ndarray) -> int:
    """Sum of the words modulo 2**64 (what reading pages with touch_pages adds up)."""
    return int(words.astype(np.uint64).sum(dtype=np.uint64))
