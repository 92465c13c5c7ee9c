// Python binding of the memory map (memory_map.hpp) for tests: streams and discard events are
// integers, and a stream's wait for an event is recorded as a (stream, event) pair (take_waits); an
// event marked completed (a discard that has returned) is not waited for.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "memory_map.hpp"

namespace py = pybind11;
using namespace deepum;

namespace {

class MemoryMapUnderTest {
 public:
  MemoryMapUnderTest()
      : map_([this](int64_t stream, const int64_t& event) {
          if (completed_.count(event)) return false;
          waits_.emplace_back(stream, event);
          return true;
        }) {}

  bool on_alloc(uint64_t addr, uint64_t size, int64_t stream) { return map_.on_alloc(addr, size, stream); }
  bool on_free_completed(uint64_t addr) { return map_.on_free_completed(addr); }
  void on_segment_alloc(uint64_t addr, uint64_t size) { map_.on_segment_alloc(addr, size); }
  bool on_segment_free(uint64_t addr, uint64_t size) { return map_.on_segment_free(addr, size); }
  std::vector<int64_t> segment_blocks() const { return map_.segment_blocks(); }
  void set_awake(bool on) { map_.set_awake(on); }
  void track_releases(bool on) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    map_.track_releases(on);
  }

  bool dead(int64_t b) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.dead(b);
  }
  std::tuple<uint64_t, uint64_t, uint64_t> managed_part(int64_t b) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.managed_part(b);
  }
  int64_t portable(int64_t b) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.portable(b);
  }
  int64_t um_block(int64_t p) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.um_block(p);
  }
  uint64_t portable_address(uint64_t p) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.portable_address(p);
  }
  std::pair<uint64_t, uint64_t> allocation(uint64_t p) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.allocation(p);
  }
  uint64_t born(uint64_t start) const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.born(start);
  }
  uint64_t allocations() const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.allocations();
  }
  std::optional<std::pair<uint64_t, std::vector<int64_t>>> choose_discard(int64_t b) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    uint64_t ticket = 0;
    std::vector<int64_t> users;
    if (!map_.choose_discard(b, ticket, users)) return std::nullopt;
    return std::make_pair(ticket, users);
  }
  bool take_pending(int64_t b, uint64_t ticket) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.take_pending(b, ticket);
  }
  bool take_handed(int64_t b, uint64_t ticket, int64_t event) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.take_handed(b, ticket, event);
  }
  void discard_finished(int64_t b, std::optional<int64_t> event) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    map_.discard_finished(b, event ? &*event : nullptr);
  }
  std::vector<int64_t> take_released() {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.take_released();
  }
  std::vector<int64_t> take_fresh() {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.take_fresh();
  }
  std::vector<std::pair<uint64_t, uint64_t>> contiguous_ranges(const std::vector<int64_t>& blocks) const {
    return map_.contiguous_ranges(blocks);
  }
  std::vector<std::pair<int64_t, int64_t>> take_waits() { return std::exchange(waits_, {}); }
  void complete(int64_t event) {
    std::lock_guard<std::mutex> lock(map_.mutex());
    completed_.insert(event);
  }
  uint64_t discards_cancelled() const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.discards_cancelled();
  }
  uint64_t allocation_waits() const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.allocation_waits();
  }
  uint64_t allocation_holds() const {
    std::lock_guard<std::mutex> lock(map_.mutex());
    return map_.allocation_holds();
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> waits_;  // (stream, event) in the order the waits were asked
  std::set<int64_t> completed_;                     // events of discards that have returned
  MemoryMap<int64_t, int64_t> map_;
};

}  // namespace

