// Python binding of the policy core (policy.hpp) for tests against deepum/specs/policy.py: blocks
// are UM block numbers, the memory facts a set of dead blocks the test keeps.
#include <algorithm>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "options_binding.hpp"
#include "policy.hpp"
#include "sleep_gate.hpp"
#include "state_binding.hpp"

namespace py = pybind11;
using namespace deepum;

namespace {

const char* move_name(Move m) {
  switch (m) {
    case Move::kDemand: return "demand";
    case Move::kEvict: return "evict";
    case Move::kDiscard: return "discard";
    case Move::kPrefetch: return "prefetch";
    case Move::kPopulate: return "populate";
    case Move::kMapHost: return "map_host";
    case Move::kMapGpu: return "map_gpu";
  }
  return "?";
}

class DeadSet : public MemoryFacts {
 public:
  bool dead(Block b) const override { return dead_.count(policy->number(b)) != 0; }
  bool exists(Block b) const override { return absent_.count(policy->number(b)) == 0; }
  std::unordered_set<int64_t> dead_, absent_;
  const Policy* policy = nullptr;
};

class PolicyUnderTest {
 public:
  PolicyUnderTest(const std::string& mode, int64_t capacity_blocks, const py::dict& config)
      : policy_(options_from(mode, config), capacity_blocks, facts_) {
    if (policy_options_oracle(mode)) throw std::invalid_argument("the oracle needs a trace: use simulate()");
    facts_.policy = &policy_;
  }

  py::tuple on_launch(uint64_t exec_id, const std::vector<int64_t>& numbers, bool indexed, bool fill,
                      const std::vector<int64_t>& fresh_numbers) {
    std::vector<Block> blocks;
    std::vector<uint8_t> fresh;
    for (int64_t n : numbers) {
      if (n < 0) throw py::value_error("UM blocks are non-negative");
      blocks.push_back(policy_.block(n));
      fresh.push_back(std::find(fresh_numbers.begin(), fresh_numbers.end(), n) != fresh_numbers.end());
    }
    const LaunchPlan& plan = policy_.on_launch(exec_id, blocks.data(), blocks.size(), indexed, fill, fresh.data());
    py::list moves;
    for (const Decision& d : plan.moves) moves.append(py::make_tuple(move_name(d.move), policy_.number(d.block)));
    return py::make_tuple(plan.demand_prefetch, moves);
  }
  // Launch k (exec_ids[k], UM blocks numbers[offsets[k]:offsets[k + 1]], indexed when flags[k] & 1, a
  // fill when flags[k] & 2) through the policy, launch by launch; before each launch a pass writing
  // every cache line of a buffer of displace_bytes (0: none) stands for the framework's own work
  // between launches, which displaces the policy's data from the CPU's caches. Returns each launch's
  // time in on_launch, ns (the blocks numbered for the policy beforehand, untimed).
  py::array_t<int64_t> time_launches(const py::array_t<uint64_t>& exec_ids, const py::array_t<int64_t>& offsets,
                                     const py::array_t<int64_t>& numbers, const py::array_t<uint8_t>& flags,
                                     size_t displace_bytes) {
    const auto ids = exec_ids.unchecked<1>();
    const auto flag = flags.unchecked<1>();
    const auto off = offsets.unchecked<1>();
    const auto num = numbers.unchecked<1>();
    const py::ssize_t launches = ids.shape(0);
    if (off.shape(0) != launches + 1 || off(launches) > num.shape(0) || flag.shape(0) != launches)
      throw py::value_error("offsets must hold one more entry than exec_ids, the last within numbers, and flags one "
                            "per launch");
    std::vector<Block> blocks(size_t(num.shape(0)));
    for (py::ssize_t i = 0; i < num.shape(0); ++i) {
      if (num(i) < 0) throw py::value_error("UM blocks are non-negative");
      blocks[size_t(i)] = policy_.block(num(i));
    }
    std::vector<uint8_t> buffer(displace_bytes);
    volatile uint8_t* const displaced = buffer.data();
    py::array_t<int64_t> times(launches);
    auto out = times.mutable_unchecked<1>();
    for (py::ssize_t k = 0; k < launches; ++k) {
      for (size_t i = 0; i < displace_bytes; i += 64) displaced[i] = uint8_t(displaced[i] + 1);
      const auto begin = std::chrono::steady_clock::now();
      policy_.on_launch(ids(k), blocks.data() + off(k), size_t(off(k + 1) - off(k)), flag(k) & 1, flag(k) & 2);
      out(k) = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin).count();
    }
    return times;
  }
  void wake(const std::vector<int64_t>& numbers) {
    std::vector<Block> blocks;
    for (int64_t n : numbers) {
      if (n < 0) throw py::value_error("UM blocks are non-negative");
      blocks.push_back(policy_.block(n));
    }
    policy_.wake(blocks.data(), blocks.size());
  }
  void set_dead(int64_t number, bool dead) {
    if (dead) facts_.dead_.insert(number); else facts_.dead_.erase(number);
  }
  void set_absent(int64_t number, bool absent) {
    if (absent) facts_.absent_.insert(number); else facts_.absent_.erase(number);
  }
  void learn_fault(int64_t number) { policy_.learn_fault(policy_.block(number)); }
  int64_t next_iteration() { return policy_.next_iteration(); }
  void release(int64_t number) { policy_.release(policy_.block(number)); }
  bool resident(int64_t number) { return policy_.resident(policy_.block(number)); }
  bool host_mapped(int64_t number) { return policy_.host_mapped(policy_.block(number)); }
  int64_t known_block(int64_t number) const { return int64_t(policy_.known_block(number)); }
  py::bytes save_state() const { return state_bytes(policy_.save_state()); }
  void load_state(const py::bytes& data) { load_state_bytes(policy_, data); }
  const Policy& policy() const { return policy_; }

