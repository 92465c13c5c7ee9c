// The online engine: what DeepUM's modified driver does, from user space.
//
// - Launch hook (CUPTI driver-API callback on cuLaunchKernel*): reads the kernel's arguments,
//   derives its execution ID (kernel + the allocations its pointer arguments point into) and the
//   2 MiB UM blocks those allocations cover (its accesses).
// - Memory map (caching-allocator trace hook): live allocations and managed segments.
// - Engine: the correlation predictor (correlation.hpp, the same tables the simulator replays),
//   a residency model of the GPU under the capacity budget, pre-eviction of blocks the prediction
//   window does not need, and the prefetch plan; it runs on the launching thread, natively.
// - Worker: a native thread that never takes the GIL; it coalesces contiguous blocks into large
//   cudaMemPrefetchAsync calls on its own stream, evicts (prefetch to host) on a second stream and
//   discards dead blocks on a third, each ordered after the work launched before it was decided. A
//   prefetch of a block that is dead when it is chosen gives it fresh GPU pages without a copy.
// - Ordering without waiting on the CPU: every migration has a sequence number per stream, and the
//   worker writes the last one completed to a GPU word after each call (cuStreamWriteValue64). A
//   migration of a block waits for the previous migration of that block on the other stream, and a
//   kernel waits for the migrations of its own blocks (cuStreamWaitValue64 on its stream), so a
//   kernel runs on data in place instead of faulting on it while it is still moving. A wait only
//   ever names a write already enqueued (as an event wait names a recorded event), so no stream
//   can wait on work that a blocked thread has yet to issue.
// - A deepum kernel's own blocks that are not resident (a misprediction, or the first iterations)
//   are prefetched on the kernel's stream just before it, instead of faulting (unless the tables
//   learn from faults: then the kernel faults, and its faults are the lesson).
// - Fault log: CUPTI unified-memory counters (GPU page faults, migrations and their cause). With
//   learn_from "faults", the faults, attributed to launches by GPU time at each iteration mark, are
//   what the correlation tables learn.
//
// Only migrations are issued: a prefetch or an eviction never changes what memory holds.
#include <torch/extension.h>
#include <pybind11/numpy.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>  // also brings generated_cuda_meta.h (the launch parameter structs)

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "correlation_config.hpp"
#include "next_use.hpp"

namespace CA = c10::cuda::CUDACachingAllocator;
using namespace deepum;

namespace {

constexpr int kBlockShift = 21;
constexpr uint64_t kBlockBytes = uint64_t(1) << kBlockShift;
constexpr int32_t kNone = -1;
constexpr int kDeadSearch = 64;  // LRU eviction: candidates searched for a dead victim (dropped without a copy)

void check_cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown CUPTI error"));
  }
}

// ---------------------------------------------------------------------------------------------
// Everything a trace (TRACE_FORMAT.md) holds, gathered while recording; Python writes the file.
struct Access {
  int64_t block;
  int32_t pages;  // distinct 4 KiB pages the kernel's arguments cover in the block
  bool write;     // the argument's allocation was made since the previous launch (a fresh output)
};

class Recorder {
 public:
  std::atomic<bool> on{false};

  void launch(uint32_t correlation, uint64_t exec_id, const char* name, const std::vector<Access>& accesses) {
    std::lock_guard<std::mutex> lock(mutex_);
    correlation_.push_back(correlation);
    exec_id_.push_back(exec_id);
    auto [it, added] = names_.emplace(name ? name : "?", uint32_t(names_.size()));
    name_idx_.push_back(it->second);
    for (const Access& a : accesses) {
      block_.push_back(a.block);
      pages_.push_back(int16_t(std::min(a.pages, 512)));
      write_.push_back(a.write);
    }
    offsets_.push_back(int64_t(block_.size()));
  }
  void memory(int8_t action, uint64_t address, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    mem_.push_back({int64_t(correlation_.size()) - 1, action, address, bytes});
  }
  void iteration() {
    std::lock_guard<std::mutex> lock(mutex_);
    iteration_end_.push_back(int64_t(correlation_.size()));
  }
  void kernel_time(uint32_t correlation, uint64_t start, uint64_t end) {
    std::lock_guard<std::mutex> lock(mutex_);
    kernels_.push_back({correlation, start, end});
  }
  void fault(uint64_t t, uint64_t address, int8_t kind) {
    std::lock_guard<std::mutex> lock(mutex_);
    faults_.push_back({t, address, kind});
  }
  void transfer(uint64_t t, uint64_t address, uint64_t bytes, int8_t direction, int8_t cause) {
    std::lock_guard<std::mutex> lock(mutex_);
    transfers_.push_back({t, address, bytes, direction, cause});
  }

  // Hands everything over as NumPy arrays (in the trace's names where they match) and clears it.
  py::dict drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    py::dict out;
    out["launch_correlation"] = as_array(correlation_);
    out["kernel_exec_id"] = as_array(exec_id_);
    out["kernel_name_idx"] = as_array(name_idx_);
    std::vector<std::string> names(names_.size());
    for (const auto& [name, idx] : names_) names[idx] = name;
    out["kernel_names"] = names;
    out["access_offsets"] = as_array(offsets_);
    out["access_block"] = as_array(block_);
    out["access_pages"] = as_array(pages_);
    std::vector<uint8_t> writes(write_.begin(), write_.end());
    out["access_write"] = as_array(writes);
    out["iteration_end_launch"] = as_array(iteration_end_);
    out["mem_kernel"] = column<int64_t>(mem_, [](const Mem& m) { return m.after_launch; });
    out["mem_action"] = column<int8_t>(mem_, [](const Mem& m) { return m.action; });
    out["mem_address"] = column<uint64_t>(mem_, [](const Mem& m) { return m.address; });
    out["mem_bytes"] = column<uint64_t>(mem_, [](const Mem& m) { return m.bytes; });
    out["activity_correlation"] = column<uint32_t>(kernels_, [](const KernelTime& k) { return k.correlation; });
    out["activity_start_ns"] = column<uint64_t>(kernels_, [](const KernelTime& k) { return k.start; });
    out["activity_end_ns"] = column<uint64_t>(kernels_, [](const KernelTime& k) { return k.end; });
    out["fault_t_ns"] = column<uint64_t>(faults_, [](const Fault& f) { return f.t; });
    out["fault_address"] = column<uint64_t>(faults_, [](const Fault& f) { return f.address; });
    out["fault_kind"] = column<int8_t>(faults_, [](const Fault& f) { return f.kind; });
    out["xfer_t_ns"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.t; });
    out["xfer_address"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.address; });
    out["xfer_bytes"] = column<uint64_t>(transfers_, [](const Transfer& x) { return x.bytes; });
    out["xfer_dir"] = column<int8_t>(transfers_, [](const Transfer& x) { return x.direction; });
    out["xfer_cause"] = column<int8_t>(transfers_, [](const Transfer& x) { return x.cause; });
    correlation_.clear(), name_idx_.clear(), exec_id_.clear(), names_.clear();
    offsets_.assign(1, 0), block_.clear(), iteration_end_.clear(), pages_.clear(), write_.clear();
    mem_.clear(), kernels_.clear(), faults_.clear(), transfers_.clear();
    return out;
  }

 private:
  struct Mem { int64_t after_launch; int8_t action; uint64_t address, bytes; };
  struct KernelTime { uint32_t correlation; uint64_t start, end; };
  struct Fault { uint64_t t, address; int8_t kind; };
  struct Transfer { uint64_t t, address, bytes; int8_t direction, cause; };

  template <typename T>
  static py::array_t<T> as_array(const std::vector<T>& v) {
    py::array_t<T> out(v.size());
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
  }
  template <typename T, typename R, typename F>
  static py::array_t<T> column(const std::vector<R>& rows, F field) {
    py::array_t<T> values(rows.size());
    T* p = values.mutable_data();
    for (size_t i = 0; i < rows.size(); ++i) p[i] = field(rows[i]);
    return values;
  }

  std::mutex mutex_;
  std::vector<uint32_t> correlation_, name_idx_;
  std::vector<uint64_t> exec_id_;
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<int64_t> offsets_{0}, block_, iteration_end_;  // iteration_end_: launches at each mark
  std::vector<int16_t> pages_;
  std::vector<bool> write_;
  std::vector<Mem> mem_;
  std::vector<KernelTime> kernels_;
  std::vector<Fault> faults_;
  std::vector<Transfer> transfers_;
};