void bind_memory_map(py::module_& m) {
  py::class_<MemoryMapUnderTest>(m, "MemoryMap",
                                 "The online engine's memory map (memory_map.hpp) with integer streams and "
                                 "discard events; the waits it asks for are recorded (take_waits).")
      .def(py::init<>())
      .def("on_alloc", &MemoryMapUnderTest::on_alloc, py::arg("addr"), py::arg("size"), py::arg("stream"),
           py::call_guard<py::gil_scoped_release>(),
           "Whether the allocation is tracked (it lies in a managed segment). Holds the calling thread while "
           "a discard in its memory is being issued (until discard_finished), without the GIL.")
      .def("on_free_completed", &MemoryMapUnderTest::on_free_completed, py::arg("addr"),
           "Whether the allocation was tracked.")

      .def("on_segment_alloc", &MemoryMapUnderTest::on_segment_alloc, py::arg("addr"), py::arg("size"))
      .def("on_segment_free", &MemoryMapUnderTest::on_segment_free, py::arg("addr"), py::arg("size"),
           "A segment is freed; whether it was a managed one.")
      .def("segment_blocks", &MemoryMapUnderTest::segment_blocks,
           "The blocks the live managed segments span, ascending, each once (what the engine wakes with).")
      .def("dead", &MemoryMapUnderTest::dead, py::arg("block"))
      .def("managed_part", &MemoryMapUnderTest::managed_part, py::arg("block"),
           "(start, bytes, segment start) of the block's part inside a managed segment; bytes 0 when none.")
      .def("portable", &MemoryMapUnderTest::portable, py::arg("block"),
           "The block's portable number (segments laid out in allocation order); -1 outside managed segments.")
      .def("um_block", &MemoryMapUnderTest::um_block, py::arg("portable"),
           "The UM block of a portable number; -1 when its segment is not live.")
      .def("portable_address", &MemoryMapUnderTest::portable_address, py::arg("pointer"),
           "The portable address of a byte of a managed segment; 0 elsewhere.")
      .def("allocation", &MemoryMapUnderTest::allocation, py::arg("pointer"),
           "(start, size) of the live allocation holding the pointer, or (0, 0).")
      .def("born", &MemoryMapUnderTest::born, py::arg("start"))
      .def_property_readonly("allocations", &MemoryMapUnderTest::allocations)
      .def("choose_discard", &MemoryMapUnderTest::choose_discard, py::arg("block"),
           "(ticket, last users) of a discard of the block chosen now: the streams it must also wait "
           "for; None when the block is not dead.")
      .def("take_pending", &MemoryMapUnderTest::take_pending, py::arg("block"), py::arg("ticket"))
      .def("take_handed", &MemoryMapUnderTest::take_handed, py::arg("block"), py::arg("ticket"), py::arg("event"),
           "Takes a choice for threads that issue it later: whether it was taken; allocations in the block "
           "from now on wait for `event`.")
      .def("discard_finished", &MemoryMapUnderTest::discard_finished, py::arg("block"), py::arg("event"),
           "The worker is done with a taken choice: its discard was issued with completion `event`, or "
           "(None) nothing was discarded.")
      .def("take_released", &MemoryMapUnderTest::take_released)
      .def("take_fresh", &MemoryMapUnderTest::take_fresh)
      .def("set_awake", &MemoryMapUnderTest::set_awake, py::arg("on"),
           "Whether an engine is awake: asleep, no address is in an allocation, no block is dead, no "
           "block is fresh.")
      .def("track_releases", &MemoryMapUnderTest::track_releases, py::arg("on"),
           "Whether freed segments are queued for take_released (an engine runs).")
      .def("contiguous_ranges", &MemoryMapUnderTest::contiguous_ranges, py::arg("blocks"))
      .def("take_waits", &MemoryMapUnderTest::take_waits,
           "The (stream, event) waits asked for since the last call, in order.")
      .def("complete", &MemoryMapUnderTest::complete, py::arg("event"),
           "The discard of `event` has returned: an allocation in its block no longer waits for it.")
      .def_property_readonly("discards_cancelled", &MemoryMapUnderTest::discards_cancelled)
      .def_property_readonly("allocation_waits", &MemoryMapUnderTest::allocation_waits)
      .def_property_readonly("allocation_holds", &MemoryMapUnderTest::allocation_holds);
}