 private:
  static bool policy_options_oracle(const std::string& mode) { return mode == "oracle"; }
  DeadSet facts_;
  Policy policy_;
};

}  // namespace

void bind_policy(py::module_& m) {
  py::class_<PolicyUnderTest>(m, "Policy",
                              "The policy core (native) over UM block numbers; same decisions as "
                              "deepum.specs.policy.Policy. Dead blocks are what set_dead says.")
      .def(py::init<const std::string&, int64_t, const py::dict&>(), py::arg("mode"), py::arg("capacity_blocks"),
           py::arg("config"))
      .def("on_launch", &PolicyUnderTest::on_launch, py::arg("exec_id"), py::arg("blocks"), py::arg("indexed") = false,
           py::arg("fill") = false, py::arg("fresh") = std::vector<int64_t>{},
           "A kernel launches using `blocks` (each once), indexed or not, a fill or not, `fresh` those of them "
           "that received memory allocated since the launch before; returns (demand_prefetch, [(move, block), ...]).")
      .def("time_launches", &PolicyUnderTest::time_launches, py::arg("exec_ids"), py::arg("offsets"),
           py::arg("numbers"), py::arg("flags"), py::arg("displace_bytes") = 0,
           "Launches through the policy (launch k: exec_ids[k], blocks numbers[offsets[k]:offsets[k+1]], flags[k] "
           "1 indexed, 2 a fill), a pass over displace_bytes of memory before each; returns each launch's time in "
           "the policy, ns (bench/policy_cost.py).")
      .def("wake", &PolicyUnderTest::wake, py::arg("blocks"),
           "The engine wakes: `blocks` (ascending), those of the live managed segments, become resident.")
      .def("set_dead", &PolicyUnderTest::set_dead, py::arg("block"), py::arg("dead"))
      .def("set_absent", &PolicyUnderTest::set_absent, py::arg("block"), py::arg("absent"),
           "Whether the block is not memory now (MemoryFacts::exists).")
      .def("learn_fault", &PolicyUnderTest::learn_fault, py::arg("block"))
      .def("next_iteration", &PolicyUnderTest::next_iteration)
      .def("release", &PolicyUnderTest::release, py::arg("block"))
      .def("resident", &PolicyUnderTest::resident, py::arg("block"))
      .def("host_mapped", &PolicyUnderTest::host_mapped, py::arg("block"))
      .def("known_block", &PolicyUnderTest::known_block, py::arg("block"),
           "The policy's dense index of a UM block number, -1 where it has none (asking makes none).")
      .def("save_state", &PolicyUnderTest::save_state, "What the policy has learned (docs/warm-start.md), as bytes.")
      .def("load_state", &PolicyUnderTest::load_state, py::arg("data"),
           "Loads save_state()'s bytes before the first launch; ValueError (one line) for a bad state.")
      .def_property_readonly("warm_start", [](const PolicyUnderTest& p) { return warm_start_dict(p.policy().warm_start()); })
      .def_property_readonly("resident_blocks", [](const PolicyUnderTest& p) { return p.policy().resident_blocks(); })
      .def_property_readonly("peak_resident_blocks", [](const PolicyUnderTest& p) { return p.policy().peak_resident_blocks(); })
      .def_property_readonly("kernel_hits", [](const PolicyUnderTest& p) { return p.policy().kernel_hits(); })
      .def_property_readonly("kernel_misses", [](const PolicyUnderTest& p) { return p.policy().kernel_misses(); })
      .def_property_readonly("repeated_launches", [](const PolicyUnderTest& p) { return p.policy().repeated_launches(); });
  py::class_<SleepGate>(m, "SleepGate", "When the engine sleeps; same rule as deepum.specs.sleep.SleepGate.")
      .def(py::init<uint64_t, uint64_t>(), py::arg("capacity_bytes"), py::arg("wake_percent"))
      .def("segment_alloc", &SleepGate::segment_alloc, py::arg("nbytes"),
           "A managed segment of `nbytes` is made; whether the engine wakes with it.")
      .def("segment_free", &SleepGate::segment_free, py::arg("nbytes"))
      .def("wake", &SleepGate::wake, "Wakes now; whether it slept.")
      .def_property_readonly("asleep", &SleepGate::asleep);
}
