"""bench/uvm_ioctls.py on the CPU: the parameter layouts match the unified-memory driver's header,
each call names its destination, and a file that refuses a call is never kept."""
import ctypes

import pytest

from bench_scripts import load

(uvm_ioctls,) = load("uvm_ioctls")

GPU_UUID = bytes(range(16))


def offsets(structure) -> dict:
    return {name: getattr(structure, name).offset for name, _ in structure._fields_}


def test_layouts_follow_the_drivers_header():
    # UVM_MIGRATE_PARAMS and UVM_DISCARD_PARAMS of kernel-open/nvidia-uvm/uvm_ioctl.h: NvU64 fields
    # aligned to 8 bytes (NV_ALIGN_BYTES(8)), NvProcessorUuid 16 bytes, NV_STATUS 4 bytes.
    assert offsets(uvm_ioctls._Migrate) == {
        "base": 0, "length": 8, "destination_uuid": 16, "flags": 32, "semaphore_address": 40,
        "semaphore_payload": 48, "cpu_numa_node": 52, "user_space_start": 56, "user_space_length": 64,
        "rm_status": 72}
    assert ctypes.sizeof(uvm_ioctls._Migrate) == 80
    assert offsets(uvm_ioctls._Discard) == {"base": 0, "length": 8, "flags": 16, "rm_status": 24}
    assert ctypes.sizeof(uvm_ioctls._Discard) == 32


@pytest.fixture
def driver_file(monkeypatch):
    """File descriptor 7 reads as /dev/nvidia-uvm; the ioctls it took are in the returned list, and
    each answers with the status `answer["status"]`."""
    calls, answer = [], {"status": 0}
    monkeypatch.setattr(uvm_ioctls.os, "listdir", lambda path: ["3", "7"])
    monkeypatch.setattr(uvm_ioctls.os, "readlink", lambda path: "/dev/nvidia-uvm" if path.endswith("/7") else "/dev/null")

    def ioctl(fd, request, params, mutate):
        calls.append((fd, request, type(params).from_buffer_copy(params)))
        params.rm_status = answer["status"]
        return 0

    monkeypatch.setattr(uvm_ioctls.fcntl, "ioctl", ioctl)
    return calls, answer


def test_a_migration_names_its_destination_and_is_synchronous(driver_file):
    calls, _ = driver_file
    uvm = uvm_ioctls.UvmFile(GPU_UUID)
    assert uvm.migrate(1 << 21, 4 << 20, to_gpu=True)
    assert uvm.migrate(1 << 21, 4 << 20, to_gpu=False)
    (fd, request, to_gpu), (_, _, to_host) = calls
    assert (fd, request, uvm.fd) == (7, uvm_ioctls.MIGRATE, 7)
    assert bytes(to_gpu.destination_uuid) == GPU_UUID and bytes(to_host.destination_uuid) == uvm_ioctls.CPU_UUID
    assert (to_gpu.base, to_gpu.length, to_gpu.flags, to_gpu.semaphore_address, to_gpu.cpu_numa_node) == \
        (1 << 21, 4 << 20, 0, 0, -1)


def test_a_discard_unmaps_only_when_asked(driver_file):
    calls, _ = driver_file
    uvm = uvm_ioctls.UvmFile(GPU_UUID)
    assert uvm.discard(0, 2 << 20) and uvm.discard(0, 2 << 20, unmap=True)
    assert [(request, params.flags) for _, request, params in calls] == [(uvm_ioctls.DISCARD, 0), (uvm_ioctls.DISCARD, 1)]


def test_a_file_that_refuses_is_not_kept(driver_file):
    calls, answer = driver_file
    answer["status"] = 0x1F  # any status but NV_OK
    uvm = uvm_ioctls.UvmFile(GPU_UUID)
    assert not uvm.migrate(0, 2 << 20, to_gpu=True)
    assert uvm.fd is None and len(calls) == 1


def test_without_the_drivers_file_nothing_is_called(monkeypatch):
    monkeypatch.setattr(uvm_ioctls.os, "listdir", lambda path: ["3"])
    monkeypatch.setattr(uvm_ioctls.os, "readlink", lambda path: "/dev/null")
    monkeypatch.setattr(uvm_ioctls.fcntl, "ioctl", lambda *a: pytest.fail("an ioctl on a file that is not the driver's"))
    uvm = uvm_ioctls.UvmFile(GPU_UUID)
    assert not uvm.migrate(0, 2 << 20, to_gpu=False) and not uvm.discard(0, 2 << 20)
