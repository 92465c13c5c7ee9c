// The live managed segments with their portable places (memory_map.hpp), for the lookups every launch
// makes: which segment holds an address, which holds a block's lowest managed byte, which has a given
// portable place. Segments come and go rarely and are looked up several times a launch, from caches
// the framework's work has cooled: so they are kept in two flat sorted arrays, rebuilt on each change,
// which a binary search crosses in a few cache lines, instead of a tree walked node by node.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "units.hpp"

namespace deepum {

class SegmentTable {
 public:
  struct Segment {
    uint64_t start, bytes;
    uint64_t place;  // portable number of its first block
    uint64_t end() const { return start + bytes; }
  };

  // Adds a segment at `start`, or replaces the one there.
  void add(uint64_t start, uint64_t bytes, uint64_t place) {
    auto it = first_at_or_past(start);
    if (it != by_start_.end() && it->start == start)
      *it = {start, bytes, place};
    else
      by_start_.insert(it, {start, bytes, place});
    index_places();
  }
  // Removes the segment at `start`; false when there is none.
  bool remove(uint64_t start) {
    auto it = first_at_or_past(start);
    if (it == by_start_.end() || it->start != start) return false;
    by_start_.erase(it);
    index_places();
    return true;
  }
  // The segment at `start`, or null.
  const Segment* at(uint64_t start) const {
    auto it = first_at_or_past(start);
    return it != by_start_.end() && it->start == start ? &*it : nullptr;
  }
  // The segment whose bytes hold address p, or null.
  const Segment* holding(uint64_t p) const {
    auto it = first_past(p);
    if (it == by_start_.begin()) return nullptr;
    --it;
    return p < it->end() ? &*it : nullptr;
  }
  // The segment holding the lowest managed byte of [lo, hi): the one holding lo, else the first
  // starting inside the range; null when none does.
  const Segment* first_in(uint64_t lo, uint64_t hi) const {
    auto it = first_past(lo);
    if (it != by_start_.begin() && std::prev(it)->end() > lo) return &*std::prev(it);
    return it != by_start_.end() && it->start < hi ? &*it : nullptr;
  }
  // The segment with the greatest place at or below p, or null.
  const Segment* placed_at_or_below(uint64_t p) const {
    auto it = std::upper_bound(by_place_.begin(), by_place_.end(), p,
                               [this](uint64_t q, uint32_t i) { return q < by_start_[i].place; });
    return it == by_place_.begin() ? nullptr : &by_start_[*std::prev(it)];
  }
  // The segments by start.
  const std::vector<Segment>& segments() const { return by_start_; }

 private:
  std::vector<Segment>::iterator first_at_or_past(uint64_t start) {
    return std::lower_bound(by_start_.begin(), by_start_.end(), start,
                            [](const Segment& s, uint64_t q) { return s.start < q; });
  }
  std::vector<Segment>::const_iterator first_at_or_past(uint64_t start) const {
    return std::lower_bound(by_start_.begin(), by_start_.end(), start,
                            [](const Segment& s, uint64_t q) { return s.start < q; });
  }
  std::vector<Segment>::const_iterator first_past(uint64_t p) const {
    return std::upper_bound(by_start_.begin(), by_start_.end(), p,
                            [](uint64_t q, const Segment& s) { return q < s.start; });
  }
  void index_places() {
    by_place_.resize(by_start_.size());
    for (uint32_t i = 0; i < by_place_.size(); ++i) by_place_[i] = i;
    std::sort(by_place_.begin(), by_place_.end(),
              [this](uint32_t a, uint32_t b) { return by_start_[a].place < by_start_[b].place; });
  }

  std::vector<Segment> by_start_;  // sorted by start
  std::vector<uint32_t> by_place_;  // indexes into by_start_, sorted by place
};

}  // namespace deepum
