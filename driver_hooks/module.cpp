// deepum._native: the CPU native core (correlation tables and predictor, UVM driver model, eviction
// by foreseen next use).
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_correlation(py::module_& m);  // correlation_bindings.cpp
void bind_uvm_model(py::module_& m);    // uvm_model_bindings.cpp
void bind_next_use(py::module_& m);     // next_use_bindings.cpp

PYBIND11_MODULE(_native, m) {
  m.doc() = "deepum native core: correlation tables, predictor, UVM driver model and eviction by next use (CPU only)";
  bind_correlation(m);
  bind_uvm_model(m);
  bind_next_use(m);
}
