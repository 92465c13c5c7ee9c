// The policy core: every decision deepum makes about UM blocks, for the GPU engine (engine.hpp) and
// the offline simulator (uvm_model.hpp) alike. CUDA-free; deepum/specs/policy.py is its readable
// specification and tests/test_policy.py checks that both decide alike.
//
// It models residency under a capacity of blocks and, at each launch, decides:
// - the kernel's missing blocks become resident (demand): it faults on them, or (demand_prefetch)
//   they are prefetched on its stream just before it;
// - pressure gating: nothing is predicted, learned or prefetched until the blocks touched so far
//   exceed the capacity (until then every block stays resident once it has arrived);
// - victims while over the capacity, by the replacement rule among the blocks the running kernel
//   does not use and, with pre-eviction, the prediction window does not need (window protection);
//   the driver's rule (least recently migrated, not in use) when the rule finds none;
// - prefetches of the window's blocks in need order, entry by entry, evicting for room; a prefetch
//   stops where no victim is allowed (a victim foreseen before the kernel it makes room for is not);
//   the entries not yet prefetched wait until the nearest is needed within lookahead + 1 - batch
//   launches (prefetch_batch, at most the lookahead), so that several launches' go at once;
// - invalidation: with it, a victim or a prefetched block that is dead moves without a copy;
// - the schedule (schedule.hpp), while the iteration's launches match the planned ones: its victims
//   for this launch leave first, and its prefetches replace the window's, evicting by the
//   replacement rule where a slot is still lacking.
// - repeated plans (deepum with repeat_plans_percent and prefetch or pre-eviction, not with the
//   schedule; plan_records.hpp; without either the plans are the driver's rule, left its own): once
//   an iteration under pressure launched and decided what the iteration `back` before it did at that
//   share of its places (the least back up to kRepeatBack), and the iteration to repeat did the same
//   against the one back before it, the next repeats the plans remembered for it (the iteration
//   back - 1 before it): each launch demands its missing blocks, makes each move
//   remembered at its place that still applies (replay()), copied or not as its block's deadness is
//   now, and keeps the capacity by the driver's rule, without the predictor's and the replacement
//   rule's work (they start an iteration again where one is decided in full). It counts as repeated
//   where it launched what was remembered there; one that differs (a tensor placed elsewhere) still
//   makes the moves, which bring in what later launches use. Each place records the remembered plan,
//   not the moves still made, so the plan carries over whole from one repeated iteration to the next;
//   a launch past the remembered ones only demands and keeps the capacity.
// - confidence (deepum): the window protects its blocks and is prefetched (or the schedule followed)
//   only while at least confident_hits of the last kConfidenceLaunches launches under pressure were
//   kernel hits; until then only the kernel's own blocks are prefetched (the demand prefetch).
// - existence: a block that is not memory now (MemoryFacts::exists) is neither prefetched nor mapped.
// - host mapping (deepum with host_map_uses and next-use eviction; the oracle with host_map_uses, its
//   uses counted as deepum's next-use rule counts them), at the first launch of each
//   iteration under pressure: blocks the last iteration used in few launches within a short span of
//   it (the optimizer's state) or, with host_map_indexed, in few launches all of indexed kernels (an
//   embedding table: its lookups and its sparse update) are mapped from the host (while mapped, none
//   is demanded, prefetched or counted resident: its kernels use it over the link), and mapped blocks
//   that no longer qualify migrate again; given back first, then mapped, each ascending. A chosen
//   block that is resident stays so until room is needed: such blocks are then the victims
//   (ascending, any but the running kernel's) unless the replacement rule's victim is dead, each
//   mapped as it leaves with the eviction's copy (dead by then: evicted as any other), so mapping
//   moves nothing in an iteration that lacks no room. With host_map_keep_uses, the chosen blocks the
//   last iteration went over in at least that many passes (runs of consecutive launches) stay
//   migrated, most passes first (ties ascending), as many as the capacity holds beside the other
//   blocks used within the chosen blocks' span (keep_migrated).
// Adapters execute the decisions: the engine issues migrations, the simulator charges their cost.
//
// A warm start (deepum): save_state() gives what the policy has learned (the correlation tables, the
// remembered iterations of next-use eviction and the schedule, and the blocks mapped from the host;
// state_io.hpp's layout) and load_state() gives it to a policy before its first launch. Once the state
// is kept, its mapped blocks join the next iteration's host mapping where they exist and are live: the
// run's own first iteration allocates and initializes the optimizer's state, so its uses there are not
// brief. The loaded state is on trial: the policy is under pressure from the first launch (the run that
// learned it was), and at the end of each of the first kWarmStartTrial iterations the distinct exec IDs
// it launched are compared with those the state holds: it is kept once at least kWarmStartOverlap of
// them are known, and forgotten (the policy learns afresh) if no trial iteration reaches that.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

#include "block_list.hpp"
#include "next_use.hpp"
#include "options.hpp"
#include "plan_records.hpp"
#include "prefetcher.hpp"
#include "replacement.hpp"
#include "schedule.hpp"
#include "state_io.hpp"

