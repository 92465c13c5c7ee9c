// The recorder: what the launch hook, the allocator hook and the fault log saw, gathered natively
// and handed to Python as NumPy arrays. Two of them run: the trace being recorded (start's record)
// and the fault log that learning from faults drains at each iteration mark.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "launch_accesses.hpp"

namespace deepum {

// Everything a trace (docs/trace-format.md) holds, gathered while recording; Python writes the file.
class Recorder {
 public:
  std::atomic<bool> on{false};

  void launch(uint32_t correlation, uint64_t exec_id, const char* name, const std::vector<Access>& accesses) {
    std::lock_guard<std::mutex> lock(mutex_);
    correlation_.push_back(correlation);
    exec_id_.push_back(exec_id);
    auto [it, added] = names_.emplace(name ? name : "?", uint32_t(names_.size()));
    name_idx_.push_back(it->second);
    for (const Access& a : accesses) {
      block_.push_back(a.block);
      pages_.push_back(int16_t(std::min(a.pages, 512)));
      write_.push_back(a.write);
    }
    offsets_.push_back(int64_t(block_.size()));
  }
  void memory(int8_t action, uint64_t address, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    mem_.push_back({int64_t(correlation_.size()) - 1, action, address, bytes});
  }
  void iteration() {
    std::lock_guard<std::mutex> lock(mutex_);
    iteration_end_.push_back(int64_t(correlation_.size()));
  }
  void kernel_time(uint32_t correlation, uint64_t start, uint64_t end) {
    std::lock_guard<std::mutex> lock(mutex_);
    kernels_.push_back({correlation, start, end});
  }
  void fault(uint64_t t, uint64_t address, int8_t kind) {
    std::lock_guard<std::mutex> lock(mutex_);
    faults_.push_back({t, address, kind});
  }
  void transfer(uint64_t t, uint64_t address, uint64_t bytes, int8_t direction, int8_t cause) {
    std::lock_guard<std::mutex> lock(mutex_);
    transfers_.push_back({t, address, bytes, direction, cause});
  }

  // Hands everything over as NumPy arrays (in the trace's names where they match) and clears it.
  pybind11::dict drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    pybind11::dict out;
    out["launch_correlation"] = as_array(correlation_);
    out["kernel_exec_id"] = as_array(exec_id_);
    out["kernel_name_idx"] = as_array(name_idx_);
    std::vector<std::string> names(names_.size());
    for (const auto& [name, idx] : names_) names[idx] = name;
    out["kernel_names"] = names;
    out["access_offsets"] = as_array(offsets_);
    out["access_block"] = as_array(block_);
    out["access_pages"] = as_array(pages_);
    std::vector<uint8_t> writes(write_.begin(), write_.end());
    out["access_write"] = as_array(writes);
    out["iteration_end_launch"] = as_array(iteration_end_);
    out["mem_kernel"] = column<int64_t>(mem_, [](const Mem& m) { return m.after_launch; });
    out["mem_action"] = column<int8_t>(mem_, [](const Mem& m) { return m.action; });
    out["mem_address"] = column<uint64_t>(mem_, [](const Mem& m) { return m.address; });
    out["mem_bytes"] = column<uint64_t>(mem_, [](const Mem& m) { return m.bytes; });
    out["activity_correlation"] = column<uint32_t>(kernels_, [](const KernelTime& k) { return k.correlation; });
    out["activity_start_ns"] = column<uint64_t>(kernels_, [](const KernelTime& k) { return k.start; });
    out["activity_end_ns"] = column<uint64_t>(kernels_, [](const KernelTime& k) { return k.end; });
    out["fault_t_ns"] = column<uint64_t>(faults_, [](const Fault& f) { return f.t; });
    out["fault_address"] = column<uint64_t>(faults_, [](const Fault& f) { return f.address; });
    out["fault_kind"] = column<int8_t>(faults_, [](const Fault& f) { return f.kind; });
    out["xfer_t_ns"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.t; });
    out["xfer_address"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.address; });
    out["xfer_bytes"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.bytes; });
    out["xfer_dir"] = column<int8_t>(transfers_, [](const Transfer& x) { return x.direction; });
    out["xfer_cause"] = column<int8_t>(transfers_, [](const Transfer& x) { return x.cause; });
    correlation_.clear(), name_idx_.clear(), exec_id_.clear(), names_.clear();
    offsets_.assign(1, 0), block_.clear(), iteration_end_.clear(), pages_.clear(), write_.clear();
    mem_.clear(), kernels_.clear(), faults_.clear(), transfers_.clear();
    return out;
  }

 private:
  struct Mem { int64_t after_launch; int8_t action; uint64_t address, bytes; };
  struct KernelTime { uint32_t correlation; uint64_t start, end; };
  struct Fault { uint64_t t, address; int8_t kind; };
  struct Transfer { uint64_t t, address, bytes; int8_t direction, cause; };

  template <typename T>
  static pybind11::array_t<T> as_array(const std::vector<T>& v) {
    pybind11::array_t<T> out(v.size());
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
  }
  template <typename T, typename R, typename F>
  static pybind11::array_t<T> column(const std::vector<R>& rows, F field) {
    pybind11::array_t<T> values(rows.size());
    T* p = values.mutable_data();
    for (size_t i = 0; i < rows.size(); ++i) p[i] = field(rows[i]);
    return values;
  }

  std::mutex mutex_;
  std::vector<uint32_t> correlation_, name_idx_;
  std::vector<uint64_t> exec_id_;
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<int64_t> offsets_{0}, block_, iteration_end_;  // iteration_end_: launches at each mark
  std::vector<int16_t> pages_;
  std::vector<bool> write_;
  std::vector<Mem> mem_;
  std::vector<KernelTime> kernels_;
  std::vector<Fault> faults_;
  std::vector<Transfer> transfers_;
};

}  // namespace deepum
