// Live allocations and managed segments, from the caching allocator's trace hook, their portable
// numbering, and the discard tickets that keep a move without a copy off memory that holds data.
//
// While no engine is awake, nothing asks which allocation holds an address, whether a block is dead
// or which blocks are fresh: the map then keeps the live allocations by start only, the least work
// per allocation and free, and puts them in address order again when an engine wakes (set_awake).
//
// Portable numbering names memory alike in every process that allocates its managed segments in the
// same order and sizes (the same script), wherever each process's address space puts them: segments
// are placed one after another in the order they were allocated, each from a block boundary and one
// block past the room its size needs, none ever in a place an earlier one had. A byte's portable
// address is its offset in its segment plus the segment's place; a UM block's portable number is its
// index among the blocks its segment spans plus the place >> kBlockShift (the two agree where segments
// start on block boundaries, as managed allocations do). A UM block that two segments share is
// numbered in the one holding its lowest managed byte.
//
// CUDA-free: the engine uses it with CUDA streams and discard-completion events (worker.hpp),
// deepum._native with fake ones for tests (memory_map_bindings.cpp, tests/test_memory_map.py).
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "segment_table.hpp"
#include "units.hpp"

namespace deepum {

// Parts of managed segments, (start, bytes, segment start) in order, as (start, bytes) ranges:
// contiguous parts of one segment joined (one driver call may not span two segments), empty parts
// left out.
inline std::vector<std::pair<uint64_t, uint64_t>> joined_parts(
    const std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>& parts) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t segment = 0;
  for (const auto& [start, bytes, part_segment] : parts) {
    if (!bytes) continue;
    if (!ranges.empty() && ranges.back().first + ranges.back().second == start && segment == part_segment) {
      ranges.back().second += bytes;
    } else {
      ranges.emplace_back(start, bytes);
      segment = part_segment;
    }
  }
  return ranges;
}

// Stream: where the caching allocator hands memory out; Event: the completion of an issued discard.
// `wait` makes a stream wait for an event (without blocking the calling thread) and says whether the
// stream had to wait: false when the discard has already completed.
template <typename Stream, typename Event>
class MemoryMap {
 public:
  using Wait = std::function<bool(Stream, const Event&)>;

  explicit MemoryMap(Wait wait) : wait_(std::move(wait)) {}

