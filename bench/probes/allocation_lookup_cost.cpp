// What finding the live allocation that holds an address costs (the launch hook's reading of a
// kernel's arguments asks it for every word inside the allocations' span), and what keeping the
// answer costs per allocation and free, two ways: the memory map's ordered map of all live
// allocations (driver_hooks/memory_map.hpp, in_order_), and a sorted array of allocations per managed
// segment, its segment found in the flat segment table (driver_hooks/segment_table.hpp). The memory
// events of a recorded trace, read from a file of int64 triples (action, address, bytes; the trace
// format's MEM_* actions), are replayed into both, each event timed; at the peak of live allocations,
// 2,000 groups of 8 addresses inside live allocations are looked up, with DISPLACE_MIB (default 16)
// written before each group, as the framework's work between launches cools the caches, six times
// each way, the two taking turns at going first. Prints ns an event and the median ns a lookup of
// each.
//
//   c++ -O2 -std=c++17 -I driver_hooks bench/probes/allocation_lookup_cost.cpp -o /tmp/allocation_lookup_cost
//   /tmp/allocation_lookup_cost EVENTS.bin [DISPLACE_MIB]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "segment_table.hpp"

namespace {

constexpr int64_t kAlloc = 0, kFree = 1, kSegmentAlloc = 2, kSegmentFree = 3;  // trace_format's MEM_*

uint64_t now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// All live allocations in one ordered map, as the memory map keeps them.
struct OrderedMap {
  std::map<uint64_t, uint64_t> live;
  void add(uint64_t a, uint64_t n) { live[a] = n; }
  void remove(uint64_t a) { live.erase(a); }
  void add_segment(uint64_t, uint64_t) {}
  void remove_segment(uint64_t) {}
  std::pair<uint64_t, uint64_t> find(uint64_t p) const {
    if (live.empty() || p < live.begin()->first) return {0, 0};
    auto it = live.upper_bound(p);
    if (it == live.begin()) return {0, 0};
    --it;
    return p < it->first + it->second ? std::pair{it->first, it->second} : std::pair<uint64_t, uint64_t>{0, 0};
  }
};

// Per managed segment, its live allocations in a sorted array.
struct PerSegment {
  deepum::SegmentTable segments;
  std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> lists;  // by segment start
  uint64_t next_place = 0;
  void add_segment(uint64_t a, uint64_t n) {
    segments.add(a, n, next_place);
    next_place += n / deepum::kBlockBytes + 2;
    lists[a];
  }
  void remove_segment(uint64_t a) {
    segments.remove(a);
    lists.erase(a);
  }
  std::vector<std::pair<uint64_t, uint64_t>>* list_of(uint64_t p) {
    const deepum::SegmentTable::Segment* s = segments.holding(p);
    return s ? &lists[s->start] : nullptr;
  }
  void add(uint64_t a, uint64_t n) {
    auto* l = list_of(a);
    if (!l) return;
    auto it = std::lower_bound(l->begin(), l->end(), std::pair{a, uint64_t(0)});
    if (it != l->end() && it->first == a)
      it->second = n;
    else
      l->insert(it, {a, n});
  }
  void remove(uint64_t a) {
    auto* l = list_of(a);
    if (!l) return;
    auto it = std::lower_bound(l->begin(), l->end(), std::pair{a, uint64_t(0)});
    if (it != l->end() && it->first == a) l->erase(it);
  }
  std::pair<uint64_t, uint64_t> find(uint64_t p) const {
    const deepum::SegmentTable::Segment* s = segments.holding(p);
    if (!s) return {0, 0};
    const auto& l = lists.at(s->start);
    auto it = std::upper_bound(l.begin(), l.end(), std::pair{p, ~uint64_t(0)});
    if (it == l.begin()) return {0, 0};
    --it;
    return p < it->first + it->second ? *it : std::pair<uint64_t, uint64_t>{0, 0};
  }
};

struct Event {
  int64_t action;
  uint64_t address, bytes;
};

// Replays events[0, upto) into `index`; returns ns an allocation or free (segments not counted).
template <class Index>
double replay(Index& index, const std::vector<Event>& events, size_t upto) {
  uint64_t spent = 0, counted = 0;
  for (size_t i = 0; i < upto; ++i) {
    const Event& e = events[i];
    if (e.action == kSegmentAlloc) index.add_segment(e.address, e.bytes);
    if (e.action == kSegmentFree) index.remove_segment(e.address);
    if (e.action != kAlloc && e.action != kFree) continue;
    const uint64_t t0 = now_ns();
    if (e.action == kAlloc)
      index.add(e.address, e.bytes);
    else
      index.remove(e.address);
    spent += now_ns() - t0;
    counted += 1;
  }
  return counted ? double(spent) / double(counted) : 0.0;
}

// ns a lookup of `addresses`, in groups of 8 with `displace` written before each group; the answers'
// sum goes to `checksum`.
template <class Index>
double lookups(const Index& index, const std::vector<uint64_t>& addresses, std::vector<uint8_t>& displace,
               uint64_t& checksum) {
  uint64_t spent = 0;
  for (size_t g = 0; g + 8 <= addresses.size(); g += 8) {
    for (size_t i = 0; i < displace.size(); i += 64) displace[i] = uint8_t(displace[i] + 1);
    const uint64_t t0 = now_ns();
    for (size_t i = g; i < g + 8; ++i) checksum += index.find(addresses[i]).first;
    spent += now_ns() - t0;
  }
  return double(spent) / double(addresses.size() / 8 * 8);
}

}  // namespace