Recorder g_recorder;
// Learning from faults (learn_from "faults"): the launches (correlation and exec IDs), kernel records and
// faults, drained at each iteration mark and attributed in Python (deepum/fault_attribution.py).
Recorder g_fault_log;
const std::vector<Access> kNoAccesses;

// ---------------------------------------------------------------------------------------------
// Live allocations and managed segments, from the caching allocator's trace hook.
class MemoryMap {
 public:
  void on_event(const CA::TraceEntry& e) {
    const uint64_t addr = e.addr_, size = e.size_;
    int8_t action = -1;  // TRACE_FORMAT.md mem_action
    {
      std::lock_guard<std::mutex> lock(mutex_);
      switch (e.action_) {
        case CA::TraceEntry::ALLOC:
          live_[addr] = size;
          born_[addr] = ++allocations_;
          order_after_discards(addr, size, reinterpret_cast<cudaStream_t>(e.stream_));
          action = 0;
          break;
        // Completed, not requested: memory used on other streams is free only once they are done.
        case CA::TraceEntry::FREE_COMPLETED: live_.erase(addr); born_.erase(addr); action = 1; break;
        case CA::TraceEntry::SEGMENT_ALLOC: segments_[addr] = size; action = 2; break;
        case CA::TraceEntry::SEGMENT_FREE: segments_.erase(addr); action = 3; break;
        default: break;
      }
    }
    if (action >= 0 && g_recorder.on.load(std::memory_order_relaxed)) g_recorder.memory(action, addr, size);
  }
  // Number of allocations made so far; an allocation numbered above a launch's mark is newer.
  uint64_t allocations() const { return allocations_; }
  uint64_t born(uint64_t start) const {
    auto it = born_.find(start);
    return it == born_.end() ? 0 : it->second;
  }
  // The live allocation holding `p`: {start, size}, or {0, 0}.
  std::pair<uint64_t, uint64_t> allocation(uint64_t p) const {
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return {0, 0};
    --it;
    if (p >= it->first + it->second) return {0, 0};
    return {it->first, it->second};
  }
  // Whether block b lies wholly inside one managed segment and no live allocation overlaps it (its
  // contents are dead). A block a segment boundary cuts is never dead: the driver discards whole
  // pages, and a page across the boundary may hold another segment's data.
  bool dead(int64_t b) const {
    const auto [start, bytes, segment] = managed_part(b);
    if (bytes != kBlockBytes) return false;
    auto it = live_.lower_bound(start + bytes);  // first allocation starting at or past the part's end
    if (it == live_.begin()) return true;
    --it;  // the last one starting before the end: it overlaps iff it ends past the part's start
    return it->first + it->second <= start;
  }

  // Discards (to the host: a dead victim dropped; to the GPU: a dead block given fresh pages instead
  // of a copy of its dead contents). The engine chooses a discard only while the block is dead; the
  // choice carries a ticket, the number of allocations made so far. Allocating memory in the block
  // before the worker issues the discard cancels it (each choice made before that allocation, not
  // later ones); allocating it afterwards makes the allocating stream wait for the discard to finish.
  // So a discard only lands on memory that has held no data since the work launched before its
  // choice, which the discard waits for. A block can be chosen again while its last discard is in
  // flight: the issued discard is kept beside the new choices.
  bool choose_discard(int64_t b, uint64_t& ticket) {  // caller holds mutex(); false when b is not dead
    if (!dead(b)) return false;
    pending_[b].queued += 1;
    ticket = allocations_;
    return true;
  }
  // Takes one choice of b: true when the one with `ticket` may be issued now (no allocation in b since).
  bool take_pending(int64_t b, uint64_t ticket) {
    auto it = pending_.find(b);
    if (it == pending_.end() || it->second.queued == 0) return false;
    Discard& d = it->second;
    d.queued -= 1;
    const bool valid = ticket >= d.cancelled_at && dead(b);  // dead: always so then, checked once more
    if (!d.queued && !d.issued) pending_.erase(it);
    return valid;
  }
  // The latest discard of b was issued; an allocation that waits for it waits for the earlier ones
  // too (each runs after the block's previous command).
  void discard_issued(int64_t b, const std::shared_ptr<CUevent_st>& done) { pending_[b].issued = done; }
  uint64_t discards_cancelled() const { return discards_cancelled_; }
  uint64_t allocation_waits() const { return allocation_waits_; }

