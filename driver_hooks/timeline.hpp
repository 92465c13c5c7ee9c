// The step timeline: the raw time spans behind the iteration figures, for a window the caller opens
// and closes (a step or two): the GPU's kernels with their launch's correlation ID, the link's
// transfers, the worker's driver calls, and each launch with what the engine made its kernel wait
// for. deepum/runtime/timeline.py reads it and says where the GPU's idle time went. Times are on
// CUPTI's clock (nanoseconds). Bounded: past kMaxSpans spans, the rest are dropped and counted.
#pragma once
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace deepum {

// kLaunch: the launch hook's time on the launching thread; kLaunchCall: the rest of the launch call,
// from the hook's return to the driver's (both carry the launch's correlation ID).
enum class SpanKind : uint8_t { kKernel = 0, kH2D = 1, kD2H = 2, kCall = 3, kLaunch = 4, kLaunchCall = 5 };

// A launch span's detail: what its kernel was made to wait for on its stream.
constexpr uint8_t kWaitedForMigrations = 1;  // the worker's moves of its blocks (engine.hpp)
constexpr uint8_t kWaitedForDiscard = 2;     // an allocation since the stream's last launch: a discard
constexpr uint8_t kPrefetchedOnStream = 4;   // its missing blocks, prefetched just before it

struct TimelineSpan {
  uint64_t start, end;
  uint64_t value;       // kernels and launches: the correlation ID; transfers and calls: bytes
  uint8_t kind;         // SpanKind
  uint8_t detail;       // launches: the wait bits above; calls: the Op (commands.hpp); transfers: the
                        // Transfer (iteration_bins.hpp)
};

inline uint64_t cupti_now() {
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  return now;
}

class Timeline {
 public:
  static constexpr size_t kMaxSpans = size_t(1) << 20;  // 32 MiB of spans at most

  // Forgets what was captured and captures from now on.
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    spans_.clear();
    discard_waits_.clear();
    dropped_ = 0;
    from_ = cupti_now();
    until_ = std::numeric_limits<uint64_t>::max();
    open_ = true;
    collecting_ = true;
  }
  // Stops capturing: records that began before now still count when their buffer arrives.
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    until_ = cupti_now();
    open_ = false;
  }
  // From open() until take(): records that began inside the window may still arrive (unlocked hints,
  // checked again under the lock).
  bool collecting() const { return collecting_; }

  // A span that began inside the window, whenever it arrives.
  void add(const TimelineSpan& span) {
    if (!collecting_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    push(span);
  }
  // An allocation made `stream` wait for a discard: the stream's next launch carries it.
  void discard_wait(CUstream stream) {
    if (!open_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    discard_waits_.insert(stream);
  }
  // The hook ran from `entered` until now for a launch on `stream` whose kernel waits as `waits` says
  // (besides any discard wait of its stream).
  void launch(uint64_t correlation, CUstream stream, uint8_t waits, uint64_t entered) {
    if (!open_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (discard_waits_.erase(stream)) waits |= kWaitedForDiscard;
    push({entered, cupti_now(), correlation, uint8_t(SpanKind::kLaunch), waits});
  }
  // Hands over the spans captured (in arrival order) and how many were dropped; collects no more.
  std::vector<TimelineSpan> take(uint64_t& dropped) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
    collecting_ = false;
    dropped = dropped_;
    std::vector<TimelineSpan> out;
    out.swap(spans_);
    return out;
  }

 private:
  void push(const TimelineSpan& span) {  // under the lock
    if (!collecting_ || span.start < from_ || span.start >= until_) return;
    if (spans_.size() >= kMaxSpans) {
      ++dropped_;
      return;
    }
    spans_.push_back(span);
  }

  mutable std::mutex mutex_;
  std::vector<TimelineSpan> spans_;
  std::unordered_set<CUstream> discard_waits_;
  uint64_t dropped_ = 0, from_ = 0, until_ = 0;
  std::atomic<bool> open_{false}, collecting_{false};
};

}  // namespace deepum
