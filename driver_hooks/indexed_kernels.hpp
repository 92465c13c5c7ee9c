// Indexed kernels: kernels that reach an operand through an index tensor (embedding lookups, gathers,
// scatters, the sparse update of an embedding table) and so touch only the rows the index names. Host
// mapping maps a block only such kernels used whatever the span of its uses (policy.hpp,
// Options::host_map_indexed). deepum/specs/indexed_kernels.py is the readable specification, with the
// reason for each mark; tests/test_kernel_kinds.py checks that both classify alike.
#pragma once
#include "kernel_marks.hpp"

namespace deepum {

// Substrings that mark a kernel's name (mangled or not) as indexed: PyTorch's CUDA kernels of that kind.
constexpr const char* kIndexedKernelMarks[] = {
    "EmbeddingBag_",          "embedding_backward",        "indexSelect",
    "vectorized_gather_kernel", "indexFunc",               "indexing_backward_kernel",
    "index_elementwise_kernel", "scatter_gather_elementwise_kernel", "sparseElementwiseKernel",
};

// Whether the kernel named `name` is indexed (false without a name).
inline bool indexed_kernel(const char* name) { return has_mark(name, kIndexedKernelMarks); }

}  // namespace deepum
