// Caching-allocator trace hook: records PyTorch's block and segment events (alloc, free requested,
// free completed, segment alloc/free) with address and size, so the runtime knows which managed
// memory the caching allocator holds but no tensor uses (dead data that need not be copied back).
//
// PyTorch offers no way to detach a tracker, so attach() installs one tracker per process and
// start()/stop() switch recording. Events go to a bounded buffer; events past its capacity are
// counted as dropped. The tracker runs under the caching allocator's lock: it only appends.
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace CA = c10::cuda::CUDACachingAllocator;

namespace {

using Event = std::tuple<int, int, uint64_t, uint64_t, uint64_t>;  // action, device, addr, bytes, stream

std::mutex g_mutex;
std::vector<Event> g_events;
size_t g_capacity = 1 << 20;
uint64_t g_dropped = 0;
std::atomic<bool> g_recording{false};
std::once_flag g_attached;

void on_trace(const CA::TraceEntry& entry) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_events.size() >= g_capacity) {
    g_dropped++;
    return;
  }
  g_events.emplace_back(static_cast<int>(entry.action_), static_cast<int>(entry.device_),
                        static_cast<uint64_t>(entry.addr_), static_cast<uint64_t>(entry.size_),
                        static_cast<uint64_t>(reinterpret_cast<uintptr_t>(entry.stream_)));
}

// Installs the tracker once per process and starts recording, keeping at most `capacity` events.
void start(size_t capacity) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_capacity = capacity;
  }
  std::call_once(g_attached, [] { CA::attachAllocatorTraceTracker(&on_trace); });
  g_recording.store(true);
}

void stop() { g_recording.store(false); }

// Removes and returns the recorded events, oldest first.
std::vector<Event> drain() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

uint64_t dropped() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_dropped;
}

// Action codes of this PyTorch build, by name (the enum's order is PyTorch's, not ours).
std::map<std::string, int> actions() {
  using A = CA::TraceEntry::Action;
  return {{"alloc", A::ALLOC},
          {"free_requested", A::FREE_REQUESTED},
          {"free_completed", A::FREE_COMPLETED},
          {"segment_alloc", A::SEGMENT_ALLOC},
          {"segment_free", A::SEGMENT_FREE},
          {"segment_map", A::SEGMENT_MAP},
          {"segment_unmap", A::SEGMENT_UNMAP},
          {"oom", A::OOM}};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "deepum caching-allocator trace hook";
  m.def("start", &start, py::arg("capacity"), "attach (once) and record up to `capacity` events");
  m.def("stop", &stop, "stop recording (the tracker stays attached)");
  m.def("drain", &drain, "remove and return events as (action, device, address, bytes, stream)");
  m.def("dropped", &dropped, "events dropped because the buffer was full");
  m.def("actions", &actions, "action codes by name");
}
