// Read duplication as a way to evict without a copy. Managed memory advised read-mostly is copied to
// the GPU as a duplicate: the host keeps its copy until a processor writes. Can the GPU's copy then be
// dropped for free, and what does a write to a duplicate cost? Each case moves BYTES of managed memory
// in calls of CHUNK bytes (the engine's worker moves 2 MiB blocks), one thread, timing each phase:
//
//   migrate        prefetched in, read by a kernel, evicted (prefetch to the host): the plain path
//   dup_prefetch   advised read-mostly, prefetched in (a duplicate), read, then prefetched to the host,
//                  then prefetched in again: nothing to copy there if the GPU kept its duplicate
//   dup_unset      the same, then the advice withdrawn (unset read-mostly), then prefetched to the host,
//                  then prefetched in again: a full copy there shows the GPU's copy was dropped
//   written        advised read-mostly, prefetched in, written by a kernel (the duplicate collapses),
//                  then the advice withdrawn and prefetched to the host; against the plain path with
//                  the same kernel (migrated_written)
//
// The cases that write check the contents (a sum read on the GPU, and the host's view at the end);
// cudaMemGetInfo does not count managed memory, so residency is read from the times. Usage:
// duplicates BYTES CHUNK [CASE...] (all cases when none is named). One JSON line per case; times in
// seconds.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "duplicates: %s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

cudaMemLocation location(bool gpu) {
  cudaMemLocation l{};
  l.type = gpu ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
  l.id = 0;
  return l;
}

__global__ void add_one(float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] += 1.0f;
}

__global__ void sum(const float* x, size_t n, double* out) {
  double s = 0.0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    s += x[i];
  atomicAdd(out, s);
}

struct Probe {
  size_t bytes, chunk;
  float* data = nullptr;
  double* total = nullptr;
  size_t n() const { return bytes / sizeof(float); }

  // Calls `each(offset)` for every chunk, then waits for the device; seconds taken.
  template <typename Each>
  double chunked(Each each) {
    check(cudaDeviceSynchronize(), "before");
    const auto began = std::chrono::steady_clock::now();
    for (size_t off = 0; off < bytes; off += chunk) each(reinterpret_cast<char*>(data) + off);
    check(cudaDeviceSynchronize(), "after");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  double prefetch(bool to_gpu) {
    return chunked([&](char* p) { check(cudaMemPrefetchAsync(p, chunk, location(to_gpu), 0, 0), "prefetch"); });
  }
  double advise(bool read_mostly) {
    return chunked([&](char* p) {
      check(cudaMemAdvise(p, chunk, read_mostly ? cudaMemAdviseSetReadMostly : cudaMemAdviseUnsetReadMostly,
                          location(true)), "read-mostly advice");
    });
  }
  template <typename Launch>
  double kernel(Launch launch) {
    check(cudaDeviceSynchronize(), "before");
    const auto began = std::chrono::steady_clock::now();
    launch();
    check(cudaDeviceSynchronize(), "kernel");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  double read() { return kernel([&] { sum<<<1024, 256>>>(data, n(), total); }); }
  double write() { return kernel([&] { add_one<<<1024, 256>>>(data, n()); }); }
  double gpu_sum() {
    check(cudaMemset(total, 0, sizeof(double)), "cudaMemset");
    sum<<<1024, 256>>>(data, n(), total);
    double out = 0;
    check(cudaMemcpy(&out, total, sizeof(double), cudaMemcpyDeviceToHost), "sum back");
    return out;
  }
};

void report(const char* name, const Probe& p, const std::string& fields) {
  std::printf("{\"case\": \"%s\", \"bytes\": %zu, \"chunk\": %zu, %s}\n", name, p.bytes, p.chunk, fields.c_str());
  std::fflush(stdout);
}

std::string field(const char* key, double v) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "\"%s\": %.6f", key, v);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: duplicates BYTES CHUNK [migrate|dup_prefetch|dup_unset|written ...]\n");
    return 2;
  }
  const auto chosen = [&](const char* name) {
    if (argc == 3) return true;
    for (int i = 3; i < argc; ++i)
      if (std::strcmp(argv[i], name) == 0) return true;
    return false;
  };
  Probe p{std::strtoull(argv[1], nullptr, 10), std::strtoull(argv[2], nullptr, 10)};
  if (!p.bytes || !p.chunk || p.bytes % p.chunk || p.chunk % 4096) {
    std::fprintf(stderr, "duplicates: BYTES must be a positive multiple of CHUNK, CHUNK of 4096\n");
    return 2;
  }
  check(cudaMallocManaged(&p.data, p.bytes), "cudaMallocManaged");
  check(cudaMalloc(&p.total, sizeof(double)), "cudaMalloc");
  check(cudaMemset(p.data, 0, p.bytes), "cudaMemset");
  p.write();  // every element 1
  p.prefetch(false);
  p.prefetch(true);  // host and GPU backing allocated once, before timing
  p.prefetch(false);
  const double expected0 = p.gpu_sum();
  p.prefetch(false);

  if (chosen("migrate")) {
    const double in = p.prefetch(true);
    const double read = p.read();
    const double out = p.prefetch(false);
    report("migrate", p, field("in_s", in) + ", " + field("read_s", read) + ", " + field("out_s", out));
  }
  if (chosen("dup_prefetch")) {
    const double advise = p.advise(true);
    const double in = p.prefetch(true);
    const double read = p.read();
    const double out = p.prefetch(false);
    const double again = p.prefetch(true);  // nothing to copy if the GPU kept its duplicate
    const double unset = p.advise(false);
    report("dup_prefetch", p, field("advise_s", advise) + ", " + field("in_s", in) + ", " + field("read_s", read) +
                                  ", " + field("out_s", out) + ", " + field("in_again_s", again) + ", " +
                                  field("unset_s", unset));
    p.prefetch(false);
  }
  if (chosen("dup_unset")) {
    p.advise(true);
    const double in = p.prefetch(true);
    p.read();
    const double unset = p.advise(false);
    const double out = p.prefetch(false);
    const double again = p.prefetch(true);  // back in after the drop: a copy, like any other
    const bool intact = p.gpu_sum() == expected0;
    p.prefetch(false);
    report("dup_unset", p, field("in_s", in) + ", " + field("unset_s", unset) + ", " + field("out_s", out) + ", " +
                               field("in_again_s", again) + ", \"intact\": " + (intact ? "true" : "false"));
  }
  if (chosen("written")) {
    p.prefetch(true);
    const double plain_write = p.write();
    const double plain_out = p.prefetch(false);
    p.advise(true);
    p.prefetch(true);
    const double dup_write = p.write();
    const double unset = p.advise(false);
    const double out = p.prefetch(false);
    const double expected = expected0 + 2.0 * double(p.n());
    bool intact = p.gpu_sum() == expected;
    p.prefetch(false);
    check(cudaDeviceSynchronize(), "to host");
    for (size_t i = 0; i < p.n(); i += 4096 / sizeof(float)) intact = intact && p.data[i] == 3.0f;
    report("written", p, field("migrated_write_s", plain_write) + ", " + field("migrated_out_s", plain_out) + ", " +
                             field("duplicate_write_s", dup_write) + ", " + field("unset_s", unset) + ", " +
                             field("out_s", out) +
                             ", \"intact\": " + (intact ? "true" : "false"));
  }
  check(cudaFree(p.total), "cudaFree");
  check(cudaFree(p.data), "cudaFree");
  return 0;
}
