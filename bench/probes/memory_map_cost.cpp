// The memory map's work per allocation and free (driver_hooks/memory_map.hpp), asleep and awake:
// replays a trace's memory events, read from a file of int64 triples (action, address, bytes; actions
// as MemAction), through MemoryMap with stand-in streams, `repeats` times, and prints one JSON object
// with the nanoseconds per alloc or free event of each; awake once more while a second thread asks the
// map, under its lock and without pause, whether the segments' blocks are dead (as a policy deciding on
// another thread would), with the questions it asked per second. Built and run by
// bench/memory_map_cost.py.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "memory_map.hpp"

namespace {

struct Event {
  int64_t action, address, bytes;
};

// Nanoseconds per alloc or free event; with `asking`, a second thread asks questions meanwhile and
// `questions_per_s` is its rate.
double ns_per_event(const std::vector<Event>& events, bool awake, int repeats, size_t& counted, bool asking = false,
                    double* questions_per_s = nullptr) {
  deepum::MemoryMap<int, int> map([](int, const int&) { return true; });
  map.set_awake(awake);
  for (const Event& e : events)
    if (e.action == int64_t(deepum::MemAction::kSegmentAlloc)) map.on_segment_alloc(e.address, e.bytes);
  const std::vector<int64_t> blocks = map.segment_blocks();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> questions{0};
  std::thread asker;
  if (asking && !blocks.empty()) {
    asker = std::thread([&] {
      for (size_t i = 0; !done.load(std::memory_order_relaxed); i = (i + 1) % blocks.size()) {
        {
          std::lock_guard<std::mutex> lock(map.mutex());
          (void)map.dead(blocks[i]);
        }
        questions.fetch_add(1, std::memory_order_relaxed);
      }
    });
    while (questions.load() == 0) std::this_thread::yield();  // asking before the clock starts
  }
  counted = 0;
  const uint64_t asked_before = questions.load();
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
  const uint64_t asked = questions.load() - asked_before;
  done.store(true);
  if (asker.joinable()) asker.join();
  if (questions_per_s) *questions_per_s = ns > 0 ? double(asked) * 1e9 / ns : 0.0;
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
  double questions_per_s = 0;
  const double contended = ns_per_event(events, true, repeats, counted, true, &questions_per_s);
  std::printf("{\"events\": %zu, \"asleep_ns_per_event\": %.2f, \"awake_ns_per_event\": %.2f, "
              "\"awake_asked_ns_per_event\": %.2f, \"questions_per_s\": %.0f}\n",
              counted, asleep, awake, contended, questions_per_s);
  return 0;
}
