// Borrowed views of a trace's arrays (docs/trace-format.md names), accesses remapped to dense blocks.
#pragma once
#include <cstddef>
#include <cstdint>

namespace deepum {

// A kernel's kind, by its name: bits of TraceView::kinds.
constexpr uint8_t kIndexedKernel = 1;  // indexed_kernels.hpp
constexpr uint8_t kFillKernel = 2;     // fill_kernels.hpp

struct TraceView {
  size_t kernels = 0;
  const uint64_t* exec_id = nullptr;
  const uint8_t* kinds = nullptr;           // per kernel: its kind bits
  const int64_t* duration_ns = nullptr;
  const int64_t* access_offsets = nullptr;  // kernels + 1
  const int32_t* access_block = nullptr;    // dense block index
  const int16_t* access_pages = nullptr;
  const uint8_t* access_write = nullptr;
  size_t blocks = 0;
  const int64_t* block_number = nullptr;    // dense -> trace block number (sorted ascending)
  size_t mem_events = 0;
  const int64_t* mem_kernel = nullptr;
  const int8_t* mem_action = nullptr;
  const uint64_t* mem_address = nullptr;
  const uint64_t* mem_bytes = nullptr;
  size_t iterations = 0;
  const int64_t* iteration_first_kernel = nullptr;  // increasing
};

}  // namespace deepum
