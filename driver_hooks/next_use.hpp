// Eviction by foreseen next use: a replacement rule of the policy core (policy.hpp).
//
// Training repeats its iterations: the launches at which a block was used in an earlier iteration
// foretell when it is used next. The rule remembers the last `remembered` iterations with the exec IDs
// of their launches and foresees from the most recent one whose launches so far match the current
// iteration's (by exec ID, launch by launch), else from the last one. A block used at positions
// u1 < u2 < ... of that iteration (launches counted from the iteration's first) is foreseen, at
// position p of the current one, at the first ui past p, else at its first use in the iteration that
// followed that one (the last follows itself). The victim is the resident block foreseen last:
// Belady's choice on the foreseen future. Blocks foreseen nowhere go first, least recently arrived
// first. Blocks are dense indices (0, 1, ... as the caller numbers them). deepum/specs/next_use.py is
// the readable specification; tests/test_next_use.py checks that both choose alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "iteration_uses.hpp"
#include "replacement.hpp"
#include "state_io.hpp"

namespace deepum {

// Eviction by next use takes the block foreseen last even when a dead one is close behind it (a dead
// victim is still dropped without a copy): looking further for dead blocks did not pay for its cost in
// replay speed (docs/results.md).
constexpr int kForeseenDeadSearch = 1;

class NextUseEviction {
 public:
  static constexpr uint64_t kUnforeseen = UINT64_MAX;
  static constexpr int64_t kNoVictim = -1;

  explicit NextUseEviction(size_t remembered = 1) : history_(remembered) {
    if (remembered < 1) throw std::invalid_argument("at least one iteration is remembered");
  }

  // Launches are numbered by the caller in launch order; `first` is the first launch of the
  // iteration that starts now. The iteration that ends is remembered.
  void start_iteration(uint64_t first) {
    const uint64_t ended = iterations_++;
    Past& past = history_[slot(ended)];
    past.execs.swap(execs_);
    execs_.clear();
    past.indexed.swap(indexed_);
    indexed_.clear();
    past.length = first - start_;
    past.uses.assign(used_, blocks_.size());
    used_.clear();
    last_counted_.assign(counted_, blocks_.size(),
                         [this](size_t i) { return i >= blocks_[counted_[i].block].counted_from; });
    counted_.clear();
    start_ = first;
    matching_.clear();
    for (uint64_t i = ended + 1; i-- > 0 && ended - i < history_.size();) matching_.push_back(i);
    foreseen_from_ = ended;
    for (Block& b : blocks_) b.counted_from = 0;
    foresee_queued(first);
  }

  // A kernel with `exec_id` launches (before its uses), indexed or not (indexed_kernels.hpp):
  // iterations whose launch at this place had another exec ID no longer match; the latest that still
  // does is foreseen from.
  void launch(uint64_t launch, uint64_t exec_id, bool indexed) {
    const size_t place = execs_.size();
    execs_.push_back(exec_id);
    if (indexed) indexed_.push_back(uint32_t(launch - start_));
    matching_.erase(std::remove_if(matching_.begin(), matching_.end(),
                                   [&](uint64_t i) {
                                     const std::vector<uint64_t>& execs = history_[slot(i)].execs;
                                     return place >= execs.size() || execs[place] != exec_id;
                                   }),
                    matching_.end());
    const uint64_t chosen = matching_.empty() ? iterations_ - 1 : matching_.front();
    if (iterations_ > 0 && chosen != foreseen_from_) {
      foreseen_from_ = chosen;
      foresee_queued(launch);
    } else if (queue_.size() > kQueueSlack * (blocks_.size() + 1)) {
      requeue();
    }
  }

  // The kernel of `launch` uses `block` (resident: it is foreseen anew).
  void use(int64_t block, uint64_t launch, bool resident) {
    Block& b = at(block);
    if (b.last_used != launch) {
      b.last_used = launch;
      used_.push_back({uint32_t(block), uint32_t(launch - start_)});
    }
    if (!resident) return;
    const uint64_t next_use = foresee(block, launch);
    if (!b.queued || next_use != b.next_use) push_foreseen(block, b, next_use);
  }

