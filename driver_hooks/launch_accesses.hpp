// A launch's accesses as the launch hook reads them from its arguments (launch_hook.cpp) and the
// recorder keeps them. Header-only, no CUDA, no Python.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepum {

struct Access {
  int64_t block;
  int32_t pages;  // distinct 4 KiB pages the kernel's arguments cover in the block
  bool write;     // the argument's allocation was made since the previous launch (a fresh output)
};

// The rows read from a launch's arguments (one per allocation and block) become one row per block, in
// ascending order: pages summed (the recorder caps them at 512), writes or-ed. In place, so that a
// launching thread that keeps the vector allocates nothing once it has grown.
inline void merge_by_block(std::vector<Access>& accesses) {
  std::sort(accesses.begin(), accesses.end(), [](const Access& a, const Access& b) { return a.block < b.block; });
  size_t rows = 0;
  for (size_t i = 0; i < accesses.size(); ++i) {
    if (rows && accesses[rows - 1].block == accesses[i].block) {
      accesses[rows - 1].pages += accesses[i].pages;
      accesses[rows - 1].write = accesses[rows - 1].write || accesses[i].write;
    } else {
      accesses[rows++] = accesses[i];
    }
  }
  accesses.resize(rows);
}

}  // namespace deepum
