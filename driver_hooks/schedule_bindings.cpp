// Python binding of Schedule (schedule.hpp) over UM block numbers, for tests against
// deepum/specs/schedule.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "schedule.hpp"

namespace py = pybind11;
using namespace deepum;

namespace {

class ScheduleUnderTest {
 public:
  ScheduleUnderTest(int64_t capacity, size_t ahead, size_t max_accesses, size_t remembered)
      : schedule_(capacity, ahead, max_accesses, remembered, index_) {}

  // The moves for this launch as (victim or None, block, lead), or None where it does not match.
  py::object launch(uint64_t exec_id, const std::vector<int64_t>& numbers, const std::vector<int64_t>& resident_numbers) {
    std::vector<Block> blocks;
    for (int64_t n : numbers) blocks.push_back(index_.dense(n));
    std::vector<uint8_t> resident(index_.size(), 0);
    for (int64_t n : resident_numbers) {
      const Block b = index_.dense(n);
      if (size_t(b) >= resident.size()) resident.resize(size_t(b) + 1, 0);
      resident[b] = 1;
    }
    Schedule::Step step{};
    if (!schedule_.launch(exec_id, blocks.data(), blocks.size(), resident, step)) return py::none();
    py::list moves;
    for (const Schedule::Move& m : step)
      moves.append(py::make_tuple(m.victim == kNone ? py::object(py::none()) : py::object(py::int_(index_.number(m.victim))),
                                  index_.number(m.block), m.lead));
    return std::move(moves);
  }

  void start_iteration() { schedule_.start_iteration(); }

 private:
  BlockIndex index_;
  Schedule schedule_;
};

}  // namespace

void bind_schedule(py::module_& m) {
  py::class_<ScheduleUnderTest>(m, "Schedule",
                                "The schedule (native) over UM block numbers; same plans as "
                                "deepum.specs.schedule.Schedule.")
      .def(py::init<int64_t, size_t, size_t, size_t>(), py::arg("capacity"), py::arg("ahead"),
           py::arg("max_accesses"), py::arg("remembered") = 1)
      .def("launch", &ScheduleUnderTest::launch, py::arg("exec_id"), py::arg("blocks"), py::arg("resident"),
           "Records the launch (resident: the blocks resident before it); its moves [(victim, block, lead), "
           "...] while the iteration follows the plan, else None.")
      .def("start_iteration", &ScheduleUnderTest::start_iteration);
}
