// The live managed segments with their portable places and their live allocations (memory_map.hpp),
// for the lookups every launch makes: which segment holds an address, which holds a block's lowest
// managed byte, which has a given portable place, which allocation holds an address. Segments come
// and go rarely and are looked up several times a launch, from caches the framework's work has
// cooled: so they are kept in two flat sorted arrays, rebuilt on each change, which a binary search
// crosses in a few cache lines, instead of a tree walked node by node; each segment keeps its
// allocations in a sorted array of its own, short enough to insert into in place.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "units.hpp"

namespace deepum {

class SegmentTable {
 public:
  struct Segment {
    uint64_t start, bytes;
    uint64_t place;  // portable number of its first block
    std::vector<std::pair<uint64_t, uint64_t>> allocations;  // live ones in it, (start, size) by start
    uint64_t end() const { return start + bytes; }

    // The allocation holding p: {start, size}, or {0, 0}.
    std::pair<uint64_t, uint64_t> allocation(uint64_t p) const {
      auto it = std::upper_bound(allocations.begin(), allocations.end(), p,
                                 [](uint64_t q, const std::pair<uint64_t, uint64_t>& a) { return q < a.first; });
      if (it == allocations.begin() || p >= std::prev(it)->first + std::prev(it)->second) return {0, 0};
      return *std::prev(it);
    }
    // Whether an allocation overlaps [lo, hi).
    bool allocated(uint64_t lo, uint64_t hi) const {
      auto it = std::lower_bound(allocations.begin(), allocations.end(), hi,
                                 [](const std::pair<uint64_t, uint64_t>& a, uint64_t q) { return a.first < q; });
      return it != allocations.begin() && std::prev(it)->first + std::prev(it)->second > lo;
    }
    // Records an allocation at `start` of `size` bytes, replacing one at the same start.
    void allocate(uint64_t start, uint64_t size) {
      auto it = at_or_past(start);
      if (it != allocations.end() && it->first == start)
        it->second = size;
      else
        allocations.insert(it, {start, size});
    }
    // Forgets the allocation at `start`, if any.
    void free(uint64_t start) {
      auto it = at_or_past(start);
      if (it != allocations.end() && it->first == start) allocations.erase(it);
    }

   private:
    std::vector<std::pair<uint64_t, uint64_t>>::iterator at_or_past(uint64_t start) {
      return std::lower_bound(allocations.begin(), allocations.end(), std::pair{start, uint64_t(0)});
    }
  };

  // Adds a segment at `start`, or replaces the one there (its allocations kept).
  void add(uint64_t start, uint64_t bytes, uint64_t place) {
    auto it = first_at_or_past(start);
    if (it != by_start_.end() && it->start == start) {
      it->bytes = bytes;
      it->place = place;
    } else {
      by_start_.insert(it, {start, bytes, place, {}});
    }
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
  // The segment whose bytes hold address p, or null. Most words of a kernel's arguments are no
  // address (sizes, strides, scalars): those outside the segments' span (segments do not overlap, so
  // the last by start ends last) are answered without a search.
  const Segment* holding(uint64_t p) const {
    if (by_start_.empty() || p < by_start_.front().start || p >= by_start_.back().end()) return nullptr;
    auto it = first_past(p);
    if (it == by_start_.begin()) return nullptr;
    --it;
    return p < it->end() ? &*it : nullptr;
  }
  Segment* holding(uint64_t p) { return const_cast<Segment*>(std::as_const(*this).holding(p)); }
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
  // Replaces every segment's allocations with those of `live` (start, size) that a segment holds.
  void assign_allocations(const std::vector<std::pair<uint64_t, uint64_t>>& live) {
    for (Segment& s : by_start_) s.allocations.clear();
    for (const auto& [start, size] : live)
      if (Segment* s = holding(start)) s->allocations.emplace_back(start, size);
    for (Segment& s : by_start_) std::sort(s.allocations.begin(), s.allocations.end());
  }

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