  // The use of `block` at `launch` as host mapping counts it: `fresh`, the block received memory
  // allocated since the launch before, so the uses before are of other data and are dropped; a `fill`
  // launch (fill_kernels.hpp) initializes and is not counted.
  void count_use(int64_t block, uint64_t launch, bool fresh, bool fill) {
    Block& b = at(block);
    if (fresh) {
      b.counted_from = uint32_t(counted_.size());
      b.last_counted = kNoLaunch;
    }
    if (!fill && b.last_counted != launch) {
      b.last_counted = launch;
      counted_.push_back({uint32_t(block), uint32_t(launch - start_)});
    }
  }

  // `block` became resident at `launch`.
  void arrive(int64_t block, uint64_t launch) {
    Block& b = at(block);
    b.age = ++arrivals_;
    push(block, b, launch);
  }

  // The launch at which `block` is foreseen to be used next, seen from `launch`.
  uint64_t foresee(int64_t block, uint64_t launch) const {
    if (iterations_ == 0) return kUnforeseen;
    const uint64_t position = launch - start_;
    const UsePositions uses = uses_in(block, foreseen_from_);
    auto it = std::upper_bound(uses.begin(), uses.end(), uint32_t(position));
    if (it != uses.end()) return start_ + *it;
    const uint64_t follower = foreseen_from_ + 1 < iterations_ ? foreseen_from_ + 1 : foreseen_from_;
    const UsePositions after = uses_in(block, follower);
    if (after.empty()) return kUnforeseen;
    return start_ + std::max(history_[slot(foreseen_from_)].length, position + 1) + after.front();
  }

  // The learned state (state_io.hpp): the remembered iterations, oldest first, each with its length,
  // the exec IDs of its launches, the positions of its indexed launches and, for each block it used
  // (by UM number, `number(block)`, ascending), the positions of its uses.
  template <class Number>
  void save(StateWriter& w, Number number) const {
    const uint64_t first = iterations_ - std::min<uint64_t>(iterations_, history_.size());
    w.word(iterations_ - first);
    std::vector<std::pair<int64_t, int64_t>> used;  // UM number, dense index
    for (uint64_t i = first; i < iterations_; ++i) {
      const Past& past = history_[slot(i)];
      w.word(past.length);
      w.word(past.execs.size());
      for (uint64_t id : past.execs) w.word(id);
      w.word(past.indexed.size());
      for (uint32_t p : past.indexed) w.word(p);
      used.clear();
      for (size_t block = 0; block < past.uses.blocks(); ++block)
        if (!past.uses.of(int64_t(block)).empty()) used.emplace_back(number(int64_t(block)), int64_t(block));
      std::sort(used.begin(), used.end());
      w.word(used.size());
      for (const auto& [n, block] : used) {
        const UsePositions positions = past.uses.of(block);
        w.signed_word(n);
        w.word(positions.size());
        for (uint32_t p : positions) w.word(p);
      }
    }
  }
  // Into a rule that has seen no launch; `dense(number)` gives a UM block's index.
  template <class Dense>
  void load(StateReader& r, Dense dense) {
    if (iterations_ != 0 || !execs_.empty()) throw std::logic_error("a learned state loads into a fresh rule");
    const size_t n = r.count(history_.size(), 3, "remembered iterations");
    for (uint64_t i = 0; i < n; ++i) {
      Past& past = history_[slot(i)];
      past.length = r.word();
      past.execs.resize(r.count(UINT64_MAX, 1, "launches"));
      for (uint64_t& id : past.execs) id = r.word();
      read_positions(r, past.length, "indexed launches",
                     "an iteration's indexed launches are not ascending positions within it", past.indexed);
      const size_t used = r.count(UINT64_MAX, 3, "blocks");
      std::vector<LoggedUse> log;
      std::vector<uint8_t> seen;
      std::vector<uint32_t> positions;
      for (size_t k = 0; k < used; ++k) {
        const int64_t block = dense(r.block());
        at(block);
        if (seen.size() <= size_t(block)) seen.resize(size_t(block) + 1, 0);
        if (seen[size_t(block)]) StateReader::fail("a block appears twice in one iteration");
        seen[size_t(block)] = 1;
        read_positions(r, past.length, "uses", "a block's uses are not ascending within its iteration", positions);
        for (uint32_t p : positions) log.push_back({uint32_t(block), p});
      }
      past.uses.assign(log, blocks_.size());
      if (i + 1 == n) last_counted_.assign(log, blocks_.size());
    }
    iterations_ = n;
    for (uint64_t i = n; i-- > 0;) matching_.push_back(i);
    foreseen_from_ = n ? n - 1 : 0;
  }