  // The part of block `b` inside a managed segment: {start, bytes, segment start}, bytes 0 when none.
  std::tuple<uint64_t, uint64_t, uint64_t> managed_part(int64_t b) const {
    const uint64_t lo = uint64_t(b) << kBlockShift, hi = lo + kBlockBytes;
    auto it = segments_.upper_bound(lo);
    if (it != segments_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second > lo) it = prev;
    }
    if (it == segments_.end() || it->first >= hi) return {0, 0, 0};
    const uint64_t start = std::max(lo, it->first), end = std::min(hi, it->first + it->second);
    return {start, end - start, it->first};
  }
  std::mutex& mutex() const { return mutex_; }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> live_, segments_;
  std::unordered_map<uint64_t, uint64_t> born_;  // allocation start -> its number
  uint64_t allocations_ = 0;
  struct Discard {
    uint32_t queued = 0;                   // choices not taken by the worker yet
    uint64_t cancelled_at = 0;             // number of the latest allocation in the block: it cancels earlier choices
    std::shared_ptr<CUevent_st> issued;    // completion of the latest discard issued (null: none)
  };
  std::unordered_map<int64_t, Discard> pending_;
  uint64_t discards_cancelled_ = 0, allocation_waits_ = 0;

  void order_after_discards(uint64_t addr, uint64_t size, cudaStream_t stream) {
    if (pending_.empty() || !size) return;
    for (uint64_t b = addr >> kBlockShift; b <= (addr + size - 1) >> kBlockShift; ++b) {
      auto it = pending_.find(int64_t(b));
      if (it == pending_.end()) continue;
      Discard& d = it->second;
      if (d.issued) {
        cudaStreamWaitEvent(stream, reinterpret_cast<cudaEvent_t>(d.issued.get()), 0);
        allocation_waits_ += 1;
        d.issued.reset();  // later allocations in the block come on the same stream: ordered after this one
      }
      if (d.queued) discards_cancelled_ += 1;
      d.cancelled_at = allocations_;
      if (!d.queued) pending_.erase(it);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// kPopulate: a prefetch of a dead block, given fresh GPU pages instead of a copy (a discard to the GPU).
enum class Op : uint8_t { kPrefetch, kPopulate, kEvict, kDiscard };

// The stream a command runs on; each lane numbers its commands 1, 2, ... in issue order. Discards
// and populations (no copy) have their own lane so that they never queue behind copies: allocations
// of the memory wait for them, and kernels for the populated blocks.
enum Lane : int { kToGpu = 0, kToHost = 1, kDiscarded = 2 };
constexpr int kLanes = 3;
constexpr Lane kAllLanes[kLanes] = {kToGpu, kToHost, kDiscarded};
inline Lane lane_of(Op op) { return op == Op::kPrefetch ? kToGpu : op == Op::kEvict ? kToHost : kDiscarded; }

struct Command {
  Op op;
  int64_t block;
  CUevent after = nullptr;  // run after this event: the work launched before the decision (null: at once)
  uint64_t seq = 0;         // number of this command on its lane
  Lane wait_lane = kToGpu;  // run after command `wait` of lane `wait_lane` (the block's previous command;
  uint64_t wait = 0;        // 0: none, or on this command's own lane, which runs in order anyway)
  uint64_t ticket = 0;      // kDiscard, kPopulate: the choice's ticket (MemoryMap::choose_discard)
};

struct Counters {
  std::atomic<uint64_t> launches{0}, prefetch_calls{0}, prefetch_bytes{0}, evict_calls{0}, evict_bytes{0};
  std::atomic<uint64_t> discard_calls{0}, discard_bytes{0};
  std::atomic<uint64_t> populate_calls{0}, populate_bytes{0};  // dead blocks brought to the GPU without a copy
  std::atomic<uint64_t> gpu_faults{0}, fault_h2d_bytes{0}, prefetch_h2d_bytes{0}, other_h2d_bytes{0}, d2h_bytes{0};
  std::atomic<uint64_t> cuda_errors{0}, kernel_waits{0}, kernel_waits_unissued{0};
  std::atomic<uint64_t> demand_prefetch_calls{0}, demand_prefetch_bytes{0};
  std::atomic<uint64_t> param_info_failures_func{0}, param_info_failures_kernel{0}, launches_without_arguments{0};
  std::atomic<uint64_t> lane_waits{0};  // waits of a worker lane for another lane's progress
  std::atomic<uint64_t> hook_ns{0};     // CPU time the launch hook spent on the launching threads
  std::atomic<uint64_t> fault_lessons{0}, faults_learned{0};  // launches and blocks learned from the fault log
};

Counters g_counters;
MemoryMap g_memory;
std::mutex g_error_mutex;
std::string g_last_error;  // text of the last failed CUDA call of the engine or its worker

void note_failure(const char* what, const char* text) {
  g_counters.cuda_errors++;
  std::lock_guard<std::mutex> lock(g_error_mutex);
  g_last_error = std::string(what) + ": " + (text ? text : "unknown error");
}

// Counts and remembers a failed driver call; true when it succeeded.
bool driver_ok(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  const char* text = nullptr;
  cuGetErrorString(result, &text);
  note_failure(what, text);
  return false;
}

// The managed parts of `blocks` (in order) as (start, bytes) ranges, contiguous parts of one managed
// segment joined: one migration call each. Read under the memory map's lock, issued without it: a
// migration never changes contents, so launches and allocations need not wait for it.
std::vector<std::pair<uint64_t, uint64_t>> contiguous_ranges(const std::vector<int64_t>& blocks) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::lock_guard<std::mutex> lock(g_memory.mutex());
  uint64_t segment = 0;
  for (int64_t b : blocks) {
    const auto [part, part_bytes, part_segment] = g_memory.managed_part(b);
    if (!part_bytes) continue;
    if (!ranges.empty() && ranges.back().first + ranges.back().second == part && segment == part_segment) {
      ranges.back().second += part_bytes;
    } else {
      ranges.emplace_back(part, part_bytes);
      segment = part_segment;
    }
  }
  return ranges;
}

// Issues migrations on background streams; never takes the GIL.
class Worker {
 public:
  explicit Worker(int device) : device_(device), done_(allocate_done_words(device)), thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
    cudaDeviceSynchronize();  // no kernel may still be about to read the progress words
    cuMemFree(done_);
  }
  // GPU address of the word holding the last command completed on `lane`.
  CUdeviceptr done_word(Lane lane) const { return done_ + lane * sizeof(uint64_t); }
  // The last command on `lane` whose completion write is enqueued: the most a stream may wait for.
  uint64_t published(Lane lane) const { return published_[lane].load(std::memory_order_acquire); }
  void submit(std::vector<Command>&& commands) {
    if (commands.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& c : commands) queue_.push_back(c);
    }
    wake_.notify_one();
  }
  // Waits until every submitted command has been issued and has completed on the GPU.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
    lock.unlock();
    for (cudaStream_t stream : streams_)
      if (stream) cudaStreamSynchronize(stream);
  }

 private:
  void run() {
    cudaSetDevice(device_);
    for (cudaStream_t& stream : streams_) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    gpu_.type = cudaMemLocationTypeDevice;
    gpu_.id = device_;
    host_.type = cudaMemLocationTypeHost;
    host_.id = 0;
    std::vector<Command> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        busy_ = false;
        idle_.notify_all();
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty() && stopping_) break;
        batch.assign(queue_.begin(), queue_.end());
        queue_.clear();
        busy_ = true;
      }
      issue(batch);
    }
    for (cudaStream_t& stream : streams_) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
      stream = nullptr;
    }
  }

  static CUdeviceptr allocate_done_words(int device) {
    cudaSetDevice(device);
    cudaFree(nullptr);  // the primary context, current on this thread
    CUdeviceptr words = 0;
    if (cuMemAlloc(&words, kLanes * sizeof(uint64_t)) != CUDA_SUCCESS ||
        cuMemsetD8(words, 0, kLanes * sizeof(uint64_t)) != CUDA_SUCCESS)
      throw std::runtime_error("deepum: could not allocate the worker's progress words on the GPU");
    return words;
  }

  // Coalesces runs of contiguous blocks (same operation, same ordering event) into one call each;
  // after each call, publishes the lane's progress for kernels and the other lanes to wait on.
  void issue(const std::vector<Command>& batch) {
    size_t i = 0;
    while (i < batch.size()) {
      size_t j = i + 1;
      while (j < batch.size() && batch[j].op == batch[i].op && batch[j].after == batch[i].after &&
             batch[j].block == batch[j - 1].block + 1)
        ++j;
      const Command& first = batch[i];
      const Lane lane = lane_of(first.op);
      cudaStream_t stream = streams_[lane];
      if (first.after && after_waited_[lane] != first.after) {
        cudaStreamWaitEvent(stream, reinterpret_cast<cudaEvent_t>(first.after), 0);
        after_waited_[lane] = first.after;
      }
      uint64_t need[kLanes] = {0, 0, 0};
      for (size_t k = i; k < j; ++k) need[batch[k].wait_lane] = std::max(need[batch[k].wait_lane], batch[k].wait);
      for (const Lane other : kAllLanes) {
        // Issued earlier by this thread (unless its write failed): never a wait on work yet to come.
        const uint64_t target = std::min(need[other], published(other));
        if (other == lane || target <= lane_waited_[lane][other]) continue;
        if (driver_ok(cuStreamWaitValue64(stream, done_word(other), target, CU_STREAM_WAIT_VALUE_GEQ), "wait for another lane"))
          g_counters.lane_waits++;
        lane_waited_[lane][other] = target;
      }
      if (first.op == Op::kDiscard || first.op == Op::kPopulate) {
        const std::vector<int64_t> left = discard(batch, i, j, first.op == Op::kPopulate, stream);
        if (first.op == Op::kPopulate) migrate(left, true, stream);  // cancelled: their contents count again
      } else {
        std::vector<int64_t> blocks;
        for (size_t k = i; k < j; ++k) blocks.push_back(batch[k].block);
        migrate(blocks, lane == kToGpu, stream);
      }
      // Written even when the call failed; published only once the write is enqueued.
      if (driver_ok(cuStreamWriteValue64(stream, done_word(lane), batch[j - 1].seq, 0), "publish progress"))
        published_[lane].store(batch[j - 1].seq, std::memory_order_release);
      if (first.after && (j == batch.size() || batch[j].after != first.after)) {
        cuEventDestroy(first.after);  // a later event may reuse the handle: forget it was waited on
        for (CUevent& waited : after_waited_)
          if (waited == first.after) waited = nullptr;
      }
      i = j;
    }
  }

  // Issues the discards of batch[from, to) on `stream`, contiguous blocks of one segment in one range:
  // to the host (dead victims dropped without a copy) or to the GPU (dead blocks given fresh pages, at
  // 2.8x the rate of copying back dead contents: bench/populate_probe.py). Holds the memory map's lock
  // from the last check to the record of the event that allocations of the same memory will wait on.
  // Returns the blocks whose discard was cancelled or failed before it was enqueued.
  std::vector<int64_t> discard(const std::vector<Command>& batch, size_t from, size_t to, bool to_gpu,
                               cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(g_memory.mutex());
    std::vector<int64_t> taken, left;
    std::vector<void*> starts;
    std::vector<size_t> sizes;
    uint64_t last_segment = 0;
    for (size_t k = from; k < to; ++k) {
      const int64_t b = batch[k].block;
      if (!g_memory.take_pending(b, batch[k].ticket)) {
        left.push_back(b);
        continue;
      }
      const auto [part, part_bytes, segment] = g_memory.managed_part(b);
      if (!taken.empty() && segment == last_segment && reinterpret_cast<uint64_t>(starts.back()) + sizes.back() == part) {
        sizes.back() += part_bytes;
      } else {
        starts.push_back(reinterpret_cast<void*>(part));
        sizes.push_back(part_bytes);
        last_segment = segment;
      }
      taken.push_back(b);
    }
    if (taken.empty()) return left;
    size_t location_index = 0;
    const cudaError_t err = cudaMemDiscardAndPrefetchBatchAsync(starts.data(), sizes.data(), starts.size(),
                                                                to_gpu ? &gpu_ : &host_, &location_index, 1, 0, stream);
    if (err != cudaSuccess) {
      note_error(to_gpu ? "populate" : "discard", err);
      left.insert(left.end(), taken.begin(), taken.end());
      return left;
    }
    cudaEvent_t done = nullptr;
    if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess || cudaEventRecord(done, stream) != cudaSuccess) {
      note_error(to_gpu ? "populate event" : "discard event", cudaGetLastError());
      cudaStreamSynchronize(stream);  // without an event to order re-allocations after: nothing may reuse it first
      return left;
    }
    std::shared_ptr<CUevent_st> shared(reinterpret_cast<CUevent>(done), [](CUevent e) { cuEventDestroy(e); });
    for (int64_t b : taken) g_memory.discard_issued(b, shared);
    (to_gpu ? g_counters.populate_calls : g_counters.discard_calls)++;
    for (size_t size : sizes) (to_gpu ? g_counters.populate_bytes : g_counters.discard_bytes) += size;
    return left;
  }

  static void note_error(const char* what, cudaError_t err) {
    note_failure(what, cudaGetErrorString(err));
    cudaGetLastError();
  }

  // Migrates `blocks` with a copy, one call per contiguous range.
  void migrate(const std::vector<int64_t>& blocks, bool to_gpu, cudaStream_t stream) {
    for (const auto& [start, bytes] : contiguous_ranges(blocks)) {
      const cudaError_t err = cudaMemPrefetchAsync(reinterpret_cast<void*>(start), bytes, to_gpu ? gpu_ : host_, 0, stream);
      if (err != cudaSuccess) note_error(to_gpu ? "prefetch" : "evict", err);
      (to_gpu ? g_counters.prefetch_calls : g_counters.evict_calls)++;
      (to_gpu ? g_counters.prefetch_bytes : g_counters.evict_bytes) += bytes;
    }
  }

  int device_;
  CUdeviceptr done_;  // kLanes words: the last command completed on each lane
  std::atomic<uint64_t> published_[kLanes] = {0, 0, 0};  // per lane: the last command whose write is enqueued
  cudaStream_t streams_[kLanes] = {nullptr, nullptr, nullptr};
  cudaMemLocation gpu_{}, host_{};
  CUevent after_waited_[kLanes] = {nullptr, nullptr, nullptr};  // the last event each lane waits on
  uint64_t lane_waited_[kLanes][kLanes] = {};  // [lane][other]: the other lane's progress it already waits for
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Command> queue_;
  bool stopping_ = false, busy_ = true;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
