// UVM driver model for offline replay: 2 MiB blocks of 4 KiB pages on a GPU of fixed capacity, demand
// faults in batches, the driver's in-block prefetcher, a host link that moves one migration at a time
// (the driver serializes migrations), a prefetch worker whose calls cost CPU time, compute that
// overlaps with prefetches, and kernels that read and write host-mapped blocks over that link beside
// the migrations. It knows no policy: the policy core (policy.hpp) decides, at each launch,
// which blocks move; the model charges what those moves cost. Like the engine, it starts asleep
// (sleep_gate.hpp): until the trace's managed segments pass the gate, the policy sees no launch and
// kernels fault on what they lack. docs/simulator.md describes it.
//
// Time is in seconds, sizes in bytes. Blocks are dense indices 0..B-1, numbered like the policy's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle.hpp"
#include "policy.hpp"
#include "sleep_gate.hpp"
#include "trace_view.hpp"
#include "units.hpp"

namespace deepum {

struct CostModel {
  double prefetch_bytes_per_s;        // host->device prefetch bandwidth
  double prefetch_call_s;             // CPU time of one prefetch / evict call on the worker
  double evict_bytes_per_s;           // device->host eviction bandwidth
  double threaded_evict_bytes_per_s;  // ... of the engine's eviction threads (options.hpp: eviction_threads)
  double populate_bytes_per_s;        // fresh GPU pages for a dead block (discard-and-prefetch to the GPU)
  double host_map_bytes_per_s;        // a kernel's accesses to a block mapped from the host, each direction at once
  double fault_read_bytes_per_s;      // effective demand-fault rate when the kernel reads
  double fault_write_bytes_per_s;     // effective demand-fault rate when the kernel writes
  double fault_startup_s;             // fixed cost of a kernel that demand-faults
  int64_t fault_batch_pages;          // pages the driver services per fault batch
  double driver_prefetch_threshold;   // resident fraction past which the driver fetches the whole block
  double launch_cpu_s;                // the framework's CPU time per kernel launch (0: launches never hold kernels)
  double hook_cpu_s;                  // deepum's launch hook per launch, on the same thread, while it sees launches
};

struct Totals {
  int64_t faults = 0;            // pages demand-faulted
  int64_t fault_batches = 0;
  int64_t fault_blocks = 0;      // (kernel, block) pairs that demand-faulted
  int64_t h2d_bytes = 0;         // every byte copied host->device (faults, driver prefetch, prefetches)
  int64_t d2h_bytes = 0;         // every byte copied device->host (evictions)
  int64_t prefetch_bytes = 0;    // host->device bytes the policy's window prefetches copied
  int64_t demand_prefetch_bytes = 0;  // host->device bytes of kernels' missing blocks prefetched just before them
  int64_t prefetch_used_bytes = 0;
  int64_t prefetch_hit_blocks = 0;  // first accesses to prefetched blocks (misses turned into hits)
  int64_t evicted_bytes = 0;     // resident bytes evicted with a copy
  int64_t discarded_bytes = 0;   // resident bytes dropped without a copy (dead data)
  int64_t populated_bytes = 0;   // dead blocks a prefetch gave fresh GPU pages instead of a copy
  int64_t segment_populated_bytes = 0;  // new segments given fresh GPU pages as they were made, asleep
  int64_t host_mapped_bytes = 0; // bytes kernels used of host-mapped blocks, over the link
  int64_t released_bytes = 0;    // resident bytes dropped because their segment was released
  int64_t lost_reads = 0;        // reads of a block whose contents were dropped and not rewritten
  int64_t peak_resident_blocks = 0;
  int64_t woke_at_kernel = -1;   // the first kernel the policy saw (-1: the engine slept throughout)
  double compute_s = 0, fault_stall_s = 0, prefetch_wait_s = 0, host_map_wait_s = 0, time_s = 0;
  double launch_wait_s = 0;      // the GPU idle before kernels not yet launched (CostModel::launch_cpu_s)
};

struct KernelRecord {
  double t_start_s, t_end_s, fault_stall_s, prefetch_wait_s;
  int64_t faults, prefetch_bytes, evict_bytes, discard_bytes, h2d_bytes, d2h_bytes;
};

class Simulator : private MemoryFacts {
 public:
  // capacity_bytes: the GPU's capacity, for the sleep gate; capacity_blocks: the policy's (at most the
  // trace's blocks).
  Simulator(const TraceView& trace, const CostModel& cost, int64_t capacity_blocks, uint64_t capacity_bytes,
            const Options& options)
      : trace_(trace), cost_(cost),
        evict_bytes_per_s_(eviction_threads(options) ? cost.threaded_evict_bytes_per_s : cost.evict_bytes_per_s),
        policy_(options, capacity_blocks, *this, oracle_window(trace, options), oracle_replacement(trace, options)),
        gate_(capacity_bytes, sleeps(trace, options) ? options.wake_percent : 0),
        populates_new_segments_(populates_new_segments(options)), hooked_(options.mode == Mode::kDeepUM),
        capacity_blocks_(capacity_blocks),
        resident_pages_(trace.blocks, 0), arrival_s_(trace.blocks, 0.0), prefetched_bytes_(trace.blocks, 0),
        dropped_(trace.blocks, 0), live_bytes_(trace.blocks, 0), allocated_(trace.blocks, 0), fresh_(trace.blocks, 0),
        in_a_segment_(trace.blocks, 0), batched_(trace.blocks, 0) {
    for (size_t b = 0; b < trace.blocks; ++b)
      if (policy_.block(trace.block_number[b]) != Block(b))
        throw std::invalid_argument("block_number must hold each block once");
    for (size_t i = 0; i < trace.mem_events; ++i)
      if (MemAction(trace.mem_action[i]) == MemAction::kSegmentAlloc && trace.mem_bytes[i] > 0)
        for_blocks(trace.mem_address[i], trace.mem_bytes[i], [this](Block b) { in_a_segment_[b] = 1; });
  }

