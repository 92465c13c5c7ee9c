// A kernel's kind by its name: the name, mangled or not, contains one of the kind's marks
// (indexed_kernels.hpp, fill_kernels.hpp; deepum/specs/kernel_marks.py is the readable specification).
#pragma once
#include <cstddef>
#include <cstring>

namespace deepum {

// Whether `name` contains one of `marks` (false without a name).
template <size_t N>
inline bool has_mark(const char* name, const char* const (&marks)[N]) {
  if (!name) return false;
  for (const char* mark : marks)
    if (std::strstr(name, mark)) return true;
  return false;
}

}  // namespace deepum