enum class Mode { kUm = 1, kAdvise = 2, kDeepUM = 3 };

struct Switches {
  bool prefetch = true, pre_evict = true, invalidate = true, learn_accesses = true;
  bool evict_by_next_use = false;  // victims by next use foreseen from the last iteration, not by LRU
};

// Residency model, predictor and eviction choice; called on the launching thread.
class Engine {
 public:
  Engine(Mode mode, int64_t capacity_blocks, const CorrelationConfig& config, Switches switches, int device)
      : mode_(mode), device_(device), capacity_blocks_(capacity_blocks), switches_(switches), predictor_(config),
        worker_(device) {}

  void on_launch(uint64_t exec_id, const std::vector<int64_t>& blocks, CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    g_counters.launches++;
    launch_ += 1;
    std::vector<int64_t> missing;
    uint64_t need[kLanes] = {0, 0, 0};  // per lane: the latest command of one of the kernel's blocks
    for (int64_t b : blocks) {
      BlockState& s = state(b);
      if (s.used_by == 0) touched_blocks_ += 1;
      s.used_by = launch_;
      if (s.iteration != iteration_) {
        s.iteration = iteration_;
        touched_in_iteration_ += 1;
      }
      if (!s.resident) missing.push_back(b);
      need[s.last_lane] = std::max(need[s.last_lane], s.moved[s.last_lane]);
      if (switches_.evict_by_next_use) next_use_.use(s.dense, launch_, s.resident);
    }
    for (int64_t b : missing) make_resident(b, false);
    // Prefetching only pays once the blocks touched so far exceed the capacity: until then every
    // block stays resident once it has arrived. Without budget pressure the predictor costs the
    // launch nothing and first touches fault as in mode um (memory placed by prefetches on the
    // kernel's stream made a 24-layer GPT-2 step 18% slower on the H200).
    const bool pressure = touched_blocks_ > capacity_blocks_;
    const bool prefetching = mode_ == Mode::kDeepUM && switches_.prefetch && pressure;
    if (mode_ == Mode::kDeepUM && pressure) predict(exec_id, blocks);
    // Waits for the blocks' earlier migrations first, so that an eviction still in flight cannot
    // land after the prefetch below. Mode advise prefetches each kernel's missing blocks (its
    // intermediates) this way too, without prediction. Tables that learn from faults need the
    // kernel to fault on them instead.
    wait_for_migrations(need, stream);
    if ((prefetching && switches_.learn_accesses) || (mode_ == Mode::kAdvise && pressure))
      prefetch_on_stream(missing, stream);
    while (resident_ > capacity_blocks_) {
      const int64_t v = victim(false, 0);
      if (v == kNone) break;
      evict(v);
    }
    if (prefetching) plan_prefetches();
    peak_resident_ = std::max(peak_resident_, resident_);
    if (!evictions_.empty() || !prefetches_.empty()) {
      // The rest runs once the GPU has finished the work launched before this kernel: the GPU-time
      // point the residency model stands for (the CPU may be far ahead).
      std::sort(evictions_.begin(), evictions_.end(), [](const Command& a, const Command& b) { return a.block < b.block; });
      CUevent after = nullptr;
      if (!driver_ok(cuEventCreate(&after, CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
          !driver_ok(cuEventRecord(after, stream), "cuEventRecord"))
        after = nullptr;
      evictions_.insert(evictions_.end(), prefetches_.begin(), prefetches_.end());
      for (Command& c : evictions_) {
        c.after = after;
        number(c);
      }
      worker_.submit(std::move(evictions_));
      evictions_.clear();
      prefetches_.clear();
    }
  }

  void drain() { worker_.drain(); }
  void learn_faults(const uint64_t* exec_ids, const int64_t* offsets, const int64_t* blocks, size_t launches) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < launches; ++i) {
      predictor_.learn_faults(exec_ids[i], blocks + offsets[i], size_t(offsets[i + 1] - offsets[i]));
      g_counters.faults_learned += uint64_t(offsets[i + 1] - offsets[i]);
    }
    g_counters.fault_lessons += launches;
  }
  // Starts a new iteration; returns the bytes of distinct blocks the ending one touched.
  uint64_t next_iteration() {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t touched = touched_in_iteration_ * kBlockBytes;
    iteration_ += 1;
    touched_in_iteration_ = 0;
    if (switches_.evict_by_next_use) next_use_.start_iteration(launch_ + 1);
    return touched;
  }
  uint64_t peak_resident_bytes() const { return uint64_t(peak_resident_) * kBlockBytes; }
  uint64_t resident_bytes() const { return uint64_t(resident_) * kBlockBytes; }
  uint64_t kernel_hits() const { return predictor_.kernel_hits(); }
  uint64_t kernel_misses() const { return predictor_.kernel_misses(); }
  size_t table_bytes() const { return predictor_.table_bytes(); }

