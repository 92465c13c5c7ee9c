// UVM driver model for offline replay: 2 MiB blocks of 4 KiB pages on a GPU of fixed capacity,
// demand faults in batches, the driver's in-block prefetcher, least-recently-migrated eviction,
// a host link that moves one migration at a time (the driver serializes them: a prefetch to the GPU
// and an eviction to the host issued together took longer than the two one after the other on the
// H200, bench/results/gpu_check/migration_probe.json), a prefetch worker whose
// calls cost CPU time, and compute that overlaps with prefetches. Policies decide what to
// prefetch and what to evict through one small interface (Policy).
//
// Time is in seconds, sizes in bytes. Blocks are dense indices 0..B-1 (the trace's block numbers
// are kept in TraceView::block_number for contiguity and for the predictor).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "correlation.hpp"
#include "next_use.hpp"

namespace deepum {

constexpr int32_t kNone = -1;
constexpr int64_t kNever = INT64_MAX;

struct CostModel {
  double prefetch_bytes_per_s;        // host->device prefetch bandwidth
  double prefetch_call_s;             // CPU time of one prefetch / evict call on the worker
  double evict_bytes_per_s;           // device->host eviction bandwidth
  double populate_bytes_per_s;        // fresh GPU pages for a dead block (discard-and-prefetch to the GPU)
  double fault_read_bytes_per_s;      // effective demand-fault rate when the kernel reads
  double fault_write_bytes_per_s;     // effective demand-fault rate when the kernel writes
  double fault_startup_s;             // fixed cost of a kernel that demand-faults
  int64_t fault_batch_pages;          // pages the driver services per fault batch
  double driver_prefetch_threshold;   // resident fraction past which the driver fetches the whole block
  int64_t block_bytes;
  int64_t page_bytes;
};

// Borrowed views of the trace arrays (TRACE_FORMAT.md names), accesses remapped to dense blocks.
struct TraceView {
  size_t kernels = 0;
  const uint64_t* exec_id = nullptr;
  const int64_t* duration_ns = nullptr;
  const int64_t* access_offsets = nullptr;  // kernels + 1
  const int32_t* access_block = nullptr;    // dense block index
  const int16_t* access_pages = nullptr;
  const uint8_t* access_write = nullptr;
  size_t blocks = 0;
  const int64_t* block_number = nullptr;    // dense -> trace block number (sorted ascending)
  size_t mem_events = 0;
  const int64_t* mem_kernel = nullptr;
  const int8_t* mem_action = nullptr;
  const uint64_t* mem_address = nullptr;
  const uint64_t* mem_bytes = nullptr;
  size_t iterations = 0;
  const int64_t* iteration_first_kernel = nullptr;  // increasing
};

struct Totals {
  int64_t faults = 0;            // pages demand-faulted
  int64_t fault_batches = 0;
  int64_t fault_blocks = 0;      // (kernel, block) pairs that demand-faulted
  int64_t h2d_bytes = 0;         // every byte moved host->device (faults + driver prefetch + prefetch)
  int64_t d2h_bytes = 0;         // every byte moved device->host (evictions)
  int64_t prefetch_bytes = 0;    // host->device bytes moved by the policy's prefetches
  int64_t prefetch_used_bytes = 0;
  int64_t prefetch_hit_blocks = 0;  // first accesses to prefetched blocks (misses turned into hits)
  int64_t evicted_bytes = 0;     // resident bytes evicted with a copy
  int64_t discarded_bytes = 0;   // resident bytes dropped without a copy (dead data)
  int64_t populated_bytes = 0;   // dead blocks a prefetch gave fresh GPU pages instead of a copy
  int64_t released_bytes = 0;    // resident bytes dropped because their segment was released
  int64_t lost_reads = 0;        // reads of a block whose contents were dropped and not rewritten
  int64_t peak_resident_blocks = 0;
  double compute_s = 0, fault_stall_s = 0, prefetch_wait_s = 0, time_s = 0;
};

struct KernelRecord {
  double t_start_s, t_end_s, fault_stall_s, prefetch_wait_s;
  int64_t faults, prefetch_bytes, evict_bytes, discard_bytes, h2d_bytes, d2h_bytes;
};

class Simulator;

// What a prefetch/eviction policy decides. The simulator calls these hooks; the policy acts
// through Simulator::prefetch (which asks victim() for room) and reads block state.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual void on_launch(Simulator& sim, size_t kernel) = 0;        // before the kernel's accesses
  virtual void on_fault(Simulator&, int32_t /*block*/) {}           // the running kernel demand-faulted
  virtual void on_access(Simulator&, int32_t /*block*/, size_t /*row*/) {}
  virtual void on_resident(Simulator&, int32_t /*block*/) {}        // a block became resident
  virtual int32_t victim(Simulator& sim, bool for_prefetch) = 0;    // kNone: nothing may go
  virtual bool invalidates() const { return false; }               // drop dead victims without a copy
  virtual uint64_t kernel_hits() const { return 0; }
  virtual uint64_t kernel_misses() const { return 0; }
  virtual size_t table_bytes() const { return 0; }
};