  // Calls f(block) for each block the last ended iteration used in 1..most_uses launches, all within
  // span_percent percent of its launches (the first to the last use, both counted), or, with
  // indexed_any_span, all by indexed launches whatever their span. Uses as count_use counts them (of a
  // loaded state's last iteration: all of them).
  template <class F>
  void short_lived(size_t most_uses, size_t span_percent, bool indexed_any_span, F f) const {
    if (iterations_ == 0) return;
    const uint64_t ended = iterations_ - 1;
    const Past& past = history_[slot(ended)];
    for (size_t block = 0; block < last_counted_.blocks(); ++block) {
      const UsePositions uses = last_counted_.of(int64_t(block));
      if (uses.empty() || uses.size() > most_uses) continue;
      const bool brief = (uint64_t(uses.back()) - uses.front() + 1) * 100 <= span_percent * past.length;
      const auto by_indexed = [&] {
        return std::all_of(uses.begin(), uses.end(),
                           [&](uint32_t p) { return std::binary_search(past.indexed.begin(), past.indexed.end(), p); });
      };
      if (brief || (indexed_any_span && by_indexed())) f(int64_t(block));
    }
  }

  // The passes over `block` in the last ended iteration: the launches that used it, as short_lived
  // counts them, a run of consecutive launches counted once (a kernel split over consecutive
  // launches goes over each part of the block once).
  size_t passes(int64_t block) const {
    if (size_t(block) >= last_counted_.blocks()) return 0;
    size_t runs = 0;
    const uint32_t* previous = nullptr;
    for (const uint32_t& p : last_counted_.of(block)) {
      runs += previous == nullptr || p != *previous + 1;
      previous = &p;
    }
    return runs;
  }

  // Blocks outside those `chosen(block)` names that the last ended iteration used (as short_lived
  // counts uses) within the span of the chosen blocks' uses, from the first to the last; 0 where
  // none of them was used.
  template <class Chosen>
  size_t used_beside(Chosen chosen) const {
    uint32_t first = UINT32_MAX, last = 0;
    for (size_t block = 0; block < last_counted_.blocks(); ++block) {
      const UsePositions uses = last_counted_.of(int64_t(block));
      if (uses.empty() || !chosen(block)) continue;
      first = std::min(first, uses.front());
      last = std::max(last, uses.back());
    }
    size_t used = 0;
    for (size_t block = 0; block < last_counted_.blocks() && first <= last; ++block) {
      if (chosen(block)) continue;
      const UsePositions uses = last_counted_.of(int64_t(block));
      used += std::any_of(uses.begin(), uses.end(), [&](uint32_t p) { return p >= first && p <= last; });
    }
    return used;
  }

  // Every exec ID of the remembered iterations (with repeats).
  template <class F>
  void for_each_exec_id(F f) const {
    for (uint64_t i = iterations_ - std::min<uint64_t>(iterations_, history_.size()); i < iterations_; ++i)
      for (uint64_t id : history_[slot(i)].execs) f(id);
  }

