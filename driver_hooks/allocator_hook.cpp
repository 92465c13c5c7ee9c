// The allocator hook: the caching allocator's trace entries become memory map events (and, when a
// trace is recorded, its memory events). Attached once per process: live allocations must be known
// across engines. Only deepum's managed segments on its device enter the map; allocations elsewhere
// (other pools, other devices, plain device memory made while no session routes) are ignored.

#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "online.hpp"

namespace CA = c10::cuda::CUDACachingAllocator;

namespace deepum {
namespace {

bool managed_on_our_device(const CA::TraceEntry& e) {
  if (e.device_ != runtime().device.load(std::memory_order_relaxed)) return false;
  unsigned int managed = 0;
  return cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, CUdeviceptr(e.addr_)) == CUDA_SUCCESS &&
         managed;
}

void on_event(const CA::TraceEntry& e) {
  Runtime& rt = runtime();
  const uint64_t addr = e.addr_, size = e.size_;
  MemAction action;
  switch (e.action_) {
    case CA::TraceEntry::ALLOC:
      if (!rt.memory.on_alloc(addr, size, reinterpret_cast<cudaStream_t>(e.stream_))) return;
      action = MemAction::kAlloc;
      break;
    case CA::TraceEntry::FREE_COMPLETED:
      if (!rt.memory.on_free_completed(addr)) return;
      action = MemAction::kFree;
      break;
    case CA::TraceEntry::SEGMENT_ALLOC:
      if (!managed_on_our_device(e)) return;
      rt.memory.on_segment_alloc(addr, size);
      action = MemAction::kSegmentAlloc;
      break;
    case CA::TraceEntry::SEGMENT_FREE:
      rt.memory.on_segment_free(addr, size);  // ignored unless the segment is known
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
