// The engine: executes the policy core's decisions (policy.hpp) on the GPU; it decides nothing
// itself. Called on the launching thread, natively. At each launch it asks the policy for a plan and
//  1. makes the kernel's stream wait for the migrations of the kernel's blocks still in flight;
//  2. when the plan says so (advise, and deepum learning from accesses), prefetches the kernel's
//     missing blocks on its stream just before it instead of letting it fault (tables that learn
//     from faults need the kernel to fault on them: its faults are the lesson);
//  3. hands the host mappings and their withdrawals (in decision order), the evictions and discards
//     (by block), then the prefetches and populations (in decision order) to the worker, ordered after
//     the work launched before the kernel.
// The memory map answers the policy's questions about dead blocks and keeps the discard tickets.
// The policy knows blocks by portable number (memory_map.hpp), so that what it learns holds in another
// process of the same script; the engine translates at its edges: UM blocks in from the launch hook,
// the fault log and the sleep gate, UM blocks out to the driver and the worker.
#pragma once
#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "commands.hpp"
#include "counters.hpp"
#include "event_pool.hpp"
#include "fault_injection.hpp"
#include "policy.hpp"
#include "stream_marks.hpp"
#include "units.hpp"
#include "worker.hpp"

namespace deepum {

class Engine : private MemoryFacts {
 public:
  Engine(const Options& options, int64_t capacity_blocks, int device, EngineMemory& memory, Counters& counters,
         Timeline& timeline)
      : device_(device), gpu_(device_location(device)), populates_new_segments_(populates_new_segments(options)),
        memory_(memory), counters_(counters), policy_(options, capacity_blocks, *this),
        worker_(device,
                {prefetch_threads(options), eviction_threads(options), discard_threads(options), options.drop_to_host},
                memory, counters, timeline) {
    std::lock_guard<std::mutex> lock(memory_.mutex());
    memory_.track_releases(true);
  }
  ~Engine() {
    std::lock_guard<std::mutex> lock(memory_.mutex());
    memory_.track_releases(false);
  }

  // A kernel with `exec_id` launches on `stream` and uses `numbers` (UM blocks, each once); `indexed`:
  // it reaches them through an index (indexed_kernels.hpp); `fill`: it fills a tensor with one value
  // (fill_kernels.hpp). Returns what the kernel was made to wait for (timeline.hpp's wait bits).
  uint8_t on_launch(uint64_t exec_id, const std::vector<int64_t>& numbers, CUstream stream, bool indexed, bool fill) {
    std::lock_guard<std::mutex> lock(mutex_);
    Stopwatch clock;
    counters_.launches++;
    release_freed();
    const uint64_t release_ns = clock.lap();
    discard_users_.clear();
    to_policy(numbers.data(), numbers.size(), true);
    uint64_t need[kLanes] = {};  // per lane: the latest command of one of the kernel's blocks
    for (Block b : blocks_) {
      const Lanes& s = lanes(b);
      need[s.last] = std::max(need[s.last], s.moved[s.last]);
    }
    const uint64_t translate_ns = clock.lap();
    const LaunchPlan& plan = policy_.on_launch(exec_id, blocks_.data(), blocks_.size(), indexed, fill, fresh_.data());
    counters_.hook_release_ns += release_ns;
    counters_.hook_translate_ns += translate_ns;
    counters_.hook_policy_ns += release_ns + translate_ns + clock.lap();
    // First, so that an eviction still in flight cannot land after the prefetch below.
    uint8_t waits = wait_for_migrations(need, stream) ? kWaitedForMigrations : 0;
    counters_.hook_wait_ns += clock.lap();
    if (plan.demand_prefetch && prefetch_on_stream(plan, stream)) waits |= kPrefetchedOnStream;
    counters_.hook_demand_ns += clock.lap();
    submit(plan, stream);
    counters_.hook_submit_ns += clock.lap();
    return waits;
  }

  // A managed segment [start, start + bytes) was made on `stream` and the engine sleeps on: deepum
  // gives it fresh GPU pages now (deepum/specs/sleep.py), ordered before the stream's next kernels. A
  // refusal is counted and the pages are left to fault in: nothing is in them yet.
  void populate_segment(uint64_t start, uint64_t bytes, CUstream stream) {
    if (!populates_new_segments_) return;
    if (!counters_.driver_ok(DEEPUM_GUARDED(cuMemPrefetchAsync(CUdeviceptr(start), bytes, gpu_, 0, stream),
                                            CUDA_ERROR_UNKNOWN),
                             "populate a new segment"))
      return;
    counters_.segment_populate_calls++;
    counters_.segment_populate_bytes += bytes;
  }

