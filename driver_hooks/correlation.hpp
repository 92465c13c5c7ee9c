// DeepUM correlation tables and predictor (native). deepum/tables.py and deepum/predictor.py are the
// readable specification; this must agree with them on every input (tests/test_native_agrees.py).
// CONTRACT (to be implemented): header-only, no CUDA, no Python.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace deepum {

struct CorrelationConfig {
  size_t lookahead = 32;
  size_t exec_ids = 16384;
  size_t exec_records = 4;
  size_t block_rows = 2048;
  size_t block_ways = 2;
  size_t block_successors = 4;
  size_t chain_blocks = 4096;
};

struct PredictedKernel {
  uint64_t exec_id;
  std::vector<int64_t> blocks;  // UM blocks in chain-walk order, no repeats
};

struct WindowChange {
  size_t popped;  // entries removed from the front of window() by this on_kernel (all old ones on a rebuild)
  size_t pushed;  // entries appended at the back (the last `pushed` entries of window())
};

class Predictor {
 public:
  explicit Predictor(const CorrelationConfig& config);
  WindowChange on_kernel(uint64_t exec_id);  // a kernel launched
  void on_fault(int64_t block);              // the running kernel faulted on `block`
  // window()[0] is the running kernel with its predicted blocks; [1..] the predicted next kernels.
  const std::deque<PredictedKernel>& window() const;
  uint64_t kernel_hits() const;    // launches that matched window()[1] of the previous launch
  uint64_t kernel_misses() const;  // launches that did not (window rebuilt)
  size_t table_bytes() const;      // bytes the tables hold now
};

}  // namespace deepum