 private:
  struct BlockState {
    bool resident = false;
    int32_t protect = 0;      // window entries that need the block
    uint64_t used_by = 0;     // last launch that touched it
    uint64_t iteration = UINT64_MAX;  // last iteration that touched it
    Lane last_lane = kToGpu;  // lane of its latest command
    int64_t dense = 0;        // its index among the blocks seen (for next_use_)
    uint64_t moved[kLanes] = {0, 0, 0};  // per lane: the number of its latest command there (0: none)
    std::list<int64_t>::iterator lru;
  };

  BlockState& state(int64_t b) {
    auto [it, added] = blocks_.try_emplace(b);
    if (added) {
      it->second.dense = int64_t(dense_blocks_.size());
      dense_blocks_.push_back(b);
    }
    return it->second;
  }

  // Numbers a command on its lane and orders it after the block's latest command (each command of
  // a block waits for the one before it, so they run in decision order across lanes).
  void number(Command& c) {
    BlockState& s = state(c.block);
    const Lane lane = lane_of(c.op);
    c.seq = ++lane_seq_[lane];
    c.wait_lane = s.last_lane;
    c.wait = s.last_lane == lane ? 0 : s.moved[s.last_lane];
    s.moved[lane] = c.seq;
    s.last_lane = lane;
  }

  // Makes the launching stream wait (on the GPU, not the CPU) until, on each lane, command need[lane]
  // (the latest of the kernel's blocks there) has completed, as far as the worker has issued it (a
  // command not yet issued is not waited for: the kernel may fault on its block); waits the stream
  // already has are not repeated.
  void wait_for_migrations(const uint64_t (&need)[kLanes], CUstream stream) {
    auto& waited = stream_waited_[stream];
    for (const Lane lane : kAllLanes) {
      const uint64_t published = worker_.published(lane);
      if (need[lane] > published) g_counters.kernel_waits_unissued++;
      const uint64_t target = std::min(need[lane], published);
      if (target <= waited[lane]) continue;
      if (driver_ok(cuStreamWaitValue64(stream, worker_.done_word(lane), target, CU_STREAM_WAIT_VALUE_GEQ),
                    "kernel wait for its blocks"))
        g_counters.kernel_waits++;
      waited[lane] = target;
    }
  }