// Intrusive doubly linked list over dense block indices (O(1) push/remove, ordered by insertion).
class BlockList {
 public:
  explicit BlockList(size_t n) : prev_(n, kNone), next_(n, kNone), in_(n, 0) {}
  bool contains(int32_t b) const { return in_[b] != 0; }
  int32_t head() const { return head_; }
  int32_t next(int32_t b) const { return next_[b]; }
  void push_back(int32_t b) {
    prev_[b] = tail_;
    next_[b] = kNone;
    if (tail_ != kNone) next_[tail_] = b; else head_ = b;
    tail_ = b;
    in_[b] = 1;
  }
  void remove(int32_t b) {
    if (!in_[b]) return;
    if (prev_[b] != kNone) next_[prev_[b]] = next_[b]; else head_ = next_[b];
    if (next_[b] != kNone) prev_[next_[b]] = prev_[b]; else tail_ = prev_[b];
    prev_[b] = next_[b] = kNone;
    in_[b] = 0;
  }
  void move_to_back(int32_t b) { remove(b); push_back(b); }

 private:
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_;
  int32_t head_ = kNone, tail_ = kNone;
};

class Simulator {
 public:
  Simulator(const TraceView& trace, const CostModel& cost, int64_t capacity_blocks)
      : trace_(trace), cost_(cost), capacity_blocks_(capacity_blocks),
        pages_per_block_(static_cast<int16_t>(cost.block_bytes / cost.page_bytes)),
        resident_pages_(trace.blocks, 0), arrival_s_(trace.blocks, 0.0), prefetched_bytes_(trace.blocks, 0),
        dropped_(trace.blocks, 0), live_bytes_(trace.blocks, 0), allocated_(trace.blocks, 0),
        in_use_by_(trace.blocks, -1), in_batch_(trace.blocks, 0), migrated_(trace.blocks), dead_(trace.blocks) {
    if (capacity_blocks_ < 1) throw std::invalid_argument("capacity must hold at least one block");
    real_to_dense_.reserve(trace.blocks * 2);
    for (size_t i = 0; i < trace.blocks; ++i) real_to_dense_.emplace(trace.block_number[i], static_cast<int32_t>(i));
  }

  void run(Policy& policy) {
    policy_ = &policy;
    size_t next_event = 0;
    apply_memory_events(next_event, -1);
    for (size_t k = 0; k < trace_.kernels; ++k) {
      current_ = static_cast<int64_t>(k);
      run_kernel(k);
      apply_memory_events(next_event, static_cast<int64_t>(k));
    }
    totals_.time_s = now_;
  }

  // Prefetches `blocks` (not resident, in need order) to the GPU, making room through the policy.
  // Returns how many got room; stops at the first that did not. Contiguous blocks share one call. A
  // dead block, when the policy invalidates, gets fresh pages without a copy (its contents dropped).
  size_t prefetch(const std::vector<int32_t>& blocks) {
    double room_ready = now_;
    admitted_.clear();
    for (int32_t b : blocks) {
      if (in_batch_[b]) continue;
      if (resident_pages_[b] == 0 && !make_room(true, room_ready)) break;
      const int64_t bytes = int64_t(pages_per_block_ - resident_pages_[b]) * cost_.page_bytes;
      const bool populate = policy_->invalidates() && dead(b);
      admitted_.push_back({b, bytes, populate});
      in_batch_[b] = 1;
      move_in(b, pages_per_block_, populate ? 0 : bytes);  // reserves the slot now: later victims cannot overfill
      if (populate) {
        dropped_[b] = 1;
        totals_.populated_bytes += bytes;
      }
    }
    std::sort(admitted_.begin(), admitted_.end(),
              [](const Admitted& x, const Admitted& y) { return x.block < y.block; });  // dense order == address order
    double link = now_;
    for (size_t i = 0; i < admitted_.size(); ++i) {
      const auto [b, bytes, populate] = admitted_[i];
      const bool starts_run = i == 0 || populate != admitted_[i - 1].populate ||
                              trace_.block_number[b] != trace_.block_number[admitted_[i - 1].block] + 1;
      if (starts_run) {
        cpu_free_s_ = std::max(cpu_free_s_, now_) + cost_.prefetch_call_s;
        link = std::max({cpu_free_s_, link_free_s_, room_ready});
      }
      link += double(bytes) / (populate ? cost_.populate_bytes_per_s : cost_.prefetch_bytes_per_s);
      link_free_s_ = link;
      arrival_s_[b] = link;
      in_batch_[b] = 0;
      if (populate) continue;
      prefetched_bytes_[b] += bytes;
      totals_.prefetch_bytes += bytes;
      record_.prefetch_bytes += bytes;
    }
    return admitted_.size();
  }