  // The block victim() chose at `launch` stays resident: a candidate again.
  void spare(int64_t block, uint64_t launch) { push(block, at(block), launch); }

  // The resident block foreseen last (ties: the least recently arrived) among those `may_go`
  // allows; among the first `dead_search` of them, the first `dead` one (dropped without a copy)
  // is preferred. With need_at > 0 (a prefetch for the kernel of that launch), no block foreseen
  // at or before need_at is given up: kNoVictim. Blocks given up leave the queue until they
  // arrive again or are used while resident. `launch` is the launch asking: within one launch, a
  // block `may_go` refused stays refused (it is set aside until the next launch asks).
  template <typename Resident, typename MayGo, typename Dead>
  int64_t victim(uint64_t launch, Resident resident, MayGo may_go, Dead dead, int dead_search, uint64_t need_at) {
    if (launch != parked_launch_) {
      for (const Entry& e : parked_) enqueue(e);
      parked_.clear();
      parked_launch_ = launch;
    }
    kept_.clear();
    Entry chosen{0, 0, kNoVictim};
    int searched = 0;
    while (!queue_.empty() && searched < dead_search) {
      std::pop_heap(queue_.begin(), queue_.end());
      const Entry top = queue_.back();
      queue_.pop_back();
      const int64_t block = std::get<2>(top);
      if (!resident(block) || !current(top)) continue;
      if (!may_go(block)) {
        parked_.push_back(top);
        continue;
      }
      kept_.push_back(top);
      if (std::get<2>(chosen) == kNoVictim) chosen = top;
      if (dead(block)) {
        chosen = top;
        break;
      }
      ++searched;
    }
    const bool refused = need_at > 0 && std::get<2>(chosen) != kNoVictim && std::get<0>(chosen) <= need_at;
    for (const Entry& e : kept_)
      if (refused || std::get<2>(e) != std::get<2>(chosen)) enqueue(e);
    if (refused) return kNoVictim;
    if (std::get<2>(chosen) != kNoVictim) blocks_[std::get<2>(chosen)].queued = false;
    return std::get<2>(chosen);
  }

 private:
  static constexpr uint64_t kNoLaunch = UINT64_MAX;
  // The queue is rebuilt from the queued blocks once it holds this many entries per block (most of
  // them stale), so that it stays small.
  static constexpr size_t kQueueSlack = 4;
  // What a use touches of a block, on one cache line.
  struct alignas(64) Block {
    uint64_t next_use = kUnforeseen;     // as last pushed
    uint64_t age = 0;                    // number of its latest arrival
    uint64_t last_used = kNoLaunch;      // launch of its latest use logged this iteration
    uint64_t last_counted = kNoLaunch;   // launch of its latest counted use logged this iteration
    uint32_t counted_from = 0;           // its counted uses this iteration are those logged from here on
    bool queued = false;                 // may have a current entry in the queue (one at most)
  };
  struct Past {
    std::vector<uint64_t> execs;    // exec IDs of its launches, in order
    std::vector<uint32_t> indexed;  // positions of its indexed launches (indexed_kernels.hpp), ascending
    uint64_t length = 0;            // launches from its first to the next iteration's first
    IterationUses uses;             // each block's positions of use in it
  };
  using Entry = std::tuple<uint64_t, uint64_t, int64_t>;  // next use, UINT64_MAX - age, block

  // A counted list of positions within an iteration of `length` launches, ascending; else `failure`.
  static void read_positions(StateReader& r, uint64_t length, const char* what, const char* failure,
                             std::vector<uint32_t>& positions) {
    positions.resize(r.count(UINT64_MAX, 1, what));
    for (size_t k = 0; k < positions.size(); ++k) {
      const uint64_t position = r.word();
      if (position >= length || position > UINT32_MAX || (k > 0 && position <= positions[k - 1]))
        StateReader::fail(failure);
      positions[k] = uint32_t(position);
    }
  }

