// DeepUM correlation tables (native): the exec-ID table and one UM-block table (block_table.hpp) per
// exec ID. deepum/specs/tables.py is the readable specification; this must agree with it on every input
// (tests/test_tables.py, tests/test_native_agrees.py). Header-only, no CUDA, no Python. Exec IDs are any
// uint64; UM blocks are non-negative int64.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "block_list.hpp"
#include "block_table.hpp"

namespace deepum {

// Exec IDs before the current one that a record remembers (deepum/specs/tables.py says why five).
constexpr size_t kHistory = 5;
constexpr uint64_t kNoExecId = UINT64_MAX;  // fills the history before the first launches

// Bytes each exec-ID table element costs (deepum/specs/tables.py and DeepUMConfig.table_bytes_bound use the same).
constexpr size_t kExecRecordBytes = 8 * (kHistory + 1);  // kHistory history IDs + next ID
constexpr size_t kExecEntryBytes = 8 + 8;                // key + bookkeeping

using Context = std::array<uint64_t, kHistory + 1>;  // exec IDs, oldest first, the current one last

struct ExecRecord {
  std::array<uint64_t, kHistory> history;  // oldest first
  uint64_t next;
  bool operator==(const ExecRecord& o) const { return history == o.history && next == o.next; }
};

// How many of the most recent exec IDs of two histories agree (0..kHistory).
inline size_t suffix_match(const std::array<uint64_t, kHistory>& a, const uint64_t* b) {
  size_t matched = 0;
  while (matched < kHistory && a[kHistory - 1 - matched] == b[kHistory - 1 - matched]) ++matched;
  return matched;
}

// One chain walk of an exec ID's UM-block table, never changed once walked (a later walk is a new
// one), so that whoever holds it keeps the blocks it was given.
struct ChainWalk {
  std::vector<int64_t> blocks;  // UM blocks in chain-walk order, no repeats (at most chain_blocks)
  std::vector<Block> dense;     // their dense indices, when the tables renumber (else empty)
};

// Everything kept for one tracked exec ID: its exec-ID entry (records, most recently used first), its
// UM-block table, its last chain walk (shared while the table has not changed; not counted in table
// bytes), and its place in the launch order.
struct ExecState {
  ExecState(uint64_t id, const CorrelationConfig& c) : exec_id(id), blocks(c) {}

  size_t entry_bytes() const { return record_count ? kExecEntryBytes + record_count * kExecRecordBytes : 0; }

  uint64_t exec_id;
  std::vector<ExecRecord> records;
  size_t record_count = 0;
  BlockTable blocks;
  std::shared_ptr<ChainWalk> chain;
  uint64_t chain_version = UINT64_MAX;  // blocks.version() when `chain` was walked
  ExecState* older = nullptr;           // launch order
  ExecState* newer = nullptr;
  std::vector<int64_t> lessons;  // the blocks its last launch taught, in order (not counted in table bytes)
  bool settled = false;  // learning `lessons` changed no successor: learning them again changes nothing
};

// The exec-ID table and one UM-block table per tracked exec ID, learning from launches and faults.
// At most `exec_ids` exec IDs are tracked; launching a new one past that bound drops the least recently
// launched one with its entry and its UM-block table. With `renumber`, each chain walk also gives its
// blocks' dense indices (numbering new blocks in walk order).
class CorrelationTables {
 public:
  explicit CorrelationTables(const CorrelationConfig& config, BlockIndex* renumber = nullptr)
      : config_(config), renumber_(renumber) {
    history_.fill(kNoExecId);
  }

  // A kernel launched: ends learning of the previous one and records the transition.
  void on_kernel(uint64_t exec_id) {
    if (ExecState* previous = running_) {
      end_lessons(*previous);
      const size_t before = previous->entry_bytes() + previous->blocks.bytes();
      if (last_fault_ != kNoBlock) previous->blocks.set_end(last_fault_);
      learn_record(*previous, exec_id);
      bytes_ += previous->entry_bytes() + previous->blocks.bytes() - before;
    }
    track(exec_id);
    std::copy(history_.begin() + 1, history_.end(), history_.begin());
    history_.back() = exec_id;
    last_fault_ = kNoBlock;
    taught_.clear();
    matched_ = 0;
    matching_ = running_->settled;
    version_at_start_ = running_->blocks.version();
  }

