// Eviction by foreseen next use, shared by the simulator's deepum policy and the online engine.
//
// Training repeats its iteration: the launches at which a block was used in the last iteration
// foretell when it is used next. A block used at positions u1 < u2 < ... of the last iteration
// (launches counted from the iteration's first) is foreseen, at position p of the current one,
// at the first ui past p, else at u1 of the next iteration. The victim is the resident block
// foreseen last: Belady's choice on the foreseen future. Blocks the last iteration did not use
// are foreseen never and go first, least recently arrived first.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace deepum {

constexpr int kDeadSearch = 64;  // eviction candidates searched for a dead victim (dropped without a copy)

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
    for (auto& [block, b] : blocks_) {
      b.before.swap(b.now);
      b.now.clear();
      if (b.queued) push(block, b, first);
    }
  }

  // The kernel of `launch` uses `block` (resident: its place in the queue is renewed).
  void use(int64_t block, uint64_t launch, bool resident) {
    Block& b = blocks_[block];
    const uint32_t position = uint32_t(launch - start_);
    if (b.now.empty() || b.now.back() != position) b.now.push_back(position);
    if (resident) push(block, b, launch);
  }

  // `block` became resident at `launch`.
  void arrive(int64_t block, uint64_t launch) {
    Block& b = blocks_[block];
    b.age = ++arrivals_;
    push(block, b, launch);
  }

  // The launch at which `block` is foreseen to be used next, seen from `launch`.
  uint64_t foresee(int64_t block, uint64_t launch) const {
    auto it = blocks_.find(block);
    return it == blocks_.end() ? kUnforeseen : foresee(it->second, launch);
  }

  // The resident block foreseen last among those `may_go` allows; among the first `dead_search`
  // of them, a `dead` one (dropped without a copy) is preferred. With need_at > 0 (a prefetch for
  // the kernel of that launch), no block foreseen at or before need_at is given up: kNoVictim.
  template <typename Resident, typename MayGo, typename Dead>
  int64_t victim(Resident resident, MayGo may_go, Dead dead, int dead_search, uint64_t need_at) {
    std::vector<Entry> kept;
    Entry chosen{0, 0, kNoVictim};
    int searched = 0;
    while (!queue_.empty() && searched < dead_search) {
      const Entry top = queue_.top();
      queue_.pop();
      const int64_t block = std::get<2>(top);
      if (!current(top, resident(block))) continue;
      kept.push_back(top);
      if (!may_go(block)) continue;
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
    bool queued = false;                // has a current entry in the queue
  };
  using Entry = std::tuple<uint64_t, uint64_t, int64_t>;  // next use, UINT64_MAX - age, block

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
  // An entry is current while its block is resident and it holds the block's latest figures.
  bool current(const Entry& e, bool resident) {
    auto it = blocks_.find(std::get<2>(e));
    if (!resident) {
      it->second.queued = false;
      return false;
    }
    return it->second.queued && std::get<0>(e) == it->second.next_use && std::get<1>(e) == UINT64_MAX - it->second.age;
  }

  std::unordered_map<int64_t, Block> blocks_;
  std::priority_queue<Entry> queue_;  // latest foreseen first; stale entries are skipped
  uint64_t start_ = 0, last_length_ = 0, arrivals_ = 0;
};

}  // namespace deepum
