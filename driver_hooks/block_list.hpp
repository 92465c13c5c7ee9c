// Dense block indices and an intrusive list over them, shared by the policy core and its replacements.
#pragma once
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace deepum {

using Block = int32_t;       // dense index of a UM block: 0, 1, ... in the order blocks are first seen
constexpr Block kNone = -1;  // no block

// UM block numbers (address >> kBlockShift) <-> dense indices.
class BlockIndex {
 public:
  // The dense index of `number`, numbering it next when new.
  Block dense(int64_t number) {
    auto [it, added] = dense_.try_emplace(number, Block(numbers_.size()));
    if (added) numbers_.push_back(number);
    return it->second;
  }
  // The dense index of `number`; kNone when it has none.
  Block find(int64_t number) const {
    const auto it = dense_.find(number);
    return it == dense_.end() ? kNone : it->second;
  }
  int64_t number(Block b) const { return numbers_[size_t(b)]; }
  size_t size() const { return numbers_.size(); }

 private:
  std::unordered_map<int64_t, Block> dense_;
  std::vector<int64_t> numbers_;
};

// Doubly linked list over dense indices: O(1) push, remove and move to the back; ordered by insertion.
class BlockList {
 public:
  bool contains(Block b) const { return size_t(b) < in_.size() && in_[size_t(b)] != 0; }
  Block head() const { return head_; }
  Block next(Block b) const { return next_[size_t(b)]; }
  void push_back(Block b) {
    grow(b);
    prev_[b] = tail_;
    next_[b] = kNone;
    if (tail_ != kNone) next_[tail_] = b; else head_ = b;
    tail_ = b;
    in_[b] = 1;
  }
  void remove(Block b) {
    if (!contains(b)) return;
    if (prev_[b] != kNone) next_[prev_[b]] = next_[b]; else head_ = next_[b];
    if (next_[b] != kNone) prev_[next_[b]] = prev_[b]; else tail_ = prev_[b];
    prev_[b] = next_[b] = kNone;
    in_[b] = 0;
  }

 private:
  void grow(Block b) {
    if (size_t(b) < in_.size()) return;
    const size_t n = std::max(size_t(b) + 1, in_.size() * 2);
    prev_.resize(n, kNone);
    next_.resize(n, kNone);
    in_.resize(n, 0);
  }
  std::vector<Block> prev_, next_;
  std::vector<uint8_t> in_;
  Block head_ = kNone, tail_ = kNone;
};

}  // namespace deepum
