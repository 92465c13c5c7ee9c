// Probes of the unified-memory paths across the host link, one per mode; prints one JSON object.
//
//   link_paths evict-threads BYTES THREADS CHUNK   GPU->host eviction of BYTES split over THREADS native
//                                                 threads (disjoint ranges, one stream each, calls of
//                                                 CHUNK bytes), the first time (host backing allocated
//                                                 then) and again (backing kept)
//   link_paths remote BYTES                       an update touching each element once (the optimizer's
//                                                 pattern): migrated in and evicted back, against the
//                                                 kernel reading and writing host-preferred memory over
//                                                 the link (preferred location host, accessed by the GPU)
//   link_paths read-mostly BYTES                  a read-only pass (the parameters' pattern): migrated in
//                                                 and evicted back, against a read-mostly duplicate
//                                                 dropped by a prefetch to the host
//   link_paths evict-threads-uvm BYTES THREADS CHUNK  as evict-threads, each call the unified-memory
//                                                 driver's own UVM_MIGRATE (uvm_ioctl.hpp), which takes
//                                                 no lock of the CUDA driver
//   link_paths in-and-out BYTES CHUNK             half of BYTES evicted and the other half brought in
//                                                 from the host, each alone and then both at once from
//                                                 two threads, in calls of CHUNK bytes: through
//                                                 cudaMemPrefetchAsync and through UVM_MIGRATE (do the
//                                                 two directions share the link or overlap?)
//
// Times in seconds, rates in GB/s (1e9 bytes). The caller (bench/link_paths.py) keeps BYTES far under
// the free GPU memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "uvm_ioctl.hpp"

namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "link_paths: %s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

cudaMemLocation gpu_location() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeDevice;
  l.id = 0;
  return l;
}

cudaMemLocation host_location() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeHost;
  return l;
}

double seconds_of(const std::chrono::steady_clock::time_point& since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

__global__ void update(float4* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = x[i];
    v.x = v.x * 0.9f + 1.0f;
    v.y = v.y * 0.9f + 1.0f;
    v.z = v.z * 0.9f + 1.0f;
    v.w = v.w * 0.9f + 1.0f;
    x[i] = v;
  }
}

__global__ void read_sum(const float4* x, size_t n, float* out) {
  float s = 0.0f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    s += v.x + v.y + v.z + v.w;
  }
  atomicAdd(out, s);
}

void fill_on_gpu(void* p, size_t bytes) {
  check(cudaMemset(p, 1, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "fill");
}

void prefetch(void* p, size_t bytes, cudaMemLocation to, cudaStream_t stream = 0) {
  check(cudaMemPrefetchAsync(p, bytes, to, 0, stream), "cudaMemPrefetchAsync");
}

// Moves [base, base + bytes) in calls of `chunk` bytes on this thread, to the GPU or the host: through
// the unified-memory driver's own call with `uvm`, else with cudaMemPrefetchAsync on a stream of its own.
void move_range(char* base, size_t bytes, size_t chunk, bool to_gpu, const uvm_ioctl::File* uvm) {
  if (uvm) {
    for (size_t off = 0; off < bytes; off += chunk)
      if (!uvm->migrate(base + off, chunk, to_gpu)) check(cudaErrorUnknown, "UVM_MIGRATE");
    return;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (size_t off = 0; off < bytes; off += chunk) prefetch(base + off, chunk, to_gpu ? gpu_location() : host_location(), stream);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

// Evicts [base, base + bytes) with `threads` threads, each its own range; seconds taken.
double evict_with_threads(char* base, size_t bytes, int threads, size_t chunk, const uvm_ioctl::File* uvm) {
  const size_t share = bytes / threads / chunk * chunk;
  std::vector<std::thread> workers;
  const auto began = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) workers.emplace_back([=] { move_range(base + t * share, share, chunk, false, uvm); });
  for (auto& w : workers) w.join();
  return seconds_of(began);
}

int evict_threads(size_t bytes, int threads, size_t chunk, bool by_uvm) {
  bytes = bytes / (size_t(threads) * chunk) * (size_t(threads) * chunk);
  char* p = nullptr;
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  fill_on_gpu(p, bytes);
  const uvm_ioctl::File file = by_uvm ? uvm_ioctl::find_file(p, bytes, "link_paths") : uvm_ioctl::File{};
  const uvm_ioctl::File* uvm = by_uvm ? &file : nullptr;
  const double first = evict_with_threads(p, bytes, threads, chunk, uvm);
  prefetch(p, bytes, gpu_location());
  check(cudaDeviceSynchronize(), "prefetch back");
  const double again = evict_with_threads(p, bytes, threads, chunk, uvm);
  std::printf("{\"mode\": \"%s\", \"bytes\": %zu, \"threads\": %d, \"chunk\": %zu, "
              "\"first_s\": %.6f, \"first_gbps\": %.3f, \"again_s\": %.6f, \"again_gbps\": %.3f}\n",
              by_uvm ? "evict-threads-uvm" : "evict-threads", bytes, threads, chunk, first, bytes / first / 1e9, again,
              bytes / again / 1e9);
  check(cudaFree(p), "cudaFree");
  return 0;
}

// Half of `bytes` on the GPU goes out while the other half, on the host, comes in: each alone, then
// both at once from two threads; seconds, by cudaMemPrefetchAsync and by UVM_MIGRATE.
int in_and_out(size_t bytes, size_t chunk) {
  const size_t half = bytes / 2 / chunk * chunk;
  char* p = nullptr;
  check(cudaMallocManaged(&p, 2 * half), "cudaMallocManaged");
  fill_on_gpu(p, 2 * half);
  char* out = p;          // starts on the GPU, evicted
  char* in = p + half;    // starts on the host, brought in
  const uvm_ioctl::File file = uvm_ioctl::find_file(p, 2 * half, "link_paths");
  const auto reset = [&] {
    prefetch(out, half, gpu_location());
    prefetch(in, half, host_location());
    check(cudaDeviceSynchronize(), "reset");
  };
  std::printf("{\"mode\": \"in-and-out\", \"bytes\": %zu, \"chunk\": %zu", 2 * half, chunk);
  for (const uvm_ioctl::File* uvm : {static_cast<const uvm_ioctl::File*>(nullptr), &file}) {
    const char* path = uvm ? "uvm" : "cuda";
    reset();
    auto began = std::chrono::steady_clock::now();
    move_range(out, half, chunk, false, uvm);
    const double out_s = seconds_of(began);
    began = std::chrono::steady_clock::now();
    move_range(in, half, chunk, true, uvm);
    const double in_s = seconds_of(began);
    reset();
    began = std::chrono::steady_clock::now();
    std::thread evicting([=] { move_range(out, half, chunk, false, uvm); });
    move_range(in, half, chunk, true, uvm);
    evicting.join();
    const double both_s = seconds_of(began);
    std::printf(", \"%s_out_s\": %.6f, \"%s_in_s\": %.6f, \"%s_both_s\": %.6f, \"%s_both_over_sum\": %.3f, "
                "\"%s_both_over_max\": %.3f", path, out_s, path, in_s, path, both_s, path, both_s / (out_s + in_s), path,
                both_s / std::max(out_s, in_s));
  }
  std::printf("}\n");
  check(cudaFree(p), "cudaFree");
  return 0;
}

template <typename Kernel>
double timed_kernel(Kernel launch) {
  check(cudaDeviceSynchronize(), "before");
  const auto began = std::chrono::steady_clock::now();
  launch();
  check(cudaDeviceSynchronize(), "kernel");
  return seconds_of(began);
}

// The buffer starts on the host each time (its backing allocated once, before timing).
int remote(size_t bytes) {
  char* p = nullptr;
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  fill_on_gpu(p, bytes);
  const size_t n = bytes / sizeof(float4);
  const auto run = [&] { update<<<1024, 256>>>(reinterpret_cast<float4*>(p), n); };
  prefetch(p, bytes, host_location());
  check(cudaDeviceSynchronize(), "to host");
  const auto began = std::chrono::steady_clock::now();  // migrate in, update, evict back
  prefetch(p, bytes, gpu_location());
  run();
  prefetch(p, bytes, host_location());
  check(cudaDeviceSynchronize(), "migrated update");
  const double migrated = seconds_of(began);
  const double in_place = timed_kernel(run);  // after the eviction: faults migrate pages in
  prefetch(p, bytes, host_location());
  check(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, host_location()), "preferred host");
  check(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, gpu_location()), "accessed by GPU");
  check(cudaDeviceSynchronize(), "advice");
  const double mapped = timed_kernel(run);
  std::printf("{\"mode\": \"remote\", \"bytes\": %zu, \"migrate_update_evict_s\": %.6f, "
              "\"faulting_update_s\": %.6f, \"remote_update_s\": %.6f}\n", bytes, migrated, in_place, mapped);
  check(cudaFree(p), "cudaFree");
  return 0;
}

