// The engine's counters (what stats() reports) and how its failed CUDA and CUPTI calls are noted.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace deepum {

// Setting up the hooks: a failed CUPTI call is an error for the caller (start reports it to Python).
inline void check_cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown CUPTI error"));
  }
}

// Busy time of one direction of the host link, in nanoseconds: the union of its transfers'
// [start, end) intervals (CUPTI's unified-memory transfer records). Records come in buffers: each
// buffer's intervals are sorted and counted past the end of all those counted before, so no time
// is counted twice; an interval delivered in a later buffer than one ending after it adds only its
// part past that end (the figure may fall short, never over).
class LinkBusy {
 public:
  void add(std::vector<std::pair<uint64_t, uint64_t>>& intervals) {
    std::sort(intervals.begin(), intervals.end());
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [start, end] : intervals) {
      const uint64_t from = std::max(start, covered_until_);
      if (end <= from) continue;
      busy_ns_ += end - from;
      covered_until_ = end;
    }
  }
  uint64_t ns() const { return busy_ns_.load(); }

 private:
  std::mutex mutex_;
  uint64_t covered_until_ = 0;  // end of the latest interval counted
  std::atomic<uint64_t> busy_ns_{0};
};

// Running: a failed call is counted and remembered, and the engine goes on.
struct Counters {
  std::atomic<uint64_t> launches{0}, prefetch_calls{0}, prefetch_bytes{0}, evict_calls{0}, evict_bytes{0};
  std::atomic<uint64_t> discard_calls{0}, discard_bytes{0};
  std::atomic<uint64_t> populate_calls{0}, populate_bytes{0};  // dead blocks brought to the GPU without a copy
  std::atomic<uint64_t> gpu_faults{0}, fault_h2d_bytes{0}, prefetch_h2d_bytes{0}, other_h2d_bytes{0}, d2h_bytes{0};
  std::atomic<uint64_t> cuda_errors{0}, kernel_waits{0}, kernel_waits_unissued{0};
  std::atomic<uint64_t> demand_prefetch_calls{0}, demand_prefetch_bytes{0};
  std::atomic<uint64_t> param_info_failures_func{0}, param_info_failures_kernel{0}, launches_without_arguments{0};
  std::atomic<uint64_t> lane_waits{0};  // waits of a worker lane for another lane's progress
  std::atomic<uint64_t> launches_ignored{0};  // launches of other contexts, or during a graph capture
  std::atomic<uint64_t> hook_ns{0};     // CPU time the launch hook spent on the launching threads
  std::atomic<uint64_t> fault_lessons{0}, faults_learned{0};  // launches and blocks learned from the fault log
  LinkBusy h2d_link, d2h_link;  // host-to-GPU and GPU-to-host transfers of managed memory

  void note_failure(const char* what, const char* text) {
    cuda_errors++;
    std::lock_guard<std::mutex> lock(error_mutex_);
    last_error_ = std::string(what) + ": " + (text ? text : "unknown error");
  }
  // Counts and remembers a failed driver call; true when it succeeded.
  bool driver_ok(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS) return true;
    const char* text = nullptr;
    cuGetErrorString(result, &text);
    note_failure(what, text);
    return false;
  }
  // Text of the last failed CUDA call of the engine or its worker.
  std::string last_error() const {
    std::lock_guard<std::mutex> lock(error_mutex_);
    return last_error_;
  }

 private:
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

}  // namespace deepum
