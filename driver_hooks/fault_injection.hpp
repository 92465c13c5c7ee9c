// The fault-injection build switch: built with -DDEEPUM_INJECT_FAULTS=N (native_build.py reads the
// environment variable of that name), every Nth guarded CUDA call of the engine is not made and
// returns an error instead, so that tests can show each fallback keeps training exact.
#pragma once
#include <atomic>
#include <cstdint>

namespace deepum {

inline std::atomic<uint64_t> injected_failures{0};  // guarded calls failed on purpose so far

#ifdef DEEPUM_INJECT_FAULTS
static_assert(DEEPUM_INJECT_FAULTS > 0, "DEEPUM_INJECT_FAULTS: every how many guarded calls one fails");
inline bool inject_failure() {
  static std::atomic<uint64_t> calls{0};
  if (++calls % DEEPUM_INJECT_FAULTS) return false;
  injected_failures++;
  return true;
}
#else
constexpr bool inject_failure() { return false; }
#endif

}  // namespace deepum

// A CUDA call the engine checks and falls back from: `failure` (an error code) instead of the call
// when a failure is injected.
#define DEEPUM_GUARDED(call, failure) (::deepum::inject_failure() ? (failure) : (call))