  // Prefetches the kernel's missing blocks on its own stream, ahead of it (contiguous blocks in one
  // call). Its launching thread pays the call (~100 us each); in steady state the window has
  // already brought them.
  void prefetch_on_stream(const std::vector<int64_t>& missing, CUstream stream) {
    if (missing.empty()) return;
    CUmemLocation gpu{};
    gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
    gpu.id = device_;
    for (const auto& [start, bytes] : contiguous_ranges(missing)) {
      if (!driver_ok(cuMemPrefetchAsync(CUdeviceptr(start), bytes, gpu, 0, stream), "prefetch on the kernel's stream"))
        continue;
      g_counters.demand_prefetch_calls++;
      g_counters.demand_prefetch_bytes += bytes;
    }
    for (int64_t b : missing) state(b).last_lane = kToGpu;
  }

  void predict(uint64_t exec_id, const std::vector<int64_t>& blocks) {
    const WindowChange change = predictor_.on_kernel(exec_id);
    for (size_t i = 0; i < change.popped; ++i) {
      for (int64_t b : window_.front()) state(b).protect -= 1;
      window_.pop_front();
    }
    issued_ = change.popped > issued_ ? 0 : issued_ - change.popped;
    const auto& predicted = predictor_.window();
    for (size_t i = predicted.size() - change.pushed; i < predicted.size(); ++i) {
      for (int64_t b : predicted[i].blocks) state(b).protect += 1;
      window_.push_back(predicted[i].blocks);
    }
    if (switches_.learn_accesses)
      for (int64_t b : blocks) predictor_.on_fault(b);
  }

  // Prefetches the window's blocks in need order, entry by entry (each entry's blocks in address
  // order so that contiguous ones coalesce), evicting for room; stops where no victim is allowed.
  void plan_prefetches() {
    for (; issued_ < window_.size(); ++issued_) {
      const size_t first = prefetches_.size();
      bool complete = true;
      for (int64_t b : window_[issued_]) {
        if (state(b).resident) continue;
        if (resident_ >= capacity_blocks_) {
          const int64_t v = victim(true, launch_ + issued_ + 1);
          if (v == kNone) {
            complete = false;
            break;
          }
          evict(v);
        }
        make_resident(b, true);
      }
      std::sort(prefetches_.begin() + first, prefetches_.end(),
                [](const Command& a, const Command& b) { return a.block < b.block; });
      if (!complete) return;
    }
  }

  void make_resident(int64_t b, bool prefetch) {
    BlockState& s = state(b);
    if (s.resident) return;
    s.resident = true;
    s.lru = lru_.insert(lru_.end(), b);
    resident_ += 1;
    if (switches_.evict_by_next_use) next_use_.arrive(s.dense, launch_);
    if (prefetch) {
      Command c{Op::kPrefetch, b};
      if (discard_chosen(b, c.ticket)) c.op = Op::kPopulate;
      prefetches_.push_back(c);
    }
  }

  // Evicts b: dropped without a copy when invalidation is on and no live allocation overlaps it.
  void evict(int64_t b) {
    BlockState& s = state(b);
    s.resident = false;
    lru_.erase(s.lru);
    resident_ -= 1;
    Command c{Op::kEvict, b};
    if (discard_chosen(b, c.ticket)) c.op = Op::kDiscard;
    evictions_.push_back(c);
  }

  bool invalidates() const { return mode_ == Mode::kDeepUM && switches_.invalidate; }
  // With invalidation, whether b is dead and a discard of it is now chosen (its move, in or out, then
  // needs no copy; see MemoryMap::choose_discard).
  bool discard_chosen(int64_t b, uint64_t& ticket) {
    if (!invalidates()) return false;
    std::lock_guard<std::mutex> lock(g_memory.mutex());
    return g_memory.choose_discard(b, ticket);
  }
  static bool dead(int64_t b) {
    std::lock_guard<std::mutex> lock(g_memory.mutex());
    return g_memory.dead(b);
  }

  // A block the running kernel does not use; in deepum mode with pre-eviction, also none the
  // prediction window needs (prefetches stop rather than evict those): the least recently migrated
  // one, or with pre-eviction and eviction "next_use" the one foreseen last (a prefetch for launch
  // need_at never evicts a block foreseen before it). With invalidation, a dead victim goes without
  // a copy, and LRU eviction takes a dead block among its first kDeadSearch candidates first.
  int64_t victim(bool for_prefetch, uint64_t need_at) {
    const bool spare_window = mode_ == Mode::kDeepUM && switches_.pre_evict;
    if (spare_window && switches_.evict_by_next_use) {
      const int64_t chosen = next_use_.victim(
          launch_, [this](int64_t d) { return state(dense_blocks_[d]).resident; },
          [this](int64_t d) {
            const BlockState& s = state(dense_blocks_[d]);
            return s.used_by != launch_ && s.protect == 0;
          },
          [this](int64_t d) { return invalidates() && dead(dense_blocks_[d]); }, kForeseenDeadSearch,
          for_prefetch ? need_at : 0);
      if (chosen != NextUseEviction::kNoVictim) return dense_blocks_[chosen];
      if (for_prefetch) return kNone;
      for (int64_t b : lru_)
        if (blocks_[b].used_by != launch_) return b;
      return kNone;
    }
    int64_t first = kNone;
    int searched = 0;
    for (int64_t b : lru_) {
      const BlockState& s = blocks_[b];
      if (s.used_by == launch_ || (spare_window && s.protect > 0)) continue;
      if (first == kNone) first = b;
      if (!invalidates() || dead(b)) return b;
      if (++searched == kDeadSearch) break;
    }
    if (first != kNone) return first;
    if (for_prefetch || !spare_window) return kNone;
    for (int64_t b : lru_)
      if (blocks_[b].used_by != launch_) return b;
    return kNone;
  }

  const Mode mode_;
  const int device_;
  const int64_t capacity_blocks_;
  const Switches switches_;
  std::mutex mutex_;
  Predictor predictor_;
  std::unordered_map<int64_t, BlockState> blocks_;
  std::list<int64_t> lru_;  // resident blocks, least recently migrated first
  std::deque<std::vector<int64_t>> window_;
  size_t issued_ = 0;
  int64_t resident_ = 0, peak_resident_ = 0;
  uint64_t launch_ = 0;
  NextUseEviction next_use_;  // victims by foreseen next use (eviction "next_use"), over dense indices
  std::vector<int64_t> dense_blocks_;  // dense index -> block
  int64_t touched_blocks_ = 0;  // distinct blocks launches have used so far
  uint64_t iteration_ = 0, touched_in_iteration_ = 0;
  std::vector<Command> prefetches_, evictions_;
  uint64_t lane_seq_[kLanes] = {0, 0, 0};  // commands numbered so far on each lane
  std::unordered_map<CUstream, std::array<uint64_t, kLanes>> stream_waited_;  // per stream and lane: waited up to
  Worker worker_;
};

// ---------------------------------------------------------------------------------------------
// Launch hook: execution ID and accesses from the kernel's arguments.
std::unique_ptr<Engine> g_engine;
std::mutex g_params_mutex;
std::unordered_map<CUfunction, std::vector<std::pair<size_t, size_t>>> g_params;  // (offset, size) per argument

