// The schedule: a plan of an iteration's migrations, made from a remembered iteration's launches, which
// the policy core (policy.hpp) follows while the launches match it (DeepUMConfig.schedule).
//
// It remembers the last `remembered` iterations (each launch's exec ID and the blocks it used). At an
// iteration's first launch it plans from the latest remembered iteration whose first launch had the
// same exec ID, followed by the iteration that came after that one (the last is followed by itself):
// Belady's MIN over those launches from the blocks resident now, under the capacity. For each block a
// launch uses that is not resident, the resident block whose next use comes last goes (ties: the lowest
// UM block number; a block not used again first), or a free slot is taken while there is one; MIN runs
// min(ahead, the follower's length) launches into the follower, so that an iteration's end prefetches
// for the next one's start. Each fetch becomes a move made at the launch after its victim's last use,
// but no more than `ahead` launches before its need: a prefetch, or on demand (only the eviction
// planned) when that is the need itself. Moves made past the iteration's end are dropped. Each
// remembered iteration is bounded by `max_accesses` block uses; one using more is remembered empty.
// deepum/specs/schedule.py is the readable specification; tests/test_schedule.py checks that both plan
// alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "block_list.hpp"
#include "state_io.hpp"

namespace deepum {

class Schedule {
 public:
  static constexpr uint64_t kNever = UINT64_MAX;

  struct Move {
    Block victim;   // given up at this launch (kNone: a free slot)
    Block block;    // fetched for the launch `lead` launches on (0: this one, on demand)
    uint32_t lead;
  };
  struct Step {
    const Move* begin_;
    const Move* end_;
    const Move* begin() const { return begin_; }
    const Move* end() const { return end_; }
  };

  Schedule(int64_t capacity, size_t ahead, size_t max_accesses, size_t remembered, const BlockIndex& index)
      : capacity_(capacity), ahead_(ahead), max_accesses_(max_accesses), remembered_(remembered), index_(index) {
    if (capacity < 1 || ahead < 1 || max_accesses < 1 || remembered < 1)
      throw std::invalid_argument("capacity, ahead, max_accesses and remembered must be at least 1");
  }

  // A kernel with `exec_id` launches using `blocks`, with resident[b] != 0 for the blocks resident
  // before its decisions: it is recorded; true and the plan's moves for it (possibly none) while the
  // iteration follows the plan. The iteration's first launch makes the plan.
  bool launch(uint64_t exec_id, const Block* blocks, size_t count, const std::vector<uint8_t>& resident, Step& step) {
    const size_t position = position_++;
    if (position == 0) make_plan(exec_id, resident);
    record(exec_id, blocks, count);
    following_ = following_ && position < plan_->execs.size() && plan_->execs[position] == exec_id;
    if (!following_) return false;
    step = {moves_.data() + step_offsets_[position], moves_.data() + step_offsets_[position + 1]};
    return true;
  }

  // The iteration recorded so far ends and is remembered; the next launch is an iteration's first.
  void start_iteration() {
    if (overflowed_) recording_.clear();
    history_.push_back(std::move(recording_));
    recording_ = Iteration{};
    if (history_.size() > remembered_) {
      recording_ = std::move(history_.front());  // its buffers are reused
      history_.pop_front();
      recording_.clear();
    }
    overflowed_ = false;
    position_ = 0;
    plan_ = nullptr;  // it may have left history_
    following_ = false;
  }

  // The learned state (state_io.hpp): the remembered iterations, oldest first, each as its launches
  // (none: not recorded), each launch's exec ID and its blocks by UM number, in launch order.
  void save(StateWriter& w) const {
    w.word(history_.size());
    for (const Iteration& it : history_) {
      w.word(it.launches());
      for (size_t p = 0; p < it.launches(); ++p) {
        w.word(it.execs[p]);
        w.word(it.offsets[p + 1] - it.offsets[p]);
        for (size_t k = it.offsets[p]; k < it.offsets[p + 1]; ++k) w.signed_word(index_.number(it.blocks[k]));
      }
    }
  }
  // Into a schedule that has seen no launch; `dense(number)` gives a UM block's index.
  template <class Dense>
  void load(StateReader& r, Dense dense) {
    if (!history_.empty() || position_ != 0) throw std::logic_error("a learned state loads into a fresh schedule");
    const size_t n = r.count(remembered_, 1, "remembered iterations");
    for (size_t i = 0; i < n; ++i) {
      Iteration it;
      const size_t launches = r.count(UINT64_MAX, 2, "launches");
      for (size_t p = 0; p < launches; ++p) {
        it.execs.push_back(r.word());
        const size_t count = r.count(max_accesses_ - it.blocks.size(), 1, "block uses");
        for (size_t k = 0; k < count; ++k) it.blocks.push_back(dense(r.block()));
        it.offsets.push_back(it.blocks.size());
      }
      history_.push_back(std::move(it));
    }
  }