int main(int argc, char** argv) {
  const long displace_mib = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 16;
  if (argc < 2 || argc > 3 || displace_mib < 1 || displace_mib > 4096) {
    std::fprintf(stderr, "usage: %s EVENTS.bin [DISPLACE_MIB, 1 to 4096] (int64 triples: action, address, bytes)\n",
                 argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<Event> events;
  for (int64_t w[3]; in.read(reinterpret_cast<char*>(w), sizeof w);) events.push_back({w[0], uint64_t(w[1]), uint64_t(w[2])});
  if (events.empty()) {
    std::fprintf(stderr, "%s: no (action, address, bytes) triples\n", argv[1]);
    return 2;
  }
  // The peak of live allocations: the replay stops there.
  size_t live = 0, peak = 0, peak_at = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    live += events[i].action == kAlloc;
    live -= events[i].action == kFree && live;
    if (live > peak) peak = live, peak_at = i + 1;
  }
  OrderedMap ordered;
  PerSegment per_segment;
  const double ordered_event = replay(ordered, events, peak_at);
  const double per_segment_event = replay(per_segment, events, peak_at);
  std::vector<uint64_t> addresses;
  std::mt19937_64 draw(7);
  std::vector<std::pair<uint64_t, uint64_t>> held(ordered.live.begin(), ordered.live.end());
  for (int i = 0; i < 16000 && !held.empty(); ++i) {
    const auto& [start, bytes] = held[draw() % held.size()];
    addresses.push_back(start + (bytes ? draw() % bytes : 0));
  }
  std::vector<uint8_t> displace(size_t(displace_mib) << 20, 1);
  uint64_t sum_ordered = 0, sum_per_segment = 0;
  std::vector<double> ordered_times, per_segment_times;
  for (int round = 0; round < 6; ++round) {  // taking turns at going first
    if (round % 2) per_segment_times.push_back(lookups(per_segment, addresses, displace, sum_per_segment));
    ordered_times.push_back(lookups(ordered, addresses, displace, sum_ordered));
    if (round % 2 == 0) per_segment_times.push_back(lookups(per_segment, addresses, displace, sum_per_segment));
  }
  std::sort(ordered_times.begin(), ordered_times.end());
  std::sort(per_segment_times.begin(), per_segment_times.end());
  const double ordered_lookup = (ordered_times[2] + ordered_times[3]) / 2;
  const double per_segment_lookup = (per_segment_times[2] + per_segment_times[3]) / 2;
  std::printf("%zu live allocations at the peak; %ld MiB written before each group of 8: ordered map %.0f ns a lookup (median of 6), "
              "%.0f ns an event; per segment %.0f ns a lookup, %.0f ns an event (answers %s)\n",
              peak, displace_mib, ordered_lookup, ordered_event, per_segment_lookup, per_segment_event,
              sum_ordered == sum_per_segment ? "alike" : "DIFFER");
  return sum_ordered == sum_per_segment ? 0 : 1;
}
