// DeepUM correlation tables and predictor (native). deepum/tables.py and deepum/predictor.py are the
// readable specification; this must agree with them on every input (tests/test_native_agrees.py).
// Header-only, no CUDA, no Python. Exec IDs are any uint64; UM blocks are non-negative int64.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace deepum {

// Sizes of the tables and the window. No defaults here: DeepUMConfig (deepum/config.py) defines them,
// and options.hpp reads them across the boundary.
struct CorrelationConfig {
  size_t lookahead = 0;
  size_t exec_ids = 0;
  size_t exec_records = 0;
  size_t block_rows = 0;
  size_t block_ways = 0;
  size_t block_successors = 0;
  size_t chain_blocks = 0;
};

struct PredictedKernel {
  uint64_t exec_id;
  std::vector<int64_t> blocks;  // UM blocks in chain-walk order, no repeats
};

struct WindowChange {
  size_t popped;  // entries removed from the front of window() by this on_kernel (all old ones on a rebuild)
  size_t pushed;  // entries appended at the back (the last `pushed` entries of window())
};

// Bytes each table element costs (deepum/tables.py and DeepUMConfig.table_bytes_bound use the same).
constexpr size_t kExecRecordBytes = 8 * 4;  // 3 history IDs + next ID
constexpr size_t kExecEntryBytes = 8 + 8;   // key + bookkeeping
constexpr size_t kBlockTableBytes = 8;      // end block
constexpr size_t kBlockWayBytes = 8;        // tag
constexpr size_t kBlockSuccessorBytes = 8;  // one successor block number

constexpr size_t kHistory = 3;                 // exec IDs before the current one that a record remembers
constexpr uint64_t kNoExecId = UINT64_MAX;     // fills the history before the first launches
constexpr int64_t kNoBlock = -1;

using Context = std::array<uint64_t, kHistory + 1>;  // exec IDs, oldest first, the current one last

// Moves `value` to the front of list[0, count) (inserting it if absent) within `capacity` slots;
// returns the new count.
template <class T>
size_t push_mru(T* list, size_t count, size_t capacity, const T& value) {
  size_t pos = std::find(list, list + count, value) - list;
  if (pos == count) {
    if (count < capacity)
      ++count;
    else
      pos = count - 1;
  }
  std::copy_backward(list, list + pos, list + pos + 1);
  list[0] = value;
  return count;
}

inline uint64_t mix(uint64_t x) {  // spreads keys over a power-of-two table
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  return x ^ (x >> 33);
}

// Open-addressing map from set indexes to offsets; entries are only added.
class SetOffsets {
 public:
  bool empty() const { return size_ == 0; }

  const size_t* find(uint64_t set) const {
    if (keys_.empty()) return nullptr;
    const size_t slot = slot_of(set);
    return keys_[slot] == set ? &offsets_[slot] : nullptr;
  }

  // The offset of `set`, adding it with `offset` if absent; `added` tells which.
  size_t emplace(uint64_t set, size_t offset, bool& added) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    const size_t slot = slot_of(set);
    added = keys_[slot] != set;
    if (added) {
      keys_[slot] = set;
      offsets_[slot] = offset;
      ++size_;
    }
    return offsets_[slot];
  }

 private:
  static constexpr uint64_t kEmpty = UINT64_MAX;

  size_t slot_of(uint64_t set) const {  // where `set` is, or the empty slot where it would go
    const size_t mask = keys_.size() - 1;
    size_t slot = mix(set) & mask;
    while (keys_[slot] != set && keys_[slot] != kEmpty) slot = (slot + 1) & mask;
    return slot;
  }

  void grow() {
    std::vector<uint64_t> keys(std::max<size_t>(8, 2 * keys_.size()), kEmpty);
    std::vector<size_t> offsets(keys.size());
    std::swap(keys, keys_);
    std::swap(offsets, offsets_);
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) {
        const size_t slot = slot_of(keys[i]);
        keys_[slot] = keys[i];
        offsets_[slot] = offsets[i];
      }
  }

  std::vector<uint64_t> keys_;
  std::vector<size_t> offsets_;
  size_t size_ = 0;
};

