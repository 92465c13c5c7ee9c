// What the engine asks its worker to issue: migrations of UM blocks, each on the lane (stream) of its
// kind, numbered per lane and ordered after the block's previous command.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace deepum {

// kPopulate: a prefetch of a dead block, given fresh GPU pages instead of a copy (a discard to the GPU).
// kMapHost: preferred location the host and accessed by the GPU, resident pages evicted (kernels then
// use the block over the link); kMapGpu: that advice withdrawn (the block migrates on demand again).
enum class Op : uint8_t { kPrefetch, kPopulate, kEvict, kDiscard, kMapHost, kMapGpu };

// The stream a command runs on; each lane numbers its commands 1, 2, ... in issue order. Discards
// and populations (no copy) have their own lane so that they never queue behind copies: allocations
// of the memory wait for them, and kernels for the populated blocks. Evictions have theirs; threads of
// their own may serve it, and the prefetch lane, instead of a stream (move_pool.hpp). Host mappings
// (advice, then a copy out) go to the host on kToHost.
enum Lane : int { kToGpu = 0, kToHost = 1, kDiscarded = 2, kEvicted = 3 };
constexpr int kLanes = 4;
constexpr Lane kAllLanes[kLanes] = {kToGpu, kToHost, kDiscarded, kEvicted};
inline Lane lane_of(Op op) {
  if (op == Op::kPrefetch) return kToGpu;
  if (op == Op::kEvict) return kEvicted;
  return op == Op::kMapHost || op == Op::kMapGpu ? kToHost : kDiscarded;
}

class HostWords;
// A point in a launching stream's work that the CPU sees (stream_marks.hpp): word `index` of `words`
// reaches `value` once the work launched on the stream before it has completed.
struct Mark {
  const HostWords* words;
  size_t index;
  uint64_t value;
};

// The GPU work a command runs after: one event per stream, recorded when the command was decided (the
// launching stream, and for a discard also the streams that last used the block's memory); for a
// command that a pool's threads serve, also a mark per stream.
struct After {
  std::vector<std::shared_ptr<CUevent_st>> events;
  std::vector<Mark> marks;
};

struct Command {
  Op op;
  int64_t block;                        // UM block number
  std::shared_ptr<const After> after;   // run after this work (null: at once)
  uint64_t seq = 0;         // number of this command on its lane
  Lane wait_lane = kToGpu;  // run after command `wait` of lane `wait_lane` (the block's previous command;
  uint64_t wait = 0;        // 0: none, or on this command's own lane, which runs in order anyway)
  uint64_t ticket = 0;      // kDiscard, kPopulate: the choice's ticket (MemoryMap::choose_discard)
  // Filled when handed to a pool (Worker::hand_over), so that its threads never take the memory map's
  // lock: the block's part of its managed segment (bytes 0: none left), and for a discard or a
  // population whether its choice was taken then (false: cancelled; a population then moves with a copy).
  uint64_t start = 0, bytes = 0, segment = 0;
  bool taken = false;
};

}  // namespace deepum
