// The launch hook: a CUPTI driver-API callback on cuLaunchKernel*. It reads the kernel's arguments
// and derives its execution ID (kernel and grid, and the portable addresses of the allocations its
// pointer arguments point into: the same in every process of the same script) and its accesses (the
// 2 MiB UM blocks those allocations cover), records them when a trace or the fault log is on, and
// hands the launch to the engine.
#include <cuda.h>
#include <cupti.h>  // also brings generated_cuda_meta.h (the launch parameter structs)

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "launch_accesses.hpp"
#include "online.hpp"

namespace deepum {
namespace {

// FNV-1a of a kernel's name; of its handle where CUPTI gives no name.
uint64_t name_hash(CUfunction f, const char* name) {
  if (!name) return reinterpret_cast<uint64_t>(f);
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *name; ++name) h = (h ^ uint8_t(*name)) * 0x100000001b3ull;
  return h;
}

// The offset and size of each argument of f, its name's hash, its tensor list's layout, and whether
// it is indexed. Kernels that the CUDA runtime launches may arrive as library kernels (CUkernel), for
// which the driver answers through cuKernelGetParamInfo.
const KernelInfo& kernel_info(CUfunction f, const char* name) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.launch_hook.params_mutex);
  auto it = rt.launch_hook.kernels.find(f);
  if (it != rt.launch_hook.kernels.end()) return it->second;
  KernelInfo info;
  info.name_hash = name_hash(f, name);
  info.indexed = indexed_kernel(name);
  info.fill = fill_kernel(name);
  for (const bool as_kernel : {false, true}) {
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r = as_kernel ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &offset, &size)
                                   : cuFuncGetParamInfo(f, i, &offset, &size);
      if (r != CUDA_SUCCESS) {
        if (i == 0 && !as_kernel) rt.counters.param_info_failures_func++;
        if (i == 0 && as_kernel) rt.counters.param_info_failures_kernel++;
        break;
      }
      info.params.emplace_back(offset, size);
    }
    if (!info.params.empty()) break;
  }
  if (!info.params.empty()) info.tensor_list = tensor_list_layout(name, info.params[0].second);
  return rt.launch_hook.kernels.emplace(f, std::move(info)).first->second;
}

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// Pages of [start, start + size) inside block b.
int32_t pages_in_block(uint64_t start, uint64_t size, uint64_t b) {
  const uint64_t lo = std::max(start, b << kBlockShift), hi = std::min(start + size, (b + 1) << kBlockShift);
  return int32_t(((hi - 1) >> 12) - (lo >> 12) + 1);
}

void on_kernel(CUfunction f, void** kernel_params, void** extra, CUstream stream, uint64_t grid, uint32_t grid_x,
               uint32_t correlation, const char* name, uint64_t entered) {
  Runtime& rt = runtime();
  // The engine's waits, prefetches and event records must not enter a graph being captured.
  if (being_captured(stream)) {
    rt.counters.launches_ignored++;
    return;
  }
  const KernelInfo& kernel = kernel_info(f, name);
  const auto& params = kernel.params;
  const char* buffer = nullptr;  // the `extra` form: one buffer of buffer_size bytes holds the arguments
  size_t buffer_size = 0;
  if (!kernel_params && extra) {
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(extra[i + 1]);
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) buffer_size = *static_cast<const size_t*>(extra[i + 1]);
    }
  }
  if (!kernel_params && !buffer) rt.counters.launches_without_arguments++;
  uint64_t id = mix(kernel.name_hash, grid);
  // Kept by each launching thread from launch to launch, so that a launch allocates nothing here once
  // they have grown; the hook launches no kernel of its own, so none is in use when a launch enters.
  thread_local std::vector<Access> accesses;
  thread_local std::vector<int64_t> blocks;
  accesses.clear();
  Stopwatch clock;
  {
    std::lock_guard<std::mutex> lock(rt.memory.mutex());
    uint64_t last_allocation = 0;
    auto note = [&](uint64_t word) {  // a word that may point into a live allocation
      const auto [start, size] = rt.memory.allocation(word);
      if (!size || start == last_allocation) return;
      last_allocation = start;
      id = mix(id, rt.memory.portable_address(start));
      const bool fresh = rt.memory.born(start) > rt.launch_hook.allocations_at_last_launch;
      for (uint64_t b = start >> kBlockShift; b <= (start + size - 1) >> kBlockShift; ++b)
        accesses.push_back({int64_t(b), pages_in_block(start, size, b), fresh});
    };
    for (size_t i = 0; i < params.size(); ++i) {
      const bool in_buffer = buffer && params[i].first + params[i].second <= buffer_size;
      const char* value = kernel_params ? static_cast<const char*>(kernel_params[i]) : in_buffer ? buffer + params[i].first : nullptr;
      if (!value) continue;
      if (i == 0 && kernel.tensor_list) {
        if (const auto used = tensor_list_addresses(*kernel.tensor_list, value, grid_x)) {
          rt.counters.tensor_list_launches++;
          for (const uint64_t word : *used) note(word);
          continue;
        }
        rt.counters.tensor_list_fallbacks++;
      }
      for (size_t w = 0; w + 8 <= params[i].second; w += 8) {
        uint64_t word;
        std::memcpy(&word, value + w, 8);
        note(word);
      }
    }
    rt.launch_hook.allocations_at_last_launch = rt.memory.allocations();
  }
  rt.counters.hook_scan_ns += clock.lap();
  merge_by_block(accesses);
  blocks.clear();
  for (const Access& a : accesses) blocks.push_back(a.block);
  if (rt.recorder.on.load(std::memory_order_relaxed)) rt.recorder.launch(correlation, id, name, accesses);
  if (rt.fault_log.on.load(std::memory_order_relaxed)) rt.fault_log.launch(correlation, id, nullptr, {});
  if (rt.sleep.waking.exchange(false)) rt.engine->wake(rt.memory.segment_blocks());
  if (kernel.indexed) rt.counters.indexed_launches++;
  const uint8_t waits = rt.engine->on_launch(id, blocks, stream, kernel.indexed, kernel.fill);
  rt.timeline.launch(correlation, stream, waits, entered);
}

