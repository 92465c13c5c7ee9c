// One iteration's fault-log figures across the Python boundary (online_bindings.cpp,
// iteration_bins_bindings.cpp): a dict of stats() keys.
#pragma once
#include <pybind11/pybind11.h>

#include "iteration_bins.hpp"

namespace deepum {

inline pybind11::dict iteration_figures_dict(const IterationFigures& f) {
  pybind11::dict row;
  row["gpu_page_faults"] = f.gpu_page_faults;
  row["fault_h2d_bytes"] = f.fault_h2d_bytes;
  row["prefetch_h2d_bytes"] = f.prefetch_h2d_bytes;
  row["other_h2d_bytes"] = f.other_h2d_bytes;
  row["d2h_bytes"] = f.d2h_bytes;
  row["h2d_link_busy_ns"] = f.h2d_link.busy_ns();
  row["d2h_link_busy_ns"] = f.d2h_link.busy_ns();
  row["gpu_busy_ns"] = f.kernels.busy_ns();
  return row;
}

}  // namespace deepum
