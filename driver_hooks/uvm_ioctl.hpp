// Migrations and discards through the unified-memory driver's own calls, UVM_MIGRATE and UVM_DISCARD,
// on the /dev/nvidia-uvm file through which the CUDA driver manages this process's managed memory
// (UVM_MIGRATE_PARAMS and UVM_DISCARD_PARAMS of kernel-open/nvidia-uvm/uvm_ioctl.h in NVIDIA's open
// kernel modules, the same from the 575 to the 595 series; bench/uvm_ioctls.py is the Python side).
// The calls take no lock of the CUDA driver, so kernel launches and other threads' moves go on beside
// them (docs/results.md). A migration never changes what memory holds, whoever issues it; a discard
// drops the contents of its range, so only the caller knows when that is allowed.
#pragma once
#include <dirent.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uvm_ioctl {

constexpr unsigned long kMigrate = 51;  // UVM_MIGRATE: on Linux the ioctl's number is the command
constexpr unsigned long kDiscard = 80;  // UVM_DISCARD

struct MigrateParams {  // UVM_MIGRATE_PARAMS
  uint64_t base;
  uint64_t length;
  uint8_t destination_uuid[16];
  uint32_t flags;  // 0: synchronous, returns once copied and mapped
  uint64_t semaphore_address;
  uint32_t semaphore_payload;
  int32_t cpu_numa_node;  // -1: any
  uint64_t user_space_start;
  uint64_t user_space_length;
  uint32_t rm_status;  // 0: NV_OK
};
static_assert(sizeof(MigrateParams) == 80, "UVM_MIGRATE_PARAMS layout");

struct DiscardParams {  // UVM_DISCARD_PARAMS
  uint64_t base;
  uint64_t length;
  uint64_t flags;
  uint32_t rm_status;  // 0: NV_OK
};
static_assert(sizeof(DiscardParams) == 32, "UVM_DISCARD_PARAMS layout");

// UVM_DISCARD_FLAGS_UNMAP: the discarded pages are unmapped, so a write to them lands and ends their
// discard, whatever happens to the range afterwards (without it, any access is undefined until a
// migration of the range).
constexpr uint64_t kDiscardUnmap = 1;

// NV_PROCESSOR_UUID_CPU_DEFAULT: the host as a migration's destination.
constexpr uint8_t kCpuUuid[16] = {0xa6, 0x5e, 0x0f, 0x4e, 0xd7, 0xd4, 0x7b, 0xa2,
                                  0x50, 0x47, 0x41, 0x2c, 0x14, 0x2a, 0x77, 0x73};

struct File {
  int fd = -1;             // -1: no file of the driver took a move
  uint8_t gpu_uuid[16] = {};  // the GPU as a migration's destination

  // Moves [start, start + bytes) to the GPU or the host; true once done, false where the driver
  // refused (nothing moved that the caller must undo).
  bool migrate(const void* start, size_t bytes, bool to_gpu) const {
    MigrateParams p{};
    p.base = reinterpret_cast<uint64_t>(start);
    p.length = bytes;
    std::memcpy(p.destination_uuid, to_gpu ? gpu_uuid : kCpuUuid, 16);
    p.cpu_numa_node = -1;
    return fd >= 0 && ioctl(fd, kMigrate, &p) == 0 && p.rm_status == 0;
  }

  // Drops the contents of [start, start + bytes): marks its pages discarded and unmaps them, so that
  // the next migration of the range copies none of them (and ends their discard) and a write before
  // that lands and ends it too; the range holds indeterminate data from now on. False where the
  // driver refused (nothing dropped).
  bool discard(const void* start, size_t bytes) const {
    DiscardParams p{};
    p.base = reinterpret_cast<uint64_t>(start);
    p.length = bytes;
    p.flags = kDiscardUnmap;
    return fd >= 0 && ioctl(fd, kDiscard, &p) == 0 && p.rm_status == 0;
  }
};

// The driver's file that the CUDA driver opened, found by moving [start, start + bytes) of managed
// memory to the GPU `gpu_uuid` names or the host: the file on which the move succeeds (done when this
// returns); the driver's other files refuse it without moving anything. fd -1 where none takes it.
inline File find_file(const uint8_t (&gpu_uuid)[16], const void* start, size_t bytes, bool to_gpu) {
  File file;
  std::memcpy(file.gpu_uuid, gpu_uuid, 16);
  DIR* fds = opendir("/proc/self/fd");
  while (fds && file.fd < 0) {
    const dirent* entry = readdir(fds);
    if (!entry) break;
    char link[300], target[256] = {};
    std::snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
    if (readlink(link, target, sizeof target - 1) <= 0 || std::strcmp(target, "/dev/nvidia-uvm") != 0) continue;
    file.fd = std::atoi(entry->d_name);
    if (!file.migrate(start, bytes, to_gpu)) file.fd = -1;
  }
  if (fds) closedir(fds);
  return file;
}

}  // namespace uvm_ioctl
