// The worker: a native thread that never takes the GIL and issues the engine's commands
// (commands.hpp). It coalesces contiguous blocks into large cudaMemPrefetchAsync calls on its own
// stream, evicts (prefetch to host) on a second stream and discards dead blocks on a third, each
// ordered after the work launched before it was decided. A prefetch of a block that is dead when it
// is chosen gives it fresh GPU pages without a copy.
//
// Ordering without waiting on the CPU: every command has a sequence number per lane, and the worker
// writes the last one completed to a GPU word after each call (cuStreamWriteValue64). A command of a
// block waits for the previous command of that block on another lane, and a kernel waits for the
// commands of its own blocks (engine.hpp), so a kernel runs on data in place instead of faulting on
// it while it is still moving. A wait only ever names a write already enqueued (as an event wait
// names a recorded event), so no stream can wait on work that a blocked thread has yet to issue.
// The exception is a lane that threads of their own serve (move_pool.hpp: prefetches, evictions,
// discards): they make no CUDA call, so a stream may wait for moves they have yet to issue; the worker
// hands them a command only once it has issued its own commands decided before it; the lanes' progress
// words are then in pinned host memory, where those threads read them.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>
#include <thread>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "counters.hpp"
#include "engine_memory.hpp"
#include "event_pool.hpp"
#include "fault_injection.hpp"
#include "hand_over.hpp"
#include "host_words.hpp"
#include "memory_map.hpp"
#include "move_pool.hpp"
#include "timeline.hpp"

