// When the worker hands commands to the threads of a pool (move_pool.hpp). A pool's threads make no
// CUDA call and streams wait for moves they have yet to make, so a move must never wait for a call the
// worker has yet to make: that call may wait for the CUDA driver's lock, which a thread copying to the
// host holds while it waits for the GPU, which waits for the move. So a pool gets a command only once
// the worker has issued every command of its own decided before it: of one decision's commands, in
// decision order, the pools take at once those before the first the worker issues itself, and only
// while the worker has nothing left to issue; the rest queue behind the worker's, which hands the
// pools' ones over as it reaches them (Worker::issue). CUDA-free: tests/test_hand_over.py runs it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace deepum {

// How many of `count` commands of one decision (in decision order) the pools take at once;
// `served_by_pool(i)`: whether a pool serves command i's lane; `worker_behind`: whether the worker
// still has commands to issue.
template <class ServedByPool>
size_t taken_at_once(size_t count, bool worker_behind, ServedByPool served_by_pool) {
  size_t taken = 0;
  while (!worker_behind && taken < count && served_by_pool(taken)) ++taken;
  return taken;
}

// The wait a command keeps when handed to a pool: as a kernel's, only work already published (a
// progress write that failed is never waited for).
inline uint64_t published_wait(uint64_t wait, uint64_t published) { return std::min(wait, published); }

}  // namespace deepum
