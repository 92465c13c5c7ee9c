// Points in the launching streams' work that the CPU can see without a CUDA call: a stream writes the
// mark's number to its word of pinned host memory once the work launched before the mark has
// completed. The threads that move blocks through the unified-memory driver (move_pool.hpp) wait for
// marks instead of events: they must make no call that takes the CUDA driver's lock.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <unordered_map>

#include "commands.hpp"
#include "fault_injection.hpp"
#include "host_words.hpp"

namespace deepum {

class StreamMarks {
 public:
  static constexpr size_t kStreams = 256;  // launching streams with a word; the work of others is waited for

  bool ok() const { return words_.ok(); }
  // Marks the work launched so far on `stream` into `out`. False where it cannot be marked (no word
  // left, or the write refused): the caller then waits for that work on the CPU.
  bool mark(CUstream stream, Mark& out) {
    auto it = slots_.find(stream);
    if (it == slots_.end()) {
      if (slots_.size() == kStreams) return false;
      it = slots_.emplace(stream, slots_.size()).first;
    }
    const size_t slot = it->second;
    const uint64_t value = written_[slot] + 1;
    if (DEEPUM_GUARDED(cuStreamWriteValue64(stream, words_.device(slot), value, 0), CUDA_ERROR_UNKNOWN) !=
        CUDA_SUCCESS)
      return false;
    written_[slot] = value;
    out = Mark{&words_, slot, value};
    return true;
  }

 private:
  HostWords words_{kStreams};
  std::unordered_map<CUstream, size_t> slots_;
  uint64_t written_[kStreams] = {};
};

}  // namespace deepum
