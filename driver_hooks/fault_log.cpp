// The fault log: CUPTI activity records, delivered in buffers. Unified-memory counters (GPU page
// faults, host-to-device and device-to-host transfers with their cause and time span; the spans of
// each direction give the link's busy time) feed the iteration bins and their totals
// (iteration_bins.hpp) and, when on, the trace being recorded and the fault log that learning from
// faults drains; kernel records (GPU time spans) let Python attribute faults to launches and give
// each iteration the time the GPU ran kernels (on while the engine is awake, recording or learning).
// While a step timeline is captured (timeline.hpp), both kinds of record also go there as spans.
#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "online.hpp"

namespace deepum {
namespace {

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Runtime& rt = runtime();
  CUpti_Activity* record = nullptr;
  const bool recording = rt.recorder.on.load(std::memory_order_relaxed);
  const bool learning = rt.fault_log.on.load(std::memory_order_relaxed);
  std::vector<TransferRecord> transfers;
  std::vector<KernelSpan> kernels;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (recording) rt.recorder.kernel_time(k->correlationId, k->start, k->end);
      if (learning) rt.fault_log.kernel_time(k->correlationId, k->start, k->end);
      kernels.push_back({k->start, k->end});
      rt.timeline.add({k->start, k->end, k->correlationId, uint8_t(SpanKind::kKernel), 0});
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) continue;
    const auto* um = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter2*>(record);
    switch (um->counterKind) {
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
        rt.iteration_bins.fault(um->start, um->value);
        if (recording) rt.recorder.fault(um->start, um->address, int8_t(um->flags >= 1 && um->flags <= 4 ? um->flags : 1));
        if (learning) rt.fault_log.fault(um->start, um->address, 1);
        break;
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD: {
        const uint32_t cause = um->flags;
        if (recording) rt.recorder.transfer(um->start, um->address, um->value, 1, int8_t(cause <= 5 ? cause : 0));
        const Transfer kind = cause == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER        ? Transfer::kPrefetchH2D
                              : cause == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE ? Transfer::kFaultH2D
                                                                                                  : Transfer::kOtherH2D;
        transfers.push_back({um->start, um->end, um->value, kind});
        rt.timeline.add({um->start, um->end, um->value, uint8_t(SpanKind::kH2D), uint8_t(kind)});
        break;
      }
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
        if (recording) rt.recorder.transfer(um->start, um->address, um->value, 2, int8_t(um->flags <= 5 ? um->flags : 0));
        transfers.push_back({um->start, um->end, um->value, Transfer::kD2H});
        rt.timeline.add({um->start, um->end, um->value, uint8_t(SpanKind::kD2H), uint8_t(Transfer::kD2H)});
        break;
      default: break;
    }
  }
  rt.iteration_bins.transfers(std::move(transfers));
  rt.iteration_bins.kernels(std::move(kernels));
  free(buffer);
}

}  // namespace

void configure_fault_log(int device) {
  Runtime& rt = runtime();
  if (rt.fault_log_configured) return;
  CUpti_ActivityUnifiedMemoryCounterConfig config[3];
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[3] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH};
  for (int i = 0; i < 3; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = uint32_t(device);
    config[i].enable = 1;
  }
  check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check_cupti(cuptiActivityConfigureUnifiedMemoryCounter(config, 3), "cuptiActivityConfigureUnifiedMemoryCounter");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER), "cuptiActivityEnable(UNIFIED_MEMORY_COUNTER)");
  rt.fault_log_configured = true;
}

bool restore_fault_log() {
  Runtime& rt = runtime();
  if (!rt.fault_log_configured) return true;
  bool ok = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS;
  ok = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) == CUPTI_SUCCESS && ok;
  if (rt.kernel_records.load()) ok = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS && ok;
  return ok;
}

bool enable_kernel_records() {
  Runtime& rt = runtime();
  if (rt.kernel_records.load()) return true;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return false;
  rt.kernel_records.store(true);
  return true;
}

void disable_kernel_records() {
  Runtime& rt = runtime();
  if (rt.kernel_records.exchange(false)) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void flush_fault_log() {
  if (runtime().fault_log_configured) cuptiActivityFlushAll(1);
}

}  // namespace deepum
