// Eviction by foreseen next use: a replacement rule of the policy core (policy.hpp).
//
// Training repeats its iteration: the launches at which a block was used in the last iteration
// foretell when it is used next. A block used at positions u1 < u2 < ... of the last iteration
// (launches counted from the iteration's first) is foreseen, at position p of the current one,
// at the first ui past p, else at u1 of the next iteration. The victim is the resident block
// foreseen last: Belady's choice on the foreseen future. Blocks the last iteration did not use
// are foreseen never and go first, least recently arrived first. Blocks are dense indices
// (0, 1, ... as the caller numbers them). deepum/specs/next_use.py is the
// readable specification; tests/test_next_use.py checks that both choose alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <tuple>
#include <vector>

#include "replacement.hpp"

namespace deepum {

// Eviction by next use takes the block foreseen last even when a dead one is close behind it (a dead
// victim is still dropped without a copy): looking further for dead blocks did not pay for its cost in
// replay speed (docs/results.md).
constexpr int kForeseenDeadSearch = 1;

class NextUseEviction {
 public:
  static constexpr uint64_t kUnforeseen = UINT64_MAX;
  static constexpr int64_t kNoVictim = -1;

  // Launches are numbered by the caller in launch order; `first` is the first launch of the
  // iteration that starts now. The iteration that ends becomes the one foreseen from.
  void start_iteration(uint64_t first) {
    last_length_ = first - start_;
    start_ = first;
    queue_ = {};
    parked_.clear();
    for (size_t block = 0; block < blocks_.size(); ++block) {
      Block& b = blocks_[block];
      b.before.swap(b.now);
      b.now.clear();
      if (b.queued) push(int64_t(block), b, first);
    }
  }

  // The kernel of `launch` uses `block` (resident: it is foreseen anew).
  void use(int64_t block, uint64_t launch, bool resident) {
    Block& b = at(block);
    const uint32_t position = uint32_t(launch - start_);
    if (b.now.empty() || b.now.back() != position) b.now.push_back(position);
    if (resident && (!b.queued || foresee(b, launch) != b.next_use)) push(block, b, launch);
  }

  // `block` became resident at `launch`.
  void arrive(int64_t block, uint64_t launch) {
    Block& b = at(block);
    b.age = ++arrivals_;
    push(block, b, launch);
  }

  // The launch at which `block` is foreseen to be used next, seen from `launch`.
  uint64_t foresee(int64_t block, uint64_t launch) const {
    return size_t(block) < blocks_.size() ? foresee(blocks_[block], launch) : kUnforeseen;
  }

  // The resident block foreseen last (ties: the least recently arrived) among those `may_go`
  // allows; among the first `dead_search` of them, the first `dead` one (dropped without a copy)
  // is preferred. With need_at > 0 (a prefetch for the kernel of that launch), no block foreseen
  // at or before need_at is given up: kNoVictim. Blocks given up leave the queue until they
  // arrive again or are used while resident. `launch` is the launch asking: within one launch, a
  // block `may_go` refused stays refused (it is set aside until the next launch asks).
  template <typename Resident, typename MayGo, typename Dead>
  int64_t victim(uint64_t launch, Resident resident, MayGo may_go, Dead dead, int dead_search, uint64_t need_at) {
    if (launch != parked_launch_) {
      for (const Entry& e : parked_) queue_.push(e);
      parked_.clear();
      parked_launch_ = launch;
    }
    std::vector<Entry> kept;
    Entry chosen{0, 0, kNoVictim};
    int searched = 0;
    while (!queue_.empty() && searched < dead_search) {
      const Entry top = queue_.top();
      queue_.pop();
      const int64_t block = std::get<2>(top);
      if (!resident(block) || !current(top)) continue;
      if (!may_go(block)) {
        parked_.push_back(top);
        continue;
      }
      kept.push_back(top);
      if (std::get<2>(chosen) == kNoVictim) chosen = top;
      if (dead(block)) {
        chosen = top;
        break;
      }
      ++searched;
    }
    const bool refused = need_at > 0 && std::get<2>(chosen) != kNoVictim && std::get<0>(chosen) <= need_at;
    for (const Entry& e : kept)
      if (refused || std::get<2>(e) != std::get<2>(chosen)) queue_.push(e);
    if (refused) return kNoVictim;
    if (std::get<2>(chosen) != kNoVictim) blocks_[std::get<2>(chosen)].queued = false;
    return std::get<2>(chosen);
  }

 private:
  struct Block {
    std::vector<uint32_t> before, now;  // positions of its uses in the last / the current iteration
    uint64_t next_use = kUnforeseen;    // as last pushed
    uint64_t age = 0;                   // number of its latest arrival
    bool queued = false;                // may have a current entry in the queue (one at most)
  };
  using Entry = std::tuple<uint64_t, uint64_t, int64_t>;  // next use, UINT64_MAX - age, block

  Block& at(int64_t block) {
    if (size_t(block) >= blocks_.size()) blocks_.resize(size_t(block) + 1);
    return blocks_[block];
  }
  uint64_t foresee(const Block& b, uint64_t launch) const {
    if (b.before.empty()) return kUnforeseen;
    const uint64_t position = launch - start_;
    auto it = std::upper_bound(b.before.begin(), b.before.end(), uint32_t(position));
    if (it != b.before.end()) return start_ + *it;
    return start_ + std::max(last_length_, position + 1) + b.before.front();
  }
  void push(int64_t block, Block& b, uint64_t launch) {
    b.next_use = foresee(b, launch);
    b.queued = true;
    queue_.emplace(b.next_use, UINT64_MAX - b.age, block);
  }
  // An entry is current while it holds its block's latest figures and the block is queued.
  bool current(const Entry& e) const {
    const Block& b = blocks_[std::get<2>(e)];
    return b.queued && std::get<0>(e) == b.next_use && std::get<1>(e) == UINT64_MAX - b.age;
  }

  std::vector<Block> blocks_;  // by dense block index
  std::priority_queue<Entry> queue_;  // latest foreseen first; stale entries are skipped
  std::vector<Entry> parked_;         // entries may_go refused during launch parked_launch_
  uint64_t parked_launch_ = 0;
  uint64_t start_ = 0, last_length_ = 0, arrivals_ = 0;
};

// NextUseEviction as the policy core's replacement rule.
class NextUseReplacement : public Replacement {
 public:
  void start_iteration(uint64_t first_launch) override { rule_.start_iteration(first_launch); }
  void use(Block b, uint64_t launch, bool resident) override { rule_.use(b, launch, resident); }
  void arrive(Block b, uint64_t launch) override { rule_.arrive(b, launch); }
  Block victim(uint64_t launch, const Candidates& c, uint64_t need_at) override {
    const int64_t chosen = rule_.victim(
        launch, [&c](int64_t b) { return c.resident(Block(b)); }, [&c](int64_t b) { return c.may_go(Block(b)); },
        [&c](int64_t b) { return c.dead(Block(b)); }, kForeseenDeadSearch, need_at);
    return chosen == NextUseEviction::kNoVictim ? kNone : Block(chosen);
  }

 private:
  NextUseEviction rule_;
};

}  // namespace deepum
