// The moves of one lane (commands.hpp) from threads of their own, each a synchronous UVM_MIGRATE, or
// for the discard lane a UVM_DISCARD then, but for a drop, a UVM_MIGRATE (uvm_ioctl.hpp), in the
// worker's place. Through the CUDA driver, evictions run one at a time whatever the threads issuing
// them, and each call holds the driver's lock, which kernel launches wait for; through the
// unified-memory driver, moves run side by side and launches go on (docs/results.md).
//
// No call of these threads goes through the CUDA driver: the worker's calls and the kernel launches
// may hold its lock while a stream waits for a move of the pool, so a move that needed the lock could
// never come. A thread waits on the CPU for what its command runs after, as words of pinned memory:
// the marks of the launching streams (stream_marks.hpp) and the other lanes' progress, which the
// worker's streams or the other pool write there. Commands are published when handed over, so a kernel
// may wait for a move not yet issued. That cannot deadlock: a command runs after work launched before
// it was decided and after commands decided before it, which the worker has issued or handed over
// by then (Worker::hand_over), the threads take commands in the order they were decided, and none of
// them waits for the CUDA driver; so the earliest command not done can go.
//
// A migration never changes what memory holds: a move the driver refuses, or one left out when the
// pool stops, leaves its block where it is (the GPU's use of it is then a hit, or a fault). A discard
// drops only memory whose choice the worker took when handing it over (Worker::hand_over): dead then,
// and every allocation in it since waits for the lane's word to pass the discard, which the threads
// advance only once it returned (or was left out).
#pragma once
#include <cuda.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "counters.hpp"
#include "host_words.hpp"
#include "memory_map.hpp"
#include "timeline.hpp"
#include "uvm_ioctl.hpp"

