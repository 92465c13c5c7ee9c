// Managed-memory allocator behind torch.cuda.memory.CUDAPluggableAllocator.
//
// Every segment the PyTorch caching allocator asks for comes from cudaMallocManaged
// (cudaMemAttachGlobal), or, while deepum_set_device_memory(1) holds, from cudaMalloc: a session
// that can never come under pressure takes plain device memory, which nothing has to move
// (deepum/specs/sleep.py, serves_device_memory). A fuse caps the bytes in use of either kind: a
// request that would take the total past the cap returns nullptr without calling the driver, and
// its size is recorded so Python can name it in the error. The cap starts at 0 (every request
// refused) until deepum_set_max_managed_bytes is called. Live segments are kept in a registry
// (address, size, kind); deepum_segments lists the managed ones, which the prefetch worker and
// Python read. All entry points are thread-safe.
#include <cuda_runtime_api.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace {

struct Segment {
  size_t bytes;
  bool managed;  // cudaMallocManaged, not cudaMalloc
};

struct AllocatorState {
  std::mutex mutex;
  std::map<uintptr_t, Segment> segments;  // live segments by address
  bool device_memory = false;            // new segments from cudaMalloc
  size_t max_managed_bytes = 0;          // the fuse
  size_t bytes_in_use = 0;               // granted, including requests now in the driver
  size_t peak_bytes = 0;
  uint64_t segments_allocated = 0;
  uint64_t segments_freed = 0;
  uint64_t device_segments_allocated = 0;  // of segments_allocated, from cudaMalloc
  uint64_t refusals = 0;                 // requests refused by the fuse
  size_t last_refused_bytes = 0;
  size_t bytes_in_use_at_refusal = 0;
  uint64_t driver_failures = 0;          // cudaMallocManaged errors
  int last_driver_error = 0;             // cudaError_t of the last failure
};

AllocatorState& state() {
  static AllocatorState* s = new AllocatorState();  // never destroyed: frees may run at exit
  return *s;
}

}  // namespace

extern "C" {

void* deepum_malloc(ssize_t size, int device, cudaStream_t stream) {
  (void)device;
  (void)stream;
  AllocatorState& s = state();
  const size_t bytes = static_cast<size_t>(size);
  bool managed = true;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (size <= 0 || bytes > s.max_managed_bytes || s.bytes_in_use > s.max_managed_bytes - bytes) {
      s.refusals++;
      s.last_refused_bytes = bytes;
      s.bytes_in_use_at_refusal = s.bytes_in_use;
      return nullptr;
    }
    s.bytes_in_use += bytes;  // reserve before the driver call so concurrent requests see it
    managed = !s.device_memory;
  }
  void* ptr = nullptr;
  const cudaError_t err = managed ? cudaMallocManaged(&ptr, bytes, cudaMemAttachGlobal) : cudaMalloc(&ptr, bytes);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // leave no error behind for the next runtime call
    s.bytes_in_use -= bytes;
    s.driver_failures++;
    s.last_driver_error = static_cast<int>(err);
    return nullptr;
  }
  s.segments[reinterpret_cast<uintptr_t>(ptr)] = Segment{bytes, managed};
  s.segments_allocated++;
  if (!managed) s.device_segments_allocated++;
  if (s.bytes_in_use > s.peak_bytes) s.peak_bytes = s.bytes_in_use;
  return ptr;
}

void deepum_free(void* ptr, ssize_t size, int device, cudaStream_t stream) {
  (void)size;
  (void)device;
  (void)stream;
  if (ptr == nullptr) return;
  AllocatorState& s = state();
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.segments.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == s.segments.end()) return;  // not ours: never hand foreign memory to cudaFree
    bytes = it->second.bytes;
    s.segments.erase(it);
  }
  cudaFree(ptr);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.bytes_in_use -= bytes;
  s.segments_freed++;
}

// Sets the fuse in bytes. Lowering it below the bytes in use only refuses later requests.
void deepum_set_max_managed_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().max_managed_bytes = bytes;
}

// Whether segments made from now on come from device memory (cudaMalloc) instead of managed memory;
// live segments keep their kind. Returns 1 when the kind changes while segments of the old kind live,
// whose free blocks the caching allocator would hand out again, else 0.
int deepum_set_device_memory(int on) {
  AllocatorState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const bool device = on != 0;
  bool old_kind_live = false;
  if (device != s.device_memory)
    for (const auto& entry : s.segments) old_kind_live = old_kind_live || entry.second.managed == device;
  s.device_memory = device;
  return old_kind_live ? 1 : 0;
}

int deepum_device_memory() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().device_memory ? 1 : 0;
}

uint64_t deepum_device_segments_allocated() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().device_segments_allocated;
}

size_t deepum_max_managed_bytes() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().max_managed_bytes;
}

size_t deepum_bytes_in_use() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().bytes_in_use;
}

size_t deepum_peak_bytes() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().peak_bytes;
}

// Starts a new peak from the bytes in use now.
void deepum_reset_peak_bytes() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().peak_bytes = state().bytes_in_use;
}

uint64_t deepum_segments_allocated() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().segments_allocated;
}

uint64_t deepum_segments_freed() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().segments_freed;
}

uint64_t deepum_refusals() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().refusals;
}

size_t deepum_last_refused_bytes() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_refused_bytes;
}

size_t deepum_bytes_in_use_at_refusal() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().bytes_in_use_at_refusal;
}

uint64_t deepum_driver_failures() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().driver_failures;
}

int deepum_last_driver_error() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_driver_error;
}

// Copies up to max_segments live managed segments as (address, bytes) pairs into out (2 *
// max_segments uint64 values), in address order; returns the number of live managed segments (may
// exceed max_segments).
size_t deepum_segments(uint64_t* out, size_t max_segments) {
  std::lock_guard<std::mutex> lock(state().mutex);
  size_t i = 0;
  for (const auto& [address, segment] : state().segments) {
    if (!segment.managed) continue;
    if (i < max_segments) {
      out[2 * i] = static_cast<uint64_t>(address);
      out[2 * i + 1] = static_cast<uint64_t>(segment.bytes);
    }
    ++i;
  }
  return i;
}

}  // extern "C"
