// The policy's options: what DeepUMConfig (deepum/config.py) and the runtime mode say, as one struct
// with enums. Defaults live in DeepUMConfig only; options_binding.hpp is the one reader of its dict.
#pragma once
#include "correlation.hpp"

namespace deepum {

// um: the driver's rule alone; advise: um plus each kernel's missing blocks prefetched just before it
// under budget pressure; deepum: correlation prefetch, pre-eviction, invalidation; oracle (offline
// only): the next kernels' blocks known exactly, eviction of the block used furthest ahead.
enum class Mode : uint8_t { kUm, kAdvise, kDeepUM, kOracle };
enum class LearnFrom : uint8_t { kAccesses, kFaults };
enum class Eviction : uint8_t { kLru, kNextUse };
// How the window prefetches a block next-use foresight needs only beyond it, when the GPU is full.
enum class FarPrefetches : uint8_t { kEvict, kDeadOnly, kSkip };

struct Options {
  Mode mode = Mode::kUm;
  CorrelationConfig tables;  // tables.lookahead is the window's length, also the oracle's
  size_t prefetch_batch = 1;  // deepum: window entries prefetched at once (the nearest due within lookahead + 1 - batch)
  FarPrefetches far_prefetches = FarPrefetches::kDeadOnly;  // deepum with next-use eviction, the GPU full
  LearnFrom learn_from = LearnFrom::kAccesses;
  Eviction eviction = Eviction::kNextUse;
  size_t foresight_iterations = 1;  // iterations next-use eviction remembers to foresee from
  bool schedule = false;            // follow the plan made from the last iteration (schedule.hpp)
  size_t schedule_ahead = 1;        // most launches ahead of its need the plan prefetches a block
  size_t schedule_accesses = 1;     // most block uses recorded of an iteration
  size_t repeat_plans_percent = 95;  // plans an iteration must share with one launched alike to be repeated (plan_records.hpp); 0: off
  size_t confident_hits = 16;      // kernel hits among the last kConfidenceLaunches before predictions are trusted
  size_t host_map_uses = 0;        // host mapping: most launches of an iteration using a block mapped from the host
  size_t host_map_span_percent = 100;  // host mapping: most of an iteration's launches its uses span, in percent
  bool host_map_indexed = false;   // host mapping: also blocks only indexed kernels used, whatever their span
  size_t host_map_keep_uses = 0;   // host mapping: a block gone over in this many passes stays migrated where room allows
  size_t wake_percent = 0;         // the engine sleeps until the managed segments pass this share of the capacity
  bool populate_segments = false;  // deepum: while asleep, a new managed segment is populated on the GPU when made
  bool prefetch = true, pre_evict = true, invalidate = true;
  size_t eviction_threads = 0;     // deepum: threads evicting through the unified-memory driver
  size_t prefetch_threads = 0;     // deepum: threads prefetching through the unified-memory driver
  size_t discard_threads = 0;      // deepum: threads discarding through the unified-memory driver
  bool drop_to_host = false;       // discard threads: a dropped block moves to the host after its discard
};

// Whether a managed segment made while the engine sleeps, and that leaves it asleep, is populated on the
// GPU at once (fresh pages, no copy): the gate keeps the live segments within the capacity, so they fit.
// Only deepum's policy does it; um and advise leave first touches to fault, as the driver alone does.
// deepum/specs/sleep.py states it.
inline bool populates_new_segments(const Options& o) { return o.mode == Mode::kDeepUM && o.populate_segments; }

// The threads that issue the evictions side by side (move_pool.hpp; the simulator charges their
// rate). Only a policy's own pre-evictions have them, deepum's and the oracle's (offline, the same
// machinery with the future known): without pre-eviction, and under um and advise, the evictions
// stand for the driver's own, which it makes one at a time.
inline size_t eviction_threads(const Options& o) {
  const bool pre_evicts = (o.mode == Mode::kDeepUM && o.pre_evict) || o.mode == Mode::kOracle;
  return pre_evicts ? o.eviction_threads : 0;
}
// The threads that issue the window's prefetches (move_pool.hpp), so that kernel launches do not wait
// behind them for the CUDA driver's lock: deepum's correlation prefetch only.
inline size_t prefetch_threads(const Options& o) {
  return o.mode == Mode::kDeepUM && o.prefetch ? o.prefetch_threads : 0;
}
// The threads that issue invalidation's discards and populations (move_pool.hpp), for the same reason:
// deepum's invalidation only.
inline size_t discard_threads(const Options& o) {
  return o.mode == Mode::kDeepUM && o.invalidate ? o.discard_threads : 0;
}

}  // namespace deepum