// Blocks already visited by one chain walk: open addressing, emptied in O(1) by a new stamp.
class BlockSet {
 public:
  void clear() {
    size_ = 0;
    if (++stamp_ == 0) {
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
  }

  bool insert(int64_t block) {  // false if already there
    if (2 * (size_ + 1) > keys_.size()) grow();
    size_t slot = find(block);
    if (stamps_[slot] == stamp_) return false;
    stamps_[slot] = stamp_;
    keys_[slot] = block;
    ++size_;
    return true;
  }

 private:
  size_t find(int64_t block) const {
    const size_t mask = keys_.size() - 1;
    size_t slot = mix(static_cast<uint64_t>(block)) & mask;
    while (stamps_[slot] == stamp_ && keys_[slot] != block) slot = (slot + 1) & mask;
    return slot;
  }

  void grow() {
    std::vector<int64_t> keys(std::max<size_t>(64, 2 * keys_.size()));
    std::vector<uint32_t> stamps(keys.size(), 0);
    std::swap(keys, keys_);
    std::swap(stamps, stamps_);
    const uint32_t old_stamp = stamp_;
    stamp_ = 1;
    for (size_t i = 0; i < keys.size(); ++i)
      if (stamps[i] == old_stamp) {
        const size_t slot = find(keys[i]);
        stamps_[slot] = stamp_;
        keys_[slot] = keys[i];
      }
  }

  std::vector<int64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t stamp_ = 1;
  size_t size_ = 0;
};

// UM-block correlation table of one exec ID: `block_rows` sets of `block_ways` ways; a block's set is
// block % block_rows; each way holds a tag block and up to `block_successors` blocks that faulted right
// after it, most recent first; ways are kept most recently learned first and the last one is replaced.
// The start row holds the first-fault blocks (most recent first); the end block is the last fault of the
// last launch that faulted. Sets are allocated on first use.
class BlockTable {
 public:
  explicit BlockTable(const CorrelationConfig& c)
      : rows_(c.block_rows), ways_(c.block_ways), successors_(c.block_successors), way_cells_(2 + successors_) {}

  bool empty() const { return start_count_ == 0 && set_offsets_.empty(); }

  // Counts the changes that can alter chain(): equal versions, equal chains.
  uint64_t version() const { return version_; }

  void learn_start(int64_t block) {
    if (start_count_ > 0 && start_[0] == block) return;
    if (start_.empty()) start_.resize(successors_);
    start_count_ = push_mru(start_.data(), start_count_, successors_, block);
    ++version_;
  }

  void learn_successor(int64_t block, int64_t successor) {
    bool added;
    const size_t offset = set_offsets_.emplace(set_of(block), cells_.size(), added);
    if (added) cells_.resize(cells_.size() + 1 + ways_ * way_cells_, 0);
    int64_t* set = cells_.data() + offset;  // [ways used, way 0, way 1, ...]; way = [tag, count, successors]
    int64_t* ways = set + 1;
    const size_t used = static_cast<size_t>(set[0]);
    size_t index = 0;
    while (index < used && ways[index * way_cells_] != block) ++index;
    const bool new_way = index == used;
    if (new_way) {
      if (used < ways_) {
        set[0] = static_cast<int64_t>(used + 1);
        ++ways_used_;
      } else {
        index = used - 1;
        successors_used_ -= static_cast<size_t>(ways[index * way_cells_ + 1]);
      }
      std::copy_backward(ways, ways + index * way_cells_, ways + (index + 1) * way_cells_);
      ways[0] = block;
      ways[1] = 0;
    } else {
      std::rotate(ways, ways + index * way_cells_, ways + (index + 1) * way_cells_);
    }
    if (!new_way && ways[2] == successor) return;  // already the newest successor
    const size_t before = static_cast<size_t>(ways[1]);
    const size_t after = push_mru(ways + 2, before, successors_, successor);
    ways[1] = static_cast<int64_t>(after);
    successors_used_ += after - before;
    ++version_;
  }

  void set_end(int64_t block) {
    if (end_ != block) ++version_;
    end_ = block;
  }

  // The successors of `block`, most recent first (count 0 if it has no way).
  const int64_t* successors(int64_t block, size_t& count) const {
    count = 0;
    const size_t* offset = set_offsets_.find(set_of(block));
    if (!offset) return nullptr;
    const int64_t* set = cells_.data() + *offset;
    const int64_t* way = set + 1;
    for (int64_t i = 0; i < set[0]; ++i, way += way_cells_)
      if (way[0] == block) {
        count = static_cast<size_t>(way[1]);
        return way + 2;
      }
    return nullptr;
  }