 private:
  struct Iteration {
    std::vector<uint64_t> execs;      // exec IDs of its launches (empty: not recorded)
    std::vector<Block> blocks;        // the blocks of each launch, one after another
    std::vector<size_t> offsets{0};   // launch p used blocks[offsets[p] .. offsets[p + 1])
    size_t launches() const { return execs.size(); }
    void clear() {  // keeps the buffers
      execs.clear();
      blocks.clear();
      offsets.assign(1, 0);
    }
  };

  struct Placed {  // a move and where it goes: at launch `at`, ordered by (lead, block number)
    size_t at;
    uint32_t lead;
    int64_t number;
    Move move;
  };

  void record(uint64_t exec_id, const Block* blocks, size_t count) {
    if (overflowed_) return;
    if (recording_.blocks.size() + count > max_accesses_) {
      overflowed_ = true;
      recording_.clear();
      return;
    }
    recording_.execs.push_back(exec_id);
    recording_.blocks.insert(recording_.blocks.end(), blocks, blocks + count);
    recording_.offsets.push_back(recording_.blocks.size());
  }

  void make_plan(uint64_t exec_id, const std::vector<uint8_t>& resident) {
    plan_ = nullptr;
    moves_.clear();
    step_offsets_.clear();
    following_ = false;
    for (size_t at = history_.size(); at-- > 0;) {
      const Iteration& chosen = history_[at];
      if (chosen.execs.empty() || chosen.execs.front() != exec_id) continue;
      plan(chosen, at + 1 < history_.size() ? history_[at + 1] : chosen, resident);
      plan_ = &chosen;
      following_ = true;
      return;
    }
  }

  // Launch p of the planned launches (the chosen iteration's, then its follower's): its blocks.
  std::pair<const Block*, const Block*> launch_blocks(const Iteration& chosen, const Iteration& follower, size_t p) const {
    const Iteration& it = p < chosen.launches() ? chosen : follower;
    const size_t q = p < chosen.launches() ? p : p - chosen.launches();
    return {it.blocks.data() + it.offsets[q], it.blocks.data() + it.offsets[q + 1]};
  }

