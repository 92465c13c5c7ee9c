// The DeepUM predictor (native): the window of the running kernel and the kernels predicted after it,
// from the correlation tables. deepum/specs/predictor.py is the readable specification; this must agree
// with it on every input (tests/test_native_agrees.py). Header-only, no CUDA, no Python.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

#include "correlation.hpp"

namespace deepum {

struct PredictedKernel {
  uint64_t exec_id;
  std::shared_ptr<const ChainWalk> walk;  // its predicted blocks, as walked when it was predicted
  const std::vector<int64_t>& blocks() const { return walk->blocks; }  // UM blocks in chain-walk order, no repeats
};

struct WindowChange {
  size_t popped;  // entries removed from the front of window() by this on_kernel (all old ones on a rebuild)
  size_t pushed;  // entries appended at the back (the last `pushed` entries of window())
};

// The window of the running kernel and the kernels predicted to follow it, each with its predicted UM
// blocks. On each launch: a launch that matches window()[1] is a kernel hit and pops the front; any other
// launch rebuilds the window from the launched kernel (a kernel miss if a prediction existed). Then the tail
// grows one predicted kernel at a time, each recalled from a remembered iteration where one is followed
// (recall_iterations: deepum/specs/predictor.py says how), else predicted from the launch history followed
// by the kernels predicted before it, until the window holds lookahead + 1 entries or there is no
// prediction; later launches grow it again.
// With `renumber`, each entry's walk also holds its blocks' dense indices (CorrelationTables).
class Predictor {
 public:
  explicit Predictor(const CorrelationConfig& config, BlockIndex* renumber = nullptr)
      : config_(checked(config)), tables_(config, renumber) {}

  WindowChange on_kernel(uint64_t exec_id) {  // a kernel launched
    tables_.on_kernel(exec_id);
    recall(exec_id);
    if (window_.size() >= 2 && window_[1].exec_id == exec_id) {
      window_.pop_front();
      ++kernel_hits_;
      return {1, extend()};
    }
    if (window_.size() >= 2) ++kernel_misses_;
    const size_t popped = window_.size();
    window_.clear();
    push_back(exec_id);
    return {popped, 1 + extend()};
  }

  // An iteration starts with the next launch: the one that ends is remembered. The remembered iteration
  // as far back as the one followed is followed on (iterations that repeat every other one stay in step).
  void start_iteration() {
    if (config_.recall_iterations > 0) {
      past_.push_front(std::move(current_));
      if (past_.size() > config_.recall_iterations) past_.pop_back();
    }
    current_.clear();
    if (following_ >= 0 && size_t(following_) >= past_.size()) following_ = -1;
  }

  void on_fault(int64_t block) { tables_.on_fault(block); }  // the running kernel faulted on `block`
  // UM blocks one earlier launch of `exec_id` faulted on, in order, learned now (see
  // CorrelationTables::learn_faults); the window keeps its chains until its entries are rebuilt.
  void learn_faults(uint64_t exec_id, const int64_t* blocks, size_t count) { tables_.learn_faults(exec_id, blocks, count); }

  // window()[0] is the running kernel with its predicted blocks; [1..] the predicted next kernels.
  const std::deque<PredictedKernel>& window() const { return window_; }
  uint64_t kernel_hits() const { return kernel_hits_; }      // launches that matched window()[1] of the previous launch
  uint64_t kernel_misses() const { return kernel_misses_; }  // launches that did not, where window()[1] existed
  size_t table_bytes() const { return tables_.bytes(); }     // bytes the tables hold now
  CorrelationTables& tables() { return tables_; }           // what it has learned (a warm start saves them)

  // UM blocks predicted now for one launch of `exec_id`, in chain-walk order.
  std::vector<int64_t> predict_blocks(uint64_t exec_id) { return tables_.chain(exec_id)->blocks; }

 private:
  static const CorrelationConfig& checked(const CorrelationConfig& c) {
    for (size_t value : {c.lookahead, c.exec_ids, c.exec_records, c.block_rows, c.block_ways, c.block_successors,
                         c.chain_blocks})
      if (value == 0) throw std::invalid_argument("CorrelationConfig sizes must be positive");
    return c;
  }

  size_t extend() {
    // Context: the launch history (its last entry is window_[0]) followed by the predicted kernels.
    Context context;
    const Context& history = tables_.history();
    const size_t known = kHistory + window_.size();
    for (size_t i = 0; i <= kHistory; ++i) {
      const size_t at = known - (kHistory + 1) + i;
      context[i] = at < kHistory ? history[at] : window_[at - kHistory].exec_id;
    }
    size_t pushed = 0;
    uint64_t next;
    while (window_.size() < config_.lookahead + 1 && (recalled(next) || tables_.predict_next(context, next))) {
      push_back(next);
      std::copy(context.begin() + 1, context.end(), context.begin());
      context.back() = next;
      ++pushed;
    }
    return pushed;
  }

  void push_back(uint64_t exec_id) { window_.push_back({exec_id, tables_.chain(exec_id)}); }

  // The launch at this place of the iteration: the remembered iteration followed so far is followed on
  // if it launched the same here, else the latest one that did; where none did, none is (the tables
  // predict).
  void recall(uint64_t exec_id) {
    if (config_.recall_iterations == 0) return;  // off: nothing is remembered on the launching thread
    const size_t place = current_.size();
    if (place >= kRecalledLaunches) {
      following_ = -1;
      return;
    }
    current_.push_back(exec_id);
    const auto same = [&](size_t i) { return place < past_[i].size() && past_[i][place] == exec_id; };
    if (following_ >= 0 && same(size_t(following_))) return;
    following_ = -1;
    for (size_t i = 0; i < past_.size() && following_ < 0; ++i)
      if (same(i)) following_ = int(i);
  }
  // The exec ID the followed remembered iteration launched at the place of the next window entry.
  bool recalled(uint64_t& next) const {
    if (following_ < 0) return false;
    const std::vector<uint64_t>& past = past_[size_t(following_)];
    const size_t place = current_.size() - 1 + window_.size();
    if (place >= past.size()) return false;
    next = past[place];
    return true;
  }

  static constexpr size_t kRecalledLaunches = size_t(1) << 16;  // an iteration's launches remembered at most
  std::vector<uint64_t> current_;             // this iteration's launches so far
  std::deque<std::vector<uint64_t>> past_;    // the last recall_iterations iterations' launches, latest first
  int following_ = -1;                        // the one followed (index into past_), -1: none

  CorrelationConfig config_;
  CorrelationTables tables_;
  std::deque<PredictedKernel> window_;
  uint64_t kernel_hits_ = 0, kernel_misses_ = 0;
};

}  // namespace deepum