  // Predicted blocks of one launch, at most `limit`, no repeats: a breadth-first walk of successors from
  // the start blocks (most recent first), then from the end block if the walk has not reached it.
  void chain(size_t limit, BlockSet& seen, std::vector<int64_t>& out) const {
    out.clear();
    seen.clear();
    auto visit = [&](int64_t block) {
      if (out.size() < limit && seen.insert(block)) out.push_back(block);
    };
    for (size_t i = 0; i < start_count_; ++i) visit(start_[i]);
    bool end_seeded = false;
    size_t walked = 0;
    while (out.size() < limit) {
      if (walked == out.size()) {
        if (end_seeded || end_ == kNoBlock) break;
        end_seeded = true;
        visit(end_);
        continue;
      }
      size_t count;
      const int64_t* next = successors(out[walked], count);
      for (size_t i = 0; i < count; ++i) visit(next[i]);
      ++walked;
    }
  }

  size_t bytes() const {
    if (empty()) return 0;
    return kBlockTableBytes + (ways_used_ + 1) * kBlockWayBytes + (successors_used_ + start_count_) * kBlockSuccessorBytes;
  }

 private:
  uint64_t set_of(int64_t block) const { return static_cast<uint64_t>(block) % rows_; }

  size_t rows_, ways_, successors_, way_cells_;
  SetOffsets set_offsets_;  // set index -> offset of the set in cells_
  std::vector<int64_t> cells_;
  std::vector<int64_t> start_;
  size_t start_count_ = 0;
  int64_t end_ = kNoBlock;
  size_t ways_used_ = 0, successors_used_ = 0;
  uint64_t version_ = 0;
};

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

// Everything kept for one tracked exec ID: its exec-ID entry (records, most recently used first), its
// UM-block table, its last chain walk (reused while the table has not changed; at most chain_blocks
// blocks, not counted in table bytes), and its place in the launch order.
struct ExecState {
  ExecState(uint64_t id, const CorrelationConfig& c) : exec_id(id), blocks(c) {}

  size_t entry_bytes() const { return record_count ? kExecEntryBytes + record_count * kExecRecordBytes : 0; }

  uint64_t exec_id;
  std::vector<ExecRecord> records;
  size_t record_count = 0;
  BlockTable blocks;
  std::vector<int64_t> chain;
  uint64_t chain_version = UINT64_MAX;  // blocks.version() when `chain` was walked
  ExecState* older = nullptr;           // launch order
  ExecState* newer = nullptr;
};

// The exec-ID table and one UM-block table per tracked exec ID, learning from launches and faults.
// At most `exec_ids` exec IDs are tracked; launching a new one past that bound drops the least recently
// launched one with its entry and its UM-block table.
class CorrelationTables {
 public:
  explicit CorrelationTables(const CorrelationConfig& config) : config_(config) {
    history_.fill(kNoExecId);
  }

  // A kernel launched: ends learning of the previous one and records the transition.
  void on_kernel(uint64_t exec_id) {
    if (ExecState* previous = newest_) {
      const size_t before = previous->entry_bytes() + previous->blocks.bytes();
      if (last_fault_ != kNoBlock) previous->blocks.set_end(last_fault_);
      learn_record(*previous, exec_id);
      bytes_ += previous->entry_bytes() + previous->blocks.bytes() - before;
    }
    track(exec_id);
    std::copy(history_.begin() + 1, history_.end(), history_.begin());
    history_.back() = exec_id;
    last_fault_ = kNoBlock;
  }

  // The running kernel faulted on `block` (a repeat of its previous fault is ignored).
  void on_fault(int64_t block) {
    if (!newest_ || block == last_fault_) return;
    BlockTable& table = newest_->blocks;
    const size_t before = table.bytes();
    learn_fault(table, last_fault_, block);
    bytes_ += table.bytes() - before;
    last_fault_ = block;
  }

