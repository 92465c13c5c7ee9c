// The online engine's Python module: start and stop, the recorder and fault log drains, lessons
// from faults, iteration marks and the counters. Owns the one Runtime object (online.hpp).
#include <torch/extension.h>
#include <pybind11/numpy.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "iteration_bins_binding.hpp"
#include "online.hpp"
#include "options_binding.hpp"
#include "state_binding.hpp"

namespace deepum {

Runtime& runtime() {
  static Runtime instance;
  return instance;
}

namespace {

// The primary context of `device`, which PyTorch has created by now.
CUcontext primary_context(int device) {
  CUdevice handle = 0;
  CUcontext context = nullptr;
  if (cuDeviceGet(&handle, device) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&context, handle) != CUDA_SUCCESS)
    throw std::runtime_error("deepum: could not find the primary CUDA context of device " + std::to_string(device));
  cuDevicePrimaryCtxRelease(handle);  // PyTorch keeps it alive
  return context;
}

void stop();

// An iteration mark's time on CUPTI's clock: the fault log's records that began before it count in
// the iterations before. With restart, the figures of an earlier engine are forgotten first.
void mark_iteration_time(bool restart = false) {
  Runtime& rt = runtime();
  uint64_t now = 0;
  if (cuptiGetTimestamp(&now) != CUPTI_SUCCESS)
    rt.counters.note_failure("cuptiGetTimestamp", "an iteration mark without a time: its faults count in the iteration before");
  if (restart) rt.iteration_bins.reset();
  rt.iteration_bins.mark(now);
}

// The fault log's figures of each iteration since the engine started, as dicts of stats() keys.
py::list iteration_figures() {
  py::list out;
  const auto bins = runtime().iteration_bins.figures();
  for (size_t k = 1; k < bins.size(); ++k) out.append(iteration_figures_dict(bins[k]));  // bin 0: before start
  return out;
}

// Starts the launch hook, the engine (the policy core for `mode` with the options of `config`, a
// DeepUMConfig dict) and its worker; with record, also the trace recorder. All or nothing: if a step
// fails, whatever started is stopped again and the error says why. A session whose segments are
// device memory (deepum/specs/sleep.py, serves_device_memory) has no managed segment to follow and
// its engine sleeps for good, so it installs neither hook, unless managed segments an earlier session
// left wake the engine at once.
void start(const std::string& mode, int64_t capacity_bytes, int device, const py::dict& config, bool record,
           bool device_memory) {
  Runtime& rt = runtime();
  if (rt.engine) throw std::runtime_error("the deepum engine is already running");
  const Options options = options_from(mode, config);
  if (options.mode == Mode::kOracle)
    throw std::invalid_argument("the online engine runs um, advise or deepum, not oracle");
  const bool learn_faults = options.mode == Mode::kDeepUM && options.learn_from == LearnFrom::kFaults;
  rt.context = primary_context(device);
  mark_iteration_time(true);
  try {
    if ((record || learn_faults) && !enable_kernel_records())  // GPU time spans, to attribute faults to launches
      throw std::runtime_error("deepum cannot start: CUPTI refused kernel records (cuptiActivityEnable(CONCURRENT_KERNEL))");
    if (record) {
      rt.recorder.drain();
      rt.recorder.on.store(true);
    }
    if (learn_faults) {
      rt.fault_log.drain();
      rt.fault_log.on.store(true);
    }
    rt.device.store(device);
    if (!device_memory) attach_allocator_hook();
    rt.engine = std::make_unique<Engine>(options, std::max<int64_t>(1, capacity_bytes >> kBlockShift), device,
                                         rt.memory, rt.counters, rt.timeline);
    {
      // A recording and lessons from faults need every launch: they never sleep. Segments made
      // meanwhile may count twice (the gate then wakes early, never late).
      std::lock_guard<std::mutex> lock(rt.sleep.mutex);
      rt.sleep.gate = SleepGate(uint64_t(std::max<int64_t>(0, capacity_bytes)),
                                record || learn_faults ? 0 : options.wake_percent);
      bool woke = false;
      for (const auto& [addr, size] : rt.memory.segments()) woke = rt.sleep.gate.segment_alloc(spanned_bytes(addr, size)) || woke;
      rt.sleep.asleep.store(rt.sleep.gate.asleep());
      rt.sleep.waking.store(woke);
      rt.memory.set_awake(!rt.sleep.asleep.load());
    }
    if (!device_memory || !rt.sleep.asleep.load()) subscribe_launch_hook();
    if (!rt.sleep.asleep.load() && !enable_launch_callbacks())
      throw std::runtime_error("deepum's launch hook cannot start: CUPTI refused the launch callbacks");
    if (!rt.sleep.asleep.load()) enable_kernel_records();  // refused: gpu_busy_ns stays 0
  } catch (...) {
    stop();
    throw;
  }
  rt.paused.store(0);
}

void stop() {
  Runtime& rt = runtime();
  unsubscribe_launch_hook();
  if (rt.engine) {
    py::gil_scoped_release release;
    rt.engine->drain();
  }
  rt.engine.reset();
  rt.memory.set_awake(false);
  flush_fault_log();
  rt.recorder.on.store(false);
  rt.fault_log.on.store(false);
  disable_kernel_records();
}

// A graph capture (or another pool's scope) begins: the engine stands aside until resume(), with
// every command it issued completed, so that nothing of it enters the capture.
void pause_engine() {
  Runtime& rt = runtime();
  rt.paused++;
  if (rt.engine) {
    py::gil_scoped_release release;
    rt.engine->drain();
  }
}

void resume_engine() {
  Runtime& rt = runtime();
  int open = rt.paused.load();
  while (open > 0 && !rt.paused.compare_exchange_weak(open, open - 1)) {
  }
}

bool restore_cupti() {
  return restore_fault_log();
}

py::dict drain_recording() { return runtime().recorder.drain(); }

py::dict drain_fault_log() { return runtime().fault_log.drain(); }

// Teaches the correlation tables what launches faulted on, in launch order: exec_ids[i] faulted on
// blocks[offsets[i]:offsets[i + 1]] (deepum/fault_attribution.py Lessons).
void learn_faults(const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& exec_ids,
                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& offsets,
                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& blocks) {
  const size_t launches = size_t(exec_ids.size());
  if (size_t(offsets.size()) != launches + 1)
    throw std::invalid_argument("learn_faults: offsets must have one more entry than exec_ids");
  const int64_t* o = offsets.data();
  for (size_t i = 0; i < launches; ++i)
    if (o[i] < 0 || o[i] > o[i + 1] || o[i + 1] > blocks.size())
      throw std::invalid_argument("learn_faults: offsets must rise from 0 to the number of blocks");
  Runtime& rt = runtime();
  if (!rt.engine) return;
  py::gil_scoped_release release;
  rt.engine->learn_faults(exec_ids.data(), o, blocks.data(), launches);
}

py::dict stats() {
  Runtime& rt = runtime();
  py::dict out;
  out["launches"] = rt.counters.launches.load();
  out["prefetch_calls"] = rt.counters.prefetch_calls.load();
  out["prefetch_bytes"] = rt.counters.prefetch_bytes.load();
  out["evict_calls"] = rt.counters.evict_calls.load();
  out["evict_bytes"] = rt.counters.evict_bytes.load();
  out["discard_calls"] = rt.counters.discard_calls.load();
  out["discard_bytes"] = rt.counters.discard_bytes.load();
  out["populate_calls"] = rt.counters.populate_calls.load();
  out["populate_bytes"] = rt.counters.populate_bytes.load();
  out["launch_driver_ns"] = rt.counters.launch_driver_ns.load();
  out["segment_populate_calls"] = rt.counters.segment_populate_calls.load();
  out["segment_populate_bytes"] = rt.counters.segment_populate_bytes.load();
  out["host_map_calls"] = rt.counters.host_map_calls.load();
  out["host_map_bytes"] = rt.counters.host_map_bytes.load();
  out["host_unmap_calls"] = rt.counters.host_unmap_calls.load();
  out["host_unmap_bytes"] = rt.counters.host_unmap_bytes.load();
  {
    std::lock_guard<std::mutex> lock(rt.memory.mutex());
    out["discards_cancelled"] = rt.memory.discards_cancelled();
    out["allocation_waits_for_discard"] = rt.memory.allocation_waits();
    out["allocation_holds_for_discard"] = rt.memory.allocation_holds();
    out["managed_allocations"] = rt.memory.allocations();
  }
  for (const auto& [key, value] : iteration_figures_dict(rt.iteration_bins.totals())) out[key] = value;
  out["cuda_errors"] = rt.counters.cuda_errors.load();
  out["kernel_waits"] = rt.counters.kernel_waits.load();
  out["kernel_waits_unissued"] = rt.counters.kernel_waits_unissued.load();
  out["demand_prefetch_calls"] = rt.counters.demand_prefetch_calls.load();
  out["demand_prefetch_bytes"] = rt.counters.demand_prefetch_bytes.load();
  out["param_info_failures_func"] = rt.counters.param_info_failures_func.load();
  out["param_info_failures_kernel"] = rt.counters.param_info_failures_kernel.load();
  out["launches_without_arguments"] = rt.counters.launches_without_arguments.load();
  out["tensor_list_launches"] = rt.counters.tensor_list_launches.load();
  out["indexed_launches"] = rt.counters.indexed_launches.load();
  out["tensor_list_fallbacks"] = rt.counters.tensor_list_fallbacks.load();
  out["lane_waits"] = rt.counters.lane_waits.load();
  out["direct_eviction_refusals"] = rt.counters.direct_eviction_refusals.load();
  out["direct_eviction_wait_ns"] = rt.counters.direct_eviction_wait_ns.load();
  out["direct_discard_refusals"] = rt.counters.direct_discard_refusals.load();
  out["direct_discard_wait_ns"] = rt.counters.direct_discard_wait_ns.load();
  out["direct_prefetch_refusals"] = rt.counters.direct_prefetch_refusals.load();
  out["direct_prefetch_wait_ns"] = rt.counters.direct_prefetch_wait_ns.load();
  out["launches_ignored"] = rt.counters.launches_ignored.load();
  out["hook_ns"] = rt.counters.hook_ns.load();
  out["hook_scan_ns"] = rt.counters.hook_scan_ns.load();
  out["hook_policy_ns"] = rt.counters.hook_policy_ns.load();
  out["hook_release_ns"] = rt.counters.hook_release_ns.load();
  out["hook_translate_ns"] = rt.counters.hook_translate_ns.load();
  out["hook_wait_ns"] = rt.counters.hook_wait_ns.load();
  out["hook_demand_ns"] = rt.counters.hook_demand_ns.load();
  out["hook_submit_ns"] = rt.counters.hook_submit_ns.load();
  out["hook_submit_command_ns"] = rt.counters.hook_submit_command_ns.load();
  out["hook_submit_mark_ns"] = rt.counters.hook_submit_mark_ns.load();
  out["hook_submit_hand_ns"] = rt.counters.hook_submit_hand_ns.load();
  out["hand_overs"] = rt.counters.hand_overs.load();
  out["handed_commands"] = rt.counters.handed_commands.load();
  out["worker_prefetch_ns"] = rt.counters.worker_prefetch_ns.load();
  out["worker_evict_ns"] = rt.counters.worker_evict_ns.load();
  out["worker_discard_ns"] = rt.counters.worker_discard_ns.load();
  out["worker_populate_ns"] = rt.counters.worker_populate_ns.load();
  out["worker_map_ns"] = rt.counters.worker_map_ns.load();
  out["asleep"] = rt.sleep.asleep.load();
  out["launch_hook_subscribed"] = rt.subscriber != nullptr;
  out["allocator_hook_attached"] = rt.allocator_hook_on.load();
  out["fault_lessons"] = rt.counters.fault_lessons.load();
  out["faults_learned"] = rt.counters.faults_learned.load();
  out["last_cuda_error"] = rt.counters.last_error();
  out["injected_failures"] = injected_failures.load();
  if (rt.engine) {
    out["peak_resident_bytes"] = rt.engine->peak_resident_bytes();
    out["resident_bytes"] = rt.engine->resident_bytes();
    out["kernel_prediction_hits"] = rt.engine->kernel_hits();
    out["kernel_prediction_misses"] = rt.engine->kernel_misses();
    out["repeated_plan_launches"] = rt.engine->repeated_launches();
    out["table_bytes"] = rt.engine->table_bytes();
  }
  return out;
}

uint64_t next_iteration() {
  Runtime& rt = runtime();
  if (rt.recorder.on.load()) rt.recorder.iteration();
  return rt.engine ? rt.engine->next_iteration() : 0;
}

Engine& running_engine() {
  Runtime& rt = runtime();
  if (!rt.engine) throw std::runtime_error("the deepum engine is not running");
  return *rt.engine;
}

py::bytes save_state() { return state_bytes(running_engine().save_state()); }

// A loaded state expects pressure (the run that learned it was under it): the engine wakes.
void load_state(const py::bytes& data) {
  load_state_bytes(running_engine(), data);
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.sleep.mutex);
  if (rt.sleep.gate.wake()) wake_engine();
}

