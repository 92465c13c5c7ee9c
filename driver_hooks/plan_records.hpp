// Plan records (deepum policy with repeat_plans_percent): each iteration's launches with the plan
// decided for each, and the remembered iteration that the next one repeats (policy.hpp repeats it).
// deepum/specs/plan_records.py is the readable specification; tests/test_policy.py checks that both
// decide alike. Header-only, no CUDA, no Python.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "block_list.hpp"

namespace deepum {

constexpr size_t kRepeatLaunches = size_t(1) << 16;  // most launches of an iteration recorded
constexpr size_t kRepeatEntries = size_t(1) << 20;   // most blocks and moves (together) of an iteration recorded
constexpr size_t kRepeatBack = 8;                     // most iterations back an ended iteration is compared with
// The iteration that ended, those it may equal and those the one it would repeat is compared with.
constexpr size_t kRememberedPlans = 2 * kRepeatBack;

// One recorded iteration, flat: launch i's blocks are blocks[block_ends[i - 1], block_ends[i]), its
// moves moves[move_ends[i - 1], move_ends[i]).
struct PlannedIteration {
  struct Planned {
    uint8_t move;  // a policy.hpp Move
    Block block;
    bool operator==(const Planned& o) const { return move == o.move && block == o.block; }
  };
  std::vector<uint64_t> exec_ids;
  std::vector<uint32_t> block_ends, move_ends;
  std::vector<Block> blocks;
  std::vector<Planned> moves;

  size_t launches() const { return exec_ids.size(); }
  size_t blocks_from(size_t launch) const { return launch ? block_ends[launch - 1] : 0; }
  size_t moves_from(size_t launch) const { return launch ? move_ends[launch - 1] : 0; }
  // Whether launch `i` launched `exec_id` on `blocks` (dense, `count` of them).
  bool launched(size_t i, uint64_t exec_id, const Block* used, size_t count) const {
    const size_t first = blocks_from(i);
    return exec_ids[i] == exec_id && block_ends[i] - first == count &&
           std::equal(used, used + count, blocks.begin() + first);
  }
  // Of the places of an iteration with as many launches, those where `o` launched the same (execution
  // ID and blocks) and decided the same moves.
  size_t same_places(const PlannedIteration& o) const {
    size_t same = 0;
    for (size_t i = 0; i < launches(); ++i) {
      const size_t b = blocks_from(i), m = moves_from(i);
      same += o.launched(i, exec_ids[i], blocks.data() + b, block_ends[i] - b) &&
              move_ends[i] - m == o.move_ends[i] - o.moves_from(i) &&
              std::equal(moves.begin() + m, moves.begin() + move_ends[i], o.moves.begin() + o.moves_from(i));
    }
    return same;
  }
  void clear() {
    exec_ids.clear();
    block_ends.clear();
    move_ends.clear();
    blocks.clear();
    moves.clear();
  }
};

class PlanRecords {
 public:
  explicit PlanRecords(size_t percent) : percent_(percent), current_(std::make_shared<PlannedIteration>()) {}

  // The next launch of the running iteration and its plan's moves (each with .move and .block), as decided.
  template <class Decisions>
  void record(uint64_t exec_id, const Block* blocks, size_t count, const Decisions& moves) {
    if (!record_launch(exec_id, blocks, count, moves.size())) return;
    for (const auto& d : moves) current_->moves.push_back({uint8_t(d.move), d.block});
    current_->move_ends.push_back(uint32_t(current_->moves.size()));
  }
  // The next launch of a repeated iteration, which `r` has a launch for at this place (matching it or
  // not): the plan remembered there carries over, so that repeating does not wear the plan down to the
  // moves still made.
  void record_remembered(uint64_t exec_id, const Block* blocks, size_t count, const PlannedIteration& r) {
    if (!current_) return;
    const size_t at = current_->launches(), from = r.moves_from(at), to = r.move_ends[at];
    if (!record_launch(exec_id, blocks, count, to - from)) return;
    current_->moves.insert(current_->moves.end(), r.moves.begin() + from, r.moves.begin() + to);
    current_->move_ends.push_back(uint32_t(current_->moves.size()));
  }

  // The running iteration's launches recorded so far (kRepeatLaunches once it is not recorded).
  size_t place() const { return current_ ? current_->launches() : kRepeatLaunches; }

  // The running iteration ends and is remembered. Returns the remembered iteration the next one
  // repeats: the one `back` before the next (the least back from 1 to kRepeatBack) where the ended one
  // is alike the one `back` before it, and the one to repeat alike the one `back` before that (its
  // plan settled too, not one the learners were still changing); null where none.
  std::shared_ptr<const PlannedIteration> end_iteration() {
    remembered_.push_front(std::move(current_));
    std::shared_ptr<PlannedIteration> spare;
    if (remembered_.size() > kRememberedPlans) {
      spare = std::move(remembered_.back());
      remembered_.pop_back();
    }
    if (spare && spare.use_count() == 1)  // no longer repeated: its storage records the next iteration
      spare->clear();
    else
      spare = std::make_shared<PlannedIteration>();
    current_ = std::move(spare);
    entries_ = 0;
    for (size_t back = 1; back <= kRepeatBack; ++back)
      if (alike(0, back) && alike(back - 1, 2 * back - 1)) return remembered_[back - 1];
    return nullptr;
  }

 private:
  // Whether the remembered iterations `later` and `earlier` (0: the one that ended) were both recorded,
  // have as many launches and launched and decided the same at percent of their places or more.
  bool alike(size_t later, size_t earlier) const {
    if (remembered_.size() <= earlier || !remembered_[later] || !remembered_[earlier]) return false;
    const PlannedIteration &a = *remembered_[later], &b = *remembered_[earlier];
    return a.launches() && a.launches() == b.launches() && a.same_places(b) * 100 >= percent_ * a.launches();
  }

  // Records a launch's execution ID and blocks, its `moves` moves to follow; false (and the running
  // iteration not recorded from now on) where the iteration grew past kRepeatLaunches or kRepeatEntries.
  bool record_launch(uint64_t exec_id, const Block* blocks, size_t count, size_t moves) {
    if (!current_) return false;
    entries_ += count + moves;
    if (current_->launches() == kRepeatLaunches || entries_ > kRepeatEntries) {
      current_.reset();
      return false;
    }
    current_->exec_ids.push_back(exec_id);
    current_->blocks.insert(current_->blocks.end(), blocks, blocks + count);
    current_->block_ends.push_back(uint32_t(current_->blocks.size()));
    return true;
  }

  size_t percent_;                                            // DeepUMConfig.repeat_plans_percent
  std::deque<std::shared_ptr<PlannedIteration>> remembered_;  // latest first; null: not recorded
  std::shared_ptr<PlannedIteration> current_;                 // null once the running iteration is not recorded
  size_t entries_ = 0;                                        // blocks and moves of the running iteration
};

}  // namespace deepum