  void plan(const Iteration& chosen, const Iteration& follower, const std::vector<uint8_t>& resident) {
    const size_t n = chosen.launches(), planned = n + follower.launches();
    size_t universe = resident.size();
    for (const Iteration* it : {&chosen, &follower})
      for (Block b : it->blocks) universe = std::max(universe, size_t(b) + 1);
    // Each block's positions of use in the planned launches, ascending (CSR).
    uses_start_.assign(universe + 1, 0);
    for (size_t p = 0; p < planned; ++p) {
      const auto [first, last] = launch_blocks(chosen, follower, p);
      for (const Block* b = first; b != last; ++b) uses_start_[size_t(*b) + 1] += 1;
    }
    for (size_t b = 0; b < universe; ++b) uses_start_[b + 1] += uses_start_[b];
    uses_.resize(uses_start_.back());
    fill_.assign(uses_start_.begin(), uses_start_.end() - 1);
    for (size_t p = 0; p < planned; ++p) {
      const auto [first, last] = launch_blocks(chosen, follower, p);
      for (const Block* b = first; b != last; ++b) uses_[fill_[size_t(*b)]++] = uint32_t(p);
    }

    next_.assign(universe, kNever);
    last_.assign(universe, -1);
    in_.assign(universe, 0);
    held_ = 0;
    heap_ = {};
    for (size_t b = 0; b < resident.size(); ++b)
      if (resident[b]) {
        in_[b] = 1;
        held_ += 1;
        next_[b] = uses_start_[b] < uses_start_[b + 1] ? uses_[uses_start_[b]] : kNever;  // its first use
        heap_.emplace(next_[b], -index_.number(Block(b)), Block(b));
      }
    placed_.clear();
    const size_t horizon = n + std::min(ahead_, follower.launches());
    for (size_t need = 0; need < horizon; ++need) {
      const auto [first, last] = launch_blocks(chosen, follower, need);
      for (const Block* it = first; it != last; ++it) {
        const Block b = *it;
        if (in_[b]) continue;
        const bool full = held_ >= capacity_;
        const Block victim = full ? take_victim(need) : kNone;
        size_t at;
        if (victim == kNone) {
          at = full ? need : need - std::min(need, ahead_);
        } else {
          at = std::max(size_t(last_[victim] + 1), need - std::min(need, ahead_));
          in_[victim] = 0;
          held_ -= 1;
        }
        in_[b] = 1;
        held_ += 1;
        next_[b] = need;
        if (at < n && (victim != kNone || at < need))
          placed_.push_back({at, uint32_t(need - at), index_.number(b), {victim, b, uint32_t(need - at)}});
      }
      for (const Block* it = first; it != last; ++it) {
        const Block b = *it;
        last_[b] = int64_t(need);
        next_[b] = next_use(b, need);
        heap_.emplace(next_[b], -index_.number(b), b);
      }
    }
    std::sort(placed_.begin(), placed_.end(), [](const Placed& x, const Placed& y) {
      return std::tie(x.at, x.lead, x.number) < std::tie(y.at, y.lead, y.number);
    });
    step_offsets_.assign(n + 1, 0);
    moves_.reserve(placed_.size());
    for (const Placed& p : placed_) {
      moves_.push_back(p.move);
      step_offsets_[p.at + 1] += 1;
    }
    for (size_t p = 0; p < n; ++p) step_offsets_[p + 1] += step_offsets_[p];
    placed_.clear();
  }

  // The held block used last after `need` (none used later than `need`: kNone), taken from the heap.
  Block take_victim(size_t need) {
    while (!heap_.empty()) {
      const auto [next, negative_number, b] = heap_.top();
      if (!in_[b] || next != next_[b]) {
        heap_.pop();  // stale
        continue;
      }
      if (next <= need) return kNone;  // every held block is used by this launch
      heap_.pop();
      return b;
    }
    return kNone;
  }

  // The first planned launch after `position` that uses b (kNever: none).
  uint64_t next_use(Block b, size_t position) const {
    const uint32_t* last = uses_.data() + uses_start_[b + 1];
    const uint32_t* it = std::upper_bound(uses_.data() + uses_start_[b], last, uint32_t(position));
    return it != last ? *it : kNever;
  }

  const int64_t capacity_;
  const size_t ahead_, max_accesses_, remembered_;
  const BlockIndex& index_;
  std::deque<Iteration> history_;   // the remembered iterations, oldest first
  Iteration recording_;             // the current one, so far
  bool overflowed_ = false;
  size_t position_ = 0;             // of the next launch in the current iteration
  // The plan being followed.
  const Iteration* plan_ = nullptr;    // the launches it is for (in history_)
  bool following_ = false;             // every launch of the iteration so far matched them
  std::vector<Move> moves_;            // by launch, each launch's by (lead, block number)
  std::vector<size_t> step_offsets_;   // launch p's moves: moves_[step_offsets_[p] .. step_offsets_[p + 1])
  // MIN's working state, kept between plans to spare allocations.
  std::vector<size_t> uses_start_, fill_;
  std::vector<uint32_t> uses_;
  std::vector<uint64_t> next_;
  std::vector<int64_t> last_;
  std::vector<uint8_t> in_;
  int64_t held_ = 0;
  std::priority_queue<std::tuple<uint64_t, int64_t, Block>> heap_;  // (next use, -number, block), lazily pruned
  std::vector<Placed> placed_;
};

}  // namespace deepum
