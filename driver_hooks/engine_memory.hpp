// The engine's memory map (memory_map.hpp) on CUDA: allocations wait on streams for discard events.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>

#include "fault_injection.hpp"
#include "memory_map.hpp"

namespace deepum {

// The completion of an issued discard: allocations of its memory wait for it.
using DiscardEvent = std::shared_ptr<CUevent_st>;

// An allocation's stream waits for a discard of its memory (MemoryMap's wait); if the stream cannot be
// made to wait, the CPU waits for the discard before the memory is handed out.
inline void stream_waits(cudaStream_t stream, const DiscardEvent& done) {
  const auto event = reinterpret_cast<cudaEvent_t>(done.get());
  if (DEEPUM_GUARDED(cudaStreamWaitEvent(stream, event, 0), cudaErrorUnknown) != cudaSuccess) {
    cudaGetLastError();
    cudaEventSynchronize(event);
  }
}

// The memory map of the engine and its worker: CUDA streams and discard events.
using EngineMemory = MemoryMap<cudaStream_t, DiscardEvent>;

}  // namespace deepum
