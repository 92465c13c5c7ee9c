// Python binding of the UVM driver model: deepum._native.simulate(...).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "options_binding.hpp"
#include "state_binding.hpp"
#include "uvm_model.hpp"

namespace py = pybind11;
using namespace deepum;

namespace {

template <typename T>
using CArray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
const T* checked(const CArray<T>& a, size_t n, const char* name) {
  if (a.ndim() != 1 || size_t(a.shape(0)) != n)
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(n) + " rows");
  return a.data();
}

template <typename T, typename F>
py::array_t<T> column(const std::vector<KernelRecord>& records, F field) {
  py::array_t<T> out(records.size());
  T* p = out.mutable_data();
  for (size_t i = 0; i < records.size(); ++i) p[i] = field(records[i]);
  return out;
}

CostModel cost_model(const py::dict& c) {
  return CostModel{c["prefetch_h2d_bytes_per_s"].cast<double>(), c["prefetch_call_cpu_s"].cast<double>(),
                   c["evict_d2h_bytes_per_s"].cast<double>(), c["threaded_evict_d2h_bytes_per_s"].cast<double>(),
                   c["populate_bytes_per_s"].cast<double>(),
                   c["host_map_bytes_per_s"].cast<double>(),
                   c["demand_fault_read_bytes_per_s"].cast<double>(),
                   c["demand_fault_write_bytes_per_s"].cast<double>(), c["demand_fault_startup_s"].cast<double>(),
                   c["fault_batch_pages"].cast<int64_t>(), c["driver_prefetch_threshold"].cast<double>(),
                   c["launch_cpu_s"].cast<double>(), c["hook_cpu_s"].cast<double>()};
}

