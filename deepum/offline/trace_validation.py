"""Validation of a trace against every rule of docs/trace-format.md v1, and its arrays cast to their
documented dtypes."""
from __future__ import annotations

import json

import numpy as np

from .trace_format import (ARRAY_DTYPES, BLOCK_BYTES, FORMAT_NAME, FORMAT_VERSION, META_KEYS, OPTIONAL_GROUPS,
                           PAGE_BYTES, PAGES_PER_BLOCK, REQUIRED_ARRAYS, SOURCES, Trace, TraceError)

_KERNEL_ROWS = ("kernel_exec_id", "kernel_name_idx", "kernel_iteration", "kernel_duration_ns",
                "kernel_t_start_ns", "kernel_t_end_ns")
_ACCESS_ROWS = ("access_block", "access_pages", "access_write")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_meta(meta) -> None:
    """TraceError unless `meta` obeys the rules of the meta member."""
    if not isinstance(meta, dict):
        raise TraceError(f"meta: must be a JSON object (dict), got {type(meta).__name__}")
    if meta.get("format") != FORMAT_NAME:
        raise TraceError(f"meta.format: must be {FORMAT_NAME!r}, got {meta.get('format')!r}")
    version = meta.get("version")
    if not _is_int(version):
        raise TraceError(f"meta.version: must be an int, got {version!r}")
    if version != FORMAT_VERSION:
        raise TraceError(f"meta.version: unsupported version {version} (this reader reads version {FORMAT_VERSION})")
    missing = [key for key in META_KEYS if key not in meta]
    if missing:
        raise TraceError(f"meta: missing keys {', '.join(missing)}")
    if not _is_int(meta["block_bytes"]) or meta["block_bytes"] != BLOCK_BYTES:
        raise TraceError(f"meta.block_bytes: must be {BLOCK_BYTES}, got {meta['block_bytes']!r}")
    if not _is_int(meta["page_bytes"]) or meta["page_bytes"] != PAGE_BYTES:
        raise TraceError(f"meta.page_bytes: must be {PAGE_BYTES}, got {meta['page_bytes']!r}")
    if meta["source"] not in SOURCES:
        raise TraceError(f"meta.source: must be one of {', '.join(SOURCES)}, got {meta['source']!r}")
    if meta["device"] is not None and not isinstance(meta["device"], str):
        raise TraceError(f"meta.device: must be a str or null, got {meta['device']!r}")
    if meta["capacity_bytes"] is not None and not _is_int(meta["capacity_bytes"]):
        raise TraceError(f"meta.capacity_bytes: must be an int or null, got {meta['capacity_bytes']!r}")
    if not _is_int(meta["iterations"]) or meta["iterations"] < 0:
        raise TraceError(f"meta.iterations: must be an int >= 0, got {meta['iterations']!r}")
    if not isinstance(meta["notes"], str):
        raise TraceError(f"meta.notes: must be a str, got {meta['notes']!r}")
    try:
        decoded = json.loads(json.dumps(meta, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TraceError(f"meta: must be JSON-encodable ({exc})") from None
    if decoded != meta:
        raise TraceError("meta: must survive JSON encoding unchanged (str keys; lists, not tuples)")


def cast_array(name: str, value, dtype: np.dtype) -> np.ndarray:
    """`value` as a 1-d array of `dtype`, refusing any cast that could lose information."""
    if not isinstance(value, np.ndarray):
        raise TraceError(f"{name}: must be a numpy array, got {type(value).__name__}")
    if value.ndim != 1:
        raise TraceError(f"{name}: must be 1-d, got shape {value.shape}")
    kind = value.dtype.kind
    if dtype.kind == "U":
        if kind != "U":
            raise TraceError(f"{name}: must hold str, got dtype {value.dtype}")
        return value
    if dtype.kind == "b":
        if kind == "b" or (kind in "iu" and ((value == 0) | (value == 1)).all()):
            return value.astype(dtype, copy=False)
        raise TraceError(f"{name}: must be bool (or integers 0/1), got dtype {value.dtype}")
    if kind not in "iu":
        raise TraceError(f"{name}: must hold integers castable to {dtype} without loss, got dtype {value.dtype}")
    if value.size and not np.can_cast(value.dtype, dtype):
        info, low, high = np.iinfo(dtype), int(value.min()), int(value.max())
        if low < info.min or high > info.max:
            raise TraceError(f"{name}: values {low}..{high} do not fit {dtype} without loss")
    return value.astype(dtype, copy=False)


def _require(name: str, ok: np.ndarray, values: np.ndarray, rule: str) -> None:
    """Raise naming the first row where `ok` is False."""
    if not ok.all():
        row = int(np.argmin(ok))
        raise TraceError(f"{name}: {rule} (row {row}: {values[row]})")


def _in_range(name: str, values: np.ndarray, low: int, high: int) -> None:
    _require(name, (values >= low) & (values <= high), values, f"must be in {low}..{high}")


def _increasing(name: str, values: np.ndarray, strict: bool = False) -> None:
    bad = values[1:] <= values[:-1] if strict else values[1:] < values[:-1]
    if bad.any():
        row = int(np.argmax(bad)) + 1
        rule, sign = ("must be strictly increasing", "<=") if strict else ("must be non-decreasing", "<")
        raise TraceError(f"{name}: {rule} (row {row}: {values[row]} {sign} {values[row - 1]})")


def _same_length(names: tuple[str, ...], arrays: dict) -> int:
    rows = arrays[names[0]].shape[0]
    for name in names[1:]:
        if arrays[name].shape[0] != rows:
            raise TraceError(f"{name}: length {arrays[name].shape[0]} differs from {names[0]} length {rows}")
    return rows


def _check_presence(arrays: dict) -> None:
    for name in REQUIRED_ARRAYS:
        if arrays[name] is None:
            raise TraceError(f"{name}: required array missing")
    for group, members in OPTIONAL_GROUPS.items():
        missing = [name for name in members if arrays[name] is None]
        if missing and len(missing) < len(members):
            raise TraceError(f"{', '.join(missing)}: missing from the partly present {group} group "
                             f"(an optional group is wholly present or wholly absent)")


def _check_kernels(arrays: dict, iterations: int) -> int:
    kernels = _same_length(_KERNEL_ROWS, arrays)
    _in_range("kernel_name_idx", arrays["kernel_name_idx"], 0, arrays["kernel_names"].shape[0] - 1)
    _in_range("kernel_iteration", arrays["kernel_iteration"], -1, iterations - 1)
    duration = arrays["kernel_duration_ns"]
    _require("kernel_duration_ns", duration >= 0, duration, "must be >= 0")
    start, end = arrays["kernel_t_start_ns"], arrays["kernel_t_end_ns"]
    _require("kernel_t_start_ns", start >= -1, start, "must be >= -1 (-1 unknown)")
    _require("kernel_t_end_ns", end >= -1, end, "must be >= -1 (-1 unknown)")
    ok = (start == -1) | (end == -1) | (end >= start)
    if not ok.all():
        row = int(np.argmin(ok))
        raise TraceError(f"kernel_t_end_ns: must be >= kernel_t_start_ns where both are known "
                         f"(row {row}: {end[row]} < {start[row]})")
    return kernels


def _blocks_ascend_per_kernel(offsets: np.ndarray, block: np.ndarray) -> bool:
    """Whether each kernel's blocks are strictly ascending (then none repeats): one pass over the rows,
    in place of sorting them when a trace is written that way, as the writers' helpers do."""
    if block.shape[0] < 2:
        return True
    same_kernel = np.ones(block.shape[0] - 1, bool)
    starts = offsets[(offsets > 0) & (offsets < block.shape[0])]
    same_kernel[starts - 1] = False
    return not (same_kernel & (block[1:] <= block[:-1])).any()


def _check_accesses(arrays: dict, kernels: int) -> None:
    accesses = _same_length(_ACCESS_ROWS, arrays)
    offsets, block = arrays["access_offsets"], arrays["access_block"]
    if offsets.shape[0] != kernels + 1:
        raise TraceError(f"access_offsets: length must be kernels + 1 = {kernels + 1}, got {offsets.shape[0]}")
    if offsets[0] != 0:
        raise TraceError(f"access_offsets: must start at 0, got {offsets[0]}")
    _increasing("access_offsets", offsets)
    if offsets[-1] != accesses:
        raise TraceError(f"access_offsets: must end at len(access_block) = {accesses}, got {offsets[-1]}")
    _require("access_block", block >= 0, block, "must be >= 0")
    _in_range("access_pages", arrays["access_pages"], 1, PAGES_PER_BLOCK)
    if _blocks_ascend_per_kernel(offsets, block):
        return
    kernel_of_row = np.repeat(np.arange(kernels, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((block, kernel_of_row))
    sorted_kernel, sorted_block = kernel_of_row[order], block[order]
    repeated = (sorted_kernel[1:] == sorted_kernel[:-1]) & (sorted_block[1:] == sorted_block[:-1])
    if repeated.any():
        i = int(np.argmax(repeated))
        raise TraceError(f"access_block: a block may appear once per kernel (block {sorted_block[i]} "
                         f"twice in kernel {sorted_kernel[i]}, rows {order[i]} and {order[i + 1]})")


def _check_optional(arrays: dict, kernels: int) -> None:
    if arrays["fault_t_ns"] is not None:
        _same_length(OPTIONAL_GROUPS["faults"], arrays)
        _increasing("fault_t_ns", arrays["fault_t_ns"])
        address = arrays["fault_address"]
        _require("fault_address", address % PAGE_BYTES == 0, address, f"must be {PAGE_BYTES}-byte aligned")
        _in_range("fault_kernel", arrays["fault_kernel"], -1, kernels - 1)
        _in_range("fault_kind", arrays["fault_kind"], 1, 4)
    if arrays["mem_kernel"] is not None:
        _same_length(OPTIONAL_GROUPS["memory_events"], arrays)
        _in_range("mem_kernel", arrays["mem_kernel"], -1, kernels - 1)
        _increasing("mem_kernel", arrays["mem_kernel"])
        _in_range("mem_action", arrays["mem_action"], 0, 3)
    if arrays["xfer_t_ns"] is not None:
        _same_length(OPTIONAL_GROUPS["transfers"], arrays)
        _increasing("xfer_t_ns", arrays["xfer_t_ns"])
        _in_range("xfer_dir", arrays["xfer_dir"], 1, 2)
        _in_range("xfer_cause", arrays["xfer_cause"], 0, 5)


def _check_iterations(arrays: dict, kernels: int, iterations: int) -> None:
    first = arrays["iteration_first_kernel"]
    if first.shape[0] != iterations:
        raise TraceError(f"iteration_first_kernel: must have meta.iterations = {iterations} rows, "
                         f"got {first.shape[0]}")
    _increasing("iteration_first_kernel", first, strict=True)
    _in_range("iteration_first_kernel", first, 0, kernels - 1)


def _checked_arrays(trace: Trace) -> dict[str, np.ndarray | None]:
    """Every array of `trace` cast to its documented dtype (None for absent groups), after all checks."""
    check_meta(trace.meta)
    raw = {name: getattr(trace, name) for name in ARRAY_DTYPES}
    _check_presence(raw)
    arrays = {name: None if value is None else cast_array(name, value, ARRAY_DTYPES[name])
              for name, value in raw.items()}
    iterations = trace.meta["iterations"]
    kernels = _check_kernels(arrays, iterations)
    _check_accesses(arrays, kernels)
    _check_optional(arrays, kernels)
    _check_iterations(arrays, kernels, iterations)
    return arrays


def validate_trace(trace: Trace) -> None:
    """Check every rule of docs/trace-format.md v1; raise TraceError naming the array and the rule broken.

    `iteration_first_kernel` must be strictly increasing and within the kernel rows; the first
    iteration need not start at kernel row 0 (kernels before it belong to no iteration).
    """
    _checked_arrays(trace)


def normalize_trace(trace: Trace) -> Trace:
    """Validate `trace`; return it with every array in its exact documented dtype (copied only if needed)."""
    return Trace(meta=dict(trace.meta), **_checked_arrays(trace))