namespace deepum {

// Launches after which, with no iteration mark (inference, a custom optimizer), the replacement rule
// starts a new iteration of its own: its history of uses stays bounded.
constexpr uint64_t kLongestIteration = uint64_t(1) << 16;

// Launches under pressure over which the predictor's kernel hits are counted for its confidence.
constexpr size_t kConfidenceLaunches = 32;

// Share of the distinct exec IDs launched in an iteration that a loaded state must know, in one of
// the first kWarmStartTrial iterations (the first may be unlike the rest: optimizer state is allocated
// at its end, and a state remembers the last iterations).
constexpr double kWarmStartOverlap = 0.5;
constexpr uint64_t kWarmStartTrial = 2;

// A loaded state's trial: none loaded, on trial, kept, forgotten.
enum class WarmStart : uint8_t { kCold, kOnTrial, kKept, kForgotten };

struct WarmStartStatus {
  WarmStart state = WarmStart::kCold;
  uint64_t iterations = 0;  // iterations judged
  uint64_t launched = 0;    // distinct exec IDs launched in the last iteration judged (or this one, on trial)
  uint64_t known = 0;       // of those, exec IDs the state knows
  std::vector<std::pair<uint64_t, uint64_t>> trial;  // (launched, known) of each iteration judged, in order
};

// What the policy asks of the memory behind the blocks (the engine's memory map, the simulator's
// record of allocations).
class MemoryFacts {
 public:
  virtual ~MemoryFacts() = default;
  virtual bool dead(Block b) const = 0;  // no live allocation overlaps the block
  // The block is memory now. A loaded state names blocks of the run that learned it, some of which
  // this run has not allocated yet; only existing blocks are prefetched or mapped from the host.
  virtual bool exists(Block) const { return true; }
  // A move of b without a copy is chosen now, if b is dead: true and the choice's ticket.
  virtual bool choose_discard(Block b, uint64_t& ticket) {
    ticket = 0;
    return dead(b);
  }
};

enum class Move : uint8_t {
  kDemand,    // the running kernel's missing block
  kEvict,     // to the host, with a copy
  kDiscard,   // to the host without a copy (dead)
  kPrefetch,  // to the GPU, with a copy
  kPopulate,  // to the GPU as fresh pages (dead)
  kMapHost,   // mapped from the host: kernels use it over the link (a resident block leaves with a copy:
              // one evicted that was chosen for mapping)
  kMapGpu,    // migrated again (no move now: it comes back on demand)
};

struct Decision {
  Move move;
  Block block;
  uint64_t ticket;  // kDiscard, kPopulate: MemoryFacts::choose_discard's ticket
};

struct LaunchPlan {
  bool demand_prefetch = false;  // kDemand blocks are prefetched just before the kernel
  std::vector<Decision> moves;   // in decision order
};

class Policy {
 public:
  // For mode oracle, `prefetcher` and `replacement` must be given (the simulator has the future).
  Policy(const Options& options, int64_t capacity_blocks, MemoryFacts& memory,
         std::unique_ptr<Prefetcher> prefetcher = nullptr, std::unique_ptr<Replacement> replacement = nullptr)
      : options_(options), capacity_(capacity_blocks), memory_(memory), prefetcher_(std::move(prefetcher)),
        replacement_(std::move(replacement)), lru_(migrated_) {
    if (capacity_ < 1) throw std::invalid_argument("capacity must hold at least one block");
    const bool deepum = options_.mode == Mode::kDeepUM;
    if (options_.mode == Mode::kOracle && (!prefetcher_ || !replacement_))
      throw std::invalid_argument("the oracle needs the future: its prefetcher and replacement");
    if (deepum) learn_afresh();
    if (deepum && options_.repeat_plans_percent > 0 && !options_.schedule && (options_.prefetch || options_.pre_evict))
      plans_ = std::make_unique<PlanRecords>(options_.repeat_plans_percent);
    if (options_.mode == Mode::kOracle && options_.host_map_uses > 0)
      oracle_counts_ = std::make_unique<NextUseEviction>(options_.foresight_iterations);
  }

  // The dense index of UM block `number` (numbered when new).
  Block block(int64_t number) {
    const Block b = index_.dense(number);
    ensure(b);
    return b;
  }
  int64_t number(Block b) const { return index_.number(b); }
  // The dense block of `number` where it has one, else kNone (none is made).
  Block known_block(int64_t number) const { return index_.find(number); }

