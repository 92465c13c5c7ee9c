// The allocator hook: the caching allocator's trace entries become memory map events (and, when a
// trace is recorded, its memory events). Attached once per process: live allocations must be known
// across engines.
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "online.hpp"

namespace CA = c10::cuda::CUDACachingAllocator;

namespace deepum {
namespace {

void on_event(const CA::TraceEntry& e) {
  Runtime& rt = runtime();
  const uint64_t addr = e.addr_, size = e.size_;
  MemAction action;
  switch (e.action_) {
    case CA::TraceEntry::ALLOC:
      rt.memory.on_alloc(addr, size, reinterpret_cast<cudaStream_t>(e.stream_));
      action = MemAction::kAlloc;
      break;
    case CA::TraceEntry::FREE_COMPLETED: rt.memory.on_free_completed(addr); action = MemAction::kFree; break;
    case CA::TraceEntry::SEGMENT_ALLOC:
      rt.memory.on_segment_alloc(addr, size);
      action = MemAction::kSegmentAlloc;
      break;
    case CA::TraceEntry::SEGMENT_FREE:
      rt.memory.on_segment_free(addr, size);
      action = MemAction::kSegmentFree;
      break;
    default: return;
  }
  if (rt.recorder.on.load(std::memory_order_relaxed)) rt.recorder.memory(int8_t(action), addr, size);
}

}  // namespace

void attach_allocator_hook() {
  std::call_once(runtime().allocator_hook_attached, [] { CA::attachAllocatorTraceTracker(on_event); });
}

}  // namespace deepum
