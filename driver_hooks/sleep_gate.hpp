// When the engine sleeps (deepum/specs/sleep.py is the readable specification): asleep while the live
// managed segments hold at most wake_percent of the capacity, awake for good once they hold more or
// once told to wake.
#pragma once
#include <cstdint>

#include "units.hpp"

namespace deepum {

// The bytes of the blocks a segment at `address` of `bytes` spans: what the gate counts.
inline uint64_t spanned_bytes(uint64_t address, uint64_t bytes) {
  if (bytes == 0) return 0;
  return (((address + bytes - 1) >> kBlockShift) - (address >> kBlockShift) + 1) * kBlockBytes;
}

class SleepGate {
 public:
  SleepGate(uint64_t capacity_bytes, uint64_t wake_percent)
      : threshold_bytes_(capacity_bytes * wake_percent / 100), asleep_(wake_percent > 0) {}

  // A managed segment of `bytes` is made; whether the engine wakes with it.
  bool segment_alloc(uint64_t bytes) {
    segment_bytes_ += bytes;
    if (asleep_ && segment_bytes_ > threshold_bytes_) {
      asleep_ = false;
      return true;
    }
    return false;
  }
  // Wakes now (a session that loads a learned state expects pressure); whether it slept.
  bool wake() {
    const bool slept = asleep_;
    asleep_ = false;
    return slept;
  }
  // A managed segment this gate saw made is freed.
  void segment_free(uint64_t bytes) { segment_bytes_ -= bytes; }
  bool asleep() const { return asleep_; }
  uint64_t segment_bytes() const { return segment_bytes_; }

 private:
  uint64_t threshold_bytes_;
  uint64_t segment_bytes_ = 0;
  bool asleep_;
};

}  // namespace deepum
