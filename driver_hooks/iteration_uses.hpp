// The launches of one iteration at which each block was used: a table built once, when the iteration
// ends, from the uses logged in launch order while it ran. A block's positions (launches counted from
// the iteration's first) lie next to each other, ascending, so that foreseeing a block's next use reads
// two cache lines (its offsets and its positions) instead of a list per block and iteration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepum {

// One logged use: a block (dense index) and the position of the launch that used it.
struct LoggedUse {
  uint32_t block;
  uint32_t position;
};

// A block's positions of use, ascending (a view into an IterationUses).
struct UsePositions {
  const uint32_t* first = nullptr;
  const uint32_t* last = nullptr;
  const uint32_t* begin() const { return first; }
  const uint32_t* end() const { return last; }
  bool empty() const { return first == last; }
  size_t size() const { return size_t(last - first); }
  uint32_t front() const { return *first; }
  uint32_t back() const { return last[-1]; }
};

class IterationUses {
 public:
  // The positions at which `block` was used (none for a block the table does not cover).
  UsePositions of(int64_t block) const {
    if (block < 0 || size_t(block) + 1 >= offsets_.size()) return {};
    const uint32_t* base = positions_.data();
    return {base + offsets_[size_t(block)], base + offsets_[size_t(block) + 1]};
  }
  // Blocks 0 .. blocks() - 1 are covered.
  size_t blocks() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

  // Replaces the table with the entries of `log` that `keep(index in log)` allows, for blocks below
  // `blocks`. Each block's entries must come in ascending positions, as a launch-ordered log has them;
  // the order between blocks does not matter. Storage is kept for the next iteration.
  template <class Keep>
  void assign(const std::vector<LoggedUse>& log, size_t blocks, Keep keep) {
    offsets_.assign(blocks + 1, 0);
    for (size_t i = 0; i < log.size(); ++i)
      if (keep(i)) offsets_[log[i].block + 1] += 1;
    for (size_t b = 1; b <= blocks; ++b) offsets_[b] += offsets_[b - 1];
    positions_.resize(offsets_[blocks]);
    // Each block's offset serves as its cursor, leaving it at the next block's start; shifted back after.
    for (size_t i = 0; i < log.size(); ++i)
      if (keep(i)) positions_[offsets_[log[i].block]++] = log[i].position;
    for (size_t b = blocks; b > 0; --b) offsets_[b] = offsets_[b - 1];
    offsets_[0] = 0;
  }
  void assign(const std::vector<LoggedUse>& log, size_t blocks) {
    assign(log, blocks, [](size_t) { return true; });
  }

 private:
  std::vector<uint32_t> offsets_;    // by block: its positions are positions_[offsets_[b] .. offsets_[b + 1])
  std::vector<uint32_t> positions_;  // every block's positions, block after block
};

}  // namespace deepum