int read_mostly(size_t bytes) {
  char* p = nullptr;
  float* sum = nullptr;
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  check(cudaMalloc(&sum, sizeof(float)), "cudaMalloc");
  fill_on_gpu(p, bytes);
  const size_t n = bytes / sizeof(float4);
  const auto pass = [&](bool duplicate) {
    prefetch(p, bytes, host_location());
    check(cudaMemAdvise(p, bytes, duplicate ? cudaMemAdviseSetReadMostly : cudaMemAdviseUnsetReadMostly,
                        gpu_location()), "read-mostly advice");
    check(cudaDeviceSynchronize(), "to host");
    const auto began = std::chrono::steady_clock::now();
    prefetch(p, bytes, gpu_location());
    read_sum<<<1024, 256>>>(reinterpret_cast<const float4*>(p), n, sum);
    check(cudaDeviceSynchronize(), "read");
    const double in = seconds_of(began);
    const auto dropping = std::chrono::steady_clock::now();
    prefetch(p, bytes, host_location());
    check(cudaDeviceSynchronize(), "drop");
    return std::make_pair(in, seconds_of(dropping));
  };
  const auto [plain_in, plain_out] = pass(false);
  const auto [dup_in, dup_out] = pass(true);
  std::printf("{\"mode\": \"read-mostly\", \"bytes\": %zu, \"migrated_in_and_read_s\": %.6f, "
              "\"migrated_evict_s\": %.6f, \"duplicated_in_and_read_s\": %.6f, \"duplicate_drop_s\": %.6f}\n",
              bytes, plain_in, plain_out, dup_in, dup_out);
  check(cudaFree(sum), "cudaFree");
  check(cudaFree(p), "cudaFree");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  if ((mode == "evict-threads" || mode == "evict-threads-uvm") && argc == 5 && bytes)
    return evict_threads(bytes, std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10), mode == "evict-threads-uvm");
  if (mode == "in-and-out" && argc == 4 && bytes) return in_and_out(bytes, std::strtoull(argv[3], nullptr, 10));
  if (mode == "remote" && argc == 3 && bytes) return remote(bytes);
  if (mode == "read-mostly" && argc == 3 && bytes) return read_mostly(bytes);
  std::fprintf(stderr, "usage: link_paths evict-threads|evict-threads-uvm BYTES THREADS CHUNK | remote BYTES | "
                       "read-mostly BYTES | in-and-out BYTES CHUNK\n");
  return 2;
}
