// deepum._native: the CPU native core (correlation tables and predictor, the policy core, the UVM
// driver model, eviction by foreseen next use, the schedule, the foreach argument reader, the indexed
// kernels' names, the worker's hand-over to its pools, the launch hook's merge of a launch's
// accesses) and the constants Python shares with it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "fill_kernels.hpp"
#include "hand_over.hpp"
#include "indexed_kernels.hpp"
#include "launch_accesses.hpp"
#include "units.hpp"

namespace py = pybind11;

void bind_correlation(py::module_& m);  // correlation_bindings.cpp
void bind_memory_map(py::module_& m);   // memory_map_bindings.cpp
void bind_policy(py::module_& m);       // policy_bindings.cpp
void bind_uvm_model(py::module_& m);    // uvm_model_bindings.cpp
void bind_next_use(py::module_& m);     // next_use_bindings.cpp
void bind_schedule(py::module_& m);     // schedule_bindings.cpp
void bind_iteration_bins(py::module_& m);  // iteration_bins_bindings.cpp
void bind_tensor_lists(py::module_& m);    // tensor_lists_bindings.cpp

PYBIND11_MODULE(_native, m) {
  m.doc() = "deepum native core: correlation tables, predictor, policy core, UVM driver model (CPU only)";
  m.attr("BLOCK_BYTES") = deepum::kBlockBytes;
  m.attr("PAGE_BYTES") = deepum::kPageBytes;
  py::dict actions;
  actions["alloc"] = int(deepum::MemAction::kAlloc);
  actions["free"] = int(deepum::MemAction::kFree);
  actions["segment_alloc"] = int(deepum::MemAction::kSegmentAlloc);
  actions["segment_free"] = int(deepum::MemAction::kSegmentFree);
  m.attr("MEM_ACTIONS") = actions;
  bind_correlation(m);
  bind_memory_map(m);
  bind_policy(m);
  bind_uvm_model(m);
  bind_next_use(m);
  bind_schedule(m);
  bind_iteration_bins(m);
  bind_tensor_lists(m);
  m.def(
      "indexed_kernel", [](const std::string& name) { return deepum::indexed_kernel(name.c_str()); }, py::arg("name"),
      "Whether the kernel named `name` is indexed; same answer as deepum.specs.indexed_kernels.is_indexed.");
  m.def(
      "taken_at_once",
      [](const std::vector<bool>& served_by_pool, bool worker_behind) {
        return deepum::taken_at_once(served_by_pool.size(), worker_behind, [&](size_t i) { return served_by_pool[i]; });
      },
      py::arg("served_by_pool"), py::arg("worker_behind"),
      "How many of one decision's commands the pools take at once (hand_over.hpp); served_by_pool: per command "
      "in decision order, whether a pool serves its lane.");
  m.def("published_wait", &deepum::published_wait, py::arg("wait"), py::arg("published"),
        "The wait a command keeps when handed to a pool: only published work (hand_over.hpp).");
  m.def(
      "merge_accesses",
      [](const std::vector<std::tuple<int64_t, int32_t, bool>>& rows) {
        std::vector<deepum::Access> accesses;
        for (const auto& [block, pages, write] : rows) accesses.push_back({block, pages, write});
        deepum::merge_by_block(accesses);
        std::vector<std::tuple<int64_t, int32_t, bool>> merged;
        for (const deepum::Access& a : accesses) merged.emplace_back(a.block, a.pages, a.write);
        return merged;
      },
      py::arg("rows"),
      "A launch's accesses (block, pages, write) merged as the launch hook merges them (launch_accesses.hpp): one "
      "row per block, ascending, pages summed, writes or-ed.");
  m.def(
      "fill_kernel", [](const std::string& name) { return deepum::fill_kernel(name.c_str()); }, py::arg("name"),
      "Whether the kernel named `name` is a fill; same answer as deepum.specs.fill_kernels.is_fill.");
}
