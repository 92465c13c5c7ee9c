// What the memory map's lookups cost a hand-over of moves per command (driver_hooks/memory_map.hpp):
// the managed segments of a recorded trace, read from a file of int64 pairs (address, bytes), are put
// in a map; then, 2,000 times, 25 portable blocks (mostly neighbours, a quarter drawn anywhere,
// sorted, as a hand-over's evictions are) are looked up as the engine does per command (um_block),
// then their parts (managed_part) and portable numbers again (portable), under the map's lock; once
// with warm caches and once with DISPLACE_MIB (default 16) written before each group, as the
// framework's work between launches displaces the engine's data. Prints ns per block of each.
//
//   c++ -O2 -std=c++17 -I driver_hooks bench/probes/map_lookup_cost.cpp -o /tmp/map_lookup_cost
//   /tmp/map_lookup_cost SEGMENTS.bin [DISPLACE_MIB]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

#include "memory_map.hpp"

int main(int argc, char** argv) {
  const long displace_mib = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 16;
  if (argc < 2 || argc > 3 || displace_mib < 1 || displace_mib > 4096) {
    std::fprintf(stderr, "usage: %s SEGMENTS.bin [DISPLACE_MIB, 1 to 4096] (int64 pairs: address, bytes)\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<int64_t> pairs;
  for (int64_t word; in.read(reinterpret_cast<char*>(&word), sizeof word);) pairs.push_back(word);
  if (pairs.size() < 2 || pairs.size() % 2) {
    std::fprintf(stderr, "%s: no (address, bytes) pairs\n", argv[1]);
    return 2;
  }
  deepum::MemoryMap<int, int> map([](int, const int&) { return true; });
  map.set_awake(true);
  for (size_t i = 0; i < pairs.size(); i += 2) map.on_segment_alloc(uint64_t(pairs[i]), uint64_t(pairs[i + 1]));
  std::vector<int64_t> portable;
  const std::vector<int64_t> blocks_held = map.segment_blocks();  // takes the lock itself
  {
    std::lock_guard<std::mutex> lock(map.mutex());
    for (int64_t b : blocks_held) portable.push_back(map.portable(b));
  }
  if (portable.size() < 32) {
    std::fprintf(stderr, "%s: fewer than 32 blocks in the segments\n", argv[1]);
    return 2;
  }
  std::mt19937 rng(1);
  std::vector<char> displace(size_t(displace_mib) << 20);
  for (const bool cold : {false, true}) {
    double um_ns = 0, part_ns = 0, portable_ns = 0;
    int64_t blocks = 0, sum = 0;
    for (int group = 0; group < 2000; ++group) {
      if (cold)
        for (size_t i = 0; i < displace.size(); i += 64) displace[i] = char(displace[i] + 1);
      const size_t first = rng() % (portable.size() - 30);
      std::vector<int64_t> asked, um;
      for (size_t k = 0; k < 25; ++k) asked.push_back(portable[(first + (rng() % 4 == 0 ? rng() : k)) % portable.size()]);
      std::sort(asked.begin(), asked.end());
      std::lock_guard<std::mutex> lock(map.mutex());
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t p : asked) um.push_back(map.um_block(p));
      const auto t1 = std::chrono::steady_clock::now();
      for (int64_t b : um) sum += int64_t(std::get<1>(map.managed_part(b)));
      const auto t2 = std::chrono::steady_clock::now();
      for (int64_t b : um) sum += map.portable(b);
      const auto t3 = std::chrono::steady_clock::now();
      um_ns += double((t1 - t0).count());
      part_ns += double((t2 - t1).count());
      portable_ns += double((t3 - t2).count());
      blocks += int64_t(asked.size());
    }
    if (cold)
      std::printf("%ld MiB written before each group: ", displace_mib);
    else
      std::printf("warm caches: ");
    std::printf("um_block %.0f ns, managed_part %.0f ns, portable %.0f ns a block (checksum %lld)\n", um_ns / blocks,
                part_ns / blocks, portable_ns / blocks, static_cast<long long>(sum));
  }
  return 0;
}