  // The running kernel faulted on `block` (a repeat of its previous fault is ignored).
  void on_fault(int64_t block) {
    if (!running_ || block == last_fault_) return;
    if (matching_) {
      const std::vector<int64_t>& lessons = running_->lessons;
      if (matched_ < lessons.size() && lessons[matched_] == block) {
        ++matched_;
        last_fault_ = block;
        return;
      }
      catch_up();
    }
    learn(running_->blocks, last_fault_, block);
    taught_.push_back(block);
    last_fault_ = block;
  }

  // The running launch's lessons held back so far are learned now: the tables become exactly what
  // learning each as it came would have made them. Before the tables are saved, and where the launch
  // departs from its exec ID's settled lessons.
  void catch_up() {
    if (!matching_) return;
    matching_ = false;
    const std::vector<int64_t>& lessons = running_->lessons;
    taught_.assign(lessons.begin(), lessons.begin() + matched_);
    for (size_t i = 0; i < matched_; ++i) learn(running_->blocks, i ? lessons[i - 1] : kNoBlock, lessons[i]);
  }

  // The UM blocks one earlier launch of `exec_id` faulted on, in fault order, learned after the fact
  // (a GPU's fault log arrives after the kernel ran): the lessons on_fault would have taught during
  // that launch, its last block as the end block; repeats of the previous block are ignored. Nothing
  // is learned when `exec_id` is no longer tracked.
  void learn_faults(uint64_t exec_id, const int64_t* blocks, size_t count) {
    const auto it = states_.find(exec_id);
    if (it == states_.end() || count == 0) return;
    catch_up();
    it->second.settled = false;  // its ways' order may change without a new version
    BlockTable& table = it->second.blocks;
    const size_t before = table.bytes();
    int64_t last = kNoBlock;
    for (size_t i = 0; i < count; ++i) {
      if (blocks[i] == last) continue;
      learn_fault(table, last, blocks[i]);
      last = blocks[i];
    }
    table.set_end(last);
    bytes_ += table.bytes() - before;
  }

  // The exec ID predicted to follow `context`: the record of context's current exec ID whose history
  // agrees longest with context (ties: most recently used). False if it has no records.
  bool predict_next(const Context& context, uint64_t& next) const {
    const ExecState* state = find(context[kHistory]);
    if (!state || state->record_count == 0) return false;
    size_t best_match = 0;
    const ExecRecord* best = nullptr;
    for (size_t i = 0; i < state->record_count; ++i) {
      const size_t matched = suffix_match(state->records[i].history, context.data());
      if (!best || matched > best_match) {
        best = &state->records[i];
        best_match = matched;
      }
    }
    next = best->next;
    return true;
  }

  // Predicted UM blocks of one launch of `exec_id` (see BlockTable::chain); an exec ID not tracked
  // has an empty walk.
  std::shared_ptr<const ChainWalk> chain(uint64_t exec_id) {
    const auto it = states_.find(exec_id);
    if (it == states_.end()) return empty_walk_;
    ExecState& state = it->second;
    if (state.chain_version != state.blocks.version()) {
      if (!state.chain || state.chain.use_count() > 1) state.chain = std::make_shared<ChainWalk>();
      ChainWalk& walk = *state.chain;
      state.blocks.chain(config_.chain_blocks, seen_, walk.blocks);
      walk.dense.clear();
      if (renumber_)
        for (int64_t number : walk.blocks) walk.dense.push_back(renumber_->dense(number));
      state.chain_version = state.blocks.version();
    }
    return state.chain;
  }

  const Context& history() const { return history_; }  // last launches, the running one last
  size_t bytes() const { return bytes_; }

  // The learned state (state_io.hpp): every tracked exec ID, least recently launched first, with its
  // records (most recently used first) and its UM-block table. Not the launch history: a run that
  // loads it starts with none.
  void save(StateWriter& w) const {
    w.word(states_.size());
    for (const ExecState* s = oldest_; s; s = s->newer) {
      w.word(s->exec_id);
      w.word(s->record_count);
      for (size_t i = 0; i < s->record_count; ++i) {
        for (uint64_t id : s->records[i].history) w.word(id);
        w.word(s->records[i].next);
      }
      s->blocks.save(w);
    }
  }
  // Into tables that have seen no launch.
  void load(StateReader& r) {
    if (!states_.empty()) throw std::logic_error("a learned state loads into empty tables");
    const size_t n = r.count(config_.exec_ids, 4, "exec IDs");
    for (size_t k = 0; k < n; ++k) {
      const uint64_t exec_id = r.word();
      if (states_.count(exec_id)) StateReader::fail("an exec ID appears twice");
      track(exec_id);
      ExecState& s = *newest_;
      std::vector<ExecRecord> records(r.count(config_.exec_records, kHistory + 1, "records"));
      for (ExecRecord& record : records) {
        for (uint64_t& id : record.history) id = r.word();
        record.next = r.word();
      }
      if (!records.empty()) s.records.resize(config_.exec_records);
      for (auto it = records.rbegin(); it != records.rend(); ++it)  // relearned oldest first
        s.record_count = push_mru(s.records.data(), s.record_count, config_.exec_records, *it);
      s.blocks.load(r);
      bytes_ += s.entry_bytes() + s.blocks.bytes();
    }
    running_ = nullptr;
  }
  template <class F>
  void for_each_exec_id(F f) const {
    for (const ExecState* s = oldest_; s; s = s->newer) f(s->exec_id);
  }