  // A kernel with `exec_id` launches and uses `blocks` (dense, each once); `indexed`: it reaches them
  // through an index (indexed_kernels.hpp); `fill`: it fills a tensor with one value (fill_kernels.hpp);
  // fresh[i] (when given): blocks[i] received memory allocated since the launch before.
  const LaunchPlan& on_launch(uint64_t exec_id, const Block* blocks, size_t count, bool indexed, bool fill = false,
                              const uint8_t* fresh = nullptr) {
    plan_.moves.clear();
    launch_ += 1;
    if (repeating_) {
      if (repeat(exec_id, blocks, count))
        plans_->record_remembered(exec_id, blocks, count, *repeating_);
      else
        plans_->record(exec_id, blocks, count, plan_.moves);
      peak_ = std::max(peak_, resident_count_);
      plan_.demand_prefetch = options_.prefetch && options_.learn_from == LearnFrom::kAccesses;
      return plan_;
    }
    const bool on_trial = warm_.state == WarmStart::kOnTrial;
    if ((replacement_ || schedule_ || on_trial) && launch_ - foresight_start_ >= kLongestIteration) start_foresight(launch_);
    if (map_at_next_launch_) {
      map_at_next_launch_ = false;
      map_from_host();
    }
    if (on_trial && warm_launched_.insert(exec_id).second) {
      warm_.launched += 1;
      warm_.known += warm_known_.count(exec_id);
    }
    if (replacement_) replacement_->launch(launch_, exec_id, indexed);
    if (oracle_counts_) oracle_counts_->launch(launch_, exec_id, indexed);
    NextUseEviction* const counts = use_counts();
    Schedule::Step step{};
    const bool scheduled = schedule_ && schedule_->launch(exec_id, blocks, count, resident_, step);
    missing_.clear();
    for (size_t i = 0; i < count; ++i) {
      const Block b = blocks[i];
      use(b);
      if (!resident_[b] && !host_mapped_[b]) missing_.push_back(b);
      if (replacement_) replacement_->use(b, launch_, resident_[b] != 0);
      if (counts) counts->count_use(b, launch_, fresh && fresh[i], fill);
    }
    for (Block b : missing_) {
      make_resident(b);
      plan_.moves.push_back({Move::kDemand, b, 0});
    }
    const bool pressure = options_.mode == Mode::kOracle || under_pressure();
    predicted_ = prefetcher_ && pressure;
    if (predicted_) predict(exec_id, blocks, count);
    confident_ = options_.mode == Mode::kOracle || (predicted_ && recent_hits_.count() >= options_.confident_hits);
    const bool prefetching = predicted_ && (options_.mode == Mode::kOracle || options_.prefetch);
    plan_.demand_prefetch = (prefetching && (options_.mode == Mode::kOracle || options_.learn_from == LearnFrom::kAccesses)) ||
                            (options_.mode == Mode::kAdvise && pressure);
    const bool trusting = prefetching && confident_;
    const bool following = trusting && scheduled;
    if (following)
      for (const Schedule::Move& m : step)
        if (m.victim != kNone && resident_[m.victim] && used_by_[m.victim] != launch_) evict(m.victim);
    while (resident_count_ > capacity_) {
      const Block v = victim(0);
      if (v == kNone) break;
      evict(v);
    }
    if (following)
      follow(step);
    else if (trusting && prefetches_due())
      plan_prefetches();
    peak_ = std::max(peak_, resident_count_);
    if (plans_) plans_->record(exec_id, blocks, count, plan_.moves);
    return plan_;
  }

  // The engine wakes (sleep_gate.hpp): `blocks` (dense, ascending), every block of the live managed
  // segments, become resident and touched, without a move.
  void wake(const Block* blocks, size_t count) {
    // Resident as of the next launch, which may start an iteration; a block mapped from the host stays there.
    for (size_t i = 0; i < count; ++i) {
      const Block b = blocks[i];
      ensure(b);
      count_touched(b);
      if (!resident_[b] && !host_mapped_[b]) make_resident(b, launch_ + 1);
    }
  }

  // learn_from "faults", simulator: the kernel of the last launch faulted on b.
  void learn_fault(Block b) {
    if (predicted_ && options_.learn_from == LearnFrom::kFaults) prefetcher_->learn(b);
  }
  // learn_from "faults", engine: blocks (UM numbers) one earlier launch of exec_id faulted on.
  void learn_faults(uint64_t exec_id, const int64_t* numbers, size_t count) {
    if (prefetcher_) prefetcher_->learn_faults(exec_id, numbers, count);
  }

  // A new iteration starts with the next launch; returns the blocks the ending one touched.
  int64_t next_iteration() {
    const int64_t touched = touched_this_iteration_;
    iteration_ += 1;
    touched_this_iteration_ = 0;
    if (plans_) {
      std::shared_ptr<const PlannedIteration> repeated = plans_->end_iteration();
      repeating_ = under_pressure() && warm_.state != WarmStart::kOnTrial ? std::move(repeated) : nullptr;
    }
    if (!repeating_) {
      start_foresight(launch_ + 1);
    } else {  // the learners start the iteration only if it stops repeating
      predicted_ = false;
      foresight_start_ = launch_ + 1;
    }
    return touched;
  }

  // The memory of b was given back to the system (its segment freed): it holds nothing anywhere.
  void release(Block b) {
    if (size_t(b) >= resident_.size()) return;
    host_mapped_[b] = 0;
    map_when_evicted_[b] = 0;
    if (!resident_[b]) return;
    leave(b);
  }

