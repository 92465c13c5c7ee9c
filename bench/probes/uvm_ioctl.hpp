// The probes' side of the engine's driver_hooks/uvm_ioctl.hpp: the driver's file for GPU 0, or an
// exit naming the probe where no file takes a move.
#pragma once
#include <cuda.h>

#include "../../driver_hooks/uvm_ioctl.hpp"

namespace uvm_ioctl {

// The file on which moving `managed` (at least `bytes` of managed memory) to GPU 0 succeeds. Exits,
// naming `who`, where none does.
inline File find_file(const void* managed, size_t bytes, const char* who) {
  CUuuid uuid;
  if (cuDeviceGetUuid(&uuid, 0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s: cuDeviceGetUuid failed\n", who);
    std::exit(1);
  }
  uint8_t gpu[16];
  std::memcpy(gpu, uuid.bytes, 16);
  const File file = find_file(gpu, managed, bytes, true);
  if (file.fd < 0) {
    std::fprintf(stderr, "%s: no /dev/nvidia-uvm file takes UVM_MIGRATE\n", who);
    std::exit(1);
  }
  return file;
}

}  // namespace uvm_ioctl