  // Block state for policies.
  bool resident(int32_t b) const { return resident_pages_[b] == pages_per_block_; }
  bool occupies(int32_t b) const { return resident_pages_[b] > 0; }  // holds a block slot on the GPU
  bool dead(int32_t b) const { return allocated_[b] && live_bytes_[b] <= 0; }
  bool in_use(int32_t b) const { return in_use_by_[b] == current_; }
  const TraceView& trace() const { return trace_; }
  const BlockList& migrated_order() const { return migrated_; }  // least recently migrated first
  const BlockList& dead_resident() const { return dead_; }       // resident dead blocks, oldest death first
  int32_t dense_block(int64_t block_number) const {
    auto it = real_to_dense_.find(block_number);
    return it == real_to_dense_.end() ? kNone : it->second;
  }
  // The driver's own choice: least recently migrated block the running kernel is not using.
  int32_t driver_victim() const {
    for (int32_t b = migrated_.head(); b != kNone; b = migrated_.next(b))
      if (!in_use(b)) return b;
    return kNone;
  }

  const Totals& totals() const { return totals_; }
  const std::vector<KernelRecord>& timeline() const { return timeline_; }
  int64_t resident_bytes() const {
    int64_t pages = 0;
    for (int16_t p : resident_pages_) pages += p;
    return pages * cost_.page_bytes;
  }