// Offset and size of each argument of f. Kernels that the CUDA runtime launches may arrive as
// library kernels (CUkernel), for which the driver answers through cuKernelGetParamInfo.
const std::vector<std::pair<size_t, size_t>>& params_of(CUfunction f) {
  std::lock_guard<std::mutex> lock(g_params_mutex);
  auto it = g_params.find(f);
  if (it != g_params.end()) return it->second;
  std::vector<std::pair<size_t, size_t>> out;
  for (const bool as_kernel : {false, true}) {
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r = as_kernel ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &offset, &size)
                                   : cuFuncGetParamInfo(f, i, &offset, &size);
      if (r != CUDA_SUCCESS) {
        if (i == 0 && !as_kernel) g_counters.param_info_failures_func++;
        if (i == 0 && as_kernel) g_counters.param_info_failures_kernel++;
        break;
      }
      out.emplace_back(offset, size);
    }
    if (!out.empty()) break;
  }
  return g_params.emplace(f, std::move(out)).first->second;
}

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t g_allocations_at_last_launch = 0;  // guarded by g_memory.mutex()

// Pages of [start, start + size) inside block b.
int32_t pages_in_block(uint64_t start, uint64_t size, uint64_t b) {
  const uint64_t lo = std::max(start, b << kBlockShift), hi = std::min(start + size, (b + 1) << kBlockShift);
  return int32_t(((hi - 1) >> 12) - (lo >> 12) + 1);
}

void on_kernel(CUfunction f, void** kernel_params, void** extra, CUstream stream, uint64_t grid,
               uint32_t correlation, const char* name) {
  const auto& params = params_of(f);
  const char* buffer = nullptr;
  if (!kernel_params && extra) {
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(extra[i + 1]);
  }
  if (!kernel_params && !buffer) g_counters.launches_without_arguments++;
  uint64_t id = mix(reinterpret_cast<uint64_t>(f), grid);
  std::vector<Access> accesses;
  {
    std::lock_guard<std::mutex> lock(g_memory.mutex());
    uint64_t last_allocation = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const char* value = kernel_params ? static_cast<const char*>(kernel_params[i]) : buffer ? buffer + params[i].first : nullptr;
      if (!value) continue;
      for (size_t w = 0; w + 8 <= params[i].second; w += 8) {
        uint64_t word;
        std::memcpy(&word, value + w, 8);
        const auto [start, size] = g_memory.allocation(word);
        if (!size || start == last_allocation) continue;
        last_allocation = start;
        id = mix(id, start);
        const bool fresh = g_memory.born(start) > g_allocations_at_last_launch;
        for (uint64_t b = start >> kBlockShift; b <= (start + size - 1) >> kBlockShift; ++b)
          accesses.push_back({int64_t(b), pages_in_block(start, size, b), fresh});
      }
    }
    g_allocations_at_last_launch = g_memory.allocations();
  }
  std::sort(accesses.begin(), accesses.end(), [](const Access& a, const Access& b) { return a.block < b.block; });
  std::vector<Access> merged;  // one row per block: pages summed (capped at 512), writes or-ed
  for (const Access& a : accesses) {
    if (!merged.empty() && merged.back().block == a.block) {
      merged.back().pages += a.pages;
      merged.back().write = merged.back().write || a.write;
    } else {
      merged.push_back(a);
    }
  }
  std::vector<int64_t> blocks;
  blocks.reserve(merged.size());
  for (const Access& a : merged) blocks.push_back(a.block);
  if (g_recorder.on.load(std::memory_order_relaxed)) g_recorder.launch(correlation, id, name, merged);
  if (g_fault_log.on.load(std::memory_order_relaxed)) g_fault_log.launch(correlation, id, nullptr, kNoAccesses);
  g_engine->on_launch(id, blocks, stream);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER || !g_engine) return;
  const auto began = std::chrono::steady_clock::now();
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      on_kernel(p->f, p->kernelParams, p->extra, p->hStream,
                (uint64_t(p->gridDimX) << 40) ^ (uint64_t(p->gridDimY) << 20) ^ p->gridDimZ, cb->correlationId,
                cb->symbolName);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      on_kernel(p->f, p->kernelParams, p->extra, p->config->hStream,
                (uint64_t(p->config->gridDimX) << 40) ^ (uint64_t(p->config->gridDimY) << 20) ^ p->config->gridDimZ,
                cb->correlationId, cb->symbolName);
      break;
    }
    default: break;
  }
  g_counters.hook_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count();
}

// ---------------------------------------------------------------------------------------------
// Fault log: CUPTI unified-memory counter records.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  const bool recording = g_recorder.on.load(std::memory_order_relaxed);
  const bool learning = g_fault_log.on.load(std::memory_order_relaxed);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (recording) g_recorder.kernel_time(k->correlationId, k->start, k->end);
      if (learning) g_fault_log.kernel_time(k->correlationId, k->start, k->end);
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) continue;
    const auto* um = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter2*>(record);
    switch (um->counterKind) {
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
        g_counters.gpu_faults += um->value;
        if (recording) g_recorder.fault(um->start, um->address, int8_t(um->flags >= 1 && um->flags <= 4 ? um->flags : 1));
        if (learning) g_fault_log.fault(um->start, um->address, 1);
        break;
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD: {
        const uint32_t cause = um->flags;
        if (recording) g_recorder.transfer(um->start, um->address, um->value, 1, int8_t(cause <= 5 ? cause : 0));
        if (cause == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER) g_counters.prefetch_h2d_bytes += um->value;
        else if (cause == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE) g_counters.fault_h2d_bytes += um->value;
        else g_counters.other_h2d_bytes += um->value;
        break;
      }
      case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
        g_counters.d2h_bytes += um->value;
        if (recording) g_recorder.transfer(um->start, um->address, um->value, 2, int8_t(um->flags <= 5 ? um->flags : 0));
        break;
      default: break;
    }
  }
  free(buffer);
}

bool g_cupti_configured = false;
CUpti_SubscriberHandle g_subscriber = nullptr;

// Must run after cuInit and before the CUDA context exists, or CUPTI records no UM counters.
void configure_fault_log(int device) {
  if (g_cupti_configured) return;
  CUpti_ActivityUnifiedMemoryCounterConfig config[3];
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[3] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH};
  for (int i = 0; i < 3; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = uint32_t(device);
    config[i].enable = 1;
  }
  check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check_cupti(cuptiActivityConfigureUnifiedMemoryCounter(config, 3), "cuptiActivityConfigureUnifiedMemoryCounter");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER), "cuptiActivityEnable(UNIFIED_MEMORY_COUNTER)");
  g_cupti_configured = true;
}

std::once_flag g_tracker_attached;