  // The UM blocks one earlier launch of `exec_id` faulted on, in fault order, learned after the fact
  // (a GPU's fault log arrives after the kernel ran): the lessons on_fault would have taught during
  // that launch, its last block as the end block; repeats of the previous block are ignored. Nothing
  // is learned when `exec_id` is no longer tracked.
  void learn_faults(uint64_t exec_id, const int64_t* blocks, size_t count) {
    const auto it = states_.find(exec_id);
    if (it == states_.end() || count == 0) return;
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

  // Predicted UM blocks of one launch of `exec_id` (see BlockTable::chain).
  void chain(uint64_t exec_id, std::vector<int64_t>& out) {
    const auto it = states_.find(exec_id);
    if (it == states_.end()) {
      out.clear();
      return;
    }
    ExecState& state = it->second;
    if (state.chain_version != state.blocks.version()) {
      state.blocks.chain(config_.chain_blocks, seen_, state.chain);
      state.chain_version = state.blocks.version();
    }
    out.assign(state.chain.begin(), state.chain.end());
  }

  const Context& history() const { return history_; }  // last launches, the running one last
  size_t bytes() const { return bytes_; }

 private:
  // One fault's lesson: the first block of a launch starts the chain, later ones succeed `previous`.
  static void learn_fault(BlockTable& table, int64_t previous, int64_t block) {
    if (previous == kNoBlock)
      table.learn_start(block);
    else
      table.learn_successor(previous, block);
  }

  const ExecState* find(uint64_t exec_id) const {
    const auto it = states_.find(exec_id);
    return it == states_.end() ? nullptr : &it->second;
  }

  void learn_record(ExecState& state, uint64_t next) {
    if (state.records.empty()) state.records.resize(config_.exec_records);
    ExecRecord record{{history_[0], history_[1], history_[2]}, next};
    state.record_count = push_mru(state.records.data(), state.record_count, config_.exec_records, record);
  }

  void track(uint64_t exec_id) {
    const auto [it, inserted] = states_.try_emplace(exec_id, exec_id, config_);
    ExecState* state = &it->second;
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
  std::unordered_map<uint64_t, ExecState> states_;  // node-based: ExecState addresses stay put
  ExecState* oldest_ = nullptr;                     // least recently launched
  ExecState* newest_ = nullptr;                     // the running kernel's
  Context history_;
  int64_t last_fault_ = kNoBlock;  // of the running kernel
  size_t bytes_ = 0;
  BlockSet seen_;
};

// The window of the running kernel and the kernels predicted to follow it, each with its predicted UM
// blocks. On each launch: a launch that matches window()[1] is a kernel hit and pops the front; any other
// launch rebuilds the window from the launched kernel (a kernel miss if a prediction existed). Then the tail
// grows one predicted kernel at a time, each predicted from the launch history followed by the kernels
// predicted before it, until the window holds lookahead + 1 entries or there is no prediction; later
// launches grow it again.
class Predictor {
 public:
  explicit Predictor(const CorrelationConfig& config) : config_(checked(config)), tables_(config) {}

  WindowChange on_kernel(uint64_t exec_id) {  // a kernel launched
    tables_.on_kernel(exec_id);
    if (window_.size() >= 2 && window_[1].exec_id == exec_id) {
      pop_front();
      ++kernel_hits_;
      return {1, extend()};
    }
    if (window_.size() >= 2) ++kernel_misses_;
    const size_t popped = window_.size();
    while (!window_.empty()) pop_front();
    push_back(exec_id);
    return {popped, 1 + extend()};
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

  // UM blocks predicted now for one launch of `exec_id`, in chain-walk order.
  std::vector<int64_t> predict_blocks(uint64_t exec_id) {
    std::vector<int64_t> blocks;
    tables_.chain(exec_id, blocks);
    return blocks;
  }

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
    while (window_.size() < config_.lookahead + 1 && tables_.predict_next(context, next)) {
      push_back(next);
      std::copy(context.begin() + 1, context.end(), context.begin());
      context.back() = next;
      ++pushed;
    }
    return pushed;
  }

  void push_back(uint64_t exec_id) {
    std::vector<int64_t> blocks;
    if (!spare_blocks_.empty()) {
      blocks = std::move(spare_blocks_.back());
      spare_blocks_.pop_back();
    }
    tables_.chain(exec_id, blocks);
    window_.push_back({exec_id, std::move(blocks)});
  }

  void pop_front() {
    spare_blocks_.push_back(std::move(window_.front().blocks));
    window_.pop_front();
  }

  CorrelationConfig config_;
  CorrelationTables tables_;
  std::deque<PredictedKernel> window_;
  std::vector<std::vector<int64_t>> spare_blocks_;  // storage of popped entries, reused by new ones
  uint64_t kernel_hits_ = 0, kernel_misses_ = 0;
};

}  // namespace deepum
