// The engine's memory map (memory_map.hpp) on CUDA: allocations wait on streams for discards.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>

#include "fault_injection.hpp"
#include "host_words.hpp"
#include "memory_map.hpp"

namespace deepum {

// The completion of an issued discard, which allocations of its memory wait for: an event recorded
// after it on the worker's stream, or for a discard handed to threads of their own (move_pool.hpp)
// the discard lane's progress word (in pinned host memory) reaching its number.
struct DiscardEvent {
  std::shared_ptr<CUevent_st> event;
  std::shared_ptr<const HostWords> words;  // kept: the memory map outlives the worker that wrote them
  size_t lane = 0;
  uint64_t seq = 0;
};

// An allocation's stream waits for a discard of its memory (MemoryMap's wait); if the stream cannot be
// made to wait, the CPU waits for the discard before the memory is handed out. A discard of the
// threads that has returned is not waited for. The discard threads never take the memory map's lock,
// which the caller holds. Says whether anything was waited for.
inline bool stream_waits(cudaStream_t stream, const DiscardEvent& done) {
  if (done.words) {
    if (done.words->load(done.lane) >= done.seq) return false;
    if (DEEPUM_GUARDED(cuStreamWaitValue64(reinterpret_cast<CUstream>(stream), done.words->device(done.lane), done.seq,
                                           CU_STREAM_WAIT_VALUE_GEQ),
                       CUDA_ERROR_UNKNOWN) != CUDA_SUCCESS)
      done.words->wait_for(done.lane, done.seq);
    return true;
  }
  const auto event = reinterpret_cast<cudaEvent_t>(done.event.get());
  if (DEEPUM_GUARDED(cudaStreamWaitEvent(stream, event, 0), cudaErrorUnknown) != cudaSuccess) {
    cudaGetLastError();
    cudaEventSynchronize(event);
  }
  return true;
}

// The memory map of the engine and its worker: CUDA streams and discard events.
using EngineMemory = MemoryMap<cudaStream_t, DiscardEvent>;

}  // namespace deepum