namespace deepum {

// Issues migrations on background streams; never takes the GIL.
class Worker {
 public:
  // The threads that serve the prefetch, eviction and discard lanes (move_pool.hpp); for a lane with
  // none, or where they cannot run, the lane is a stream of the worker's like the others;
  // `drop_to_host`: the discard threads move a dropped block to the host after its discard.
  struct PoolThreads {
    size_t prefetch = 0, eviction = 0, discard = 0;
    bool drop_to_host = false;
  };
  Worker(int device, PoolThreads threads, EngineMemory& memory, Counters& counters, Timeline& timeline)
      : device_(device), memory_(memory), counters_(counters), timeline_(timeline) {
    cudaSetDevice(device);
    cudaFree(nullptr);  // the primary context, current on this thread
    if (threads.prefetch || threads.eviction || threads.discard) start_pools(threads);
    if (!host_words_ && !allocate_done_words())
      throw std::runtime_error("deepum: could not allocate the worker's progress words on the GPU");
    thread_ = std::thread([this] { run(); });
  }
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();  // the pools go on meanwhile: the worker's streams may wait for them
    for (auto& pool : pools_) pool.reset();
    cudaDeviceSynchronize();  // no kernel may still be about to read the progress words
    if (done_) cuMemFree(done_);
  }
  // GPU address of the word holding the last command completed on `lane`.
  CUdeviceptr done_word(Lane lane) const {
    return host_words_ ? host_words_->device(lane) : done_ + lane * sizeof(uint64_t);
  }
  // The last command on `lane` whose completion write is enqueued, or for a pool's lane the last
  // handed to it: the most a stream may wait for.
  uint64_t published(Lane lane) const {
    if (pools_[lane]) return pools_[lane]->published();
    return published_[lane].load(std::memory_order_acquire);
  }
  // Whether threads of a pool serve `lane`: its commands then need marks (stream_marks.hpp).
  bool served_by_threads(Lane lane) const { return pools_[lane] != nullptr; }
  // Takes the commands of one decision, in decision order: the pools' ones that may go at once go to
  // their threads (hand_over.hpp), the rest behind the worker's own.
  void submit(std::vector<Command>&& commands) {
    if (commands.empty()) return;
    bool queued;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const size_t now = taken_at_once(commands.size(), busy_ || !queue_.empty(),
                                       [&](size_t i) { return pools_[lane_of(commands[i].op)] != nullptr; });
      queued = now < commands.size();
      queue_.insert(queue_.end(), commands.begin() + now, commands.end());
      commands.resize(now);
      hand_over(std::move(commands));
    }
    if (queued) wake_.notify_one();  // a wake with nothing queued costs the launching thread a system call
  }
  // Waits until every submitted command has been issued and has completed on the GPU.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
    lock.unlock();
    for (cudaStream_t stream : streams_)
      if (stream) cudaStreamSynchronize(stream);
    for (const auto& pool : pools_)
      if (pool) pool->drain();
  }

 private:
  void run() {
    pthread_setname_np(pthread_self(), "deepum-worker");
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

  bool allocate_done_words() {
    return cuMemAlloc(&done_, kLanes * sizeof(uint64_t)) == CUDA_SUCCESS &&
           cuMemsetD8(done_, 0, kLanes * sizeof(uint64_t)) == CUDA_SUCCESS;
  }

  // Hands pools commands whose time has come (hand_over.hpp), each to the pool of its lane, every wait
  // clamped to published work, with its block's place in memory, so that the threads never take the
  // memory map's lock. A discard or a population takes its choice now, when the allocator has had
  // the least time to hand the block out again (which cancels it); allocations in the block from now
  // on make their streams wait for the discard lane's word to reach the command.
  void hand_over(std::vector<Command>&& commands) {
    {
      std::lock_guard<std::mutex> lock(memory_.mutex());
      for (Command& c : commands) {
        std::tie(c.start, c.bytes, c.segment) = memory_.managed_part(c.block);
        if (c.op == Op::kDiscard || c.op == Op::kPopulate)
          c.taken = memory_.take_handed(c.block, c.ticket, DiscardEvent{nullptr, host_words_, kDiscarded, c.seq});
      }
    }
    std::vector<Command> run;
    for (Command& c : commands) {
      if (!run.empty() && lane_of(c.op) != lane_of(run.back().op)) {
        pools_[lane_of(run.back().op)]->submit(run);
        run.clear();
      }
      if (c.wait && c.wait_lane != lane_of(c.op)) c.wait = published_wait(c.wait, published(c.wait_lane));
      run.push_back(std::move(c));
    }
    if (!run.empty()) pools_[lane_of(run.back().op)]->submit(run);
  }

  // The pools, with the lanes' progress words in pinned host memory where they read them; where
  // either cannot be had, the failure is noted and the worker serves the lanes.
  void start_pools(const PoolThreads& threads) {
    auto words = std::make_shared<HostWords>(kLanes);
    if (!words->ok()) {
      counters_.note_failure("move threads", "no pinned host memory for the progress words");
      return;
    }
    const uvm_ioctl::File file = find_driver_file(device_);
    if (file.fd < 0) {
      counters_.note_failure("move threads", "no /dev/nvidia-uvm file took a move");
      return;
    }
    for (const auto& [lane, count] :
         {std::pair{kToGpu, threads.prefetch}, std::pair{kEvicted, threads.eviction}, std::pair{kDiscarded, threads.discard}})
      if (count)
        pools_[lane] = std::make_unique<MovePool>(lane, count, file, *words, counters_, timeline_, threads.drop_to_host);
    host_words_ = std::move(words);
  }

  // Coalesces runs of contiguous blocks (same operation, same ordering event) into one call each;
  // after each call, publishes the lane's progress for kernels and the other lanes to wait on.
  void issue(const std::vector<Command>& batch) {
    size_t i = 0;
    while (i < batch.size()) {
      size_t j = i + 1;
      if (pools_[lane_of(batch[i].op)]) {
        while (j < batch.size() && lane_of(batch[j].op) == lane_of(batch[i].op)) ++j;
        hand_over({batch.begin() + i, batch.begin() + j});
        i = j;
        continue;
      }
      while (j < batch.size() && batch[j].op == batch[i].op && batch[j].after == batch[i].after &&
             batch[j].block == batch[j - 1].block + 1)
        ++j;
      const Command& first = batch[i];
      const Lane lane = lane_of(first.op);
      cudaStream_t stream = streams_[lane];
      if (first.after && after_waited_[lane] != first.after) {
        // Fails closed: without the stream wait, the CPU waits for the work launched before the decision.
        for (const auto& event : first.after->events)
          if (!counters_.driver_ok(DEEPUM_GUARDED(cuStreamWaitEvent(stream, event.get(), 0), CUDA_ERROR_UNKNOWN),
                                   "wait for the work before the decision"))
            cuEventSynchronize(event.get());
        after_waited_[lane] = first.after;
      }
      uint64_t need[kLanes] = {};
      for (size_t k = i; k < j; ++k) need[batch[k].wait_lane] = std::max(need[batch[k].wait_lane], batch[k].wait);
      for (const Lane other : kAllLanes) {
        // Issued earlier by this thread (unless its write failed): never a wait on work yet to come.
        const uint64_t target = std::min(need[other], published(other));
        if (other == lane || target <= lane_waited_[lane][other]) continue;
        if (counters_.driver_ok(DEEPUM_GUARDED(cuStreamWaitValue64(stream, done_word(other), target, CU_STREAM_WAIT_VALUE_GEQ),
                                               CUDA_ERROR_UNKNOWN),
                                "wait for another lane"))
          counters_.lane_waits++;
        else if (pools_[other])
          pools_[other]->wait_done(target);  // fails closed: on the CPU, for moves that make no CUDA call
        else
          cudaStreamSynchronize(streams_[other]);  // fails closed: everything issued there has completed
        lane_waited_[lane][other] = target;
      }
      std::vector<int64_t> blocks;
      for (size_t k = i; k < j; ++k) blocks.push_back(batch[k].block);
      const uint64_t began = timeline_.collecting() ? cupti_now() : 0;
      Stopwatch issuing;
      if (first.op == Op::kDiscard || first.op == Op::kPopulate) {
        const std::vector<int64_t> left = discard(batch, i, j, first.op == Op::kPopulate, stream);
        if (first.op == Op::kPopulate) migrate(left, true, stream);  // cancelled: their contents count again
      } else if (first.op == Op::kMapHost || first.op == Op::kMapGpu) {
        map(blocks, first.op == Op::kMapHost, stream);
      } else {
        migrate(blocks, lane == kToGpu, stream);
      }
      move_counters(counters_, first.op).issue_ns += issuing.lap();
      if (began)
        timeline_.add({began, cupti_now(), uint64_t(j - i) * kBlockBytes, uint8_t(SpanKind::kCall), uint8_t(first.op)});
      // Written even when the call failed; published only once the write is enqueued.
      if (counters_.driver_ok(cuStreamWriteValue64(stream, done_word(lane), batch[j - 1].seq, 0), "publish progress"))
        published_[lane].store(batch[j - 1].seq, std::memory_order_release);
      i = j;
    }
  }

  // Issues the discards of batch[from, to) on `stream`, contiguous blocks of one segment in one range:
  // to the host (dead victims dropped without a copy) or to the GPU (dead blocks given fresh pages,
  // faster than copying back dead contents: docs/results.md). Takes the choices under the memory
  // map's lock and issues them without it; allocations in their blocks are held until the discard's
  // completion event is recorded (MemoryMap::discard_finished). A batch the driver refuses moves
  // with a copy instead. Returns the blocks whose discard was cancelled.
  std::vector<int64_t> discard(const std::vector<Command>& batch, size_t from, size_t to, bool to_gpu,
                               cudaStream_t stream) {
    std::vector<int64_t> taken, left;
    std::vector<void*> starts;
    std::vector<size_t> sizes;
    {
      std::lock_guard<std::mutex> lock(memory_.mutex());
      uint64_t last_segment = 0;
      for (size_t k = from; k < to; ++k) {
        const int64_t b = batch[k].block;
        if (!memory_.take_pending(b, batch[k].ticket)) {
          left.push_back(b);
          continue;
        }
        const auto [part, part_bytes, segment] = memory_.managed_part(b);
        if (!taken.empty() && segment == last_segment && reinterpret_cast<uint64_t>(starts.back()) + sizes.back() == part) {
          sizes.back() += part_bytes;
        } else {
          starts.push_back(reinterpret_cast<void*>(part));
          sizes.push_back(part_bytes);
          last_segment = segment;
        }
        taken.push_back(b);
      }
    }
    if (taken.empty()) return left;
    const std::optional<DiscardEvent> done = issue_discard(starts, sizes, to_gpu, stream);
    {
      std::lock_guard<std::mutex> lock(memory_.mutex());
      for (int64_t b : taken) memory_.discard_finished(b, done ? &*done : nullptr);
    }
    if (done)
      move_counters(counters_, to_gpu ? Op::kPopulate : Op::kDiscard)
          .count(std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}));
    return left;
  }

  // One discard call over the ranges, and the event of its completion; nullopt when nothing was
  // discarded: the driver refused (the ranges moved with a copy instead) or no event could be
  // recorded after it (the CPU waited for the discard).
  std::optional<DiscardEvent> issue_discard(std::vector<void*>& starts, std::vector<size_t>& sizes, bool to_gpu,
                                            cudaStream_t stream) {
    size_t location_index = 0;
    const cudaError_t err = DEEPUM_GUARDED(
        cudaMemDiscardAndPrefetchBatchAsync(starts.data(), sizes.data(), starts.size(), to_gpu ? &gpu_ : &host_,
                                            &location_index, 1, 0, stream),
        cudaErrorUnknown);
    if (err != cudaSuccess) {
      note_error(to_gpu ? "populate" : "discard", err);
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      for (size_t r = 0; r < starts.size(); ++r) ranges.emplace_back(reinterpret_cast<uint64_t>(starts[r]), sizes[r]);
      copy(ranges, to_gpu, stream);
      return std::nullopt;
    }
    DiscardEvent done;
    if (discard_events_->take(done.event) != CUDA_SUCCESS) {
      note_error(to_gpu ? "populate event" : "discard event", cudaErrorUnknown);
      cudaStreamSynchronize(stream);  // without an event to order re-allocations after: nothing may reuse it first
      return std::nullopt;
    }
    if (DEEPUM_GUARDED(cudaEventRecord(reinterpret_cast<cudaEvent_t>(done.event.get()), stream), cudaErrorUnknown) !=
        cudaSuccess) {
      note_error(to_gpu ? "populate event" : "discard event", cudaErrorUnknown);
      cudaStreamSynchronize(stream);
      return std::nullopt;
    }
    return done;
  }

  void note_error(const char* what, cudaError_t err) {
    counters_.note_failure(what, cudaGetErrorString(err));
    cudaGetLastError();
  }

  // Maps `blocks` from the host (preferred location the host, accessed by the GPU, resident pages
  // evicted with a copy) or withdraws that advice, one range at a time. Advice never changes what memory
  // holds; a range the driver refuses stays as it was (the GPU faults it in on use).
  void map(const std::vector<int64_t>& blocks, bool from_host, cudaStream_t stream) {
    for (const auto& [start, bytes] : memory_.contiguous_ranges(blocks)) {
      void* range = reinterpret_cast<void*>(start);
      cudaError_t err = from_host ? cudaMemAdvise(range, bytes, cudaMemAdviseSetPreferredLocation, host_)
                                  : cudaMemAdvise(range, bytes, cudaMemAdviseUnsetPreferredLocation, host_);
      if (err == cudaSuccess)
        err = cudaMemAdvise(range, bytes, from_host ? cudaMemAdviseSetAccessedBy : cudaMemAdviseUnsetAccessedBy, gpu_);
      if (err != cudaSuccess) {
        note_error(from_host ? "map from the host" : "withdraw a host mapping", err);
        continue;
      }
      move_counters(counters_, from_host ? Op::kMapHost : Op::kMapGpu).count(bytes);
      if (from_host) copy({{start, bytes}}, false, stream);
    }
  }

  // Migrates `blocks` with a copy, one call per contiguous range.
  void migrate(const std::vector<int64_t>& blocks, bool to_gpu, cudaStream_t stream) {
    copy(memory_.contiguous_ranges(blocks), to_gpu, stream);
  }

  // Migrates (start, bytes) ranges with a copy, one call each.
  void copy(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, bool to_gpu, cudaStream_t stream) {
    for (const auto& [start, bytes] : ranges) {
      const cudaError_t err = cudaMemPrefetchAsync(reinterpret_cast<void*>(start), bytes, to_gpu ? gpu_ : host_, 0, stream);
      if (err != cudaSuccess) note_error(to_gpu ? "prefetch" : "evict", err);
      move_counters(counters_, to_gpu ? Op::kPrefetch : Op::kEvict).count(bytes);
    }
  }

  int device_;
  EngineMemory& memory_;
  Counters& counters_;
  Timeline& timeline_;
  CUdeviceptr done_ = 0;  // kLanes words: the last command completed on each lane (GPU memory), or
  std::shared_ptr<HostWords> host_words_;  // ... in pinned host memory, with move threads (which
                                           // write their lanes'; discards' waits keep them)
  std::array<std::unique_ptr<MovePool>, kLanes> pools_;  // by lane: the threads serving it, if any
  // Discard events, recycled: an allocation that drops the last holder of one makes no CUDA call. An
  // event's destruction waits for the CUDA driver's lock, which a thread copying to the host holds
  // while it waits for the GPU, and the allocation holds the memory map's lock, which the worker needs.
  const std::shared_ptr<EventPool> discard_events_ = EventPool::make();
  std::atomic<uint64_t> published_[kLanes] = {};  // per lane: the last command whose write is enqueued
  cudaStream_t streams_[kLanes] = {};
  cudaMemLocation gpu_{}, host_{};
  std::shared_ptr<const After> after_waited_[kLanes];  // the last work each lane waits for
  uint64_t lane_waited_[kLanes][kLanes] = {};  // [lane][other]: the other lane's progress it already waits for
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Command> queue_;
  bool stopping_ = false, busy_ = true;
  std::thread thread_;
};

}  // namespace deepum