  // The engine wakes (sleep_gate.hpp): the blocks of the live managed segments (UM numbers, ascending).
  void wake(const std::vector<int64_t>& numbers) {
    std::lock_guard<std::mutex> lock(mutex_);
    to_policy(numbers.data(), numbers.size());
    policy_.wake(blocks_.data(), blocks_.size());
  }

  void drain() { worker_.drain(); }
  // Launch i of exec_ids[i] faulted on UM blocks blocks[offsets[i]:offsets[i + 1]].
  void learn_faults(const uint64_t* exec_ids, const int64_t* offsets, const int64_t* blocks, size_t launches) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int64_t> portable;
    for (size_t i = 0; i < launches; ++i) {
      portable.clear();
      {
        std::lock_guard<std::mutex> memory_lock(memory_.mutex());
        for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k)
          if (const int64_t p = memory_.portable(blocks[k]); p >= 0) portable.push_back(p);
      }
      policy_.learn_faults(exec_ids[i], portable.data(), portable.size());
      counters_.faults_learned += portable.size();
    }
    counters_.fault_lessons += launches;
  }
  // Starts a new iteration; returns the bytes of distinct blocks the ending one touched.
  uint64_t next_iteration() {
    std::lock_guard<std::mutex> lock(mutex_);
    return uint64_t(policy_.next_iteration()) * kBlockBytes;
  }
  // A warm start (policy.hpp): the learned state out, in (before the first launch) and its trial.
  std::vector<uint8_t> save_state() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.save_state();
  }
  void load_state(const uint8_t* data, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    policy_.load_state(data, size);
  }
  WarmStartStatus warm_start() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.warm_start();
  }
  uint64_t peak_resident_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return uint64_t(policy_.peak_resident_blocks()) * kBlockBytes;
  }
  uint64_t resident_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return uint64_t(policy_.resident_blocks()) * kBlockBytes;
  }
  uint64_t kernel_hits() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.kernel_hits();
  }
  uint64_t kernel_misses() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.kernel_misses();
  }
  uint64_t repeated_launches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.repeated_launches();
  }
  size_t table_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return policy_.table_bytes();
  }

 private:
  struct Lanes {                  // a block's commands
    Lane last = kToGpu;           // lane of its latest command
    bool seen = false;            // launched or moved
    uint64_t moved[kLanes] = {};  // per lane: the number of its latest command there (0: none)
  };
  bool launched_or_moved(Block b) const { return b != kNone && size_t(b) < lanes_.size() && lanes_[size_t(b)].seen; }
  Lanes& lanes(Block b) {
    if (size_t(b) >= lanes_.size()) lanes_.resize(std::max(size_t(b) + 1, lanes_.size() * 2));
    Lanes& s = lanes_[size_t(b)];
    s.seen = true;
    return s;
  }

  // The policy's questions, answered by the memory map under its lock. A block whose segment is gone
  // is not dead: nothing is discarded on a guess.
  bool dead(Block b) const override {
    std::lock_guard<std::mutex> lock(memory_.mutex());
    const int64_t n = um_block(b);
    return n >= 0 && memory_.dead(n);
  }
  bool choose_discard(Block b, uint64_t& ticket) override {
    std::lock_guard<std::mutex> lock(memory_.mutex());
    const int64_t n = um_block(b);
    return n >= 0 && memory_.choose_discard(n, ticket, discard_users_);
  }

  // The UM block of the policy's block b; -1 when its segment is not live. The caller holds the
  // memory map's lock.
  int64_t um_block(Block b) const { return memory_.um_block(policy_.number(b)); }

  bool exists(Block b) const override {
    std::lock_guard<std::mutex> lock(memory_.mutex());
    return um_block(b) >= 0;
  }

  // blocks_ = the policy's blocks for UM blocks `numbers` (those outside the managed segments dropped);
  // with `launching`, fresh_ says of each whether it received an allocation since the launch before.
  void to_policy(const int64_t* numbers, size_t count, bool launching = false) {
    blocks_.clear();
    fresh_.clear();
    std::lock_guard<std::mutex> lock(memory_.mutex());
    const std::vector<int64_t> fresh = launching ? memory_.take_fresh() : std::vector<int64_t>{};
    for (size_t i = 0; i < count; ++i)
      if (const int64_t p = memory_.portable(numbers[i]); p >= 0) {
        blocks_.push_back(policy_.block(p));
        fresh_.push_back(std::binary_search(fresh.begin(), fresh.end(), numbers[i]));
      }
  }

  // Blocks of freed segments hold nothing anywhere: the policy stops counting them resident. A block
  // the engine never launched nor moved was never resident.
  void release_freed() {
    std::vector<int64_t> released;
    {
      std::lock_guard<std::mutex> lock(memory_.mutex());
      released = memory_.take_released();
    }
    for (int64_t p : released)
      if (const Block b = policy_.known_block(p); launched_or_moved(b)) policy_.release(b);
  }

  // Makes the launching stream wait (on the GPU, not the CPU) until, on each lane, command need[lane]
  // (the latest of the kernel's blocks there) has completed, as far as the worker has issued it (a
  // command not yet issued is not waited for: the kernel may fault on its block); waits the stream
  // already has are not repeated. Says whether a wait was enqueued.
  bool wait_for_migrations(const uint64_t (&need)[kLanes], CUstream stream) {
    auto& waited = stream_waited_[stream];
    bool enqueued = false;
    for (const Lane lane : kAllLanes) {
      const uint64_t published = worker_.published(lane);
      if (need[lane] > published) counters_.kernel_waits_unissued++;
      const uint64_t target = std::min(need[lane], published);
      if (target <= waited[lane]) continue;
      if (counters_.driver_ok(DEEPUM_GUARDED(cuStreamWaitValue64(stream, worker_.done_word(lane), target,
                                                                 CU_STREAM_WAIT_VALUE_GEQ),
                                             CUDA_ERROR_UNKNOWN),
                              "kernel wait for its blocks")) {
        counters_.kernel_waits++;
        enqueued = true;
      }
      waited[lane] = target;
    }
    return enqueued;
  }

  // Prefetches the kernel's missing blocks (the plan's demand moves) on its own stream, ahead of it
  // (contiguous blocks in one call). Its launching thread pays the calls (docs/results.md); in steady
  // state the window has already brought them. Says whether any was issued.
  bool prefetch_on_stream(const LaunchPlan& plan, CUstream stream) {
    std::vector<int64_t> missing;  // UM blocks
    {
      std::lock_guard<std::mutex> lock(memory_.mutex());
      for (const Decision& d : plan.moves)
        if (d.move == Move::kDemand)
          if (const int64_t n = um_block(d.block); n >= 0) missing.push_back(n);
    }
    if (missing.empty()) return false;
    bool issued = false;
    for (const auto& [start, bytes] : memory_.contiguous_ranges(missing)) {
      if (!counters_.driver_ok(cuMemPrefetchAsync(CUdeviceptr(start), bytes, gpu_, 0, stream),
                               "prefetch on the kernel's stream"))
        continue;
      counters_.demand_prefetch_calls++;
      counters_.demand_prefetch_bytes += bytes;
      issued = true;
    }
    for (const Decision& d : plan.moves)
      if (d.move == Move::kDemand) lanes(d.block).last = kToGpu;
    return issued;
  }

  // The plan's moves other than demand, as worker commands: evictions and discards sorted by block,
  // then prefetches and populations in decision order. They run once the GPU has finished the work
  // launched before this kernel: the GPU-time point the policy's residency model stands for (the CPU
  // may be far ahead). Discards and populations also wait for the work queued on the streams that
  // last used their blocks' memory: a freed tensor's kernels may still be queued on a side stream.
  void submit(const LaunchPlan& plan, CUstream stream) {
    // Most launches decide no move but their own blocks': they take neither the clock nor the lock.
    if (std::all_of(plan.moves.begin(), plan.moves.end(), [](const Decision& d) { return d.move == Move::kDemand; }))
      return;
    Stopwatch clock;
    std::vector<Decision> order;
    for (const Decision& d : plan.moves)
      if (d.move == Move::kMapHost || d.move == Move::kMapGpu) order.push_back(d);
    const size_t mappings = order.size();
    for (const Decision& d : plan.moves)
      if (d.move == Move::kEvict || d.move == Move::kDiscard) order.push_back(d);
    std::sort(order.begin() + mappings, order.end(), [this](const Decision& a, const Decision& b) {
      return policy_.number(a.block) < policy_.number(b.block);
    });
    for (const Decision& d : plan.moves)
      if (d.move == Move::kPrefetch || d.move == Move::kPopulate) order.push_back(d);
    std::vector<Command> commands;
    std::vector<Block> decided;  // each command's block
    {
      // A block whose segment has been freed since the decision has nothing left to move.
      std::lock_guard<std::mutex> lock(memory_.mutex());
      for (const Decision& d : order)
        if (const int64_t n = um_block(d.block); n >= 0) {
          commands.push_back(command(d, n));
          decided.push_back(d.block);
        }
    }
    counters_.hook_submit_command_ns += clock.lap();
    if (commands.empty()) return;
    // The threads of a pool wait for marks, the worker for events: each is made only for those that wait.
    bool marked = false, evented = false;
    for (const Command& c : commands) {
      if (worker_.served_by_threads(lane_of(c.op)))
        marked = true;
      else
        evented = true;
    }
    const std::shared_ptr<const After> after = work_before({stream}, nullptr, marked, evented);
    std::shared_ptr<const After> discards_after = after;
    discard_users_.erase(std::remove(discard_users_.begin(), discard_users_.end(), stream), discard_users_.end());
    if (!discard_users_.empty()) discards_after = work_before(discard_users_, after, marked, evented);
    counters_.hook_submit_mark_ns += clock.lap();
    counters_.hand_overs++;
    counters_.handed_commands += commands.size();
    for (size_t i = 0; i < commands.size(); ++i) {
      Command& c = commands[i];
      c.after = c.op == Op::kDiscard || c.op == Op::kPopulate ? discards_after : after;
      number(c, lanes(decided[i]));
    }
    worker_.submit(std::move(commands));
    counters_.hook_submit_hand_ns += clock.lap();
  }

  // The work queued now on each of `streams`, beside the events and marks of `also`: as marks where
  // `marked` (for the threads of a pool), as events where `evented` (for the worker). Fails closed: the
  // work of a stream no mark or event can be recorded on is waited for by the CPU now.
  std::shared_ptr<const After> work_before(const std::vector<CUstream>& streams, const std::shared_ptr<const After>& also,
                                           bool marked, bool evented) {
    auto after = std::make_shared<After>();
    if (also) {
      after->events = also->events;
      after->marks = also->marks;
    }
    for (CUstream s : streams) {
      if (marked) {
        Mark mark{};
        if (!marks_.mark(s, mark)) {
          counters_.driver_ok(cuStreamSynchronize(s), "wait for the work before the decision");
          continue;
        }
        after->marks.push_back(mark);
      }
      if (!evented) continue;
      std::shared_ptr<CUevent_st> event;
      if (!counters_.driver_ok(events_->take(event), "cuEventCreate")) {
        counters_.driver_ok(cuStreamSynchronize(s), "wait for the work before the decision");
        continue;
      }
      if (!counters_.driver_ok(DEEPUM_GUARDED(cuEventRecord(event.get(), s), CUDA_ERROR_UNKNOWN), "cuEventRecord")) {
        counters_.driver_ok(cuStreamSynchronize(s), "wait for the work before the decision");
        continue;
      }
      after->events.push_back(std::move(event));
    }
    return after;
  }

  // The command for decision d on UM block n.
  static Command command(const Decision& d, int64_t n) {
    const Op op = d.move == Move::kEvict      ? Op::kEvict
                  : d.move == Move::kDiscard  ? Op::kDiscard
                  : d.move == Move::kPopulate ? Op::kPopulate
                  : d.move == Move::kMapHost  ? Op::kMapHost
                  : d.move == Move::kMapGpu   ? Op::kMapGpu
                                              : Op::kPrefetch;
    Command c{op, n};
    c.ticket = d.ticket;
    return c;
  }

  // Numbers a command on its lane and orders it after its block's latest command, `s` (each command
  // of a block waits for the one before it, so they run in decision order across lanes).
  void number(Command& c, Lanes& s) {
    const Lane lane = lane_of(c.op);
    c.seq = ++lane_seq_[lane];
    c.wait_lane = s.last;
    c.wait = s.last == lane ? 0 : s.moved[s.last];
    s.moved[lane] = c.seq;
    s.last = lane;
  }

  static CUmemLocation device_location(int device) {
    CUmemLocation gpu{};
    gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
    gpu.id = device;
    return gpu;
  }

  const int device_;
  const CUmemLocation gpu_;  // where prefetches on the launching streams go
  const bool populates_new_segments_;
  EngineMemory& memory_;
  Counters& counters_;
  std::mutex mutex_;
  Policy policy_;
  std::vector<Block> blocks_;                   // the launching kernel's blocks, dense
  std::vector<uint8_t> fresh_;                  // of each: it received an allocation since the launch before
  std::vector<CUstream> discard_users_;         // the launch's discards: streams that last used their blocks
  std::vector<Lanes> lanes_;                    // by dense block (grown as blocks come)
  uint64_t lane_seq_[kLanes] = {};              // commands numbered so far on each lane
  std::unordered_map<CUstream, std::array<uint64_t, kLanes>> stream_waited_;  // per stream and lane: waited up to
  const std::shared_ptr<EventPool> events_ = EventPool::make();  // the events work_before records
  StreamMarks marks_;  // the marks work_before writes
  Worker worker_;
};

}  // namespace deepum