py::dict simulate(const std::string& policy_name, int64_t capacity_blocks, int64_t capacity_bytes,
                  const CArray<uint64_t>& exec_id, const CArray<uint8_t>& kinds,
                  const CArray<int64_t>& duration_ns, const CArray<int64_t>& access_offsets,
                  const CArray<int32_t>& access_block, const CArray<int16_t>& access_pages,
                  const CArray<uint8_t>& access_write, const CArray<int64_t>& block_number,
                  const CArray<int64_t>& mem_kernel, const CArray<int8_t>& mem_action,
                  const CArray<uint64_t>& mem_address, const CArray<uint64_t>& mem_bytes,
                  const CArray<int64_t>& iteration_first_kernel, const py::dict& cost, const py::dict& config,
                  const py::object& warm_state) {
  TraceView t;
  t.kernels = size_t(exec_id.size());
  t.exec_id = exec_id.data();
  t.kinds = checked(kinds, t.kernels, "kernel_kinds");
  t.duration_ns = checked(duration_ns, t.kernels, "kernel_duration_ns");
  t.access_offsets = checked(access_offsets, t.kernels + 1, "access_offsets");
  const size_t accesses = size_t(t.access_offsets[t.kernels]);
  t.access_block = checked(access_block, accesses, "access_block");
  t.access_pages = checked(access_pages, accesses, "access_pages");
  t.access_write = checked(access_write, accesses, "access_write");
  t.blocks = size_t(block_number.size());
  t.block_number = block_number.data();
  t.mem_events = size_t(mem_kernel.size());
  t.mem_kernel = mem_kernel.data();
  t.mem_action = checked(mem_action, t.mem_events, "mem_action");
  t.mem_address = checked(mem_address, t.mem_events, "mem_address");
  t.mem_bytes = checked(mem_bytes, t.mem_events, "mem_bytes");
  t.iterations = size_t(iteration_first_kernel.size());
  t.iteration_first_kernel = iteration_first_kernel.data();
  if (t.kernels == 0) throw std::invalid_argument("the trace has no kernels");

  Simulator sim(t, cost_model(cost), capacity_blocks, uint64_t(capacity_bytes), options_from(policy_name, config));
  const bool learns = policy_name == "deepum";
  py::dict out;
  out["warm_state_error"] = py::none();
  if (!warm_state.is_none()) try {
      load_state_bytes(sim.policy(), warm_state.cast<py::bytes>());
    } catch (const std::invalid_argument& e) {
      out["warm_state_error"] = std::string(e.what());
    }
  {
    py::gil_scoped_release release;
    sim.run();
  }
  const Totals& s = sim.totals();
  const auto& tl = sim.timeline();
  out["warm_start"] = warm_start_dict(sim.policy().warm_start());
  out["learned_state"] = learns ? py::object(state_bytes(sim.policy().save_state())) : py::object(py::none());
  out["faults"] = s.faults;
  out["fault_batches"] = s.fault_batches;
  out["fault_blocks"] = s.fault_blocks;
  out["h2d_bytes"] = s.h2d_bytes;
  out["d2h_bytes"] = s.d2h_bytes;
  out["prefetch_bytes"] = s.prefetch_bytes;
  out["demand_prefetch_bytes"] = s.demand_prefetch_bytes;
  out["prefetch_used_bytes"] = s.prefetch_used_bytes;
  out["prefetch_hit_blocks"] = s.prefetch_hit_blocks;
  out["evicted_bytes"] = s.evicted_bytes;
  out["discarded_bytes"] = s.discarded_bytes;
  out["populated_bytes"] = s.populated_bytes;
  out["segment_populated_bytes"] = s.segment_populated_bytes;
  out["host_mapped_bytes"] = s.host_mapped_bytes;
  out["host_map_wait_s"] = s.host_map_wait_s;
  out["released_bytes"] = s.released_bytes;
  out["lost_reads"] = s.lost_reads;
  out["woke_at_kernel"] = s.woke_at_kernel < 0 ? py::object(py::none()) : py::object(py::int_(s.woke_at_kernel));
  out["peak_resident_blocks"] = s.peak_resident_blocks;
  out["final_resident_bytes"] = sim.resident_bytes();
  out["compute_s"] = s.compute_s;
  out["fault_stall_s"] = s.fault_stall_s;
  out["prefetch_wait_s"] = s.prefetch_wait_s;
  out["launch_wait_s"] = s.launch_wait_s;
  out["time_s"] = s.time_s;
  out["kernel_prediction_hits"] = sim.policy().kernel_hits();
  out["kernel_prediction_misses"] = sim.policy().kernel_misses();
  out["repeated_plan_launches"] = sim.policy().repeated_launches();
  out["table_bytes"] = sim.policy().table_bytes();
  out["kernel_t_start_s"] = column<double>(tl, [](const KernelRecord& r) { return r.t_start_s; });
  out["kernel_t_end_s"] = column<double>(tl, [](const KernelRecord& r) { return r.t_end_s; });
  out["kernel_fault_stall_s"] = column<double>(tl, [](const KernelRecord& r) { return r.fault_stall_s; });
  out["kernel_prefetch_wait_s"] = column<double>(tl, [](const KernelRecord& r) { return r.prefetch_wait_s; });
  out["kernel_faults"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.faults; });
  out["kernel_prefetch_bytes"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.prefetch_bytes; });
  out["kernel_evict_bytes"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.evict_bytes; });
  out["kernel_discard_bytes"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.discard_bytes; });
  out["kernel_h2d_bytes"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.h2d_bytes; });
  out["kernel_d2h_bytes"] = column<int64_t>(tl, [](const KernelRecord& r) { return r.d2h_bytes; });
  return out;
}

}  // namespace

void bind_uvm_model(py::module_& m) {
  m.def("simulate", &simulate, py::arg("policy"), py::arg("capacity_blocks"), py::arg("capacity_bytes"), py::arg("exec_id"), py::arg("kinds"),
        py::arg("duration_ns"), py::arg("access_offsets"), py::arg("access_block"), py::arg("access_pages"),
        py::arg("access_write"), py::arg("block_number"), py::arg("mem_kernel"), py::arg("mem_action"),
        py::arg("mem_address"), py::arg("mem_bytes"), py::arg("iteration_first_kernel"), py::arg("cost"),
        py::arg("config"), py::arg("warm_state") = py::none(),
        "Replays a trace (dense block indices) under a policy on the UVM driver model; returns totals and "
        "per-kernel arrays. Times in seconds, sizes in bytes. kinds: per kernel, 1 for an indexed kernel plus 2 "
        "for a fill (trace_view.hpp). capacity_blocks: the policy's capacity; "
        "capacity_bytes: the GPU's, which the sleep gate compares the managed segments with. warm_state (deepum): a learned state loaded "
        "before the replay (a bad one is reported in warm_state_error and the replay starts cold); "
        "learned_state: the policy's at the end.");
}
