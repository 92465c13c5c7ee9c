// The engine's counters (what stats() reports, beside the fault log's in iteration_bins.hpp) and how its failed CUDA and CUPTI calls are noted.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "commands.hpp"

namespace deepum {

// Setting up the hooks: a failed CUPTI call is an error for the caller (start reports it to Python).
inline void check_cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown CUPTI error"));
  }
}

// Nanoseconds on the steady clock since it was made or since the last lap.
class Stopwatch {
 public:
  uint64_t lap() {
    const auto now = std::chrono::steady_clock::now();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count();
    last_ = now;
    return uint64_t(ns);
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Running: a failed call is counted and remembered, and the engine goes on.
struct Counters {
  std::atomic<uint64_t> launches{0}, prefetch_calls{0}, prefetch_bytes{0}, evict_calls{0}, evict_bytes{0};
  std::atomic<uint64_t> discard_calls{0}, discard_bytes{0};
  std::atomic<uint64_t> populate_calls{0}, populate_bytes{0};  // dead blocks brought to the GPU without a copy
  std::atomic<uint64_t> segment_populate_calls{0}, segment_populate_bytes{0};  // new segments, while asleep
  std::atomic<uint64_t> host_map_calls{0}, host_map_bytes{0};  // ranges mapped from the host (host mapping)
  std::atomic<uint64_t> host_unmap_calls{0}, host_unmap_bytes{0};  // ranges given back to migration
  std::atomic<uint64_t> cuda_errors{0}, kernel_waits{0}, kernel_waits_unissued{0};
  std::atomic<uint64_t> demand_prefetch_calls{0}, demand_prefetch_bytes{0};
  std::atomic<uint64_t> param_info_failures_func{0}, param_info_failures_kernel{0}, launches_without_arguments{0};
  std::atomic<uint64_t> lane_waits{0};  // waits of a worker lane for another lane's progress
  // Move threads (move_pool.hpp): evictions and prefetches the driver refused (the blocks stayed),
  // discards and populations it refused (moved with a copy instead), and the threads' time waiting
  // for the work each move runs after
  std::atomic<uint64_t> direct_eviction_refusals{0}, direct_eviction_wait_ns{0};
  std::atomic<uint64_t> direct_prefetch_refusals{0}, direct_prefetch_wait_ns{0};
  std::atomic<uint64_t> direct_discard_refusals{0}, direct_discard_wait_ns{0};
  std::atomic<uint64_t> tensor_list_launches{0};   // foreach launches read slot by slot (tensor_lists.hpp)
  std::atomic<uint64_t> tensor_list_fallbacks{0};  // foreach launches whose tensor list was scanned whole
  std::atomic<uint64_t> indexed_launches{0};       // launches of indexed kernels (indexed_kernels.hpp)
  std::atomic<uint64_t> launches_ignored{0};  // launches of other contexts, or during a graph capture
  std::atomic<uint64_t> hook_ns{0};     // CPU time the launch hook spent on the launching threads
  // Time the driver's launch calls took after the hook returned, until they returned: long when the
  // launch queue is full (the GPU far behind the launching thread)
  std::atomic<uint64_t> launch_driver_ns{0};
  // ... of which: reading arguments, the policy's decision, the kernel's waits for migrations, its
  // missing blocks prefetched on its stream, the other moves handed to the worker
  std::atomic<uint64_t> hook_scan_ns{0}, hook_policy_ns{0}, hook_wait_ns{0}, hook_demand_ns{0}, hook_submit_ns{0};
  std::atomic<uint64_t> hook_release_ns{0}, hook_translate_ns{0};  // of hook_policy_ns
  // ... of hook_submit_ns: making the commands (under the memory map's lock), recording the marks and
  // events they run after, and handing them to the worker and the move threads; the hand-overs that
  // handed any command, and the commands handed
  std::atomic<uint64_t> hook_submit_command_ns{0}, hook_submit_mark_ns{0}, hook_submit_hand_ns{0};
  std::atomic<uint64_t> hand_overs{0}, handed_commands{0};
  std::atomic<uint64_t> fault_lessons{0}, faults_learned{0};  // launches and blocks learned from the fault log
  // CPU time the worker spent issuing each kind of move (a migration to the host returns only once its
  // copies are done and its pages mapped on the host): prefetches, evictions, discards, populations,
  // host-mapping advice (with the copy of a mapped block's resident pages)
  std::atomic<uint64_t> worker_prefetch_ns{0}, worker_evict_ns{0}, worker_discard_ns{0}, worker_populate_ns{0};
  std::atomic<uint64_t> worker_map_ns{0};

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

// The counters of the moves of kind `op`, whoever issues them (the worker or a pool's threads): the
// calls that moved, their bytes, and the time spent issuing them.
struct MoveCounters {
  std::atomic<uint64_t> &calls, &bytes, &issue_ns;
  // One call that moved `moved` bytes.
  void count(uint64_t moved) const {
    calls++;
    bytes += moved;
  }
};
inline MoveCounters move_counters(Counters& c, Op op) {
  switch (op) {
    case Op::kPrefetch: return {c.prefetch_calls, c.prefetch_bytes, c.worker_prefetch_ns};
    case Op::kEvict: return {c.evict_calls, c.evict_bytes, c.worker_evict_ns};
    case Op::kDiscard: return {c.discard_calls, c.discard_bytes, c.worker_discard_ns};
    case Op::kPopulate: return {c.populate_calls, c.populate_bytes, c.worker_populate_ns};
    case Op::kMapHost: return {c.host_map_calls, c.host_map_bytes, c.worker_map_ns};
    case Op::kMapGpu: break;
  }
  return {c.host_unmap_calls, c.host_unmap_bytes, c.worker_map_ns};
}

}  // namespace deepum
