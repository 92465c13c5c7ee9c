// The memory map's work per allocation and free (driver_hooks/memory_map.hpp), asleep and awake:
// replays a trace's memory events, read from a file of int64 triples (action, address, bytes; actions
// as MemAction), through MemoryMap with stand-in streams, `repeats` times, and prints one JSON object
// with the nanoseconds per alloc or free event of each. Built and run by bench/memory_map_cost.py.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "memory_map.hpp"

namespace {

struct Event {
  int64_t action, address, bytes;
};

double ns_per_event(const std::vector<Event>& events, bool awake, int repeats, size_t& counted) {
  deepum::MemoryMap<int, int> map([](int, const int&) {});
  map.set_awake(awake);
  for (const Event& e : events)
    if (e.action == int64_t(deepum::MemAction::kSegmentAlloc)) map.on_segment_alloc(e.address, e.bytes);
  counted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r)
    for (const Event& e : events) {
      if (e.action == int64_t(deepum::MemAction::kAlloc)) {
        map.on_alloc(e.address, e.bytes, 0);
        ++counted;
      } else if (e.action == int64_t(deepum::MemAction::kFree)) {
        map.on_free_completed(e.address);
        ++counted;
      }
    }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return counted ? ns / double(counted) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: memory_map_cost EVENTS_FILE REPEATS\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<Event> events;
  for (Event e; file.read(reinterpret_cast<char*>(&e), sizeof e);) events.push_back(e);
  const int repeats = std::atoi(argv[2]);
  size_t counted = 0;
  const double asleep = ns_per_event(events, false, repeats, counted);
  const double awake = ns_per_event(events, true, repeats, counted);
  std::printf("{\"events\": %zu, \"asleep_ns_per_event\": %.2f, \"awake_ns_per_event\": %.2f}\n", counted, asleep, awake);
  return 0;
}