  bool resident(Block b) const { return size_t(b) < resident_.size() && resident_[b] != 0; }
  bool host_mapped(Block b) const { return size_t(b) < host_mapped_.size() && host_mapped_[b] != 0; }
  int64_t resident_blocks() const { return resident_count_; }
  int64_t peak_resident_blocks() const { return peak_; }
  uint64_t launches() const { return launch_; }
  uint64_t kernel_hits() const { return prefetcher_ ? prefetcher_->kernel_hits() : 0; }
  uint64_t kernel_misses() const { return prefetcher_ ? prefetcher_->kernel_misses() : 0; }
  uint64_t repeated_launches() const { return repeated_launches_; }  // repeated launches that matched their place
  size_t table_bytes() const { return prefetcher_ ? prefetcher_->table_bytes() : 0; }

  // What deepum has learned, in state_io.hpp's layout (docs/warm-start.md).
  std::vector<uint8_t> save_state() const {
    check_learns();
    StateWriter w;
    w.word(kStateVersion);
    for (uint64_t word : settings()) w.word(word);
    correlation_->tables().catch_up();  // the running launch's held-back lessons are part of what was learned
    correlation_->tables().save(w);
    if (next_use_) next_use_->rule().save(w, [this](int64_t b) { return number(Block(b)); });
    if (schedule_) schedule_->save(w);
    std::vector<int64_t> mapped;
    for (size_t b = 0; b < host_mapped_.size(); ++b)
      if (host_mapped_[b] || map_when_evicted_[b]) mapped.push_back(number(Block(b)));
    for (Block b : loaded_mapped_) mapped.push_back(number(b));
    std::sort(mapped.begin(), mapped.end());
    mapped.erase(std::unique(mapped.begin(), mapped.end()), mapped.end());
    w.word(mapped.size());
    for (int64_t n : mapped) w.signed_word(n);
    return w.take();
  }

  // Loads save_state()'s bytes before the first launch; std::invalid_argument (one line) for a state
  // that is corrupt, of another version or saved under other settings, and nothing is loaded.
  void load_state(const uint8_t* data, size_t size) {
    check_learns();
    if (launch_ != 0 || warm_.state != WarmStart::kCold)
      throw std::logic_error("a learned state loads once, before the first launch");
    try {
      StateReader r(data, size);
      r.expect(kStateVersion, "format version");
      const char* names[] = {"exec_ids", "exec_records", "block_rows", "block_ways", "block_successors",
                             "foresight_iterations", "eviction", "schedule", "schedule_accesses"};
      const auto words = settings();
      for (size_t i = 0; i < words.size(); ++i) r.expect(words[i], names[i]);
      correlation_->tables().load(r);
      const auto dense = [this](int64_t n) { return block(n); };
      if (next_use_) next_use_->rule().load(r, dense);
      if (schedule_) schedule_->load(r, dense);
      const size_t mapped = r.count(UINT64_MAX, 1, "mapped blocks");
      for (size_t i = 0; i < mapped; ++i) loaded_mapped_.push_back(block(r.block()));
      r.finish();
    } catch (...) {
      learn_afresh();
      throw;
    }
    correlation_->tables().for_each_exec_id([this](uint64_t id) { warm_known_.insert(id); });
    if (next_use_) next_use_->rule().for_each_exec_id([this](uint64_t id) { warm_known_.insert(id); });
    warm_.state = WarmStart::kOnTrial;
  }

  const WarmStartStatus& warm_start() const { return warm_; }

 private:
  // deepum's learners, empty: the correlation prefetcher, next-use eviction (with pre-eviction) and
  // the schedule (when switched on).
  void learn_afresh() {
    loaded_mapped_.clear();
    auto correlation = std::make_unique<CorrelationPrefetcher>(options_.tables, index_);
    correlation_ = correlation.get();
    prefetcher_ = std::move(correlation);
    if (options_.pre_evict && options_.eviction == Eviction::kNextUse) {
      auto next_use = std::make_unique<NextUseReplacement>(options_.foresight_iterations);
      next_use_ = next_use.get();
      replacement_ = std::move(next_use);
    }
    if (options_.schedule)
      schedule_ = std::make_unique<Schedule>(capacity_, options_.schedule_ahead, options_.schedule_accesses,
                                             options_.foresight_iterations, index_);
  }

  void check_learns() const {
    if (options_.mode != Mode::kDeepUM) throw std::logic_error("only the deepum policy learns a state");
  }

  // The settings a saved state's shape depends on; a state loads only under the same.
  std::array<uint64_t, 9> settings() const {
    const CorrelationConfig& t = options_.tables;
    return {t.exec_ids, t.exec_records, t.block_rows, t.block_ways, t.block_successors, options_.foresight_iterations,
            next_use_ != nullptr, schedule_ != nullptr, options_.schedule ? options_.schedule_accesses : 0};
  }

