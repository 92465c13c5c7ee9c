// Sizes and codes shared by every native part and, through deepum._native, by Python: the one place
// they are defined.
#pragma once
#include <cstdint>

namespace deepum {

constexpr int kBlockShift = 21;
constexpr uint64_t kBlockBytes = uint64_t(1) << kBlockShift;  // one UM block: 2 MiB
constexpr uint64_t kPageBytes = 4096;                         // the driver's migration unit
constexpr int kPagesPerBlock = int(kBlockBytes / kPageBytes);

// What the caching allocator did (a trace's mem_action column, docs/trace-format.md).
enum class MemAction : int8_t { kAlloc = 0, kFree = 1, kSegmentAlloc = 2, kSegmentFree = 3 };

}  // namespace deepum
