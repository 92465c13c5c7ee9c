// Does a thread migrating managed memory slow another thread's kernel launches? One thread launches
// LAUNCHES empty kernels on its stream, timing each launch call, while a second thread moves a
// managed buffer of BYTES between the host and the GPU in 2 MiB calls on its own stream, as the
// engine's worker does; prints one JSON object.
//
//   launch_contention MIGRATION BYTES LAUNCHES [KERNEL_NS]
//
// MIGRATION: none (no second thread); calls (cudaMemPrefetchAsync per 2 MiB block, each block evicted
// then brought back); ordered (the same, each call ordered after an event the launching thread records
// every 16 launches, so the driver defers it, as the engine's moves are ordered after the work launched
// before their decision); batch (the moves of 16 blocks in one cudaMemPrefetchBatchAsync each way);
// context and ordered_context (as calls and ordered, the mover in a CUDA context of its own on the
// same GPU, not the primary context the launches use); words_context (as ordered_context, ordered by a
// word of pinned host memory the launching stream writes every 16 launches, which the mover's stream
// waits for, instead of an event); green (as calls, the mover in a green context of 8 SMs made from
// the primary context); mapped_blocks and mapped_whole (no mover: before the launches the whole
// buffer is mapped from the host, preferred location the host and accessed by the GPU, as host
// mapping does, in one advice per 2 MiB block or one for the whole buffer); ioctl (as calls, each
// block moved by a synchronous UVM_MIGRATE on the unified-memory driver's file the CUDA driver opened,
// so the mover makes no CUDA call); ordered_ioctl (the same, each group after the CPU sees a word of
// pinned host memory the launching stream writes every 16 launches). KERNEL_NS (optional,
// default 0): each kernel spins that long, so that the GPU runs behind the launches. The mover's ordering calls are timed too, and how long each
// group's moves took to complete on the GPU once issued (its synchronization), the mover's rate, and
// whether every byte of the buffer still holds its fill at the end (`intact`).
// Times in microseconds; the caller (bench/launch_contention.py) keeps BYTES far under the free GPU
// memory.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "uvm_ioctl.hpp"

