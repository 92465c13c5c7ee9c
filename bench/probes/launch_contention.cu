// Does a thread migrating managed memory slow another thread's kernel launches? One thread launches
// LAUNCHES empty kernels on its stream, timing each launch call, while a second thread moves a
// managed buffer of BYTES between the host and the GPU in 2 MiB calls on its own stream, as the
// engine's worker does; prints one JSON object.
//
//   launch_contention MIGRATION BYTES LAUNCHES
//
// MIGRATION: none (no second thread); calls (cudaMemPrefetchAsync per 2 MiB block, each block evicted
// then brought back); ordered (the same, each call ordered after an event the launching thread records
// every 16 launches, so the driver defers it, as the engine's moves are ordered after the work launched
// before their decision); batch (the moves of 16 blocks in one cudaMemPrefetchBatchAsync each way).
// Times in microseconds; the caller (bench/launch_contention.py) keeps BYTES far under the free GPU
// memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBlock = size_t(2) << 20;
constexpr int kGroup = 16;  // launches per ordering event; blocks per batch call

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "launch_contention: %s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

__global__ void empty() {}

cudaMemLocation location(bool gpu) {
  cudaMemLocation l{};
  l.type = gpu ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
  l.id = 0;
  return l;
}

double microseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// The latest event the launching thread recorded (ordered mode): the mover's calls wait for it.
struct Ordering {
  std::mutex mutex;
  cudaEvent_t latest = nullptr;
};

struct Moved {
  long calls = 0;
  double bytes = 0, call_us = 0;
};

// Moves the buffer's blocks out to the host and back, group by group, until told to stop.
Moved move(char* buffer, size_t bytes, const std::string& migration, Ordering& ordering, std::atomic<bool>& stop) {
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  Moved moved;
  const size_t blocks = bytes / kBlock;
  std::vector<void*> starts(kGroup);
  std::vector<size_t> sizes(kGroup, kBlock);
  size_t next = 0;
  while (!stop.load()) {
    if (migration == "ordered") {
      std::lock_guard<std::mutex> lock(ordering.mutex);
      if (ordering.latest) check(cudaStreamWaitEvent(stream, ordering.latest, 0), "cudaStreamWaitEvent");
    }
    for (int k = 0; k < kGroup; ++k) starts[k] = buffer + ((next + k) % blocks) * kBlock;
    next = (next + kGroup) % blocks;
    for (const bool to_gpu : {false, true}) {
      const auto began = std::chrono::steady_clock::now();
      if (migration == "batch") {
        cudaMemLocation where = location(to_gpu);
        size_t first = 0;
        check(cudaMemPrefetchBatchAsync(starts.data(), sizes.data(), kGroup, &where, &first, 1, 0, stream),
              "cudaMemPrefetchBatchAsync");
        moved.calls += 1;
      } else {
        for (void* start : starts)
          check(cudaMemPrefetchAsync(start, kBlock, location(to_gpu), 0, stream), "cudaMemPrefetchAsync");
        moved.calls += kGroup;
      }
      moved.call_us += microseconds(std::chrono::steady_clock::now() - began);
      moved.bytes += double(kGroup) * kBlock;
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return moved;
}

int run(const std::string& migration, size_t bytes, int launches) {
  check(cudaSetDevice(0), "cudaSetDevice");
  char* buffer = nullptr;
  check(cudaMallocManaged(&buffer, bytes), "cudaMallocManaged");
  check(cudaMemset(buffer, 1, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "fill");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < 100; ++i) empty<<<1, 1, 0, stream>>>();  // warm-up
  check(cudaStreamSynchronize(stream), "warm-up");

  Ordering ordering;
  std::atomic<bool> stop{false};
  Moved moved;
  std::thread mover;
  if (migration != "none") mover = std::thread([&] { moved = move(buffer, bytes, migration, ordering, stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the mover under way

  std::vector<double> launch_us;
  std::vector<cudaEvent_t> events;
  launch_us.reserve(launches);
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    const auto t = std::chrono::steady_clock::now();
    empty<<<1, 1, 0, stream>>>();
    launch_us.push_back(microseconds(std::chrono::steady_clock::now() - t));
    if (migration == "ordered" && i % kGroup == 0) {
      cudaEvent_t event;
      check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventRecord(event, stream), "cudaEventRecord");
      std::lock_guard<std::mutex> lock(ordering.mutex);
      ordering.latest = event;
      events.push_back(event);
    }
  }
  const double total_us = microseconds(std::chrono::steady_clock::now() - began);
  check(cudaStreamSynchronize(stream), "launches");
  stop.store(true);
  if (mover.joinable()) mover.join();
  for (cudaEvent_t e : events) cudaEventDestroy(e);

  std::vector<double> sorted = launch_us;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : launch_us) sum += v;
  const auto at = [&](double q) { return sorted[std::min(sorted.size() - 1, size_t(q * sorted.size()))]; };
  std::printf("{\"migration\": \"%s\", \"bytes\": %zu, \"launches\": %d, \"launch_thread_us\": %.1f, "
              "\"launch_call_us_mean\": %.2f, \"launch_call_us_median\": %.2f, \"launch_call_us_p90\": %.2f, "
              "\"launch_call_us_p99\": %.2f, \"launch_call_us_max\": %.1f, \"migration_calls\": %ld, "
              "\"migrated_gb\": %.3f, \"migration_call_us_mean\": %.2f}\n",
              migration.c_str(), bytes, launches, total_us, sum / launches, at(0.5), at(0.9), at(0.99),
              sorted.back(), moved.calls, moved.bytes / 1e9, moved.calls ? moved.call_us / moved.calls : 0.0);
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check(cudaFree(buffer), "cudaFree");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string migration = argc > 1 ? argv[1] : "";
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) / kBlock * kBlock : 0;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 0;
  const bool known = migration == "none" || migration == "calls" || migration == "ordered" || migration == "batch";
  if (argc != 4 || !known || bytes < kGroup * kBlock || launches < 1) {
    std::fprintf(stderr, "usage: launch_contention none|calls|ordered|batch BYTES LAUNCHES (BYTES >= 32 MiB)\n");
    return 2;
  }
  return run(migration, bytes, launches);
}