 private:
  void run_kernel(size_t k) {
    record_ = KernelRecord{now_, now_, 0, 0, 0, 0, 0, 0, 0, 0};
    const Totals before = totals_;
    policy_->on_launch(*this, k);
    double ready = now_;
    double fault_s = 0, room_ready = now_;
    int64_t fault_pages = 0;
    for (int64_t row = trace_.access_offsets[k]; row < trace_.access_offsets[k + 1]; ++row) {
      const int32_t b = trace_.access_block[row];
      const int16_t pages = trace_.access_pages[row];
      const bool write = trace_.access_write[row] != 0;
      in_use_by_[b] = current_;
      if (resident_pages_[b] >= pages) {
        ready = std::max(ready, arrival_s_[b]);
      } else {
        if (resident_pages_[b] == 0 && !make_room(false, room_ready))
          throw std::runtime_error("kernel " + std::to_string(k) + " needs more blocks than the capacity holds");
        const int16_t missing = pages - resident_pages_[b];
        const int16_t after = resident_pages_[b] + missing;
        const bool whole_block = double(after) / pages_per_block_ > cost_.driver_prefetch_threshold;
        const int16_t moved = whole_block ? pages_per_block_ - resident_pages_[b] : missing;
        const int64_t bytes = int64_t(moved) * cost_.page_bytes;
        fault_s += double(bytes) / (write ? cost_.fault_write_bytes_per_s : cost_.fault_read_bytes_per_s);
        link_free_s_ = std::max(link_free_s_, now_) + double(bytes) / cost_.prefetch_bytes_per_s;
        fault_pages += missing;
        totals_.fault_blocks += 1;
        arrival_s_[b] = now_;
        move_in(b, resident_pages_[b] + moved, bytes);
        policy_->on_fault(*this, b);
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
      policy_->on_access(*this, b, static_cast<size_t>(row));
    }
    if (fault_pages > 0) {
      fault_s += cost_.fault_startup_s + std::max(0.0, room_ready - now_);
      totals_.faults += fault_pages;
      totals_.fault_batches += (fault_pages + cost_.fault_batch_pages - 1) / cost_.fault_batch_pages;
    }
    const double compute = double(trace_.duration_ns[k]) * 1e-9;
    const double wait = ready - now_;
    totals_.compute_s += compute;
    totals_.fault_stall_s += fault_s;
    totals_.prefetch_wait_s += wait;
    now_ = ready + fault_s + compute;
    record_.t_end_s = now_;
    record_.fault_stall_s = fault_s;
    record_.prefetch_wait_s = wait;
    record_.faults = fault_pages;
    record_.h2d_bytes = totals_.h2d_bytes - before.h2d_bytes;
    record_.d2h_bytes = totals_.d2h_bytes - before.d2h_bytes;
    timeline_.push_back(record_);
  }

  // Ensures a free block slot; room_ready becomes the time the slot's old contents are out.
  bool make_room(bool for_prefetch, double& room_ready) {
    if (resident_blocks_ < capacity_blocks_) return true;
    const int32_t v = policy_->victim(*this, for_prefetch);
    if (v == kNone || in_batch_[v]) return false;
    evict(v, room_ready);
    return true;
  }

  void evict(int32_t b, double& room_ready) {
    const int64_t bytes = int64_t(resident_pages_[b]) * cost_.page_bytes;
    if (policy_->invalidates() && dead(b)) {
      totals_.discarded_bytes += bytes;
      record_.discard_bytes += bytes;
      dropped_[b] = 1;
    } else {
      link_free_s_ = std::max(link_free_s_, now_) + double(bytes) / cost_.evict_bytes_per_s;
      room_ready = std::max(room_ready, link_free_s_);
      totals_.d2h_bytes += bytes;
      totals_.evicted_bytes += bytes;
      record_.evict_bytes += bytes;
    }
    move_out(b);
  }

  void move_in(int32_t b, int16_t pages, int64_t bytes) {
    if (resident_pages_[b] == 0) {
      resident_blocks_ += 1;
      totals_.peak_resident_blocks = std::max(totals_.peak_resident_blocks, resident_blocks_);
      if (dead(b)) dead_.push_back(b);
    }
    resident_pages_[b] = pages;
    totals_.h2d_bytes += bytes;
    migrated_.move_to_back(b);
    policy_->on_resident(*this, b);
  }

  void move_out(int32_t b) {
    prefetched_bytes_[b] = 0;
    resident_pages_[b] = 0;
    resident_blocks_ -= 1;
    migrated_.remove(b);
    dead_.remove(b);
  }

  // Applies the allocator events recorded after kernel `after_kernel` was launched.
  void apply_memory_events(size_t& next, int64_t after_kernel) {
    for (; next < trace_.mem_events && trace_.mem_kernel[next] == after_kernel; ++next) {
      const int8_t action = trace_.mem_action[next];
      const uint64_t start = trace_.mem_address[next], end = start + trace_.mem_bytes[next];
      if (end <= start) continue;
      const uint64_t bb = uint64_t(cost_.block_bytes);
      for (uint64_t blk = start / bb; blk <= (end - 1) / bb; ++blk) {
        const int32_t b = dense_block(int64_t(blk));
        if (b == kNone) continue;
        const int64_t overlap = int64_t(std::min(end, (blk + 1) * bb) - std::max(start, blk * bb));
        if (action == 0) {
          allocated_[b] = 1;
          live_bytes_[b] += overlap;
          dead_.remove(b);
        } else if (action == 1) {
          live_bytes_[b] -= overlap;
          if (dead(b) && resident_pages_[b] > 0 && !dead_.contains(b)) dead_.push_back(b);
        } else if (action == 3 && resident_pages_[b] > 0) {
          totals_.released_bytes += int64_t(resident_pages_[b]) * cost_.page_bytes;
          move_out(b);
        }
      }
    }
  }

  const TraceView& trace_;
  const CostModel cost_;
  const int64_t capacity_blocks_;
  const int16_t pages_per_block_;
  Policy* policy_ = nullptr;
  std::unordered_map<int64_t, int32_t> real_to_dense_;
  std::vector<int16_t> resident_pages_;
  std::vector<double> arrival_s_;
  std::vector<int64_t> prefetched_bytes_;  // bytes prefetched and not yet used
  std::vector<uint8_t> dropped_;           // contents dropped (discarded) and not since rewritten
  std::vector<int64_t> live_bytes_;        // bytes of the block inside live allocations
  std::vector<uint8_t> allocated_;         // the allocator has handed out memory in the block
  std::vector<int64_t> in_use_by_;         // last kernel that accessed the block
  std::vector<uint8_t> in_batch_;          // admitted by the prefetch batch being issued
  BlockList migrated_, dead_;
  struct Admitted {
    int32_t block;
    int64_t bytes;
    bool populate;  // fresh pages, no copy
  };
  std::vector<Admitted> admitted_;  // of the batch being prefetched
  int64_t resident_blocks_ = 0;
  int64_t current_ = -1;
  double now_ = 0, link_free_s_ = 0, cpu_free_s_ = 0;
  Totals totals_;
  KernelRecord record_{};
  std::vector<KernelRecord> timeline_;
};

// `um`: the driver alone: demand faults, least-recently-migrated eviction, no prefetch.
class DriverOnlyPolicy : public Policy {
 public:
  void on_launch(Simulator&, size_t) override {}
  int32_t victim(Simulator& sim, bool for_prefetch) override { return for_prefetch ? kNone : sim.driver_victim(); }
};

struct DeepUMSwitches {
  bool learn_accesses = true;  // learn every block a kernel touches (false: only the blocks it faults on)
  bool prefetch = true, pre_evict = true, invalidate = true;
  bool evict_by_next_use = false;  // victims by foreseen next use (next_use.hpp), not least recently migrated
};

// `deepum`: correlation prefetch of the predicted next kernels' blocks, pre-eviction of blocks
// the window does not need, and invalidation of dead blocks.
class DeepUMPolicy : public Policy {
 public:
  DeepUMPolicy(const CorrelationConfig& config, DeepUMSwitches switches, size_t blocks)
      : predictor_(config), switches_(switches), protect_(blocks, 0) {}

