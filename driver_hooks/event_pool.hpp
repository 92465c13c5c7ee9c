// Events recycled instead of created and destroyed per launch: the engine records one on the launching
// stream at each launch it hands moves to the worker, and cuEventCreate/cuEventDestroy are driver calls
// the launching thread would otherwise pay each time (they wait behind the worker's migration calls).
// An event returns to the pool when its last holder drops it; by then every stream wait that names it
// has been enqueued, and such a wait keeps the record it was enqueued against (re-recording is safe).
#pragma once
#include <cuda.h>

#include <memory>
#include <mutex>
#include <vector>

#include "fault_injection.hpp"

namespace deepum {

class EventPool : public std::enable_shared_from_this<EventPool> {
 public:
  // Made only as a shared_ptr: each event handed out keeps its pool alive until it comes back.
  static std::shared_ptr<EventPool> make() { return std::shared_ptr<EventPool>(new EventPool()); }
  ~EventPool() {
    for (CUevent e : free_) cuEventDestroy(e);
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A timing-free event into `out`, recycled when one is free; the driver's error when none can be made.
  CUresult take(std::shared_ptr<CUevent_st>& out) {
    CUevent event = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        event = free_.back();
        free_.pop_back();
      }
    }
    if (!event)
      if (const CUresult err = DEEPUM_GUARDED(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_ERROR_UNKNOWN);
          err != CUDA_SUCCESS)
        return err;
    out = std::shared_ptr<CUevent_st>(event, [pool = shared_from_this()](CUevent e) { pool->give_back(e); });
    return CUDA_SUCCESS;
  }

 private:
  EventPool() = default;
  void give_back(CUevent e) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(e);
  }

  std::mutex mutex_;
  std::vector<CUevent> free_;
};

}  // namespace deepum
