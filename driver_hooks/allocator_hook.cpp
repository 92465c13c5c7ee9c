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

// The sleep gate of the running engine follows the managed segments (sleep_gate.hpp); a segment made
// on `stream` that leaves it asleep is populated (deepum/specs/sleep.py).
void note_segment(Runtime& rt, uint64_t addr, uint64_t size, bool made, CUstream stream) {
  if (!rt.engine) return;
  std::lock_guard<std::mutex> lock(rt.sleep.mutex);
  if (!made)
    rt.sleep.gate.segment_free(spanned_bytes(addr, size));
  else if (rt.sleep.gate.segment_alloc(spanned_bytes(addr, size)))
    wake_engine();
  else if (rt.sleep.gate.asleep() && !rt.paused.load(std::memory_order_relaxed) && !being_captured(stream))
    rt.engine->populate_segment(addr, size, stream);
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
      note_segment(rt, addr, size, true, reinterpret_cast<CUstream>(e.stream_));
      action = MemAction::kSegmentAlloc;
      break;
    case CA::TraceEntry::SEGMENT_FREE:
      if (rt.memory.on_segment_free(addr, size)) note_segment(rt, addr, size, false, nullptr);  // a managed segment
      action = MemAction::kSegmentFree;
      break;
    default: return;
  }
  if (rt.recorder.on.load(std::memory_order_relaxed)) rt.recorder.memory(int8_t(action), addr, size);
}

}  // namespace

void attach_allocator_hook() {
  std::call_once(runtime().allocator_hook_attached, [] {
    CA::attachAllocatorTraceTracker(on_event);
    runtime().allocator_hook_on.store(true);
  });
}

}  // namespace deepum