  void on_launch(Simulator& sim, size_t kernel) override {
    kernel_ = kernel;
    const TraceView& trace = sim.trace();
    if (next_iteration_ < trace.iterations && kernel == size_t(trace.iteration_first_kernel[next_iteration_])) {
      if (switches_.evict_by_next_use) next_use_.start_iteration(kernel);
      ++next_iteration_;
    }
    const WindowChange change = predictor_.on_kernel(trace.exec_id[kernel]);
    for (size_t i = 0; i < change.popped; ++i) {
      for (int32_t b : window_.front()) protect_[b] -= 1;
      window_.pop_front();
    }
    issued_ = change.popped > issued_ ? 0 : issued_ - change.popped;
    const auto& predicted = predictor_.window();
    for (size_t i = predicted.size() - change.pushed; i < predicted.size(); ++i) {
      std::vector<int32_t> dense;
      dense.reserve(predicted[i].blocks.size());
      for (int64_t block_number : predicted[i].blocks) {
        const int32_t b = sim.dense_block(block_number);
        if (b == kNone) continue;
        protect_[b] += 1;
        dense.push_back(b);
      }
      window_.push_back(std::move(dense));
    }
    if (!switches_.prefetch) return;
    for (; issued_ < window_.size(); ++issued_) {
      wanted_.clear();
      for (int32_t b : window_[issued_])
        if (!sim.resident(b)) wanted_.push_back(b);
      need_at_ = kernel + issued_ + 1;
      if (sim.prefetch(wanted_) < wanted_.size()) break;
    }
  }

  void on_fault(Simulator& sim, int32_t block) override {
    if (!switches_.learn_accesses) predictor_.on_fault(sim.trace().block_number[block]);
  }
  void on_access(Simulator& sim, int32_t block, size_t) override {
    if (switches_.learn_accesses) predictor_.on_fault(sim.trace().block_number[block]);
    if (switches_.evict_by_next_use) next_use_.use(block, kernel_, sim.occupies(block));
  }
  void on_resident(Simulator&, int32_t block) override {
    if (switches_.evict_by_next_use) next_use_.arrive(block, kernel_);
  }

  // The same choice as the online engine's (driver_hooks/online.cpp).
  int32_t victim(Simulator& sim, bool for_prefetch) override {
    if (switches_.pre_evict && switches_.evict_by_next_use) {
      const int64_t chosen = next_use_.victim(
          kernel_, [&sim](int64_t b) { return sim.occupies(int32_t(b)); },
          [&](int64_t b) { return !sim.in_use(int32_t(b)) && !protect_[b]; },
          [&](int64_t b) { return switches_.invalidate && sim.dead(int32_t(b)); }, kForeseenDeadSearch,
          for_prefetch ? need_at_ : 0);
      if (chosen != NextUseEviction::kNoVictim || for_prefetch) return int32_t(chosen);
      return sim.driver_victim();
    }
    if (switches_.pre_evict) {
      if (switches_.invalidate)
        for (int32_t b = sim.dead_resident().head(); b != kNone; b = sim.dead_resident().next(b))
          if (!protect_[b] && !sim.in_use(b)) return b;
      for (int32_t b = sim.migrated_order().head(); b != kNone; b = sim.migrated_order().next(b))
        if (!protect_[b] && !sim.in_use(b)) return b;
      if (for_prefetch) return kNone;
    }
    return sim.driver_victim();
  }