  void run() {
    size_t next_event = 0, next_iteration = 0;
    apply_memory_events(next_event, -1);
    if (policy_.warm_start().state != WarmStart::kCold && gate_.wake()) waking_ = true;
    for (size_t k = 0; k < trace_.kernels; ++k) {
      for (; next_iteration < trace_.iterations && size_t(trace_.iteration_first_kernel[next_iteration]) <= k; ++next_iteration) {
        if (k > 0) policy_.next_iteration();
        launch_clock_ = std::max(launch_clock_, now_);  // a step ends with a synchronization
      }
      launch();
      run_kernel(k);
      for (Block b : fresh_blocks_) fresh_[b] = 0;
      fresh_blocks_.clear();
      apply_memory_events(next_event, int64_t(k));
    }
    totals_.time_s = now_;
    totals_.peak_resident_blocks = std::max(policy_.peak_resident_blocks(), peak_asleep_);
  }

  const Totals& totals() const { return totals_; }
  const std::vector<KernelRecord>& timeline() const { return timeline_; }
  const Policy& policy() const { return policy_; }
  Policy& policy() { return policy_; }  // a warm start loads its learned state before run()
  int64_t resident_bytes() const {
    int64_t pages = 0;
    for (int16_t p : resident_pages_) pages += p;
    return pages * int64_t(kPageBytes);
  }

 private:
  static std::unique_ptr<Prefetcher> oracle_window(const TraceView& t, const Options& o) {
    return o.mode == Mode::kOracle ? std::make_unique<OracleWindow>(t, o.tables.lookahead) : nullptr;
  }
  static std::unique_ptr<Replacement> oracle_replacement(const TraceView& t, const Options& o) {
    return o.mode == Mode::kOracle ? std::make_unique<BeladyEviction>(t) : nullptr;
  }

  bool dead(Block b) const override { return allocated_[b] && live_bytes_[b] <= 0; }
  // A block of the trace is memory unless a segment of the trace holds it and none does now; a block
  // that only a loaded state names is not.
  bool exists(Block b) const override {
    if (size_t(b) >= trace_.blocks) return false;
    if (!in_a_segment_[b]) return true;
    const uint64_t lo = uint64_t(trace_.block_number[b]) << kBlockShift;
    auto it = segments_.lower_bound(lo + kBlockBytes);  // the first segment starting past the block
    return it != segments_.begin() && std::prev(it)->first + std::prev(it)->second > lo;
  }

