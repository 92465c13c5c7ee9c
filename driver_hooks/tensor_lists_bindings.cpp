// Python binding of the multi_tensor_apply argument reader (tensor_lists.hpp), for tests.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "tensor_lists.hpp"

namespace py = pybind11;

void bind_tensor_lists(py::module_& m) {
  m.def(
      "tensor_list_addresses",
      [](const std::string& kernel_name, const py::bytes& argument, uint64_t grid_x) -> py::object {
        const std::string bytes(argument);
        const auto layout = deepum::tensor_list_layout(kernel_name.c_str(), bytes.size());
        if (!layout) return py::none();
        const auto addresses = deepum::tensor_list_addresses(*layout, bytes.data(), grid_x);
        return addresses ? py::cast(*addresses) : py::none();
      },
      py::arg("kernel_name"), py::arg("argument"), py::arg("grid_x"),
      "The addresses a multi_tensor_apply_kernel launch of grid_x blocks uses, read from its first argument's "
      "bytes, slot by slot in operand order; None where the launch hook scans the argument whole instead.");
}
