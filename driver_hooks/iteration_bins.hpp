// The fault log's figures: in total since the process loaded the engine, and per training iteration
// without flushing CUPTI at each iteration mark: a mark notes its time (CUPTI's clock, nanoseconds),
// and each unified-memory record, whenever its buffer arrives, is added to the bin its start time falls
// in. Bin k holds the records that began at or after mark k - 1 and before mark k (bin 0: before the
// first mark; the last bin stays open).
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace deepum {

// Busy time of one direction of the link, or of the GPU: the union of [start, end) intervals, in
// whatever order their records arrive (CUPTI delivers buffers late and out of order). The latest
// kKeptRuns disjoint runs of the union are kept, so a late interval merges exactly with them; what lies
// before the oldest kept run, or before what settle() let go, is forgotten, and a late interval there
// adds only its part past it (the figure may then fall short, never over). Memory: at most kKeptRuns
// runs.
class BusyUnion {
 public:
  static constexpr size_t kKeptRuns = 4096;

  uint64_t busy_ns() const { return busy_ns_; }
  void add(uint64_t start, uint64_t end) {
    start = std::max(start, forgotten_until_);
    if (end <= start) return;
    auto it = runs_.upper_bound(start);
    if (it != runs_.begin() && std::prev(it)->second >= start) --it;
    uint64_t first = start, last = end, covered = 0;  // covered: the part of [start, end) already counted
    while (it != runs_.end() && it->first <= end) {
      covered += std::min(end, it->second) - std::max(start, it->first);
      first = std::min(first, it->first);
      last = std::max(last, it->second);
      it = runs_.erase(it);
    }
    runs_.emplace(first, last);
    busy_ns_ += (end - start) - covered;
    while (runs_.size() > kKeptRuns) forget_oldest();
  }
  // Lets the kept runs go (an iteration closed long enough that no more of its records are expected).
  void settle() {
    while (!runs_.empty()) forget_oldest();
  }

 private:
  void forget_oldest() {
    forgotten_until_ = std::max(forgotten_until_, runs_.begin()->second);
    runs_.erase(runs_.begin());
  }
  uint64_t busy_ns_ = 0;
  uint64_t forgotten_until_ = 0;
  std::map<uint64_t, uint64_t> runs_;  // start -> end, disjoint and not touching
};

// The figures of one iteration, or of the whole run. Units: faults counted, bytes, nanoseconds.
struct IterationFigures {
  uint64_t gpu_page_faults = 0, fault_h2d_bytes = 0, prefetch_h2d_bytes = 0, other_h2d_bytes = 0, d2h_bytes = 0;
  BusyUnion h2d_link, d2h_link;
  BusyUnion kernels;  // the GPU running kernels (kernel records on only)
  void settle() {
    h2d_link.settle();
    d2h_link.settle();
    kernels.settle();
  }
};

struct KernelSpan {
  uint64_t start, end;
  bool operator<(const KernelSpan& o) const { return start < o.start || (start == o.start && end < o.end); }
};

enum class Transfer { kFaultH2D, kPrefetchH2D, kOtherH2D, kD2H };

struct TransferRecord {
  uint64_t start, end, bytes;
  Transfer kind;
  bool operator<(const TransferRecord& o) const { return start < o.start || (start == o.start && end < o.end); }
};

class IterationBins {
 public:
  // Forgets every mark and bin (not the totals); the open bin is bin 0.
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    marks_.clear();
    bins_.assign(1, IterationFigures{});
  }
  // An iteration mark at time t (never before the last mark): a new bin opens, and the bin the mark
  // before last closed settles (its busy unions keep no runs: a whole iteration has passed since).
  void mark(uint64_t t) {
    std::lock_guard<std::mutex> lock(mutex_);
    marks_.push_back(marks_.empty() ? t : std::max(t, marks_.back()));
    bins_.emplace_back();
    if (bins_.size() >= 4) bins_[bins_.size() - 4].settle();
  }
  void fault(uint64_t t, uint64_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    bin(t).gpu_page_faults += count;
    totals_.gpu_page_faults += count;
  }
  // One buffer's transfers: each counted in the bin of its start, in start order (so that a buffer of
  // more than kKeptRuns runs is a union to the last nanosecond too).
  void transfers(std::vector<TransferRecord> records) {
    std::sort(records.begin(), records.end());
    std::lock_guard<std::mutex> lock(mutex_);
    for (const TransferRecord& r : records) {
      add(bin(r.start), r);
      add(totals_, r);
    }
  }
  // One buffer's kernel records: each span counted in the bin of its start, in start order.
  void kernels(std::vector<KernelSpan> spans) {
    std::sort(spans.begin(), spans.end());
    std::lock_guard<std::mutex> lock(mutex_);
    for (const KernelSpan& k : spans) {
      bin(k.start).kernels.add(k.start, k.end);
      totals_.kernels.add(k.start, k.end);
    }
  }
  std::vector<IterationFigures> figures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bins_;
  }
  IterationFigures totals() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return totals_;
  }

 private:
  static void add(IterationFigures& figures, const TransferRecord& r) {
    switch (r.kind) {
      case Transfer::kFaultH2D: figures.fault_h2d_bytes += r.bytes; break;
      case Transfer::kPrefetchH2D: figures.prefetch_h2d_bytes += r.bytes; break;
      case Transfer::kOtherH2D: figures.other_h2d_bytes += r.bytes; break;
      case Transfer::kD2H: figures.d2h_bytes += r.bytes; break;
    }
    (r.kind == Transfer::kD2H ? figures.d2h_link : figures.h2d_link).add(r.start, r.end);
  }
  IterationFigures& bin(uint64_t t) {
    return bins_[size_t(std::upper_bound(marks_.begin(), marks_.end(), t) - marks_.begin())];
  }
  mutable std::mutex mutex_;
  std::vector<uint64_t> marks_;
  std::vector<IterationFigures> bins_{1};
  IterationFigures totals_;
};

}  // namespace deepum
