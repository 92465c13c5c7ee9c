// Prefetcher: what the policy core (policy.hpp) prefetches. It keeps a window: [0] the running kernel,
// [1..] the kernels expected after it, each with its blocks in need order. The DeepUM prefetcher is
// here (the correlation predictor of correlation.hpp); the oracle's exact future is in oracle.hpp.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "block_list.hpp"
#include "predictor.hpp"

namespace deepum {

// A window entry's blocks, shared with whoever else holds the entry and never changed.
using WindowEntry = std::shared_ptr<const std::vector<Block>>;
using Window = std::deque<WindowEntry>;

class Prefetcher {
 public:
  virtual ~Prefetcher() = default;
  // The kernel with `exec_id` launched; returns what changed at the ends of window().
  virtual WindowChange on_launch(uint64_t exec_id) = 0;
  virtual const Window& window() const = 0;
  virtual void start_iteration() {}  // an iteration starts with the next launch
  virtual void learn(Block) {}  // the running kernel used (or faulted on) the block
  virtual void learn_faults(uint64_t /*exec_id*/, const int64_t* /*numbers*/, size_t /*count*/) {}
  virtual uint64_t kernel_hits() const { return 0; }
  virtual uint64_t kernel_misses() const { return 0; }
  virtual size_t table_bytes() const { return 0; }
};

// DeepUM's prefetcher: correlation tables keyed by execution ID predict the next kernels and their
// blocks; the tables see UM block numbers and renumber each chain walk once, the window holds the
// walks' dense indices.
class CorrelationPrefetcher : public Prefetcher {
 public:
  CorrelationPrefetcher(const CorrelationConfig& config, BlockIndex& index) : predictor_(config, &index), index_(index) {}

  WindowChange on_launch(uint64_t exec_id) override {
    const WindowChange change = predictor_.on_kernel(exec_id);
    for (size_t i = 0; i < change.popped; ++i) window_.pop_front();
    const auto& predicted = predictor_.window();
    for (size_t i = predicted.size() - change.pushed; i < predicted.size(); ++i)
      window_.emplace_back(predicted[i].walk, &predicted[i].walk->dense);
    return change;
  }
  const Window& window() const override { return window_; }
  void start_iteration() override { predictor_.start_iteration(); }
  void learn(Block b) override { predictor_.on_fault(index_.number(b)); }
  void learn_faults(uint64_t exec_id, const int64_t* numbers, size_t count) override {
    predictor_.learn_faults(exec_id, numbers, count);
  }
  uint64_t kernel_hits() const override { return predictor_.kernel_hits(); }
  uint64_t kernel_misses() const override { return predictor_.kernel_misses(); }
  size_t table_bytes() const override { return predictor_.table_bytes(); }
  CorrelationTables& tables() { return predictor_.tables(); }

 private:
  Predictor predictor_;
  BlockIndex& index_;
  Window window_;
};

}  // namespace deepum