  // The launching thread issues kernel k launch_cpu_s after kernel k - 1, and hook_cpu_s more while
  // deepum's hook sees launches; the kernel and its decisions wait for it.
  void launch() {
    launch_clock_ += cost_.launch_cpu_s + (hooked_ && !gate_.asleep() ? cost_.hook_cpu_s : 0.0);
    if (launch_clock_ <= now_) return;
    totals_.launch_wait_s += launch_clock_ - now_;
    now_ = launch_clock_;
  }

  void run_kernel(size_t k) {
    record_ = KernelRecord{now_, now_, 0, 0, 0, 0, 0, 0, 0, 0};
    const Totals before = totals_;
    const int64_t first = trace_.access_offsets[k], last = trace_.access_offsets[k + 1];
    // A trace may touch blocks outside its segments (the engine's never do): the engine wakes before
    // residency could pass the capacity.
    if (gate_.asleep() && resident_blocks_ + missing_blocks(first, last) > capacity_blocks_ && gate_.wake())
      waking_ = true;
    if (waking_) wake();
    const bool asleep = gate_.asleep();
    if (!asleep && totals_.woke_at_kernel < 0) totals_.woke_at_kernel = int64_t(k);  // the policy sees nothing: the kernel faults on what it lacks
    const LaunchPlan& plan =
        asleep ? asleep_plan_ : policy_.on_launch(trace_.exec_id[k], trace_.access_block + first, size_t(last - first),
                                           (trace_.kinds[k] & kIndexedKernel) != 0, (trace_.kinds[k] & kFillKernel) != 0,
                                           fresh_flags(first, last));
    double ready = now_, room_ready = now_;
    execute(plan, ready, room_ready);
    double fault_s = 0;
    int64_t fault_pages = 0, host_mapped_bytes = 0;
    for (int64_t row = first; row < last; ++row) {
      const Block b = trace_.access_block[row];
      const int16_t pages = trace_.access_pages[row];
      const bool write = trace_.access_write[row] != 0;
      if (policy_.host_mapped(b)) {
        host_mapped_bytes += int64_t(pages) * int64_t(kPageBytes);
      } else if (resident_pages_[b] >= pages) {
        ready = std::max(ready, arrival_s_[b]);
      } else {
        const int16_t missing = pages - resident_pages_[b];
        const bool whole_block = double(pages) / kPagesPerBlock > cost_.driver_prefetch_threshold;
        const int16_t moved = whole_block ? kPagesPerBlock - resident_pages_[b] : missing;
        const int64_t bytes = int64_t(moved) * int64_t(kPageBytes);
        fault_s += double(bytes) / (write ? cost_.fault_write_bytes_per_s : cost_.fault_read_bytes_per_s);
        link_free_s_ = std::max(link_free_s_, now_) + double(bytes) / cost_.prefetch_bytes_per_s;
        fault_pages += missing;
        totals_.fault_blocks += 1;
        arrival_s_[b] = now_;
        move_in(b, resident_pages_[b] + moved, bytes);
        if (!asleep) policy_.learn_fault(b);
      }
      if (prefetched_bytes_[b] > 0) {
        totals_.prefetch_used_bytes += prefetched_bytes_[b];
        totals_.prefetch_hit_blocks += 1;
        prefetched_bytes_[b] = 0;
      }
      if (dropped_[b]) {
        if (!write) totals_.lost_reads += 1;
        dropped_[b] = 0;
      }
    }
    if (fault_pages > 0) {
      fault_s += cost_.fault_startup_s + std::max(0.0, room_ready - now_);
      totals_.faults += fault_pages;
      totals_.fault_batches += (fault_pages + cost_.fault_batch_pages - 1) / cost_.fault_batch_pages;
    }
    if (asleep) peak_asleep_ = std::max(peak_asleep_, resident_blocks_);
    const double compute = double(trace_.duration_ns[k]) * 1e-9;
    const double wait = ready - now_;
    // Host-mapped accesses cross the link while the kernel runs, beside the migrations queued on it:
    // they are the kernel's own reads and writes, not the driver's copies.
    double end = ready + fault_s + compute;
    if (host_mapped_bytes > 0) {
      const double mapped_end = ready + fault_s + double(host_mapped_bytes) / cost_.host_map_bytes_per_s;
      totals_.host_mapped_bytes += host_mapped_bytes;
      totals_.host_map_wait_s += std::max(0.0, mapped_end - end);
      end = std::max(end, mapped_end);
    }
    totals_.compute_s += compute;
    totals_.fault_stall_s += fault_s;
    totals_.prefetch_wait_s += wait;
    now_ = end;
    record_.t_end_s = now_;
    record_.fault_stall_s = fault_s;
    record_.prefetch_wait_s = wait;
    record_.faults = fault_pages;
    record_.h2d_bytes = totals_.h2d_bytes - before.h2d_bytes;
    record_.d2h_bytes = totals_.d2h_bytes - before.d2h_bytes;
    timeline_.push_back(record_);
  }

