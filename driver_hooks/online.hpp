// The online engine, a PyTorch extension (deepum/native_build.py ONLINE_ENGINE): what DeepUM's
// modified driver does, from user space.
// - Launch hook (launch_hook.cpp): CUPTI driver-API callback on cuLaunchKernel*; reads the kernel's
//   arguments (a foreach kernel's tensor list through tensor_lists.hpp), derives its execution ID
//   and the UM blocks it accesses, and hands them to the engine.
//   It is off while the engine sleeps (sleep_gate.hpp: the managed segments far from the capacity).
// - Allocator hook (allocator_hook.cpp): the caching allocator's trace feeds the memory map
//   (memory_map.hpp): live allocations, managed segments, discard tickets.
// - Engine (engine.hpp): executes the policy core's decisions; its worker (worker.hpp) issues them.
// - Fault log (fault_log.cpp): CUPTI unified-memory counters and kernel records; with learn_from
//   "faults", the faults, attributed to launches at each iteration mark, teach the tables.
// - Step timeline (timeline.hpp): while captured, the raw spans of kernels, transfers, the worker's
//   calls and the launches' waits.
// - Bindings (online_bindings.cpp): the Python module.
// Only migrations are issued: a prefetch or an eviction never changes what memory holds.
//
// All state is one Runtime object, reached through runtime(): CUPTI and the caching allocator call
// back into plain functions.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "counters.hpp"
#include "iteration_bins.hpp"
#include "engine.hpp"
#include "fill_kernels.hpp"
#include "indexed_kernels.hpp"
#include "recorder.hpp"
#include "sleep_gate.hpp"
#include "tensor_lists.hpp"
#include "timeline.hpp"
#include "worker.hpp"

namespace deepum {

// What the hook keeps of a kernel: its arguments' (offset, size), a hash of its name, the same in
// every process (a function handle is not), so that exec IDs outlive the run (a warm start); for a
// multi_tensor_apply_kernel, the layout of its first argument (tensor_lists.hpp); and whether it is an
// indexed kernel (indexed_kernels.hpp) or a fill (fill_kernels.hpp).
struct KernelInfo {
  std::vector<std::pair<size_t, size_t>> params;
  uint64_t name_hash = 0;
  std::optional<TensorListLayout> tensor_list;
  bool indexed = false;
  bool fill = false;
};

struct LaunchHookState {
  std::mutex params_mutex;
  std::unordered_map<CUfunction, KernelInfo> kernels;
  uint64_t allocations_at_last_launch = 0;  // guarded by the memory map's mutex
};

// The running engine's sleep (sleep_gate.hpp): asleep, the launch callbacks are off.
struct SleepState {
  std::mutex mutex;                 // guards gate: the allocator hook runs on allocating threads
  SleepGate gate{0, 0};
  std::atomic<bool> asleep{false};
  std::atomic<bool> waking{false};  // woke: the engine is told (Engine::wake) before the next launch it sees
};

struct Runtime {
  Counters counters;
  Recorder recorder;   // the trace being recorded (start's record)
  IterationBins iteration_bins;  // the fault log's figures: totals, and per iteration binned by the marks' times
  Recorder fault_log;  // learn_from "faults": launches, kernel records and faults, drained at each iteration mark
                       // and attributed in Python (deepum/fault_attribution.py)
  Timeline timeline;   // the step timeline, while a caller captures one (deepum/runtime/timeline.py)
  // The allocator hook stays attached: it outlives engines.
  EngineMemory memory{[this](cudaStream_t stream, const DiscardEvent& done) {
    if (!stream_waits(stream, done)) return false;
    timeline.discard_wait(reinterpret_cast<CUstream>(stream));
    return true;
  }};
  LaunchHookState launch_hook;
  std::atomic<int> device{-1};                  // the session's device: other devices' segments are ignored
  CUcontext context = nullptr;                  // its primary context: other contexts' launches are ignored
  std::atomic<int> paused{0};                   // open graph captures and other pools' scopes (pool_scopes.py)
  CUpti_SubscriberHandle subscriber = nullptr;  // the launch hook's, while started
  SleepState sleep;
  bool fault_log_configured = false;
  std::atomic<bool> kernel_records{false};  // CUPTI's kernel records are on (fault_log.cpp)
  std::once_flag allocator_hook_attached;
  std::atomic<bool> allocator_hook_on{false};  // attached (once per process, never detached)
  std::unique_ptr<Engine> engine;  // while started; declared last, so destroyed first
};

Runtime& runtime();  // online_bindings.cpp

// Whether work issued on `stream` now would enter a graph being captured (or its state is unknown):
// the engine issues nothing there.
inline bool being_captured(CUstream stream) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

// launch_hook.cpp
void subscribe_launch_hook();  // module unloads only: the launch callbacks come on when the engine wakes
void unsubscribe_launch_hook();
bool enable_launch_callbacks();  // false when CUPTI refuses
// The gate opened: from the next launch on the engine sees launches, the policy told first of the
// live segments' blocks. A refusal of CUPTI is counted as a CUDA error (the engine stays blind).
void wake_engine();
// allocator_hook.cpp
void attach_allocator_hook();
// fault_log.cpp: configure before the CUDA context exists, or CUPTI records no UM counters.
void configure_fault_log(int device);
void flush_fault_log();
// After another CUPTI client (a profiler) ran: takes CUPTI's activity buffers back and enables the
// unified-memory counters (and kernel records, if they were on) again; false when CUPTI refuses.
bool restore_fault_log();
// Kernel records (GPU time spans): on for a recording, for lessons from faults and while the engine is
// awake (the iterations' GPU busy time); false when CUPTI refuses. Off again when the engine stops.
bool enable_kernel_records();
void disable_kernel_records();

}  // namespace deepum