  // The end of an iteration on trial: the state is kept if it knows enough of the exec IDs launched,
  // forgotten after the last trial iteration (the policy learns afresh; resident blocks stay, known to
  // the new rule), else still on trial.
  void judge_warm_start() {
    if (warm_.launched == 0) return;
    warm_.iterations += 1;
    warm_.trial.emplace_back(warm_.launched, warm_.known);
    const bool kept = double(warm_.known) >= kWarmStartOverlap * double(warm_.launched);
    if (!kept && warm_.iterations < kWarmStartTrial) {
      warm_launched_.clear();
      warm_.launched = warm_.known = 0;
      return;
    }
    warm_.state = kept ? WarmStart::kKept : WarmStart::kForgotten;
    warm_launched_ = {};
    warm_known_ = {};
    if (kept) return;
    learn_afresh();
    window_.clear();
    std::fill(protect_.begin(), protect_.end(), 0);
    issued_ = 0;
    if (next_use_)
      for (Block b = migrated_.head(); b != kNone; b = migrated_.next(b)) next_use_->arrive(b, launch_);
  }

  void ensure(Block b) {
    if (size_t(b) < resident_.size()) return;
    const size_t n = std::max(size_t(b) + 1, resident_.size() * 2);
    resident_.resize(n, 0);
    host_mapped_.resize(n, 0);
    map_when_evicted_.resize(n, 0);
    protect_.resize(n, 0);
    used_by_.resize(n, 0);
    touched_in_.resize(n, 0);
    counted_.resize(n, 0);
  }

  // A block the running launch uses: counted among those touched, used last by this launch and touched
  // in this iteration.
  void use(Block b) {
    ensure(b);
    count_touched(b);
    used_by_[b] = launch_;
    if (touched_in_[b] == iteration_ + 1) return;
    touched_in_[b] = iteration_ + 1;
    touched_this_iteration_ += 1;
  }

  // A launch of a repeated iteration: its missing blocks demanded, each move remembered at its place
  // that still applies made, room kept; nothing is predicted. Counts the launch as repeated where it
  // matches the launch remembered there. Says whether the remembered iteration has its place (the
  // plan remembered there carries over).
  bool repeat(uint64_t exec_id, const Block* blocks, size_t count) {
    demand(blocks, count);
    const PlannedIteration& r = *repeating_;
    const size_t place = plans_->place();
    const bool remembered = place < r.launches();
    if (remembered) {
      repeated_launches_ += r.launched(place, exec_id, blocks, count);
      for (size_t k = r.moves_from(place); k < r.move_ends[place]; ++k) replay(Move(r.moves[k].move), r.moves[k].block);
    }
    keep_capacity();
    return remembered;
  }

  void demand(const Block* blocks, size_t count) {
    for (size_t i = 0; i < count; ++i) use(blocks[i]);
    for (size_t i = 0; i < count; ++i)
      if (!resident_[blocks[i]] && !host_mapped_[blocks[i]]) {
        make_resident(blocks[i]);
        plan_.moves.push_back({Move::kDemand, blocks[i], 0});
      }
  }

  // The driver's rule (dead blocks first with invalidation) takes victims among the blocks the launch
  // does not use while more are resident than the capacity holds.
  void keep_capacity() {
    while (resident_count_ > capacity_) {
      const Block v = lru_.victim(launch_, Asking(*this, false, true), 0);
      if (v == kNone) break;
      evict(v);
    }
  }

  // One remembered move, made if it still applies: what comes in neither resident nor mapped from the
  // host, memory now and (a prefetch) within the capacity; what leaves resident and not the launch's;
  // a mapping to the host of memory that is not dead; a block given back still mapped. Copied or not
  // as the block's deadness is now.
  void replay(Move move, Block b) {
    uint64_t ticket = 0;
    switch (move) {
      case Move::kDemand:
        return;
      case Move::kPrefetch:
      case Move::kPopulate:
        if (resident_[b] || host_mapped_[b] || !memory_.exists(b) || resident_count_ >= capacity_) return;
        make_resident(b);
        move = invalidates() && memory_.choose_discard(b, ticket) ? Move::kPopulate : Move::kPrefetch;
        break;
      case Move::kMapGpu:
        if (!host_mapped_[b]) return;
        host_mapped_[b] = 0;
        break;
      default:
        if (!resident_[b]) {  // mapped from the host
          if (host_mapped_[b] || !memory_.exists(b) || memory_.dead(b)) return;
          host_mapped_[b] = 1;
          move = Move::kMapHost;
          break;
        }
        if (used_by_[b] == launch_) return;
        leave(b);
        map_when_evicted_[b] = 0;
        if (move == Move::kMapHost && !memory_.dead(b))
          host_mapped_[b] = 1;
        else
          move = invalidates() && memory_.choose_discard(b, ticket) ? Move::kDiscard : Move::kEvict;
    }
    plan_.moves.push_back({move, b, ticket});
  }

  void count_touched(Block b) {
    if (counted_[b]) return;
    counted_[b] = 1;
    touched_ += 1;
  }

