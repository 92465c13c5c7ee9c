// The oracle (offline only): it knows the trace's future. Its prefetcher's window holds exactly the
// next `lookahead` kernels' blocks; its replacement evicts the block used furthest ahead (Belady).
// Both plug into the policy core (policy.hpp) as DeepUM's do, and the core maps from the host what
// deepum's host mapping would, so the oracle is DeepUM's decisions with perfect knowledge: a reference
// for deepum's copies (Belady's rule saves copies, not waiting: not a bound on time).
#pragma once
#include <cstdint>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "prefetcher.hpp"
#include "replacement.hpp"
#include "trace_view.hpp"

namespace deepum {

// Launch numbers are the policy core's: kernel k of the trace is launch k + 1.
class OracleWindow : public Prefetcher {
 public:
  OracleWindow(const TraceView& trace, size_t lookahead) : trace_(trace), lookahead_(lookahead) {}

  WindowChange on_launch(uint64_t) override {
    const size_t kernel = launched_++;
    size_t popped = 0;
    if (!window_.empty()) {
      window_.pop_front();
      popped = 1;
    }
    size_t pushed = 0;
    for (; next_ < trace_.kernels && next_ <= kernel + lookahead_; ++next_, ++pushed)
      window_.push_back(std::make_shared<const std::vector<Block>>(trace_.access_block + trace_.access_offsets[next_],
                                                                   trace_.access_block + trace_.access_offsets[next_ + 1]));
    return {popped, pushed};
  }
  const Window& window() const override { return window_; }

 private:
  const TraceView& trace_;
  const size_t lookahead_;
  size_t launched_ = 0, next_ = 0;  // kernels launched; the first kernel not yet in the window
  Window window_;
};

class BeladyEviction : public Replacement {
 public:
  static constexpr uint64_t kNever = UINT64_MAX;

  explicit BeladyEviction(const TraceView& trace)
      : uses_start_(trace.blocks + 1, 0), cursor_(trace.blocks, 0), next_use_(trace.blocks, kNever) {
    for (int64_t row = 0; row < trace.access_offsets[trace.kernels]; ++row) uses_start_[trace.access_block[row] + 1]++;
    for (size_t b = 0; b < trace.blocks; ++b) uses_start_[b + 1] += uses_start_[b];
    uses_.resize(uses_start_.back());
    std::vector<size_t> fill(uses_start_.begin(), uses_start_.end() - 1);
    for (size_t k = 0; k < trace.kernels; ++k)
      for (int64_t row = trace.access_offsets[k]; row < trace.access_offsets[k + 1]; ++row)
        uses_[fill[trace.access_block[row]]++] = k + 1;
    for (size_t b = 0; b < trace.blocks; ++b) next_use_[b] = first_use(Block(b));
  }

  void use(Block b, uint64_t launch, bool resident) override {
    while (cursor_[b] < uses_start_[b + 1] - uses_start_[b] && uses_[uses_start_[b] + cursor_[b]] <= launch) ++cursor_[b];
    next_use_[b] = first_use(b);
    if (resident) heap_.emplace(next_use_[b], b);
  }
  void arrive(Block b, uint64_t) override { heap_.emplace(next_use_[b], b); }

  Block victim(uint64_t, const Candidates& c, uint64_t need_at) override {
    Block chosen = kNone;
    skipped_.clear();
    while (!heap_.empty()) {
      const auto [use, b] = heap_.top();
      if (use != next_use_[b] || !c.resident(b)) {
        heap_.pop();  // stale
        continue;
      }
      if (!c.may_go(b)) {
        skipped_.push_back(heap_.top());
        heap_.pop();
        continue;
      }
      if (need_at == 0 || use > need_at) chosen = b;
      break;
    }
    for (const auto& entry : skipped_) heap_.push(entry);
    return chosen;  // its entry goes stale once it has left
  }

 private:
  uint64_t first_use(Block b) const {
    const size_t at = uses_start_[b] + cursor_[b];
    return at < uses_start_[b + 1] ? uses_[at] : kNever;
  }

  std::vector<size_t> uses_start_;   // CSR over blocks: launches using each block, ascending
  std::vector<uint64_t> uses_;
  std::vector<size_t> cursor_;       // per block: uses already past
  std::vector<uint64_t> next_use_;   // launch of the next use after the last one seen (kNever: none)
  std::priority_queue<std::pair<uint64_t, Block>> heap_;  // (next use, block), lazily pruned
  std::vector<std::pair<uint64_t, Block>> skipped_;
};

}  // namespace deepum