  size_t slot(uint64_t iteration) const { return size_t(iteration % history_.size()); }
  Block& at(int64_t block) {
    if (size_t(block) >= blocks_.size()) blocks_.resize(size_t(block) + 1);
    return blocks_[block];
  }
  // A remembered iteration's uses of `block`.
  UsePositions uses_in(int64_t block, uint64_t iteration) const { return history_[slot(iteration)].uses.of(block); }
  // Every queued block foreseen anew from `launch` (the iteration foreseen from changed).
  void foresee_queued(uint64_t launch) {
    for (size_t block = 0; block < blocks_.size(); ++block)
      if (blocks_[block].queued) blocks_[block].next_use = foresee(int64_t(block), launch);
    requeue();
  }
  // The queue again with only the queued blocks' latest entries (those set aside included).
  void requeue() {
    queue_.clear();
    parked_.clear();
    for (size_t block = 0; block < blocks_.size(); ++block) {
      const Block& b = blocks_[block];
      if (b.queued) queue_.emplace_back(b.next_use, UINT64_MAX - b.age, int64_t(block));
    }
    std::make_heap(queue_.begin(), queue_.end());
  }
  void push(int64_t block, Block& b, uint64_t launch) { push_foreseen(block, b, foresee(block, launch)); }
  void push_foreseen(int64_t block, Block& b, uint64_t next_use) {
    b.next_use = next_use;
    b.queued = true;
    enqueue({next_use, UINT64_MAX - b.age, block});
  }
  void enqueue(const Entry& e) {
    queue_.push_back(e);
    std::push_heap(queue_.begin(), queue_.end());
  }
  // An entry is current while it holds its block's latest figures and the block is queued.
  bool current(const Entry& e) const {
    const Block& b = blocks_[std::get<2>(e)];
    return b.queued && std::get<0>(e) == b.next_use && std::get<1>(e) == UINT64_MAX - b.age;
  }

  std::vector<Block> blocks_;  // by dense block index
  std::vector<Entry> queue_;   // a heap, latest foreseen first; stale entries are skipped
  std::vector<Entry> parked_;         // entries may_go refused during launch parked_launch_
  std::vector<Entry> kept_;           // victim()'s candidates looked at, storage kept between calls
  uint64_t parked_launch_ = 0;
  std::vector<Past> history_;        // the remembered iterations, by slot(iteration)
  std::vector<uint64_t> execs_;      // exec IDs of the current iteration's launches so far
  std::vector<uint32_t> indexed_;    // positions of the current iteration's indexed launches so far
  std::vector<LoggedUse> used_;      // the current iteration's uses so far, a block once a launch
  std::vector<LoggedUse> counted_;   // those host mapping counts (a block's from its counted_from on)
  IterationUses last_counted_;       // the counted uses of the last ended iteration
  std::vector<uint64_t> matching_;   // remembered iterations matching those, latest first
  uint64_t iterations_ = 0;          // iterations ended so far
  uint64_t foreseen_from_ = 0;       // the iteration foreseen from (once one has ended)
  uint64_t start_ = 0, arrivals_ = 0;
};

// NextUseEviction as the policy core's replacement rule.
class NextUseReplacement : public Replacement {
 public:
  explicit NextUseReplacement(size_t remembered) : rule_(remembered) {}
  void start_iteration(uint64_t first_launch) override { rule_.start_iteration(first_launch); }
  void launch(uint64_t launch, uint64_t exec_id, bool indexed) override { rule_.launch(launch, exec_id, indexed); }
  void use(Block b, uint64_t launch, bool resident) override { rule_.use(b, launch, resident); }
  void arrive(Block b, uint64_t launch) override { rule_.arrive(b, launch); }
  NextUseEviction& rule() { return rule_; }
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