  void predict(uint64_t exec_id, const Block* blocks, size_t count) {
    const uint64_t hits = prefetcher_->kernel_hits();
    const WindowChange change = prefetcher_->on_launch(exec_id);
    recent_hits_.record(prefetcher_->kernel_hits() > hits);
    for (size_t i = 0; i < change.popped; ++i) {
      for (Block b : *window_.front()) protect_[b] -= 1;
      window_.pop_front();
    }
    issued_ = change.popped > issued_ ? 0 : issued_ - change.popped;
    const Window& predicted = prefetcher_->window();
    for (size_t i = predicted.size() - change.pushed; i < predicted.size(); ++i) {
      for (Block b : *predicted[i]) {
        ensure(b);
        protect_[b] += 1;
      }
      window_.push_back(predicted[i]);
    }
    if (options_.learn_from == LearnFrom::kAccesses)
      for (size_t i = 0; i < count; ++i) prefetcher_->learn(blocks[i]);
  }

  // The replacement rule and the schedule start an iteration at launch `first`.
  void start_foresight(uint64_t first) {
    if (warm_.state == WarmStart::kOnTrial) judge_warm_start();
    if (replacement_) replacement_->start_iteration(first);
    if (oracle_counts_) oracle_counts_->start_iteration(first);
    if (schedule_) schedule_->start_iteration();
    if (prefetcher_) prefetcher_->start_iteration();
    foresight_start_ = first;
    map_at_next_launch_ = true;
  }

  // The rule whose counted uses host mapping reads: deepum's next-use rule, or the oracle's counts.
  NextUseEviction* use_counts() { return next_use_ ? &next_use_->rule() : oracle_counts_.get(); }

  // The blocks touched so far exceed the capacity, or a loaded state says they will.
  bool under_pressure() const {
    return touched_ > capacity_ || warm_.state == WarmStart::kOnTrial || warm_.state == WarmStart::kKept;
  }

  // Host mapping: the blocks the last iteration used briefly (and, at the first decision after a
  // loaded state is kept, its mapped blocks) are mapped from the host, those mapped that no longer
  // qualify migrate again.
  void map_from_host() {
    std::vector<Block> loaded;
    if (warm_.state != WarmStart::kOnTrial) loaded.swap(loaded_mapped_);
    NextUseEviction* const counts = use_counts();
    if (!counts || options_.host_map_uses == 0 || !under_pressure()) return;
    std::vector<Block> chosen, back;
    const auto take = [&](Block b) {
      if (memory_.exists(b) && !memory_.dead(b)) chosen.push_back(b);
    };
    counts->short_lived(options_.host_map_uses, options_.host_map_span_percent, options_.host_map_indexed,
                                  [&](int64_t b) { take(Block(b)); });
    for (Block b : loaded) take(b);
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    keep_migrated(*counts, chosen);
    std::vector<uint8_t> stays(host_mapped_.size(), 0);
    for (Block b : chosen) stays[b] = 1;
    for (size_t b = 0; b < host_mapped_.size(); ++b)
      if (host_mapped_[b] && !stays[b]) back.push_back(Block(b));
    chosen.erase(std::remove_if(chosen.begin(), chosen.end(), [this](Block b) { return host_mapped_[b] != 0; }),
                 chosen.end());
    const auto ascending = [this](Block x, Block y) { return number(x) < number(y); };
    std::sort(back.begin(), back.end(), ascending);
    std::sort(chosen.begin(), chosen.end(), ascending);
    for (Block b : back) {
      host_mapped_[b] = 0;
      plan_.moves.push_back({Move::kMapGpu, b, 0});
    }
    std::fill(map_when_evicted_.begin(), map_when_evicted_.end(), 0);
    map_queue_.clear();
    map_queue_head_ = 0;
    for (Block b : chosen) {
      if (resident_[b]) {
        map_when_evicted_[b] = 1;
        map_queue_.push_back(b);
        continue;
      }
      host_mapped_[b] = 1;
      plan_.moves.push_back({Move::kMapHost, b, 0});
    }
  }

  // host_map_keep_uses: the blocks of `chosen` (ascending) the last iteration went over in at least
  // that many passes leave it, most passes first (ties: ascending numbers), as many as the capacity holds
  // beside the other blocks used within the chosen blocks' span; they stay migrated.
  void keep_migrated(const NextUseEviction& counts, std::vector<Block>& chosen) const {
    const size_t least = options_.host_map_keep_uses;
    if (least == 0) return;
    const size_t used = counts.used_beside(
        [&](size_t b) { return std::binary_search(chosen.begin(), chosen.end(), Block(b)); });
    if (int64_t(used) >= capacity_) return;
    std::vector<std::pair<size_t, Block>> ranked;  // (passes, block)
    for (Block b : chosen)
      if (const size_t passes = counts.passes(int64_t(b)); passes >= least) ranked.emplace_back(passes, b);
    const auto more_passes = [&](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : number(x.second) < number(y.second);
    };
    std::sort(ranked.begin(), ranked.end(), more_passes);
    ranked.resize(std::min(ranked.size(), size_t(capacity_) - used));
    std::vector<Block> kept;
    for (const auto& [passes, b] : ranked) kept.push_back(b);
    std::sort(kept.begin(), kept.end());
    chosen.erase(std::remove_if(chosen.begin(), chosen.end(),
                                [&](Block b) { return std::binary_search(kept.begin(), kept.end(), b); }),
                 chosen.end());
  }