namespace {

constexpr size_t kBlock = size_t(2) << 20;
constexpr int kGroup = 16;  // launches per ordering event; blocks per batch call

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "launch_contention: %s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

__global__ void spin(long long ns) {
  const long long start = clock64();
  const long long cycles = ns * 2;  // about 2 GHz: the time is a rough target
  while (clock64() - start < cycles) {
  }
}

cudaMemLocation location(bool gpu) {
  cudaMemLocation l{};
  l.type = gpu ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
  l.id = 0;
  return l;
}

// What a MIGRATION name asks for.
struct Mode {
  enum class Issuer { kNone, kPrimary, kOwnContext, kGreen, kIoctl };  // kNone: no mover thread
  enum class Order { kNone, kEvent, kWord, kWordOnCpu };      // what each group of moves waits for
  std::string name;
  Issuer issuer = Issuer::kPrimary;
  Order order = Order::kNone;
  bool batch = false;     // one cudaMemPrefetchBatchAsync per group and direction
  size_t map_range = 0;   // mapped from the host beforehand, one advice per this many bytes (0: not mapped;
                          // SIZE_MAX: one for the whole buffer)
};

std::optional<Mode> mode_named(const std::string& name) {
  using I = Mode::Issuer;
  using O = Mode::Order;
  const Mode modes[] = {
      {"none", I::kNone},
      {"calls"},
      {"ordered", I::kPrimary, O::kEvent},
      {"batch", I::kPrimary, O::kNone, true},
      {"context", I::kOwnContext},
      {"ordered_context", I::kOwnContext, O::kEvent},
      {"words_context", I::kOwnContext, O::kWord},
      {"green", I::kGreen},
      {"mapped_blocks", I::kNone, O::kNone, false, kBlock},
      {"mapped_whole", I::kNone, O::kNone, false, SIZE_MAX},
      {"ioctl", I::kIoctl},
      {"ordered_ioctl", I::kIoctl, O::kWordOnCpu},
  };
  for (const Mode& m : modes)
    if (m.name == name) return m;
  return std::nullopt;
}

// Makes the mover's context current on this thread: its own (`context`), or a green one made from the
// primary context (`green`); nothing for the primary context. Exits where the driver makes none.
void enter_context(const Mode& mode, CUcontext& context, CUgreenCtx& green) {
  bool made = true;
  if (mode.issuer == Mode::Issuer::kOwnContext) {
    made = cuCtxCreate(&context, nullptr, 0, 0) == CUDA_SUCCESS;
  } else if (mode.issuer == Mode::Issuer::kGreen) {
    CUdevResource sms{}, part{}, rest{};
    CUdevResourceDesc desc = nullptr;
    unsigned groups = 1;
    made = cuDeviceGetDevResource(0, &sms, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS &&
           cuDevSmResourceSplitByCount(&part, &groups, &sms, &rest, 0, 8) == CUDA_SUCCESS &&
           cuDevResourceGenerateDesc(&desc, &part, 1) == CUDA_SUCCESS &&
           cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM) == CUDA_SUCCESS &&
           cuCtxFromGreenCtx(&context, green) == CUDA_SUCCESS && cuCtxSetCurrent(context) == CUDA_SUCCESS;
  }
  if (!made) {
    std::fprintf(stderr, "launch_contention: no context for mode %s\n", mode.name.c_str());
    std::exit(1);
  }
}

double microseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// The latest event the launching thread recorded (ordered modes) or the latest value its stream
// writes to `word` (words_context): the mover's calls wait for it.
struct Ordering {
  std::mutex mutex;
  cudaEvent_t latest = nullptr;
  uint64_t* word = nullptr;  // pinned, portable, mapped
  uint64_t written = 0;
};

struct Moved {
  long calls = 0, waits = 0, groups = 0;
  double bytes = 0, call_us = 0, wait_us = 0, sync_us = 0;
};

// Moves the buffer's blocks out to the host and back, group by group, until told to stop; `started`
// is set once the first group has moved.
Moved move(char* buffer, size_t bytes, const Mode& mode, Ordering& ordering, std::atomic<bool>& started,
           std::atomic<bool>& stop) {
  const bool by_ioctl = mode.issuer == Mode::Issuer::kIoctl;
  const uvm_ioctl::File uvm = by_ioctl ? uvm_ioctl::find_file(buffer, kBlock, "launch_contention") : uvm_ioctl::File{};
  check(cudaSetDevice(0), "cudaSetDevice");
  CUcontext context = nullptr;
  CUgreenCtx green = nullptr;
  enter_context(mode, context, green);
  cudaStream_t stream = nullptr;
  if (!by_ioctl) check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  Moved moved;
  const size_t blocks = bytes / kBlock;
  std::vector<void*> starts(kGroup);
  std::vector<size_t> sizes(kGroup, kBlock);
  size_t next = 0;
  uint64_t target = 0;
  while (!stop.load()) {
    {
      std::lock_guard<std::mutex> lock(ordering.mutex);
      const auto began = std::chrono::steady_clock::now();
      if (mode.order == Mode::Order::kEvent && ordering.latest)
        check(cudaStreamWaitEvent(stream, ordering.latest, 0), "cudaStreamWaitEvent");
      else if (mode.order == Mode::Order::kWord && ordering.written &&
               cuStreamWaitValue64(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(ordering.word),
                                   ordering.written, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWaitValue64");
      moved.wait_us += microseconds(std::chrono::steady_clock::now() - began);
      moved.waits++;
      target = ordering.written;
    }
    if (mode.order == Mode::Order::kWordOnCpu) {  // spun outside the lock the launching thread takes
      const auto began = std::chrono::steady_clock::now();
      while (*reinterpret_cast<volatile uint64_t*>(ordering.word) < target && !stop.load()) {
      }
      moved.wait_us += microseconds(std::chrono::steady_clock::now() - began);
    }
    for (int k = 0; k < kGroup; ++k) starts[k] = buffer + ((next + k) % blocks) * kBlock;
    next = (next + kGroup) % blocks;
    for (const bool to_gpu : {false, true}) {
      const auto began = std::chrono::steady_clock::now();
      if (by_ioctl) {
        for (void* start : starts)
          if (!uvm.migrate(start, kBlock, to_gpu)) check(cudaErrorUnknown, "UVM_MIGRATE");
        moved.calls += kGroup;
      } else if (mode.batch) {
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
    const auto issued = std::chrono::steady_clock::now();
    if (stream) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    moved.sync_us += microseconds(std::chrono::steady_clock::now() - issued);
    moved.groups++;
    started.store(true);
  }
  if (stream) check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  if (green)
    cuGreenCtxDestroy(green);
  else if (context)
    cuCtxDestroy(context);
  return moved;
}

int run(const Mode& mode, size_t bytes, int launches, long long kernel_ns) {
  check(cudaSetDevice(0), "cudaSetDevice");
  char* buffer = nullptr;
  check(cudaMallocManaged(&buffer, bytes), "cudaMallocManaged");
  check(cudaMemset(buffer, 1, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "fill");
  if (mode.map_range) {
    const size_t range = std::min(mode.map_range, bytes);
    for (size_t at = 0; at < bytes; at += range) {
      check(cudaMemAdvise(buffer + at, range, cudaMemAdviseSetPreferredLocation, location(false)), "cudaMemAdvise");
      check(cudaMemAdvise(buffer + at, range, cudaMemAdviseSetAccessedBy, location(true)), "cudaMemAdvise");
    }
    check(cudaMemPrefetchAsync(buffer, bytes, location(false), 0, 0), "cudaMemPrefetchAsync");
    check(cudaDeviceSynchronize(), "map");
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < 100; ++i) spin<<<1, 1, 0, stream>>>(0);  // warm-up
  check(cudaStreamSynchronize(stream), "warm-up");

  Ordering ordering;
  check(cudaHostAlloc(reinterpret_cast<void**>(&ordering.word), sizeof(uint64_t), cudaHostAllocPortable | cudaHostAllocMapped),
        "cudaHostAlloc");
  *ordering.word = 0;
  std::atomic<bool> started{false}, stop{false};
  Moved moved;
  std::thread mover;
  if (mode.issuer != Mode::Issuer::kNone)
    mover = std::thread([&] { moved = move(buffer, bytes, mode, ordering, started, stop); });
  while (mover.joinable() && !started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // under way

  std::vector<double> launch_us;
  std::vector<cudaEvent_t> events;
  launch_us.reserve(launches);
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    const auto t = std::chrono::steady_clock::now();
    spin<<<1, 1, 0, stream>>>(kernel_ns);
    launch_us.push_back(microseconds(std::chrono::steady_clock::now() - t));
    if ((mode.order == Mode::Order::kWord || mode.order == Mode::Order::kWordOnCpu) && i % kGroup == 0) {
      std::lock_guard<std::mutex> lock(ordering.mutex);
      if (cuStreamWriteValue64(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(ordering.word),
                               ordering.written + 1, 0) != CUDA_SUCCESS)
        check(cudaErrorUnknown, "cuStreamWriteValue64");
      ordering.written++;
    }
    if (mode.order == Mode::Order::kEvent && i % kGroup == 0) {
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
  check(cudaFreeHost(ordering.word), "cudaFreeHost");

  // Every byte still holds the fill: moves must not change contents.
  bool intact = true;
  for (size_t at = 0; at < bytes && intact; ++at) intact = buffer[at] == 1;
  std::vector<double> sorted = launch_us;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : launch_us) sum += v;
  const auto at = [&](double q) { return sorted[std::min(sorted.size() - 1, size_t(q * sorted.size()))]; };
  std::printf("{\"migration\": \"%s\", \"bytes\": %zu, \"launches\": %d, \"launch_thread_us\": %.1f, "
              "\"launch_call_us_mean\": %.2f, \"launch_call_us_median\": %.2f, \"launch_call_us_p90\": %.2f, "
              "\"launch_call_us_p99\": %.2f, \"launch_call_us_max\": %.1f, \"migration_calls\": %ld, "
              "\"migrated_gb\": %.3f, \"migration_call_us_mean\": %.2f, \"kernel_ns\": %lld, "
              "\"order_wait_call_us_mean\": %.2f, \"group_sync_us_mean\": %.1f, \"mover_gb_per_s\": %.2f, "
              "\"intact\": %s}\n",
              mode.name.c_str(), bytes, launches, total_us, sum / launches, at(0.5), at(0.9), at(0.99),
              sorted.back(), moved.calls, moved.bytes / 1e9, moved.calls ? moved.call_us / moved.calls : 0.0,
              kernel_ns, moved.waits ? moved.wait_us / moved.waits : 0.0, moved.groups ? moved.sync_us / moved.groups : 0.0,
              moved.call_us + moved.sync_us > 0 ? moved.bytes / (moved.call_us + moved.sync_us) / 1e3 : 0.0,
              intact ? "true" : "false");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  check(cudaFree(buffer), "cudaFree");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string migration = argc > 1 ? argv[1] : "";
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) / kBlock * kBlock : 0;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 0;
  const long long kernel_ns = argc > 4 ? std::atoll(argv[4]) : 0;
  const std::optional<Mode> mode = mode_named(migration);
  if (argc < 4 || argc > 5 || kernel_ns < 0 || !mode || bytes < kGroup * kBlock || launches < 1) {
    std::fprintf(stderr,
                 "usage: launch_contention none|calls|ordered|batch|context|ordered_context|words_context|green|"
                 "mapped_blocks|mapped_whole|ioctl|ordered_ioctl BYTES LAUNCHES [KERNEL_NS] (BYTES >= 32 MiB)\n");
    return 2;
  }
  return run(*mode, bytes, launches, kernel_ns);
}
