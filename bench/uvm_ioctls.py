"""The unified-memory driver's own calls, made on the /dev/nvidia-uvm file through which the CUDA
driver manages this process's managed memory: UVM_MIGRATE and UVM_DISCARD of
kernel-open/nvidia-uvm/uvm_ioctl.h in NVIDIA's open kernel modules (the same parameters from the 555
to the 595 series). Neither takes a lock of the CUDA driver (bench/results/uvm_ioctl/). A migration
never changes what memory holds; a discard drops it. For the unified-memory probes only; imported
inside their main(): it needs a GPU machine.
"""
from __future__ import annotations

import ctypes
import fcntl
import os

MIGRATE = 51
DISCARD = 80
CPU_UUID = bytes([0xa6, 0x5e, 0x0f, 0x4e, 0xd7, 0xd4, 0x7b, 0xa2, 0x50, 0x47, 0x41, 0x2c, 0x14, 0x2a, 0x77, 0x73])
"""NV_PROCESSOR_UUID_CPU_DEFAULT: the host as a migration's destination."""


class _Migrate(ctypes.Structure):
    _fields_ = [("base", ctypes.c_uint64), ("length", ctypes.c_uint64), ("destination_uuid", ctypes.c_uint8 * 16),
                ("flags", ctypes.c_uint32), ("semaphore_address", ctypes.c_uint64),
                ("semaphore_payload", ctypes.c_uint32), ("cpu_numa_node", ctypes.c_int32),
                ("user_space_start", ctypes.c_uint64), ("user_space_length", ctypes.c_uint64),
                ("rm_status", ctypes.c_uint32)]


class _Discard(ctypes.Structure):
    _fields_ = [("base", ctypes.c_uint64), ("length", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                ("rm_status", ctypes.c_uint32)]


assert ctypes.sizeof(_Migrate) == 80 and ctypes.sizeof(_Discard) == 32


class UvmFile:
    """Synchronous moves and discards of managed ranges; `gpu_uuid` is the GPU's 16-byte UUID."""

    def __init__(self, gpu_uuid: bytes):
        self.gpu_uuid = bytes(gpu_uuid)
        self.fd = None

    def _call(self, fd: int, request: int, params) -> bool:
        try:
            fcntl.ioctl(fd, request, params, True)
        except OSError:
            return False
        return params.rm_status == 0

    def _on_the_file(self, request: int, params) -> bool:
        if self.fd is not None:
            return self._call(self.fd, request, params)
        for name in os.listdir("/proc/self/fd"):  # the file the CUDA driver opened takes it; others refuse
            try:
                target = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                continue
            if target == "/dev/nvidia-uvm" and self._call(int(name), request, params):
                self.fd = int(name)
                return True
        return False

    def migrate(self, start: int, length: int, to_gpu: bool) -> bool:
        """Moves [start, start + length) to the GPU or the host; True once done."""
        params = _Migrate(base=start, length=length, cpu_numa_node=-1)
        params.destination_uuid[:] = self.gpu_uuid if to_gpu else CPU_UUID
        return self._on_the_file(MIGRATE, params)

    def discard(self, start: int, length: int, unmap: bool = False) -> bool:
        """Drops what [start, start + length) holds; the next migration of it copies nothing. Without
        `unmap`, the range must not be touched before that migration."""
        return self._on_the_file(DISCARD, _Discard(base=start, length=length, flags=1 if unmap else 0))