namespace deepum {

// The driver's file through which the CUDA driver manages this process's managed memory: the one that
// takes a move of a small managed allocation of its own to GPU `device` (fd -1: none does). Found once
// for every pool of a worker.
inline uvm_ioctl::File find_driver_file(int device) {
  constexpr size_t kProbeBytes = 64 << 10;
  CUdevice dev;
  CUuuid uuid;
  CUdeviceptr probe = 0;
  if (cuDeviceGet(&dev, device) != CUDA_SUCCESS || cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS ||
      cuMemAllocManaged(&probe, kProbeBytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
    return {};
  uint8_t gpu[16];
  std::memcpy(gpu, uuid.bytes, sizeof gpu);
  const uvm_ioctl::File file = uvm_ioctl::find_file(gpu, reinterpret_cast<const void*>(probe), kProbeBytes, true);
  cuMemFree(probe);
  return file;
}

class MovePool {
 public:
  static constexpr size_t kRunBlocks = 8;  // most contiguous blocks one call moves

  // `threads` threads serve `lane` (kToGpu: prefetches to the GPU; kEvicted: evictions from it;
  // kDiscarded: discards and populations) through `file` (find_driver_file, found); `lane_words`: the
  // lanes' progress, a word per lane, which the pool writes for its own; `drop_to_host`: a dropped
  // range (a discard away from the GPU) moves to the host after its discard, else the discard alone
  // leaves it resident nowhere, its GPU memory the driver's first to reclaim, as after an eviction.
  MovePool(Lane lane, size_t threads, const uvm_ioctl::File& file, HostWords& lane_words, Counters& counters,
           Timeline& timeline, bool drop_to_host)
      : lane_(lane), drop_to_host_(drop_to_host), lane_words_(lane_words), counters_(counters),
        lane_counted_(lane_counters(lane, counters)), timeline_(timeline), file_(file) {
    for (size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { run(); });
  }
  ~MovePool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);  // set under the lock: a thread about to wait sees it
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // The last command such that it and every one before it are done (the lane's word).
  uint64_t done() const { return lane_words_.load(lane_); }
  // The last command handed over: the most a stream may wait for.
  uint64_t published() const { return published_.load(std::memory_order_acquire); }

  // Hands over commands, numbered on the pool's lane in the order they were decided.
  void submit(const std::vector<Command>& commands) {
    if (commands.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.insert(queue_.end(), commands.begin(), commands.end());
    }
    published_.store(commands.back().seq, std::memory_order_release);
    // A thread takes one run of commands at a time: one command wakes one thread; more wake all in
    // one system call.
    if (commands.size() == 1)
      wake_.notify_one();
    else
      wake_.notify_all();
  }
  // Waits until every command handed over is done.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && busy_ == 0; });
  }
  // Waits on the CPU until command `seq` and every one before it are done (a stream that could not be
  // made to wait for them).
  void wait_done(uint64_t seq) const {
    lane_words_.wait_for(lane_, seq);
  }

 private:
  void run() {
    // Named for profilers and /proc (at most 15 characters).
    static constexpr const char* kNames[kLanes] = {"deepum-prefetch", "deepum-map", "deepum-discard", "deepum-evict"};
    pthread_setname_np(pthread_self(), kNames[lane_]);
    std::vector<Command> run;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;
        run.assign(1, queue_.front());
        queue_.pop_front();
        while (!queue_.empty() && run.size() < kRunBlocks && queue_.front().block == run.back().block + 1 &&
               queue_.front().after == run.front().after && queue_.front().op == run.front().op) {
          run.push_back(queue_.front());
          queue_.pop_front();
        }
        ++busy_;
      }
      if (wait_until_ready(run)) move(run);
      complete(run);
    }
  }

  // Waits until the work each command of `run` runs after is done; false when the pool stops first.
  bool wait_until_ready(const std::vector<Command>& run) {
    Stopwatch waiting;
    for (int polls = 0; !ready(run); ++polls) {
      if (stopping_.load(std::memory_order_relaxed)) return false;
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    lane_counted_.wait_ns += waiting.lap();
    return true;
  }

  bool ready(const std::vector<Command>& run) const {
    for (const Command& c : run) {
      if (c.after)
        for (const Mark& m : c.after->marks)
          if (m.words->load(m.index) < m.value) return false;
      if (c.wait && c.wait_lane != lane_ && lane_words_.load(c.wait_lane) < c.wait) return false;
    }
    return true;
  }

  // Moves a run of commands of one op: each contiguous range of it in one call (a discard's: those
  // whose choice was taken; a cancelled population moves with a copy).
  void move(const std::vector<Command>& run) {
    const Op op = run.front().op;
    const bool discards = op == Op::kDiscard || op == Op::kPopulate, to_gpu = op != Op::kEvict && op != Op::kDiscard;
    std::vector<const Command*> copied, dropped;
    for (const Command& c : run) {
      if (!c.bytes) continue;
      if (!discards) copied.push_back(&c);
      else if (c.taken) dropped.push_back(&c);
      else if (op == Op::kPopulate) copied.push_back(&c);  // cancelled: its contents count again
    }
    for (const auto& [start, bytes] : ranges(copied)) issue(op, start, bytes, to_gpu, false);
    for (const auto& [start, bytes] : ranges(dropped)) issue(op, start, bytes, to_gpu, true);
  }

  // One call: a migration, or a discard then a migration (the range then holds indeterminate data), or
  // a drop's discard alone. A discard the driver refuses is a migration with a copy instead.
  void issue(Op op, uint64_t start, uint64_t bytes, bool to_gpu, bool discard) {
    const void* range = reinterpret_cast<const void*>(start);
    const uint64_t began = timeline_.collecting() ? cupti_now() : 0;
    Stopwatch issuing;
    if (discard && !file_.discard(range, bytes)) {
      lane_counted_.refusals++;  // nothing dropped: the range moves with a copy
      discard = false;
    }
    const bool moved = (discard && !to_gpu && !drop_to_host_) || file_.migrate(range, bytes, to_gpu);
    move_counters(counters_, op).issue_ns += issuing.lap();
    if (!moved) {
      lane_counted_.refusals++;
      return;
    }
    const Op done = discard ? op : to_gpu ? Op::kPrefetch : Op::kEvict;
    if (began) timeline_.add({began, cupti_now(), bytes, uint8_t(SpanKind::kCall), uint8_t(done)});
    move_counters(counters_, done).count(bytes);
  }

  // The commands' parts as contiguous ranges, each within one segment (joined_parts).
  static std::vector<std::pair<uint64_t, uint64_t>> ranges(const std::vector<const Command*>& commands) {
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> parts;
    for (const Command* c : commands) parts.emplace_back(c->start, c->bytes, c->segment);
    return joined_parts(parts);
  }

  // Done: advances the lane's progress past every command done without a gap.
  void complete(const std::vector<Command>& run) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Command& c : run) finished_.insert(c.seq);
    uint64_t done = lane_words_.load(lane_);
    while (!finished_.empty() && *finished_.begin() == done + 1) {
      finished_.erase(finished_.begin());
      ++done;
    }
    lane_words_.store(lane_, done);
    if (--busy_ == 0 && queue_.empty()) idle_.notify_all();
  }

  // The lane's counters: the threads' time waiting for the work their moves run after, and the moves
  // the driver refused.
  struct LaneCounters {
    std::atomic<uint64_t> &wait_ns, &refusals;
  };
  static LaneCounters lane_counters(Lane lane, Counters& c) {
    if (lane == kToGpu) return {c.direct_prefetch_wait_ns, c.direct_prefetch_refusals};
    if (lane == kEvicted) return {c.direct_eviction_wait_ns, c.direct_eviction_refusals};
    return {c.direct_discard_wait_ns, c.direct_discard_refusals};
  }

  const Lane lane_;
  const bool drop_to_host_;
  HostWords& lane_words_;
  Counters& counters_;
  const LaneCounters lane_counted_;
  Timeline& timeline_;
  std::atomic<uint64_t> published_{0};
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Command> queue_;
  std::set<uint64_t> finished_;  // done, past a gap in the progress
  size_t busy_ = 0;
  std::atomic<bool> stopping_{false};
  const uvm_ioctl::File file_;
  std::vector<std::thread> threads_;
};

}  // namespace deepum
