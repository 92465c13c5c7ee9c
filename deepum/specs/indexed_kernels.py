"""Indexed kernels: the readable specification of driver_hooks/indexed_kernels.hpp.

A kernel that reaches an operand through an index tensor (an embedding lookup, a gather, a scatter, the
sparse update of an embedding table) touches only the rows the index names, so a large table it reads
costs it the bytes of those rows over the link if the table is mapped from the host, against the whole
table's blocks if the table migrates. Host mapping (deepum.specs.policy) therefore maps a block that
only such kernels used in the last iteration whatever the span of its uses
(``DeepUMConfig.host_map_indexed``).

A kernel is indexed when its name, as the launch hook or the trace gives it (mangled or not), contains
one of INDEXED_KERNEL_MARKS: the identifiers of PyTorch's CUDA kernels of that kind. A kernel of another
library that is indexed but not listed is simply not recognised: its blocks stay under the other rules.
"""
from __future__ import annotations

from .kernel_marks import has_mark

INDEXED_KERNEL_MARKS = (
    "EmbeddingBag_",                     # nn.EmbeddingBag forward and dense backward
    "embedding_backward",                # nn.Embedding backward
    "indexSelect",                       # index_select, nn.Embedding forward
    "vectorized_gather_kernel",          # index_select on contiguous rows
    "indexFunc",                         # index_add_, index_copy_, index_fill_
    "indexing_backward_kernel",          # index_put_ with accumulate: a dense tensor plus a sparse one
    "index_elementwise_kernel",          # advanced indexing, reading or writing
    "scatter_gather_elementwise_kernel",  # gather, scatter, scatter_add
    "sparseElementwiseKernel",           # a dense tensor plus a coalesced sparse one (sparse SGD)
)
"""Substrings that mark a kernel's name as indexed."""


def is_indexed(name: str | None) -> bool:
    """Whether the kernel named `name` reaches its operands through an index (False without a name)."""
    return has_mark(name, INDEXED_KERNEL_MARKS)
