// Python binding of the correlation predictor: deepum._native.Predictor, PredictedKernel, WindowChange.
// Same API as deepum/predictor.py; entries compare equal to the Python ones.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "options_binding.hpp"
#include "predictor.hpp"
#include "state_binding.hpp"

namespace py = pybind11;
using deepum::PredictedKernel;
using deepum::Predictor;
using deepum::WindowChange;

namespace {

uint64_t exec_id_arg(const py::int_& value) {
  const unsigned long long id = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error("exec ID must be in [0, 2**64), got " + py::str(value).cast<std::string>());
  }
  return id;
}

int64_t block_arg(const py::int_& value) {
  const long long block = PyLong_AsLongLong(value.ptr());
  if (PyErr_Occurred() || block < 0) {
    PyErr_Clear();
    throw py::value_error("UM block must be in [0, 2**63), got " + py::str(value).cast<std::string>());
  }
  return block;
}

py::tuple to_tuple(const std::vector<int64_t>& blocks) {
  py::tuple out(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) out[i] = py::int_(blocks[i]);
  return out;
}

// Equality with anything holding the same fields, in order: a tuple (the Python NamedTuples are tuples)
// or an object with those attributes.
py::object equals(const py::tuple& fields, const char* const* names, const py::object& other) {
  if (py::isinstance<py::tuple>(other)) return py::bool_(fields.equal(other));
  py::tuple theirs(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!py::hasattr(other, names[i])) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    theirs[i] = other.attr(names[i]);
  }
  return py::bool_(fields.equal(theirs));
}

const char* const kKernelFields[] = {"exec_id", "blocks"};
const char* const kChangeFields[] = {"popped", "pushed"};

py::tuple kernel_fields(const PredictedKernel& k) { return py::make_tuple(k.exec_id, to_tuple(k.blocks())); }
py::tuple change_fields(const WindowChange& c) { return py::make_tuple(c.popped, c.pushed); }

}  // namespace

void bind_correlation(py::module_& m) {
  py::class_<PredictedKernel>(m, "PredictedKernel", "A window entry: an exec ID and its predicted UM blocks.")
      .def_readonly("exec_id", &PredictedKernel::exec_id)
      .def_property_readonly("blocks", [](const PredictedKernel& k) { return to_tuple(k.blocks()); },
                             "UM blocks in chain-walk order, no repeats (tuple)")
      .def("__eq__", [](const PredictedKernel& k, const py::object& other) {
        return equals(kernel_fields(k), kKernelFields, other);
      })
      .def("__repr__", [](const PredictedKernel& k) {
        return "PredictedKernel(exec_id=" + std::to_string(k.exec_id) +
               ", blocks=" + py::repr(to_tuple(k.blocks())).cast<std::string>() + ")";
      });

  py::class_<WindowChange>(m, "WindowChange", "What one launch did to the window.")
      .def_readonly("popped", &WindowChange::popped, "entries removed from the front (all old ones on a rebuild)")
      .def_readonly("pushed", &WindowChange::pushed, "entries appended at the back")
      .def("__eq__", [](const WindowChange& c, const py::object& other) {
        return equals(change_fields(c), kChangeFields, other);
      })
      .def("__repr__", [](const WindowChange& c) {
        return "WindowChange(popped=" + std::to_string(c.popped) + ", pushed=" + std::to_string(c.pushed) + ")";
      });

  py::class_<Predictor>(m, "Predictor",
                        "DeepUM correlation predictor (native); same behaviour as deepum.specs.predictor.Predictor.\n"
                        "Takes DeepUMConfig.to_dict(); only the table sizes, the lookahead and recall_iterations "
                        "matter here.")
      .def(py::init([](const py::dict& config) { return std::make_unique<Predictor>(deepum::tables_from(config)); }),
           py::arg("config"))
      .def("on_kernel", [](Predictor& p, const py::int_& exec_id) { return p.on_kernel(exec_id_arg(exec_id)); },
           py::arg("exec_id"), "A kernel with execution ID `exec_id` launched; returns the WindowChange.")
      .def("start_iteration", &Predictor::start_iteration,
           "An iteration starts with the next launch: the one that ends is remembered.")
      .def("on_fault", [](Predictor& p, const py::int_& block) { p.on_fault(block_arg(block)); }, py::arg("block"),
           "The running kernel faulted on UM block `block` (a non-negative block number).")
      .def("learn_faults", [](Predictor& p, const py::int_& exec_id, const py::iterable& blocks) {
        const uint64_t id = exec_id_arg(exec_id);
        std::vector<int64_t> values;
        for (const py::handle block : blocks) values.push_back(block_arg(py::int_(py::reinterpret_borrow<py::object>(block))));
        p.learn_faults(id, values.data(), values.size());
      }, py::arg("exec_id"), py::arg("blocks"),
           "UM blocks one earlier launch of `exec_id` faulted on, in order, learned now.")
      .def_property_readonly("window", [](const Predictor& p) {
        py::list out;
        for (const PredictedKernel& k : p.window()) out.append(py::cast(k));
        return out;
      }, "[0]: the running kernel; [1:]: the kernels predicted to follow it, in order (list of PredictedKernel).")
      .def_property_readonly("kernel_hits", &Predictor::kernel_hits, "Launches that matched window[1] of the previous launch.")
      .def_property_readonly("kernel_misses", &Predictor::kernel_misses,
                             "Launches that did not match window[1] of the previous launch although it existed.")
      .def("table_bytes", &Predictor::table_bytes, "Bytes the correlation tables hold now.")
      .def("saved_tables", [](Predictor& p) {
        deepum::StateWriter w;
        p.tables().catch_up();
        p.tables().save(w);
        return deepum::state_bytes(w.take());
      }, "The tables' learned state, as a warm start saves it (bytes, state_io.hpp's layout).")
      .def("predict_blocks", [](Predictor& p, const py::int_& exec_id) {
        return to_tuple(p.predict_blocks(exec_id_arg(exec_id)));
      }, py::arg("exec_id"), "UM blocks predicted now for one launch of `exec_id`, in chain-walk order (tuple).");
}
