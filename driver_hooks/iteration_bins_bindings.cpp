// Python binding of the fault log's iteration bins (iteration_bins.hpp) for tests: transfer kinds
// are "fault_h2d", "prefetch_h2d", "other_h2d" and "d2h", kernel records (start, end) spans;
// figures() gives one dict per bin, totals() one for all records.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "iteration_bins_binding.hpp"

namespace py = pybind11;
using namespace deepum;

namespace {

Transfer transfer_kind(const std::string& name) {
  static const std::map<std::string, Transfer> kinds = {{"fault_h2d", Transfer::kFaultH2D},
                                                        {"prefetch_h2d", Transfer::kPrefetchH2D},
                                                        {"other_h2d", Transfer::kOtherH2D},
                                                        {"d2h", Transfer::kD2H}};
  const auto it = kinds.find(name);
  if (it == kinds.end()) throw std::invalid_argument("unknown transfer kind " + name);
  return it->second;
}

}  // namespace

void bind_iteration_bins(py::module_& m) {
  py::class_<IterationBins>(m, "IterationBins")
      .def(py::init<>())
      .def("reset", &IterationBins::reset)
      .def("mark", &IterationBins::mark, py::arg("t_ns"))
      .def("fault", &IterationBins::fault, py::arg("t_ns"), py::arg("count"))
      .def("transfers",
           [](IterationBins& bins, const std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>>& rows) {
             std::vector<TransferRecord> records;
             for (const auto& [start, end, bytes, kind] : rows) records.push_back({start, end, bytes, transfer_kind(kind)});
             bins.transfers(std::move(records));
           },
           py::arg("records"), "One buffer's transfers: (start_ns, end_ns, bytes, kind) each.")
      .def("kernels",
           [](IterationBins& bins, const std::vector<std::pair<uint64_t, uint64_t>>& rows) {
             std::vector<KernelSpan> spans;
             for (const auto& [start, end] : rows) spans.push_back({start, end});
             bins.kernels(std::move(spans));
           },
           py::arg("spans"), "One buffer's kernel records: (start_ns, end_ns) each.")
      .def("figures", [](const IterationBins& bins) {
        py::list out;
        for (const IterationFigures& f : bins.figures()) out.append(iteration_figures_dict(f));
        return out;
      })
      .def("totals", [](const IterationBins& bins) { return iteration_figures_dict(bins.totals()); },
           "The figures since construction, which reset() keeps.");
}
