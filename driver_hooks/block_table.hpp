// The UM-block correlation table of one exec ID and what it is built of (native). deepum/specs/tables.py
// is the readable specification. Header-only, no CUDA, no Python; UM blocks are non-negative int64.
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

#include "state_io.hpp"

namespace deepum {

// Sizes of the tables and the window. No defaults here: DeepUMConfig (deepum/config.py) defines them,
// and options_binding.hpp reads them across the boundary.
struct CorrelationConfig {
  size_t lookahead = 0;
  size_t recall_iterations = 0;  // the predictor's remembered iterations (predictor.hpp); 0: none
  size_t exec_ids = 0;
  size_t exec_records = 0;
  size_t block_rows = 0;
  size_t block_ways = 0;
  size_t block_successors = 0;
  size_t chain_blocks = 0;
};

// Bytes each table element costs (deepum/specs/tables.py and DeepUMConfig.table_bytes_bound use the same).
constexpr size_t kBlockTableBytes = 8;      // end block
constexpr size_t kBlockWayBytes = 8;        // tag
constexpr size_t kBlockSuccessorBytes = 8;  // one successor block number
constexpr int64_t kNoBlock = -1;

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

  // (set index, offset) of every set, by set index.
  std::vector<std::pair<uint64_t, size_t>> sorted() const {
    std::vector<std::pair<uint64_t, size_t>> out;
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != kEmpty) out.emplace_back(keys_[i], offsets_[i]);
    std::sort(out.begin(), out.end());
    return out;
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

  // The learned state (state_io.hpp): the start row, the end block, then every way by set index,
  // most recently learned first, each with its successors, most recent first.
  void save(StateWriter& w) const {
    w.word(start_count_);
    for (size_t i = 0; i < start_count_; ++i) w.signed_word(start_[i]);
    w.signed_word(end_);
    w.word(ways_used_);
    for (const auto& [set, offset] : set_offsets_.sorted()) {
      const int64_t* ways = cells_.data() + offset + 1;
      for (int64_t i = 0; i < cells_[offset]; ++i, ways += way_cells_) {
        w.signed_word(ways[0]);
        w.word(uint64_t(ways[1]));
        for (int64_t k = 0; k < ways[1]; ++k) w.signed_word(ways[2 + k]);
      }
    }
  }
  // Into an empty table: relearned oldest first, so that every list keeps its order.
  void load(StateReader& r) {
    std::vector<int64_t> starts(r.count(successors_, 1, "start blocks"));
    for (int64_t& b : starts) b = r.block();
    const int64_t end = r.signed_word();
    if (end < kNoBlock) StateReader::fail("an end block is negative");
    std::vector<std::pair<int64_t, std::vector<int64_t>>> ways(r.count(uint64_t(rows_) * ways_, 2, "ways"));
    for (auto& [tag, successors] : ways) {
      tag = r.block();
      successors.resize(r.count(successors_, 1, "successors"));
      if (successors.empty()) StateReader::fail("a way has no successor");
      for (int64_t& b : successors) b = r.block();
    }
    for (auto it = starts.rbegin(); it != starts.rend(); ++it) learn_start(*it);
    for (auto way = ways.rbegin(); way != ways.rend(); ++way)
      for (auto it = way->second.rbegin(); it != way->second.rend(); ++it) learn_successor(way->first, *it);
    set_end(end);
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

}  // namespace deepum