  // Charges the launch's decisions: the kernel's missing blocks first when they are prefetched on its
  // stream (it waits for them; otherwise it faults on them as it runs), then the evictions, then the
  // prefetches in decision order, as the engine's worker issues them: each run of contiguous blocks
  // one call, all on the one link.
  void execute(const LaunchPlan& plan, double& ready, double& room_ready) {
    batch_.clear();
    if (plan.demand_prefetch) {
      for (const Decision& d : plan.moves)
        if (d.move == Move::kDemand) batch_.push_back(d);
      if (!batch_.empty()) ready = std::max(ready, issue_batch());
    }
    for (const Decision& d : plan.moves) {
      if (d.move == Move::kEvict || d.move == Move::kDiscard) {
        evict(d.block, d.move == Move::kDiscard, room_ready);
      } else if (d.move == Move::kPrefetch || d.move == Move::kPopulate) {
        batch_.push_back(d);
        batched_[d.block] = 1;
      } else if (d.move == Move::kMapHost && resident_pages_[d.block] > 0) {
        evict(d.block, false, room_ready);  // its pages go back to the host with a copy
      }
    }
    if (!batch_.empty()) issue_batch();
  }

  // Moves batch_ to the GPU; returns when its last block arrives.
  double issue_batch() {
    double link = now_;
    const Decision* previous = nullptr;
    for (const Decision& d : batch_) {
      const Block b = d.block;
      if (d.move != Move::kDemand && !batched_[b]) continue;  // evicted after it was chosen
      batched_[b] = 0;
      const bool populate = d.move == Move::kPopulate;
      if (!previous || populate != (previous->move == Move::kPopulate) ||
          trace_.block_number[b] != trace_.block_number[previous->block] + 1) {
        cpu_free_s_ = std::max(cpu_free_s_, now_) + cost_.prefetch_call_s;
        link = std::max({cpu_free_s_, link_free_s_, link});
      }
      previous = &d;
      const int64_t bytes = int64_t(kPagesPerBlock - resident_pages_[b]) * int64_t(kPageBytes);
      link += double(bytes) / (populate ? cost_.populate_bytes_per_s : cost_.prefetch_bytes_per_s);
      link_free_s_ = link;
      arrival_s_[b] = link;
      move_in(b, kPagesPerBlock, populate ? 0 : bytes);
      if (populate) {
        dropped_[b] = 1;
        totals_.populated_bytes += bytes;
        continue;
      }
      if (d.move == Move::kDemand) {
        totals_.demand_prefetch_bytes += bytes;
        continue;
      }
      totals_.prefetch_bytes += bytes;
      record_.prefetch_bytes += bytes;
      prefetched_bytes_[b] += bytes;  // a hit when a kernel uses it
    }
    batch_.clear();
    return link;
  }

