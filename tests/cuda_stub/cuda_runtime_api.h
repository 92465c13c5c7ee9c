// Host-only stand-in for the CUDA runtime API, so tests can compile kernels/managed_allocator.cpp
// with a plain C++ compiler: "managed" and device memory are malloc'd, and the calls are counted.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdlib>

typedef struct CUstream_st* cudaStream_t;
typedef enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 } cudaError_t;
#define cudaMemAttachGlobal 0x01

// Included by one translation unit only, so these definitions are exported once.
static std::atomic<long> stub_malloc_calls{0};
static std::atomic<long> stub_free_calls{0};
static std::atomic<bool> stub_fail_next{false};

extern "C" {
long stub_driver_malloc_calls() { return stub_malloc_calls.load(); }
long stub_driver_free_calls() { return stub_free_calls.load(); }
void stub_fail_next_malloc() { stub_fail_next.store(true); }
}

inline cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int) {
  stub_malloc_calls++;
  if (stub_fail_next.exchange(false)) return cudaErrorMemoryAllocation;
  *ptr = std::malloc(size);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

static std::atomic<long> stub_device_malloc_calls{0};
extern "C" long stub_driver_device_malloc_calls() { return stub_device_malloc_calls.load(); }

inline cudaError_t cudaMalloc(void** ptr, size_t size) {
  stub_malloc_calls++;
  stub_device_malloc_calls++;
  if (stub_fail_next.exchange(false)) return cudaErrorMemoryAllocation;
  *ptr = std::malloc(size);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

inline cudaError_t cudaFree(void* ptr) {
  stub_free_calls++;
  std::free(ptr);
  return cudaSuccess;
}

inline cudaError_t cudaGetLastError() { return cudaSuccess; }