  // The caching allocator's events; each takes the lock. Allocations outside the managed segments
  // (other pools, other devices) are not tracked: on_alloc says whether this one is.
  bool on_alloc(uint64_t addr, uint64_t size, Stream stream) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!in_segment(addr)) return false;
    live_[addr] = {size, ++allocations_, stream};
    if (awake_) segments_.holding(addr)->allocate(addr, size);
    if (awake_ && tracking_releases_ && size)
      for (uint64_t b = addr >> kBlockShift; b <= (addr + size - 1) >> kBlockShift; ++b) fresh_.insert(int64_t(b));
    order_after_discards(addr, size, stream, lock);
    return true;
  }
  // Completed: the streams recorded with record_stream are done with the memory, but not necessarily
  // its allocation stream (reuse on that stream is ordered after its work, a discard is not): it joins
  // the last users of the blocks the allocation covers. Says whether the allocation was tracked.
  bool on_free_completed(uint64_t addr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(addr);
    if (it == live_.end()) return false;
    const Live& a = it->second;
    for (uint64_t b = addr >> kBlockShift; a.size && b <= (addr + a.size - 1) >> kBlockShift; ++b) {
      std::vector<Stream>& users = last_users_[int64_t(b)];
      if (std::find(users.begin(), users.end(), a.stream) == users.end()) users.push_back(a.stream);
    }
    live_.erase(it);
    if (awake_)
      if (SegmentTable::Segment* s = segments_.holding(addr)) s->free(addr);
    return true;
  }
  // Whether an engine is awake and asks about addresses, dead blocks and fresh blocks (the map is
  // made awake). Asleep, it answers that no address is in an allocation and no block is dead
  // (nothing is discarded) and records no fresh blocks; waking puts the live allocations in
  // address order again.
  void set_awake(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on == awake_) return;
    awake_ = on;
    std::vector<std::pair<uint64_t, uint64_t>> live;  // none while asleep: no answer reads them
    if (on)
      for (const auto& [addr, a] : live_) live.emplace_back(addr, a.size);
    segments_.assign_allocations(live);
  }
  void on_segment_alloc(uint64_t addr, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    segments_.add(addr, size, next_place_);  // replaces one at addr whose free was not seen
    next_place_ += (size + kBlockBytes - 1) / kBlockBytes + 1;  // room for the blocks it spans, however aligned
  }
  // The segment's memory goes back to the system (cudaFree waits for all work: the blocks it wholly
  // covers have no last users left). While an engine runs (track_releases), the blocks numbered in
  // it are queued for the engine to release from its residency model (take_released).
  // Says whether it was a managed segment.
  bool on_segment_free(uint64_t addr, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!segments_.at(addr)) return false;  // not a managed segment
    if (size) {
      for (uint64_t b = (addr + kBlockBytes - 1) >> kBlockShift; (b + 1) << kBlockShift <= addr + size; ++b)
        last_users_.erase(int64_t(b));
      if (tracking_releases_)
        for (uint64_t b = addr >> kBlockShift; b <= (addr + size - 1) >> kBlockShift; ++b)
          if (std::get<2>(managed_part(int64_t(b))) == addr) released_.push_back(portable(int64_t(b)));
    }
    segments_.remove(addr);
    return true;
  }
  // The live managed segments, (start, bytes) by start.
  std::vector<std::pair<uint64_t, uint64_t>> segments() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<uint64_t, uint64_t>> segments;
    for (const auto& s : segments_.segments()) segments.emplace_back(s.start, s.bytes);
    return segments;
  }
  // The blocks the live managed segments span, ascending, each once.
  std::vector<int64_t> segment_blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int64_t> blocks;
    for (const SegmentTable::Segment& s : segments_.segments())
      for (uint64_t b = s.start >> kBlockShift; s.bytes && b <= (s.end() - 1) >> kBlockShift; ++b)
        if (blocks.empty() || blocks.back() != int64_t(b)) blocks.push_back(int64_t(b));
    return blocks;
  }

  // The managed parts of `blocks` (in order) as (start, bytes) ranges, contiguous parts of one managed
  // segment joined (joined_parts): one migration call each. Takes the lock; the caller issues the
  // migrations without it (a migration never changes contents, so launches and allocations need not
  // wait for it).
  std::vector<std::pair<uint64_t, uint64_t>> contiguous_ranges(const std::vector<int64_t>& blocks) const {
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> parts;
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t b : blocks) parts.push_back(managed_part(b));
    return joined_parts(parts);
  }

  // Everything below: the caller holds mutex().
  std::mutex& mutex() const { return mutex_; }

  // Number of allocations made so far; an allocation numbered above a launch's mark is newer.
  uint64_t allocations() const { return allocations_; }
  uint64_t born(uint64_t start) const {
    auto it = live_.find(start);
    return it == live_.end() ? 0 : it->second.number;
  }
  // The live allocation holding `p`: {start, size}, or {0, 0} (always while asleep).
  std::pair<uint64_t, uint64_t> allocation(uint64_t p) const {
    const SegmentTable::Segment* s = segments_.holding(p);
    return s ? s->allocation(p) : std::pair<uint64_t, uint64_t>{0, 0};
  }
  // Whether block b lies wholly inside one managed segment and no live allocation overlaps it (its
  // contents are dead). A block a segment boundary cuts is never dead: the driver discards whole
  // pages, and a page across the boundary may hold another segment's data. None is, asleep.
  bool dead(int64_t b) const {
    const auto [start, bytes, segment] = managed_part(b);
    if (bytes != kBlockBytes || !awake_) return false;
    return !segments_.at(segment)->allocated(start, start + bytes);
  }
  bool in_segment(uint64_t p) const { return segments_.holding(p) != nullptr; }
  // The part of block `b` inside a managed segment: {start, bytes, segment start}, bytes 0 when none.
  std::tuple<uint64_t, uint64_t, uint64_t> managed_part(int64_t b) const {
    const SegmentTable::Segment* s = block_segment(b);
    if (!s) return {0, 0, 0};
    const uint64_t lo = uint64_t(b) << kBlockShift;
    const uint64_t start = std::max(lo, s->start), end = std::min(lo + kBlockBytes, s->end());
    return {start, end - start, s->start};
  }

  // The portable number of UM block b; -1 when no managed segment holds any of it.
  int64_t portable(int64_t b) const {
    const SegmentTable::Segment* s = block_segment(b);
    return s ? int64_t(s->place + uint64_t(b) - (s->start >> kBlockShift)) : -1;
  }
  // The UM block of portable block p; -1 when its segment is not live.
  int64_t um_block(int64_t p) const {
    const SegmentTable::Segment* s = p < 0 ? nullptr : segments_.placed_at_or_below(uint64_t(p));
    if (!s) return -1;
    const uint64_t b = (s->start >> kBlockShift) + (uint64_t(p) - s->place);
    return s->bytes && b <= (s->end() - 1) >> kBlockShift ? int64_t(b) : -1;
  }
  // The portable address of p, a byte of a managed segment (0 elsewhere): its segment's place
  // (in bytes) plus its offset in the segment.
  uint64_t portable_address(uint64_t p) const {
    const SegmentTable::Segment* s = segments_.holding(p);
    return s ? (s->place << kBlockShift) + (p - s->start) : 0;
  }

  // Discards (to the host: a dead victim dropped; to the GPU: a dead block given fresh pages instead
  // of a copy of its dead contents). The policy chooses a discard only while the block is dead; the
  // choice carries a ticket, the number of allocations made so far. Allocating memory in the block
  // before the worker takes the choice cancels it (each choice made before that allocation, not
  // later ones); allocating it afterwards makes the allocating stream wait for the discard to finish.
  // The worker issues a taken discard without the lock, so launches and other allocations go on
  // meanwhile; an allocation in a block whose discard is being issued holds its thread until the
  // worker has recorded the discard's completion event (discard_finished), then waits for it.
  // So a discard only lands on memory that has held no data since the work launched before its
  // choice, which the discard waits for, on the choosing stream and on each of the block's last users
  // (appended to `users`). A block can be chosen again while its last discard is in flight: the
  // issued discard is kept beside the new choices.
  bool choose_discard(int64_t b, uint64_t& ticket, std::vector<Stream>& users) {  // false when b is not dead
    if (!dead(b)) return false;
    pending_[b].queued += 1;
    ticket = allocations_;
    auto it = last_users_.find(b);
    if (it != last_users_.end())
      for (const Stream& s : it->second)
        if (std::find(users.begin(), users.end(), s) == users.end()) users.push_back(s);
    return true;
  }
  // Takes one choice of b: true when the one with `ticket` may be issued now (no allocation in b
  // since); the caller then owes discard_finished for it.
  bool take_pending(int64_t b, uint64_t ticket) {
    auto it = pending_.find(b);
    if (it == pending_.end() || it->second.queued == 0) return false;
    Discard& d = it->second;
    d.queued -= 1;
    const bool valid = ticket >= d.cancelled_at && dead(b);  // dead: always so then, checked once more
    if (valid) d.issuing += 1;
    forget_if_idle(it);
    return valid;
  }
  // The worker is done with a taken choice of b. With `done`, the discard was issued (or handed to
  // threads that issue it: `done` is then their progress reaching it) and allocations in b wait for it (an allocation that waits for the latest waits for the earlier ones too: each
  // runs after the block's previous command); without, nothing was discarded (the range moved with
  // a copy, or the CPU waited for it). Allocations held meanwhile (on_alloc) go on.
  void discard_finished(int64_t b, const Event* done) {
    auto it = pending_.find(b);
    if (it == pending_.end() || !it->second.issuing) return;
    if (done) it->second.issued = *done;
    it->second.issuing -= 1;
    forget_if_idle(it);
    issuing_done_.notify_all();
  }
  // Takes one choice of b for threads of their own that issue it later (Worker::hand_over): as
  // take_pending, and when it may be issued, discard_finished with `done` (their progress reaching it)
  // at once, so no allocation is held and each in b from now on waits for `done`. True when taken.
  bool take_handed(int64_t b, uint64_t ticket, const Event& done) {
    if (!take_pending(b, ticket)) return false;
    discard_finished(b, &done);
    return true;
  }
  uint64_t discards_cancelled() const { return discards_cancelled_; }
  uint64_t allocation_waits() const { return allocation_waits_; }
  uint64_t allocation_holds() const { return allocation_holds_; }

  // The blocks (portable numbers) of segments freed since the last call, in the order of the frees.
  std::vector<int64_t> take_released() { return std::exchange(released_, {}); }
  // The UM blocks that received an allocation since the last call (ascending, each once), for host
  // mapping's count of a block's uses (next_use.hpp count_use).
  std::vector<int64_t> take_fresh() {
    std::vector<int64_t> fresh(fresh_.begin(), fresh_.end());
    fresh_.clear();
    std::sort(fresh.begin(), fresh.end());
    return fresh;
  }
  // Whether freed segments and fresh blocks are queued (an engine runs); turning it off forgets both.
  void track_releases(bool on) {
    tracking_releases_ = on;
    if (!on) {
      released_.clear();
      fresh_.clear();
    }
  }

 private:
  struct Discard {
    uint32_t queued = 0;           // choices not taken by the worker yet
    uint32_t issuing = 0;          // choices taken, their discard being issued
    uint64_t cancelled_at = 0;     // number of the latest allocation in the block: it cancels earlier choices
    std::optional<Event> issued;   // completion of the latest discard issued (none: none)
  };

  // The segment holding block b's lowest managed byte; null when b holds none.
  const SegmentTable::Segment* block_segment(int64_t b) const {
    const uint64_t lo = uint64_t(b) << kBlockShift;
    const SegmentTable::Segment* s = segments_.first_in(lo, lo + kBlockBytes);
    return s && s->bytes ? s : nullptr;
  }

  void forget_if_idle(typename std::unordered_map<int64_t, Discard>::iterator it) {
    if (!it->second.queued && !it->second.issuing && !it->second.issued) pending_.erase(it);
  }

  // The allocation is already live, so no choice of its blocks can be taken from now on.
  void order_after_discards(uint64_t addr, uint64_t size, Stream stream, std::unique_lock<std::mutex>& lock) {
    if (pending_.empty() || !size) return;
    for (uint64_t b = addr >> kBlockShift; b <= (addr + size - 1) >> kBlockShift; ++b) {
      auto it = pending_.find(int64_t(b));
      if (it == pending_.end()) continue;
      if (it->second.issuing) {
        allocation_holds_ += 1;
        issuing_done_.wait(lock, [&] {
          it = pending_.find(int64_t(b));
          return it == pending_.end() || !it->second.issuing;
        });
        if (it == pending_.end()) continue;
      }
      Discard& d = it->second;
      if (d.issued) {
        if (wait_(stream, *d.issued)) allocation_waits_ += 1;
        d.issued.reset();  // later allocations in the block come on the same stream: ordered after this one
      }
      if (d.queued) discards_cancelled_ += 1;
      d.cancelled_at = allocations_;
      forget_if_idle(it);
    }
  }

  const Wait wait_;
  mutable std::mutex mutex_;
  SegmentTable segments_;  // the live managed segments and their places
  struct Live {
    uint64_t size;
    uint64_t number;  // allocations made before it, plus one
    Stream stream;    // where it was allocated
  };
  std::unordered_map<uint64_t, Live> live_;  // by allocation start
  bool awake_ = true;
  std::unordered_map<int64_t, std::vector<Stream>> last_users_;  // by block: allocation streams of frees in it
  uint64_t allocations_ = 0;
  std::unordered_map<int64_t, Discard> pending_;
  uint64_t discards_cancelled_ = 0, allocation_waits_ = 0, allocation_holds_ = 0;
  std::condition_variable issuing_done_;  // a taken discard was issued, or given up
  std::vector<int64_t> released_;  // blocks of freed segments (portable numbers), for take_released
  std::unordered_set<int64_t> fresh_;  // UM blocks allocations were made in, for take_fresh (each once:
                                       // bounded by the segments' blocks while no launch takes them)
  uint64_t next_place_ = 0;  // portable number of the next segment's first block
  bool tracking_releases_ = false;
};

}  // namespace deepum