  void evict(Block b, bool discard, double& room_ready) {
    batched_[b] = 0;
    const int64_t bytes = int64_t(resident_pages_[b]) * int64_t(kPageBytes);
    if (discard) {
      totals_.discarded_bytes += bytes;
      record_.discard_bytes += bytes;
      dropped_[b] = 1;
    } else if (bytes > 0) {
      link_free_s_ = std::max(link_free_s_, now_) + double(bytes) / evict_bytes_per_s_;
      room_ready = std::max(room_ready, link_free_s_);
      totals_.d2h_bytes += bytes;
      totals_.evicted_bytes += bytes;
      record_.evict_bytes += bytes;
    }
    move_out(b);
  }

  void move_in(Block b, int16_t pages, int64_t bytes) {
    if (resident_pages_[b] == 0) resident_blocks_ += 1;
    resident_pages_[b] = pages;
    totals_.h2d_bytes += bytes;
  }

  void move_out(Block b) {
    if (resident_pages_[b] > 0) resident_blocks_ -= 1;
    prefetched_bytes_[b] = 0;
    resident_pages_[b] = 0;
  }

  // Of each access row in [first, last): its block received an allocation since the launch before
  // (the engine's memory map take_fresh).
  const uint8_t* fresh_flags(int64_t first, int64_t last) {
    fresh_rows_.assign(size_t(last - first), 0);
    if (!fresh_blocks_.empty())
      for (int64_t row = first; row < last; ++row) fresh_rows_[size_t(row - first)] = fresh_[trace_.access_block[row]];
    return fresh_rows_.data();
  }

  // Applies the allocator events recorded after kernel `after_kernel` was launched.
  void apply_memory_events(size_t& next, int64_t after_kernel) {
    for (; next < trace_.mem_events && trace_.mem_kernel[next] == after_kernel; ++next) {
      const auto action = MemAction(trace_.mem_action[next]);
      const uint64_t start = trace_.mem_address[next], end = start + trace_.mem_bytes[next];
      if (end <= start) continue;
      if (action == MemAction::kSegmentAlloc) {
        segments_[start] = end - start;
        const bool woke = gate_.segment_alloc(spanned_bytes(start, end - start));
        waking_ = woke || waking_;
        if (!woke && gate_.asleep() && populates_new_segments_) populate_segment(start, end - start);
      } else if (action == MemAction::kSegmentFree && segments_.erase(start)) {
        gate_.segment_free(spanned_bytes(start, end - start));
      }
      for (uint64_t number = start >> kBlockShift; number <= (end - 1) >> kBlockShift; ++number) {
        const Block b = find_block(int64_t(number));
        if (b == kNone) continue;
        const int64_t overlap = int64_t(std::min(end, (number + 1) << kBlockShift) - std::max(start, number << kBlockShift));
        if (action == MemAction::kAlloc) {
          allocated_[b] = 1;
          live_bytes_[b] += overlap;
          if (!fresh_[b]) fresh_blocks_.push_back(b);
          fresh_[b] = 1;
        } else if (action == MemAction::kFree) {
          live_bytes_[b] -= overlap;
        } else if (action == MemAction::kSegmentFree &&
                   (policy_.resident(b) || policy_.host_mapped(b) || resident_pages_[b] > 0)) {
          totals_.released_bytes += int64_t(resident_pages_[b]) * int64_t(kPageBytes);
          move_out(b);
          policy_.release(b);
        }
      }
    }
  }

  // A segment made while asleep gets fresh GPU pages at once (deepum/specs/sleep.py): one call, no copy.
  // Blocks outside the segments (a trace may touch some) keep residency within the capacity.
  void populate_segment(uint64_t start, uint64_t bytes) {
    bool called = false;
    for_blocks(start, bytes, [&](Block b) {
      if (resident_pages_[b] == kPagesPerBlock || (resident_pages_[b] == 0 && resident_blocks_ >= capacity_blocks_))
        return;
      if (!called) {
        cpu_free_s_ = std::max(cpu_free_s_, now_) + cost_.prefetch_call_s;
        link_free_s_ = std::max(link_free_s_, cpu_free_s_);
        called = true;
      }
      const int64_t fresh = int64_t(kPagesPerBlock - resident_pages_[b]) * int64_t(kPageBytes);
      link_free_s_ += double(fresh) / cost_.populate_bytes_per_s;
      arrival_s_[b] = link_free_s_;
      move_in(b, kPagesPerBlock, 0);
      totals_.segment_populated_bytes += fresh;
    });
    peak_asleep_ = std::max(peak_asleep_, resident_blocks_);
  }