// A module unloads: a later module's functions may reuse its function handles, so what was learned
// of kernels so far is forgotten.
void forget_kernels() {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.launch_hook.params_mutex);
  rt.launch_hook.kernels.clear();
}

// When the hook returned for this thread's launch under way, if it saw it (0: it did not), read once
// for both launch_driver_ns and the launch call's span: on CUPTI's clock while a step timeline is
// captured, on the steady clock otherwise.
thread_local uint64_t hook_returned_ns = 0;
thread_local bool hook_returned_on_cupti = false;

uint64_t steady_now() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) forget_kernels();
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  Runtime& rt = runtime();
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (!hook_returned_ns) return;
    const uint64_t now = hook_returned_on_cupti ? cupti_now() : steady_now();
    if (rt.engine) rt.counters.launch_driver_ns += now - hook_returned_ns;
    if (hook_returned_on_cupti)
      rt.timeline.add({hook_returned_ns, now, cb->correlationId, uint8_t(SpanKind::kLaunchCall), 0});
    hook_returned_ns = 0;
    return;
  }
  if (cb->callbackSite != CUPTI_API_ENTER || !rt.engine) return;
  if (cb->context != rt.context || rt.paused.load(std::memory_order_relaxed)) {
    rt.counters.launches_ignored++;  // another device's context, or a graph capture under way
    return;
  }
  Stopwatch clock;
  const uint64_t entered = rt.timeline.collecting() ? cupti_now() : 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      on_kernel(p->f, p->kernelParams, p->extra, p->hStream,
                (uint64_t(p->gridDimX) << 40) ^ (uint64_t(p->gridDimY) << 20) ^ p->gridDimZ, p->gridDimX,
                cb->correlationId, cb->symbolName, entered);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      on_kernel(p->f, p->kernelParams, p->extra, p->config->hStream,
                (uint64_t(p->config->gridDimX) << 40) ^ (uint64_t(p->config->gridDimY) << 20) ^ p->config->gridDimZ,
                p->config->gridDimX, cb->correlationId, cb->symbolName, entered);
      break;
    }
    default: break;
  }
  rt.counters.hook_ns += clock.lap();
  hook_returned_on_cupti = entered != 0;
  hook_returned_ns = entered ? cupti_now() : steady_now();
}

}  // namespace

void subscribe_launch_hook() {
  Runtime& rt = runtime();
  const CUptiResult subscribed = cuptiSubscribe(&rt.subscriber, on_callback, nullptr);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    rt.subscriber = nullptr;
    throw std::runtime_error("deepum's launch hook cannot start: another CUPTI client (a profiler such as Nsight "
                             "Systems, Nsight Compute or torch.profiler) holds CUPTI's callbacks in this process");
  }
  check_cupti(subscribed, "cuptiSubscribe");
  check_cupti(cuptiEnableCallback(1, rt.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING),
              "cuptiEnableCallback(MODULE_UNLOAD_STARTING)");
  forget_kernels();  // modules may have unloaded unseen while no subscription listened
}

bool enable_launch_callbacks() {
  Runtime& rt = runtime();
  if (!rt.subscriber) return false;
  bool ok = true;
  for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
    ok = cuptiEnableCallback(1, rt.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS && ok;
  return ok;
}

void wake_engine() {
  Runtime& rt = runtime();
  rt.memory.set_awake(true);  // before the first launch it scans
  rt.sleep.waking.store(true);
  rt.sleep.asleep.store(false);
  if (rt.subscriber && !enable_launch_callbacks())
    rt.counters.note_failure("cuptiEnableCallback", "the launch hook could not come on: launches stay unseen");
  enable_kernel_records();  // refused: gpu_busy_ns stays 0
}

void unsubscribe_launch_hook() {
  Runtime& rt = runtime();
  if (!rt.subscriber) return;
  cuptiUnsubscribe(rt.subscriber);
  rt.subscriber = nullptr;
}

}  // namespace deepum