  // The schedule's prefetches for this launch, in its order; a slot still lacking is made by the
  // replacement rule for the launch that needs the block, and the prefetches stop where it refuses.
  void follow(const Schedule::Step& step) {
    for (const Schedule::Move& m : step) {
      if (m.lead == 0 || resident_[m.block] || host_mapped_[m.block] || !memory_.exists(m.block)) continue;
      if (resident_count_ >= capacity_) {
        const Block v = victim(launch_ + m.lead);
        if (v == kNone) return;
        evict(v);
      }
      make_resident(m.block);
      uint64_t ticket = 0;
      plan_.moves.push_back({invalidates() && memory_.choose_discard(m.block, ticket) ? Move::kPopulate : Move::kPrefetch,
                             m.block, ticket});
    }
  }

  // Whether the window's entries not yet prefetched are due: the nearest is needed within
  // lookahead + 1 - batch launches (always, with a batch of 1).
  bool prefetches_due() const {
    const size_t lookahead = options_.tables.lookahead;
    return issued_ + std::min(options_.prefetch_batch, lookahead) <= lookahead + 1;
  }

  // The window's blocks in need order, entry by entry (each entry's prefetches in address order, so
  // that contiguous blocks coalesce), evicting for room; stops where no victim is allowed.
  void plan_prefetches() {
    for (; issued_ < window_.size(); ++issued_) {
      entry_.clear();
      bool complete = true;
      for (Block b : *window_[issued_]) {
        if (resident_[b] || host_mapped_[b] || !memory_.exists(b)) continue;
        if (resident_count_ >= capacity_) {
          const bool far = options_.far_prefetches != FarPrefetches::kEvict && next_use_ &&
                           next_use_->rule().foresee(b, launch_) > launch_ + options_.tables.lookahead + 1;
          if (far && options_.far_prefetches == FarPrefetches::kSkip) continue;
          Block v = victim(launch_ + issued_ + 1);
          if (far && v != kNone && !(invalidates() && memory_.dead(v))) {  // dead_only: the victim stays
            next_use_->rule().spare(v, launch_);
            v = kNone;
          }
          if (v == kNone) {
            complete = false;
            break;
          }
          evict(v);
        }
        make_resident(b);
        uint64_t ticket = 0;
        entry_.push_back({invalidates() && memory_.choose_discard(b, ticket) ? Move::kPopulate : Move::kPrefetch, b, ticket});
      }
      std::sort(entry_.begin(), entry_.end(),
                [this](const Decision& x, const Decision& y) { return number(x.block) < number(y.block); });
      plan_.moves.insert(plan_.moves.end(), entry_.begin(), entry_.end());
      if (!complete) return;
    }
  }

  // A victim: the replacement rule's if it is dead (no copy), else a block waiting to be mapped from
  // the host (its next use reads it over the link), else the rule's. need_at > 0: a victim for a
  // prefetch for that launch (the rule's is none when it refuses).
  Block victim(uint64_t need_at) {
    const Block waiting = to_map_when_evicted();
    const Block chosen = ruled_victim(need_at);
    if (waiting == kNone || (chosen != kNone && invalidates() && memory_.dead(chosen))) return chosen;
    if (chosen != kNone && next_use_) next_use_->rule().spare(chosen, launch_);  // the oracle's stays a candidate
    return waiting;
  }

  // The replacement rule's victim, or the driver's rule's where it finds none.
  Block ruled_victim(uint64_t need_at) {
    const bool sparing = spares_window();
    const bool ruled = replacement_ && (sparing || options_.mode == Mode::kOracle);
    const Block chosen = (ruled ? *replacement_ : lru_).victim(launch_, Asking(*this, sparing && confident_, true), need_at);
    if (chosen != kNone || need_at > 0 || !(ruled || sparing)) return chosen;
    return lru_.victim(launch_, Asking(*this, false, false), 0);  // the rule found nothing: the driver's rule
  }

  // The first block chosen for host mapping while resident that the running kernel does not use.
  Block to_map_when_evicted() {
    while (map_queue_head_ < map_queue_.size() && !map_when_evicted_[map_queue_[map_queue_head_]]) ++map_queue_head_;
    for (size_t i = map_queue_head_; i < map_queue_.size(); ++i) {
      const Block b = map_queue_[i];
      if (map_when_evicted_[b] && used_by_[b] != launch_) return b;
    }
    return kNone;
  }

