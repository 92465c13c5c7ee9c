// Python bindings of NextUseEviction (next_use.hpp), for tests against deepum/next_use.py.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <vector>

#include "next_use.hpp"

namespace py = pybind11;
using deepum::NextUseEviction;

void bind_next_use(py::module_& m) {
  py::class_<NextUseEviction>(m, "NextUseEviction",
                              "Eviction by foreseen next use (native); same behaviour as deepum.next_use.NextUseEviction.")
      .def(py::init<size_t>(), py::arg("remembered") = 1)
      .def("start_iteration", &NextUseEviction::start_iteration, py::arg("first"))
      .def("launch", &NextUseEviction::launch, py::arg("launch"), py::arg("exec_id"), py::arg("indexed"))
      .def(
          "short_lived",
          [](const NextUseEviction& e, size_t most_uses, size_t span_percent, bool indexed_any_span) {
            std::vector<int64_t> blocks;
            e.short_lived(most_uses, span_percent, indexed_any_span, [&](int64_t b) { blocks.push_back(b); });
            return blocks;
          },
          py::arg("most_uses"), py::arg("span_percent"), py::arg("indexed_any_span"))
      .def("passes", &NextUseEviction::passes, py::arg("block"))
      .def(
          "used_beside",
          [](const NextUseEviction& e, const std::set<int64_t>& chosen) {
            return e.used_beside([&](size_t b) { return chosen.count(int64_t(b)) != 0; });
          },
          py::arg("chosen"))
      .def("use", &NextUseEviction::use, py::arg("block"), py::arg("launch"), py::arg("resident"))
      .def("count_use", &NextUseEviction::count_use, py::arg("block"), py::arg("launch"), py::arg("fresh"),
           py::arg("fill"))
      .def("arrive", &NextUseEviction::arrive, py::arg("block"), py::arg("launch"))
      .def("foresee", [](const NextUseEviction& e, int64_t block, uint64_t launch) { return e.foresee(block, launch); },
           py::arg("block"), py::arg("launch"))
      .def(
          "victim",
          [](NextUseEviction& e, uint64_t launch, const std::function<bool(int64_t)>& resident,
             const std::function<bool(int64_t)>& may_go, const std::function<bool(int64_t)>& dead, int dead_search,
             uint64_t need_at) -> py::object {
            const int64_t chosen = e.victim(launch, resident, may_go, dead, dead_search, need_at);
            return chosen == NextUseEviction::kNoVictim ? py::none() : py::object(py::int_(chosen));
          },
          py::arg("launch"), py::arg("resident"), py::arg("may_go"), py::arg("dead"), py::arg("dead_search"), py::arg("need_at"));
}
