// Fill kernels: kernels that write one value over a tensor (PyTorch's fill_, zero_, zeros_like), which
// initialize memory just allocated. Host mapping does not count their launches among a block's uses
// (next_use.hpp count_use). deepum/specs/fill_kernels.py is the readable specification;
// tests/test_kernel_kinds.py checks that both classify alike.
#pragma once
#include "kernel_marks.hpp"

namespace deepum {

// Substrings that mark a kernel's name (mangled or not) as a fill.
constexpr const char* kFillKernelMarks[] = {"FillFunctor"};

// Whether the kernel named `name` is a fill (false without a name).
inline bool fill_kernel(const char* name) { return has_mark(name, kFillKernelMarks); }

}  // namespace deepum
