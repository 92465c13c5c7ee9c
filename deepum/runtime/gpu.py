"""Small CUDA helpers over cuda-bindings: driver state before any context exists, pointer memory
types and unified-memory advice. cuda-bindings is imported inside the functions, so importing this
module needs neither CUDA nor a GPU."""
from __future__ import annotations

# cudaMemoryType values reported by cudaPointerGetAttributes.
MEMORY_TYPE_UNREGISTERED = 0
MEMORY_TYPE_HOST = 1
MEMORY_TYPE_DEVICE = 2
MEMORY_TYPE_MANAGED = 3

# Names accepted by advise(), mapped to cudaMemoryAdvise members.
ADVICE = {
    "preferred_location": "cudaMemAdviseSetPreferredLocation",
    "accessed_by": "cudaMemAdviseSetAccessedBy",
    "read_mostly": "cudaMemAdviseSetReadMostly",
    "unset_read_mostly": "cudaMemAdviseUnsetReadMostly",
}


class CudaError(RuntimeError):
    """A CUDA driver or runtime call failed."""


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise RuntimeError("deepum's GPU runtime needs cuda-bindings: pip install 'deepum[gpu]' "
                           "(or pip install cuda-bindings)") from exc
    return driver


def _runtime():
    _driver()
    from cuda.bindings import runtime
    return runtime


def _check(result, call: str, success, error_name):
    """The values after the status of a CUDA call; CudaError naming the call if the status is not success."""
    status, *values = result
    if status != success:
        _, name = error_name(status)
        raise CudaError(f"{call} failed: {name.decode() if isinstance(name, bytes) else name}")
    return values


def _check_driver(result, call: str):
    driver = _driver()
    return _check(result, call, driver.CUresult.CUDA_SUCCESS, driver.cuGetErrorName)


def _check_runtime(result, call: str):
    runtime = _runtime()
    return _check(result, call, runtime.cudaError_t.cudaSuccess, runtime.cudaGetErrorName)


def driver_init() -> None:
    """cuInit(0): loads the driver without creating a context (safe before CUPTI is configured)."""
    _check_driver(_driver().cuInit(0), "cuInit")


def device_count() -> int:
    """Number of CUDA devices the driver sees (needs driver_init first; creates no context)."""
    (count,) = _check_driver(_driver().cuDeviceGetCount(), "cuDeviceGetCount")
    return int(count)


def primary_context_active(device: int) -> bool:
    """Whether the device's primary context (the one PyTorch and the runtime API use) exists."""
    driver = _driver()
    (handle,) = _check_driver(driver.cuDeviceGet(device), "cuDeviceGet")
    _flags, active = _check_driver(driver.cuDevicePrimaryCtxGetState(handle), "cuDevicePrimaryCtxGetState")
    return bool(active)


def current_context_exists() -> bool:
    """Whether the calling thread has a current CUDA context (of any kind)."""
    (context,) = _check_driver(_driver().cuCtxGetCurrent(), "cuCtxGetCurrent")
    return int(context) != 0


def memory_type(address: int) -> int:
    """cudaPointerGetAttributes(address).type: one of the MEMORY_TYPE_* values."""
    (attributes,) = _check_runtime(_runtime().cudaPointerGetAttributes(address), "cudaPointerGetAttributes")
    return int(attributes.type)


def _device_location(device: int):
    runtime = _runtime()
    location = runtime.cudaMemLocation()
    location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    location.id = device
    return location


def advise(address: int, nbytes: int, advice: str, device: int) -> None:
    """cudaMemAdvise on a managed range of nbytes bytes; advice is a key of ADVICE, naming `device`
    as the location (ignored by the driver for read_mostly / unset_read_mostly)."""
    if advice not in ADVICE:
        raise ValueError(f"unknown advice {advice!r}; known: {sorted(ADVICE)}")
    runtime = _runtime()
    member = getattr(runtime.cudaMemoryAdvise, ADVICE[advice])
    _check_runtime(runtime.cudaMemAdvise(address, nbytes, member, _device_location(device)),
                   f"cudaMemAdvise({ADVICE[advice]})")


def range_read_mostly(address: int, nbytes: int) -> bool:
    """Whether the whole managed range carries the read-mostly advice."""
    runtime = _runtime()
    (value,) = _check_runtime(runtime.cudaMemRangeGetAttribute(
        4, runtime.cudaMemRangeAttribute.cudaMemRangeAttributeReadMostly, address, nbytes),
        "cudaMemRangeGetAttribute(ReadMostly)")
    return bool(value)


def range_preferred_device(address: int, nbytes: int) -> int:
    """Device id preferred for the whole managed range; -1 for the host, -2 when mixed or unset."""
    runtime = _runtime()
    (value,) = _check_runtime(runtime.cudaMemRangeGetAttribute(
        4, runtime.cudaMemRangeAttribute.cudaMemRangeAttributePreferredLocation, address, nbytes),
        "cudaMemRangeGetAttribute(PreferredLocation)")
    return int(value)