  bool invalidates() const override { return switches_.invalidate; }
  uint64_t kernel_hits() const override { return predictor_.kernel_hits(); }
  uint64_t kernel_misses() const override { return predictor_.kernel_misses(); }
  size_t table_bytes() const override { return predictor_.table_bytes(); }

 private:
  Predictor predictor_;
  DeepUMSwitches switches_;
  std::vector<int32_t> protect_;             // how many window entries need the block
  NextUseEviction next_use_;                 // victims by foreseen next use (eviction "next_use")
  size_t kernel_ = 0;                        // the kernel being launched
  size_t next_iteration_ = 0;                // index of the next iteration to start
  uint64_t need_at_ = 0;                     // kernel the prefetch under way is for
  std::deque<std::vector<int32_t>> window_;  // dense blocks of the predictor's window entries
  size_t issued_ = 0;                        // window entries whose prefetches are all issued
  std::vector<int32_t> wanted_;
};

// `oracle`: knows the future: prefetches exactly the next N kernels' blocks in need order and
// evicts the block whose next use is furthest away (Belady), dropping dead victims without a copy.
class OraclePolicy : public Policy {
 public:
  OraclePolicy(const TraceView& trace, size_t lookahead)
      : trace_(trace), lookahead_(lookahead), next_use_(trace.blocks, kNever),
        next_use_after_row_(trace.access_offsets[trace.kernels], kNever) {
    std::vector<int64_t> seen(trace.blocks, kNever);
    for (size_t k = trace.kernels; k-- > 0;) {
      for (int64_t row = trace.access_offsets[k]; row < trace.access_offsets[k + 1]; ++row) {
        const int32_t b = trace.access_block[row];
        next_use_after_row_[row] = seen[b];
        seen[b] = int64_t(k);
      }
    }
    next_use_ = seen;
  }

  void on_launch(Simulator& sim, size_t kernel) override {
    const size_t last = std::min(trace_.kernels - 1, kernel + lookahead_);
    for (planned_ = std::max(planned_, kernel); planned_ <= last; ++planned_) {
      wanted_.clear();
      for (int64_t row = trace_.access_offsets[planned_]; row < trace_.access_offsets[planned_ + 1]; ++row)
        if (!sim.resident(trace_.access_block[row])) wanted_.push_back(trace_.access_block[row]);
      if (sim.prefetch(wanted_) < wanted_.size()) break;
    }
  }

  void on_access(Simulator& sim, int32_t block, size_t row) override {
    next_use_[block] = next_use_after_row_[row];
    if (sim.occupies(block)) heap_.emplace(next_use_[block], block);
  }

  void on_resident(Simulator&, int32_t block) override { heap_.emplace(next_use_[block], block); }

  int32_t victim(Simulator& sim, bool for_prefetch) override {
    int32_t chosen = kNone;
    skipped_.clear();
    while (!heap_.empty()) {
      const auto [use, b] = heap_.top();
      if (use != next_use_[b] || !sim.occupies(b)) {
        heap_.pop();  // stale entry
        continue;
      }
      if (sim.in_use(b)) {
        skipped_.push_back(heap_.top());
        heap_.pop();
        continue;
      }
      if (!for_prefetch || use > int64_t(planned_)) chosen = b;
      break;
    }
    for (const auto& entry : skipped_) heap_.push(entry);
    return chosen;  // its entry goes stale once it is evicted
  }

  bool invalidates() const override { return true; }

 private:
  const TraceView& trace_;
  const size_t lookahead_;
  std::vector<int64_t> next_use_;            // kernel of each block's next access (kNever: none)
  std::vector<int64_t> next_use_after_row_;  // kernel of the next access after access row
  std::priority_queue<std::pair<int64_t, int32_t>> heap_;  // (next use, block), lazily pruned
  std::vector<std::pair<int64_t, int32_t>> skipped_;
  size_t planned_ = 0;  // first kernel whose blocks are not all prefetched yet
  std::vector<int32_t> wanted_;
};

}  // namespace deepum