void start(int mode, int64_t capacity_bytes, int device, const py::dict& c, bool prefetch, bool pre_evict,
           bool invalidate, bool learn_accesses, bool record) {
  if (g_engine) throw std::runtime_error("the deepum engine is already running");
  const bool learn_faults = static_cast<Mode>(mode) == Mode::kDeepUM && !learn_accesses;
  if (record || learn_faults)  // kernel records: GPU time spans, to attribute faults to launches
    check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  if (record) {
    g_recorder.drain();
    g_recorder.on.store(true);
  }
  if (learn_faults) {
    g_fault_log.drain();
    g_fault_log.on.store(true);
  }
  std::call_once(g_tracker_attached, [] { CA::attachAllocatorTraceTracker([](const CA::TraceEntry& e) { g_memory.on_event(e); }); });
  g_engine = std::make_unique<Engine>(static_cast<Mode>(mode), std::max<int64_t>(1, capacity_bytes >> kBlockShift),
                                      correlation_config_from(c), Switches{prefetch, pre_evict, invalidate, learn_accesses,
                                               c["eviction"].cast<std::string>() == "next_use"}, device);
  check_cupti(cuptiSubscribe(&g_subscriber, on_callback, nullptr), "cuptiSubscribe");
  for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
    check_cupti(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid), "cuptiEnableCallback");
}

void flush_fault_log() {
  if (g_cupti_configured) cuptiActivityFlushAll(1);
}

void stop() {
  if (!g_engine) return;
  if (g_subscriber) {
    cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  {
    py::gil_scoped_release release;
    g_engine->drain();
  }
  g_engine.reset();
  flush_fault_log();
  const bool recorded = g_recorder.on.exchange(false), learned = g_fault_log.on.exchange(false);
  if (recorded || learned) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

py::dict drain_recording() { return g_recorder.drain(); }

py::dict drain_fault_log() { return g_fault_log.drain(); }

// Teaches the correlation tables what launches faulted on, in launch order: exec_ids[i] faulted on
// blocks[offsets[i]:offsets[i + 1]] (deepum/fault_attribution.py Lessons).
void learn_faults(const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& exec_ids,
                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& offsets,
                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& blocks) {
  const size_t launches = size_t(exec_ids.size());
  if (size_t(offsets.size()) != launches + 1)
    throw std::invalid_argument("learn_faults: offsets must have one more entry than exec_ids");
  const int64_t* o = offsets.data();
  for (size_t i = 0; i < launches; ++i)
    if (o[i] < 0 || o[i] > o[i + 1] || o[i + 1] > blocks.size())
      throw std::invalid_argument("learn_faults: offsets must rise from 0 to the number of blocks");
  if (!g_engine) return;
  py::gil_scoped_release release;
  g_engine->learn_faults(exec_ids.data(), o, blocks.data(), launches);
}

py::dict stats() {
  py::dict out;
  out["launches"] = g_counters.launches.load();
  out["prefetch_calls"] = g_counters.prefetch_calls.load();
  out["prefetch_bytes"] = g_counters.prefetch_bytes.load();
  out["evict_calls"] = g_counters.evict_calls.load();
  out["evict_bytes"] = g_counters.evict_bytes.load();
  out["discard_calls"] = g_counters.discard_calls.load();
  out["discard_bytes"] = g_counters.discard_bytes.load();
  out["populate_calls"] = g_counters.populate_calls.load();
  out["populate_bytes"] = g_counters.populate_bytes.load();
  {
    std::lock_guard<std::mutex> lock(g_memory.mutex());
    out["discards_cancelled"] = g_memory.discards_cancelled();
    out["allocation_waits_for_discard"] = g_memory.allocation_waits();
  }
  out["gpu_page_faults"] = g_counters.gpu_faults.load();
  out["fault_h2d_bytes"] = g_counters.fault_h2d_bytes.load();
  out["prefetch_h2d_bytes"] = g_counters.prefetch_h2d_bytes.load();
  out["other_h2d_bytes"] = g_counters.other_h2d_bytes.load();
  out["d2h_bytes"] = g_counters.d2h_bytes.load();
  out["cuda_errors"] = g_counters.cuda_errors.load();
  out["kernel_waits"] = g_counters.kernel_waits.load();
  out["kernel_waits_unissued"] = g_counters.kernel_waits_unissued.load();
  out["demand_prefetch_calls"] = g_counters.demand_prefetch_calls.load();
  out["demand_prefetch_bytes"] = g_counters.demand_prefetch_bytes.load();
  out["param_info_failures_func"] = g_counters.param_info_failures_func.load();
  out["param_info_failures_kernel"] = g_counters.param_info_failures_kernel.load();
  out["launches_without_arguments"] = g_counters.launches_without_arguments.load();
  out["lane_waits"] = g_counters.lane_waits.load();
  out["hook_ns"] = g_counters.hook_ns.load();
  out["fault_lessons"] = g_counters.fault_lessons.load();
  out["faults_learned"] = g_counters.faults_learned.load();
  {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    out["last_cuda_error"] = g_last_error;
  }
  if (g_engine) {
    out["peak_resident_bytes"] = g_engine->peak_resident_bytes();
    out["resident_bytes"] = g_engine->resident_bytes();
    out["kernel_prediction_hits"] = g_engine->kernel_hits();
    out["kernel_prediction_misses"] = g_engine->kernel_misses();
    out["table_bytes"] = g_engine->table_bytes();
  }
  return out;
}

uint64_t next_iteration() {
  if (g_recorder.on.load()) g_recorder.iteration();
  return g_engine ? g_engine->next_iteration() : 0;
}

void drain() {
  if (!g_engine) return;
  py::gil_scoped_release release;
  g_engine->drain();
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "deepum online engine: launch hook, residency model, correlation prefetch, worker, fault log";
  m.def("configure_fault_log", &configure_fault_log, py::arg("device"),
        "Configures CUPTI's unified-memory counters; call after cuInit and before the CUDA context exists.");
  m.def("start", &start, py::arg("mode"), py::arg("capacity_bytes"), py::arg("device"), py::arg("config"),
        py::arg("prefetch"), py::arg("pre_evict"), py::arg("invalidate"), py::arg("learn_accesses"), py::arg("record"),
        "Starts the launch hook, the engine and its worker (mode: 1 um, 2 advise, 3 deepum); with record, "
        "also gathers a trace (kernels, accesses, memory events, kernel times, faults, transfers).");
  m.def("drain_recording", &drain_recording, "Hands over what was recorded, as NumPy arrays, and clears it.");
  m.def("drain_fault_log", &drain_fault_log,
        "Hands over the launches, kernel records and faults gathered for learning from faults, and clears them.");
  m.def("learn_faults", &learn_faults, py::arg("exec_ids"), py::arg("offsets"), py::arg("blocks"),
        "Teaches the correlation tables the blocks launches faulted on (deepum.fault_attribution.Lessons).");
  m.def("stop", &stop, "Stops the launch hook, drains the worker and flushes the fault log.");
  m.def("drain", &drain, "Waits until every issued prefetch and eviction has completed.");
  m.def("next_iteration", &next_iteration, "Starts a new iteration; returns the bytes of blocks the last one touched.");
  m.def("flush_fault_log", &flush_fault_log, "Delivers buffered CUPTI records to the counters.");
  m.def("stats", &stats, "Counters: launches, prefetch/evict calls and bytes, GPU page faults, migrations by cause.");
}