  // The oracle never sleeps (it knows the future); without segment events the gate could not wake.
  static bool sleeps(const TraceView& t, const Options& o) {
    if (o.mode == Mode::kOracle) return false;
    for (size_t i = 0; i < t.mem_events; ++i)
      if (MemAction(t.mem_action[i]) == MemAction::kSegmentAlloc) return true;
    return false;
  }

  int64_t missing_blocks(int64_t first, int64_t last) const {
    int64_t missing = 0;
    for (int64_t row = first; row < last; ++row) missing += resident_pages_[trace_.access_block[row]] == 0;
    return missing;
  }

  // The engine wakes before this launch: the trace's blocks of the live segments, ascending.
  void wake() {
    waking_ = false;
    std::vector<Block> blocks;
    for (const auto& [start, bytes] : segments_)
      for_blocks(start, bytes, [&](Block b) {
        if (blocks.empty() || blocks.back() != b) blocks.push_back(b);
      });
    policy_.wake(blocks.data(), blocks.size());
  }

  // Calls f(b) for each block of the trace that [start, start + bytes) overlaps.
  template <class F>
  void for_blocks(uint64_t start, uint64_t bytes, F f) const {
    for (uint64_t number = start >> kBlockShift; number <= (start + bytes - 1) >> kBlockShift; ++number)
      if (const Block b = find_block(int64_t(number)); b != kNone) f(b);
  }

  Block find_block(int64_t number) const {  // block_number is sorted
    const int64_t* end = trace_.block_number + trace_.blocks;
    const int64_t* it = std::lower_bound(trace_.block_number, end, number);
    return it != end && *it == number ? Block(it - trace_.block_number) : kNone;
  }

  const TraceView& trace_;
  const CostModel cost_;
  const double evict_bytes_per_s_;  // deepum's with eviction threads, else one at a time
  Policy policy_;
  SleepGate gate_;
  const bool populates_new_segments_;
  const bool hooked_;  // deepum's launch hook runs its policy on the launching thread
  const int64_t capacity_blocks_;
  bool waking_ = false;                    // the gate woke: the policy is told before the next launch
  std::map<uint64_t, uint64_t> segments_;  // live managed segments: start, bytes
  const LaunchPlan asleep_plan_{};         // no decision: the policy does not see the launch
  int64_t resident_blocks_ = 0;            // blocks with a resident page
  int64_t peak_asleep_ = 0;                // most of them after a kernel the policy did not see
  std::vector<int16_t> resident_pages_;
  std::vector<double> arrival_s_;
  std::vector<int64_t> prefetched_bytes_;  // bytes prefetched and not yet used
  std::vector<uint8_t> dropped_;           // contents dropped (discarded) and not since rewritten
  std::vector<int64_t> live_bytes_;        // bytes of the block inside live allocations
  std::vector<uint8_t> allocated_;         // the allocator has handed out memory in the block
  std::vector<uint8_t> fresh_;             // ... since the last launch (fresh_blocks_ lists them)
  std::vector<Block> fresh_blocks_;
  std::vector<uint8_t> fresh_rows_;        // fresh_flags' answer
  std::vector<uint8_t> in_a_segment_;      // a segment of the trace holds the block at some time
  std::vector<uint8_t> batched_;           // in batch_, waiting to be moved in
  std::vector<Decision> batch_;            // blocks to move in with one run of calls
  double now_ = 0, link_free_s_ = 0, cpu_free_s_ = 0;
  double launch_clock_ = 0;  // when the launching thread has issued the latest kernel
  Totals totals_;
  KernelRecord record_{};
  std::vector<KernelRecord> timeline_;
};

}  // namespace deepum