py::dict warm_start() { return warm_start_dict(running_engine().warm_start()); }

void drain() {
  Runtime& rt = runtime();
  if (!rt.engine) return;
  py::gil_scoped_release release;
  rt.engine->drain();
}

// The step timeline captured since timeline_open (call timeline_close and flush_fault_log first): one
// NumPy array per field of timeline.hpp's TimelineSpan, and the spans dropped past its bound.
py::dict timeline_take() {
  uint64_t dropped = 0;
  const std::vector<TimelineSpan> spans = runtime().timeline.take(dropped);
  const auto n = py::ssize_t(spans.size());
  py::array_t<uint64_t> start(n), end(n), value(n);
  py::array_t<uint8_t> kind(n), detail(n);
  auto s = start.mutable_unchecked<1>(), e = end.mutable_unchecked<1>(), v = value.mutable_unchecked<1>();
  auto k = kind.mutable_unchecked<1>(), d = detail.mutable_unchecked<1>();
  for (py::ssize_t i = 0; i < n; ++i) {
    s(i) = spans[i].start;
    e(i) = spans[i].end;
    v(i) = spans[i].value;
    k(i) = spans[i].kind;
    d(i) = spans[i].detail;
  }
  py::dict taken;  // not stats(): its own keys
  taken["start"] = start;
  taken["end"] = end;
  taken["value"] = value;
  taken["kind"] = kind;
  taken["detail"] = detail;
  taken["dropped"] = dropped;
  return taken;
}

}  // namespace
}  // namespace deepum

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace deepum;
  m.doc() = "deepum online engine: launch hook, residency model, correlation prefetch, worker, fault log";
  m.def("configure_fault_log", &deepum::configure_fault_log, py::arg("device"),
        "Configures CUPTI's unified-memory counters; call after cuInit and before the CUDA context exists.");
  m.def("start", &start, py::arg("mode"), py::arg("capacity_bytes"), py::arg("device"), py::arg("config"),
        py::arg("record"), py::arg("device_memory"),
        "Starts the launch hook, the engine and its worker (mode: um, advise or deepum; config: a "
        "DeepUMConfig dict); with record, also gathers a trace (kernels, accesses, memory events, kernel "
        "times, faults, transfers); with device_memory (the session's segments are device memory), "
        "neither the allocator hook nor the launch hook unless earlier managed segments wake the engine.");
  m.def("drain_recording", &drain_recording, "Hands over what was recorded, as NumPy arrays, and clears it.");
  m.def("drain_fault_log", &drain_fault_log,
        "Hands over the launches, kernel records and faults gathered for learning from faults, and clears them.");
  m.def("learn_faults", &learn_faults, py::arg("exec_ids"), py::arg("offsets"), py::arg("blocks"),
        "Teaches the correlation tables the blocks launches faulted on (deepum.fault_attribution.Lessons).");
  m.def("stop", &stop, "Stops the launch hook, drains the worker and flushes the fault log.");
  m.def("pause", &pause_engine, "The engine stands aside (a graph capture begins): launches are ignored, commands drained.");
  m.def("resume", &resume_engine, "Ends one pause().");
  m.def("restore_cupti", &restore_cupti,
        "Takes CUPTI's activity buffers back after another client (a profiler); false when CUPTI refuses.");
  m.def("save_state", &save_state, "What the policy has learned (docs/warm-start.md), as bytes (mode deepum).");
  m.def("load_state", &load_state, py::arg("data"),
        "Loads save_state()'s bytes before the first launch; ValueError (one line) for a bad state.");
  m.def("warm_start", &warm_start, "The loaded state's trial: {state, iterations, launched, known}.");
  m.def("drain", &drain, "Waits until every issued prefetch and eviction has completed.");
  m.def("mark_iteration_time", [] { mark_iteration_time(); },
        "Notes an iteration mark's time: the fault log's later records count in the next iteration.");
  m.def("iteration_figures", &iteration_figures,
        "The fault log's figures per iteration since start (one dict per iteration, the last one open).");
  m.def("next_iteration", &next_iteration, "Starts a new iteration; returns the bytes of blocks the last one touched.");
  m.def("flush_fault_log", &deepum::flush_fault_log, "Delivers buffered CUPTI records to the counters.");
  m.def("timeline_open", [] { runtime().timeline.open(); },
        "Starts capturing the step timeline (timeline.hpp), forgetting an earlier capture.");
  m.def("timeline_close", [] { runtime().timeline.close(); },
        "Ends the capture window; records that began inside it still arrive until timeline_take.");
  m.def("timeline_take", &timeline_take,
        "Hands over the captured spans as NumPy arrays (start, end, value, kind, detail) and the count dropped.");
  m.def("stats", &stats, "Counters: launches, prefetch/evict calls and bytes, GPU page faults, migrations by cause.");
}