  // The resident blocks as one way of asking sees them: sparing the window or not, dead blocks first
  // (they leave without a copy) or not.
  class Asking : public Candidates {
   public:
    Asking(const Policy& policy, bool sparing, bool dead_first)
        : policy_(policy), sparing_(sparing), dead_first_(dead_first) {}
    bool resident(Block b) const override { return policy_.resident(b); }
    bool may_go(Block b) const override {
      return policy_.used_by_[b] != policy_.launch_ && (!sparing_ || policy_.protect_[b] == 0);
    }
    bool dead(Block b) const override { return dead_first_ && policy_.invalidates() && policy_.memory_.dead(b); }

   private:
    const Policy& policy_;
    const bool sparing_, dead_first_;
  };

  bool spares_window() const { return options_.mode == Mode::kDeepUM && options_.pre_evict; }
  bool invalidates() const {
    return options_.mode == Mode::kOracle || (options_.mode == Mode::kDeepUM && options_.invalidate);
  }

  // Whether each of the last kConfidenceLaunches launches under pressure was a kernel hit.
  class RecentHits {
   public:
    void record(bool hit) {
      hits_ += size_t(hit) - size_t(ring_[next_]);
      ring_[next_] = hit;
      next_ = (next_ + 1) % kConfidenceLaunches;
    }
    size_t count() const { return hits_; }

   private:
    std::array<bool, kConfidenceLaunches> ring_{};
    size_t next_ = 0, hits_ = 0;
  };

  void make_resident(Block b) { make_resident(b, launch_); }
  void make_resident(Block b, uint64_t launch) {
    resident_[b] = 1;
    resident_count_ += 1;
    migrated_.push_back(b);
    if (replacement_) replacement_->arrive(b, launch);
  }

  void evict(Block b) {
    leave(b);
    if (map_when_evicted_[b]) {
      map_when_evicted_[b] = 0;
      if (!memory_.dead(b)) {
        host_mapped_[b] = 1;
        plan_.moves.push_back({Move::kMapHost, b, 0});
        return;
      }
    }
    uint64_t ticket = 0;
    plan_.moves.push_back({invalidates() && memory_.choose_discard(b, ticket) ? Move::kDiscard : Move::kEvict, b, ticket});
  }

  void leave(Block b) {
    resident_[b] = 0;
    resident_count_ -= 1;
    migrated_.remove(b);
  }

  const Options options_;
  const int64_t capacity_;
  MemoryFacts& memory_;
  BlockIndex index_;
  std::unique_ptr<Prefetcher> prefetcher_;      // null: nothing is predicted (um, advise)
  std::unique_ptr<Replacement> replacement_;    // deepum with pre-eviction, oracle; null: LRU
  std::unique_ptr<Schedule> schedule_;          // deepum with schedule; null: the window alone
  std::unique_ptr<PlanRecords> plans_;          // deepum with repeat_plans_percent; null: every launch decided in full
  std::shared_ptr<const PlannedIteration> repeating_;  // the remembered iteration this one repeats; null: none
  uint64_t repeated_launches_ = 0;
  CorrelationPrefetcher* correlation_ = nullptr;  // deepum: prefetcher_
  NextUseReplacement* next_use_ = nullptr;        // deepum with next-use eviction: replacement_
  std::unique_ptr<NextUseEviction> oracle_counts_;  // the oracle with host mapping: its uses, counted
  WarmStartStatus warm_;
  std::unordered_set<uint64_t> warm_known_;     // on trial: the exec IDs the loaded state knows
  std::unordered_set<uint64_t> warm_launched_;  // on trial: the distinct exec IDs launched
  BlockList migrated_;                          // resident blocks, least recently migrated first
  LruEviction lru_;                             // over migrated_
  std::vector<uint8_t> resident_;
  std::vector<uint8_t> host_mapped_;            // mapped from the host (host mapping)
  std::vector<uint8_t> map_when_evicted_;       // chosen for host mapping while resident
  std::vector<Block> map_queue_;                // those blocks as chosen, ascending (some left since)
  size_t map_queue_head_ = 0;                   // map_queue_ before it holds none still chosen
  std::vector<Block> loaded_mapped_;            // a loaded state's mapped blocks, until mapped once it is kept
  std::vector<int32_t> protect_;                // window entries that need the block
  std::vector<uint64_t> used_by_;               // last launch that used it (0: none yet)
  std::vector<uint8_t> counted_;                // counted in touched_ (used, or resident at the wake)
  std::vector<uint64_t> touched_in_;            // 1 + last iteration that used it (0: none)
  Window window_;                               // the prefetcher's window as protected
  size_t issued_ = 0;                           // window entries whose prefetches are all decided
  int64_t resident_count_ = 0, peak_ = 0, touched_ = 0, touched_this_iteration_ = 0;
  uint64_t launch_ = 0, iteration_ = 0;
  uint64_t foresight_start_ = 1;                // launch at which the replacement rule's iteration began
  bool predicted_ = false;                      // the last launch went through the prefetcher
  bool confident_ = false;                      // the last launch trusted the predictions
  bool map_at_next_launch_ = false;             // an iteration started: host mapping decides at its first launch
  RecentHits recent_hits_;
  std::vector<Block> missing_;
  std::vector<Decision> entry_;
  LaunchPlan plan_;
};

}  // namespace deepum
