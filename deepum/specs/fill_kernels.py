"""Fill kernels: the readable specification of driver_hooks/fill_kernels.hpp.

A fill kernel writes one value over a tensor: PyTorch's zeros_like, zero_ and fill_, which initialize
memory just allocated (an optimizer's state when it is created). Such a launch gives a block no data
that lives on, so host mapping (deepum.specs.policy) does not count it among the block's uses: the
optimizer's state, created and zero-filled a third of the first step before its first update, is then
seen as what it is, a block used briefly once a step.

A kernel is a fill kernel when its name, as the launch hook or the trace gives it (mangled or not),
contains one of FILL_KERNEL_MARKS. A fill kernel of another library is simply not recognised: its
launches count as uses.
"""
from __future__ import annotations

from .kernel_marks import has_mark

FILL_KERNEL_MARKS = (
    "FillFunctor",  # fill_, zero_, zeros_like, ones_like, full_like
)
"""Substrings that mark a kernel's name as a fill."""


def is_fill(name: str | None) -> bool:
    """Whether the kernel named `name` fills a tensor with one value (False without a name)."""
    return has_mark(name, FILL_KERNEL_MARKS)