 private:
  // One fault's lesson: the first block of a launch starts the chain, later ones succeed `previous`.
  static void learn_fault(BlockTable& table, int64_t previous, int64_t block) {
    if (previous == kNoBlock)
      table.learn_start(block);
    else
      table.learn_successor(previous, block);
  }

  void learn(BlockTable& table, int64_t previous, int64_t block) {
    const size_t before = table.bytes();
    learn_fault(table, previous, block);
    bytes_ += table.bytes() - before;
  }

  // The running launch ended: what it taught is learned (all of it, unless it repeated its exec ID's
  // settled lessons whole) and becomes its exec ID's lessons, settled if learning them changed nothing.
  void end_lessons(ExecState& state) {
    if (matching_ && matched_ == state.lessons.size()) return;
    catch_up();
    state.settled = state.blocks.version() == version_at_start_;
    state.lessons.swap(taught_);
  }

  const ExecState* find(uint64_t exec_id) const {
    const auto it = states_.find(exec_id);
    return it == states_.end() ? nullptr : &it->second;
  }

  void learn_record(ExecState& state, uint64_t next) {
    if (state.records.empty()) state.records.resize(config_.exec_records);
    ExecRecord record{{}, next};
    std::copy(history_.begin(), history_.begin() + kHistory, record.history.begin());
    state.record_count = push_mru(state.records.data(), state.record_count, config_.exec_records, record);
  }

  void track(uint64_t exec_id) {
    const auto [it, inserted] = states_.try_emplace(exec_id, exec_id, config_);
    ExecState* state = &it->second;
    running_ = state;
    if (state == newest_) return;
    if (!inserted) unlink(state);
    state->older = newest_;
    state->newer = nullptr;
    (newest_ ? newest_->newer : oldest_) = state;
    newest_ = state;
    if (inserted && states_.size() > config_.exec_ids) {
      ExecState* dropped = oldest_;
      unlink(dropped);
      bytes_ -= dropped->entry_bytes() + dropped->blocks.bytes();
      states_.erase(dropped->exec_id);
    }
  }

  void unlink(ExecState* state) {
    (state->older ? state->older->newer : oldest_) = state->newer;
    (state->newer ? state->newer->older : newest_) = state->older;
  }

  CorrelationConfig config_;
  BlockIndex* renumber_;                            // null: walks give UM blocks only
  std::shared_ptr<const ChainWalk> empty_walk_ = std::make_shared<const ChainWalk>();
  std::unordered_map<uint64_t, ExecState> states_;  // node-based: ExecState addresses stay put
  ExecState* oldest_ = nullptr;                     // least recently launched
  ExecState* newest_ = nullptr;                     // most recently launched (or loaded)
  ExecState* running_ = nullptr;                    // the running kernel's (none before the first launch)
  Context history_;
  int64_t last_fault_ = kNoBlock;  // of the running kernel
  // The running launch's lessons. While its blocks repeat, in order, its exec ID's settled lessons they
  // are held back (matching_; matched_ of them so far): learning them would change no successor, and
  // the order of the ways they would leave is the one they left last time (moving the same ways to the
  // front in the same order again). Where the launch departs from them or ends short of them, or the
  // tables are saved, the held part is learned (catch_up).
  bool matching_ = false;
  size_t matched_ = 0;
  std::vector<int64_t> taught_;     // the running launch's lessons so far, where not held back
  uint64_t version_at_start_ = 0;  // the running exec ID's blocks.version() at its launch
  size_t bytes_ = 0;
  BlockSet seen_;
};

}  // namespace deepum
