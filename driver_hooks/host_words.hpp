// Words of pinned host memory that the GPU can also read and write (mapped into its address space):
// progress a stream writes and the CPU polls, or that the CPU stores and a stream waits for.
#pragma once
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace deepum {

class HostWords {
 public:
  // `count` words, all 0; ok() is false where the driver could not give them.
  explicit HostWords(size_t count) : count_(count) {
    void* words = nullptr;
    if (cuMemHostAlloc(&words, count * sizeof(uint64_t), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) !=
        CUDA_SUCCESS)
      return;
    if (cuMemHostGetDevicePointer(&device_, words, 0) != CUDA_SUCCESS) {
      cuMemFreeHost(words);
      return;
    }
    host_ = static_cast<uint64_t*>(words);
    for (size_t i = 0; i < count; ++i) store(i, 0);
  }
  ~HostWords() {
    if (host_) cuMemFreeHost(host_);
  }
  HostWords(const HostWords&) = delete;
  HostWords& operator=(const HostWords&) = delete;

  bool ok() const { return host_ != nullptr; }
  size_t count() const { return count_; }
  // The GPU's address of word i, for cuStreamWriteValue64 and cuStreamWaitValue64.
  CUdeviceptr device(size_t i) const { return device_ + i * sizeof(uint64_t); }
  uint64_t load(size_t i) const { return __atomic_load_n(host_ + i, __ATOMIC_ACQUIRE); }
  void store(size_t i, uint64_t value) { __atomic_store_n(host_ + i, value, __ATOMIC_RELEASE); }
  // Waits on the CPU until word i reaches `value` (where a stream could not be made to wait for it).
  void wait_for(size_t i, uint64_t value) const {
    while (load(i) < value) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

 private:
  size_t count_;
  uint64_t* host_ = nullptr;
  CUdeviceptr device_ = 0;
};

}  // namespace deepum
