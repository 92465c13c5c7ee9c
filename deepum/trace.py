"""The deepum trace (TRACE_FORMAT.md v1): an in-memory container plus read, write and validate."""
from __future__ import annotations

import dataclasses
import json
import operator
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .units import format_bytes

FORMAT_NAME = "deepum-trace"
FORMAT_VERSION = 1
BLOCK_BYTES = 2 * 1024 * 1024
PAGE_BYTES = 4096
PAGES_PER_BLOCK = BLOCK_BYTES // PAGE_BYTES


@dataclasses.dataclass
class Trace:
    """One trace. Array names and dtypes are exactly those of TRACE_FORMAT.md; optional groups are None.

    `meta` is the decoded JSON object of the `meta` member.
    """

    meta: dict
    kernel_exec_id: np.ndarray
    kernel_name_idx: np.ndarray
    kernel_names: np.ndarray
    kernel_iteration: np.ndarray
    kernel_duration_ns: np.ndarray
    kernel_t_start_ns: np.ndarray
    kernel_t_end_ns: np.ndarray
    access_offsets: np.ndarray
    access_block: np.ndarray
    access_pages: np.ndarray
    access_write: np.ndarray
    iteration_first_kernel: np.ndarray
    fault_t_ns: np.ndarray | None = None
    fault_address: np.ndarray | None = None
    fault_kernel: np.ndarray | None = None
    fault_kind: np.ndarray | None = None
    mem_kernel: np.ndarray | None = None
    mem_action: np.ndarray | None = None
    mem_address: np.ndarray | None = None
    mem_bytes: np.ndarray | None = None
    xfer_t_ns: np.ndarray | None = None
    xfer_address: np.ndarray | None = None
    xfer_bytes: np.ndarray | None = None
    xfer_dir: np.ndarray | None = None
    xfer_cause: np.ndarray | None = None

    @property
    def num_kernels(self) -> int:
        return int(self.kernel_exec_id.shape[0])

    @property
    def num_accesses(self) -> int:
        return int(self.access_block.shape[0])

    @property
    def iterations(self) -> int:
        return int(self.meta["iterations"])

    @property
    def has_memory_events(self) -> bool:
        return self.mem_kernel is not None

    def footprint_bytes(self) -> int:
        """Bytes a GPU must hold to run the trace with no eviction: distinct blocks accessed x block size."""
        return int(np.unique(self.access_block).shape[0]) * int(self.meta.get("block_bytes", BLOCK_BYTES))


class TraceError(ValueError):
    """A trace breaks TRACE_FORMAT.md; the message names the array (or meta key) and the rule."""


_I8, _I16, _I32, _I64 = (np.dtype(t) for t in ("<i1", "<i2", "<i4", "<i8"))
_U64, _BOOL, _STR = np.dtype("<u8"), np.dtype(np.bool_), np.dtype(np.str_)

# Every array of the format and its documented dtype, in the order of TRACE_FORMAT.md.
ARRAY_DTYPES: dict[str, np.dtype] = {
    "kernel_exec_id": _U64,
    "kernel_name_idx": _I32,
    "kernel_names": _STR,
    "kernel_iteration": _I32,
    "kernel_duration_ns": _I64,
    "kernel_t_start_ns": _I64,
    "kernel_t_end_ns": _I64,
    "access_offsets": _I64,
    "access_block": _I64,
    "access_pages": _I16,
    "access_write": _BOOL,
    "fault_t_ns": _I64,
    "fault_address": _U64,
    "fault_kernel": _I64,
    "fault_kind": _I8,
    "mem_kernel": _I64,
    "mem_action": _I8,
    "mem_address": _U64,
    "mem_bytes": _U64,
    "xfer_t_ns": _I64,
    "xfer_address": _U64,
    "xfer_bytes": _U64,
    "xfer_dir": _I8,
    "xfer_cause": _I8,
    "iteration_first_kernel": _I64,
}
OPTIONAL_GROUPS: dict[str, tuple[str, ...]] = {
    "faults": ("fault_t_ns", "fault_address", "fault_kernel", "fault_kind"),
    "memory_events": ("mem_kernel", "mem_action", "mem_address", "mem_bytes"),
    "transfers": ("xfer_t_ns", "xfer_address", "xfer_bytes", "xfer_dir", "xfer_cause"),
}
REQUIRED_ARRAYS = tuple(name for name in ARRAY_DTYPES
                        if not any(name in members for members in OPTIONAL_GROUPS.values()))
SOURCES = ("synthetic", "gpu", "simulated")
META_KEYS = ("format", "version", "block_bytes", "page_bytes", "source", "device", "capacity_bytes",
             "iterations", "notes")
_KERNEL_ROWS = ("kernel_exec_id", "kernel_name_idx", "kernel_iteration", "kernel_duration_ns",
                "kernel_t_start_ns", "kernel_t_end_ns")
_ACCESS_ROWS = ("access_block", "access_pages", "access_write")


# ---------------------------------------------------------------------------------------------- checks

def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_meta(meta) -> None:
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


def _cast(name: str, value, dtype: np.dtype) -> np.ndarray:
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
    _check_meta(trace.meta)
    raw = {name: getattr(trace, name) for name in ARRAY_DTYPES}
    _check_presence(raw)
    arrays = {name: None if value is None else _cast(name, value, ARRAY_DTYPES[name])
              for name, value in raw.items()}
    iterations = trace.meta["iterations"]
    kernels = _check_kernels(arrays, iterations)
    _check_accesses(arrays, kernels)
    _check_optional(arrays, kernels)
    _check_iterations(arrays, kernels, iterations)
    return arrays


def validate_trace(trace: Trace) -> None:
    """Check every rule of TRACE_FORMAT.md v1; raise TraceError naming the array and the rule broken.

    `iteration_first_kernel` must be strictly increasing and within the kernel rows; the first
    iteration need not start at kernel row 0 (kernels before it belong to no iteration).
    """
    _checked_arrays(trace)


def normalize_trace(trace: Trace) -> Trace:
    """Validate `trace`; return it with every array in its exact documented dtype (copied only if needed)."""
    return Trace(meta=dict(trace.meta), **_checked_arrays(trace))


# ------------------------------------------------------------------------------------------------ I/O

def _npz_path(path) -> Path:
    path = Path(path)
    if path.suffix != ".npz":
        raise TraceError(f"{path}: a trace file name must end with .npz")
    return path


def _decode_meta(value: np.ndarray) -> dict:
    if value.ndim != 0 or value.dtype.kind != "U":
        raise TraceError(f"meta: must be a 0-d str array, got dtype {value.dtype} shape {value.shape}")
    try:
        meta = json.loads(str(value[()]))
    except ValueError as exc:
        raise TraceError(f"meta: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"meta: must hold a JSON object, got {type(meta).__name__}")
    return meta


def read_trace(path) -> Trace:
    """Load and validate a trace file; arrays come back in their documented dtypes.

    Unknown meta keys are kept; unknown extra arrays in the archive are ignored.
    """
    path = _npz_path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    try:
        archive = np.load(path, allow_pickle=False)
        if isinstance(archive, np.lib.npyio.NpzFile):
            with archive:
                members = {name: archive[name] for name in ("meta", *ARRAY_DTYPES) if name in archive.files}
    # zipfile raises RuntimeError (NotImplementedError among them) when damage hits a header's flags.
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, RuntimeError) as exc:
        raise TraceError(f"{path}: unreadable trace archive, truncated or corrupt "
                         f"({type(exc).__name__}: {exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise TraceError(f"{path}: not an .npz archive")
    try:
        if "meta" not in members:
            raise TraceError("meta: required member missing")
        meta = _decode_meta(members.pop("meta"))
        return normalize_trace(Trace(meta=meta, **{name: members.get(name) for name in ARRAY_DTYPES}))
    except TraceError as exc:
        raise TraceError(f"{path}: {exc}") from None


def write_trace(trace: Trace, path, compressed: bool = True) -> None:
    """Validate `trace` and write it to `path` (must end with .npz), replacing any file there at once."""
    path = _npz_path(path)
    trace = normalize_trace(trace)
    arrays = {name: getattr(trace, name) for name in ARRAY_DTYPES if getattr(trace, name) is not None}
    save = np.savez_compressed if compressed else np.savez
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as file:
            save(file, meta=np.array(json.dumps(trace.meta)), **arrays)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------- writer

class _Column:
    """A 1-d numpy array that grows by doubling (amortised O(1) appends)."""

    def __init__(self, dtype: np.dtype):
        self._data = np.empty(64, dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _reserve(self, extra: int) -> None:
        needed = self._size + extra
        if needed > self._data.shape[0]:
            grown = np.empty(max(needed, 2 * self._data.shape[0]), self._data.dtype)
            grown[:self._size] = self._data[:self._size]
            self._data = grown

    def append(self, value) -> None:
        self._reserve(1)
        self._data[self._size] = value
        self._size += 1

    def extend(self, values: np.ndarray) -> None:
        self._reserve(values.shape[0])
        self._data[self._size:self._size + values.shape[0]] = values
        self._size += values.shape[0]

    def array(self) -> np.ndarray:
        return self._data[:self._size].copy()


def _integer(name: str, value, dtype: np.dtype) -> int:
    """`value` as a Python int that fits `dtype`, else TraceError naming the array."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TraceError(f"{name}: must be an integer, got {value!r}") from None
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise TraceError(f"{name}: {value} does not fit {dtype}")
    return value


def _rows(name: str, values) -> np.ndarray:
    """An array-like of one kernel's accesses as a 1-d array of the documented dtype of `name`."""
    array = np.asarray(values)
    if array.size == 0:
        return np.empty(0, ARRAY_DTYPES[name])
    return _cast(name, array, ARRAY_DTYPES[name])


def _access_rows(blocks, pages, writes, what: str):
    """One kernel's accesses as arrays of the trace's dtypes; TraceError unless their lengths match."""
    blocks = _rows("access_block", blocks)
    pages = _rows("access_pages", pages)
    writes = _rows("access_write", writes)
    if not blocks.shape[0] == pages.shape[0] == writes.shape[0]:
        raise TraceError(f"access_block, access_pages, access_write: {what} has lengths "
                         f"{blocks.shape[0]}, {pages.shape[0]}, {writes.shape[0]} (must be equal)")
    return blocks, pages, writes


class TraceWriter:
    """Builds a trace row by row; `finish()` validates it and writes it when a path was given.

    Kernels added before the first `begin_iteration()` belong to no iteration (kernel_iteration -1).
    An optional group appears in the result when rows were added to it, or when its `record_*` flag
    is set (then possibly empty). As a context manager, it finishes on normal exit; the result is
    then in `.trace`.
    """

    def __init__(self, path=None, source: str = "synthetic", device: str | None = None,
                 capacity_bytes: int | None = None, notes: str = "", extra_meta: dict | None = None,
                 record_memory_events: bool = False, record_faults: bool = False,
                 record_transfers: bool = False):
        self.path = None if path is None else _npz_path(path)
        extra_meta = dict(extra_meta or {})
        clashing = [key for key in META_KEYS if key in extra_meta]
        if clashing:
            raise TraceError(f"meta: extra_meta may not set {', '.join(clashing)} (set by the writer)")
        self._meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "block_bytes": BLOCK_BYTES,
                      "page_bytes": PAGE_BYTES, "source": source, "device": device,
                      "capacity_bytes": capacity_bytes, "notes": notes, **extra_meta}
        _check_meta({**self._meta, "iterations": 0})
        self._record = {"faults": record_faults, "memory_events": record_memory_events,
                        "transfers": record_transfers}
        self._columns = {name: _Column(ARRAY_DTYPES[name]) for name in ARRAY_DTYPES
                         if name not in ("kernel_names", "access_offsets")}
        self._offsets = _Column(_I64)
        self._offsets.append(0)
        self._names: dict[str, int] = {}
        self._iterations = 0
        self._iteration_pending = False
        self.trace: Trace | None = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finish()

    def _live(self) -> None:
        if self.trace is not None:
            raise TraceError("TraceWriter: already finished")

    def begin_iteration(self) -> None:
        """Start a new training iteration at the next kernel added."""
        self._live()
        if self._iteration_pending:
            raise TraceError(f"iteration_first_kernel: iteration {self._iterations - 1} has no kernels")
        self._iterations += 1
        self._iteration_pending = True

    def add_kernel(self, exec_id: int, name: str, duration_ns: int, blocks, pages, writes,
                   t_start_ns: int = -1, t_end_ns: int = -1) -> int:
        """Append one kernel launch and its accesses (block numbers, pages 1..512, write flags); return its row.

        Value rules (page range, one row per block, ...) are checked by `finish()`.
        """
        self._live()
        if not isinstance(name, str):
            raise TraceError(f"kernel_names: a kernel name must be a str, got {name!r}")
        blocks, pages, writes = _access_rows(blocks, pages, writes, f"kernel {name!r}")
        row = len(self._columns["kernel_exec_id"])
        if self._iteration_pending:
            self._columns["iteration_first_kernel"].append(row)
            self._iteration_pending = False
        columns = self._columns
        columns["kernel_exec_id"].append(_integer("kernel_exec_id", exec_id, _U64))
        columns["kernel_name_idx"].append(self._names.setdefault(name, len(self._names)))
        columns["kernel_iteration"].append(self._iterations - 1)
        columns["kernel_duration_ns"].append(_integer("kernel_duration_ns", duration_ns, _I64))
        columns["kernel_t_start_ns"].append(_integer("kernel_t_start_ns", t_start_ns, _I64))
        columns["kernel_t_end_ns"].append(_integer("kernel_t_end_ns", t_end_ns, _I64))
        columns["access_block"].extend(blocks)
        columns["access_pages"].extend(pages)
        columns["access_write"].extend(writes)
        self._offsets.append(len(columns["access_block"]))
        return row

    def _append(self, row: dict) -> None:
        self._live()
        values = {name: _integer(name, value, ARRAY_DTYPES[name]) for name, value in row.items()}
        for name, value in values.items():
            self._columns[name].append(value)

    def add_mem_event(self, action: int, address: int, nbytes: int) -> None:
        """Append an allocator event (0 block allocated, 1 block freed, 2 segment allocated, 3 segment released)
        that happened after the last kernel added."""
        self._append({"mem_kernel": len(self._columns["kernel_exec_id"]) - 1, "mem_action": action,
                      "mem_address": address, "mem_bytes": nbytes})

    def add_fault(self, t_ns: int, address: int, kernel: int, kind: int) -> None:
        """Append a fault at `t_ns` on the 4 KiB page at `address`, of kernel row `kernel` (-1 unknown);
        kind 1 read, 2 write, 3 atomic, 4 prefetch."""
        self._append({"fault_t_ns": t_ns, "fault_address": address, "fault_kernel": kernel, "fault_kind": kind})

    def add_transfer(self, t_ns: int, address: int, nbytes: int, direction: int, cause: int) -> None:
        """Append a migration of `nbytes` from `address` starting at `t_ns`; direction 1 host->device,
        2 device->host; cause as xfer_cause in TRACE_FORMAT.md."""
        self._append({"xfer_t_ns": t_ns, "xfer_address": address, "xfer_bytes": nbytes,
                      "xfer_dir": direction, "xfer_cause": cause})

    def finish(self) -> Trace:
        """Build and validate the trace, write it if a path was given, and return it."""
        self._live()
        if self._iteration_pending:
            raise TraceError(f"iteration_first_kernel: iteration {self._iterations - 1} has no kernels")
        arrays = {name: column.array() for name, column in self._columns.items()}
        for group, members in OPTIONAL_GROUPS.items():
            if not self._record[group] and len(self._columns[members[0]]) == 0:
                arrays.update(dict.fromkeys(members))
        names = np.array(list(self._names), dtype=_STR) if self._names else np.empty(0, _STR)
        trace = normalize_trace(Trace(meta={**self._meta, "iterations": self._iterations},
                                      kernel_names=names, access_offsets=self._offsets.array(), **arrays))
        if self.path is not None:
            write_trace(trace, self.path)
        self.trace = trace
        return trace


# ------------------------------------------------------------------------------------- access helpers

def blocks_of_extent(address, nbytes) -> tuple[np.ndarray, np.ndarray]:
    """The 2 MiB blocks that byte ranges [address, address + nbytes) overlap, and how many distinct
    4 KiB pages of each block the range touches.

    `address` and `nbytes` (bytes, nbytes > 0) are integers or equal-length 1-d arrays of them; the
    result holds the blocks of each range in turn, ascending within a range: (int64 blocks, int16 pages).
    """
    address = np.atleast_1d(np.asarray(address))
    nbytes = np.atleast_1d(np.asarray(nbytes))
    if address.ndim != 1 or address.shape != nbytes.shape:
        raise ValueError(f"address and nbytes must be integers or equal-length 1-d arrays, "
                         f"got shapes {address.shape} and {nbytes.shape}")
    if address.size and (address.dtype.kind not in "iu" or nbytes.dtype.kind not in "iu"):
        raise ValueError(f"address and nbytes must be integers, got {address.dtype} and {nbytes.dtype}")
    if address.size and (address.min() < 0 or nbytes.min() <= 0):
        raise ValueError("address must be >= 0 and nbytes > 0")
    start = address.astype(np.uint64)
    last = start + (nbytes.astype(np.uint64) - np.uint64(1))
    if (last < start).any():
        raise ValueError("address + nbytes must not exceed 2**64")
    first_page = (start >> np.uint64(12)).astype(np.int64)
    last_page = (last >> np.uint64(12)).astype(np.int64)
    first_block = first_page // PAGES_PER_BLOCK
    counts = last_page // PAGES_PER_BLOCK - first_block + 1
    extent = np.repeat(np.arange(address.shape[0]), counts)
    blocks = first_block[extent] + np.arange(extent.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    low = np.maximum(first_page[extent], blocks * PAGES_PER_BLOCK)
    high = np.minimum(last_page[extent], blocks * PAGES_PER_BLOCK + PAGES_PER_BLOCK - 1)
    return blocks, (high - low + 1).astype(_I16)


def merge_accesses(blocks, pages, writes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combine repeated blocks of one kernel into one access each, ascending by block.

    A merged access writes if any of its parts writes; its pages are the largest of its parts' pages,
    a lower bound on the distinct pages the parts touch together (exact when one part's pages cover
    the others'). Returns (int64 blocks, int16 pages, bool writes).
    """
    blocks, pages, writes = _access_rows(blocks, pages, writes, "merge_accesses")
    if blocks.shape[0] == 0:
        return blocks, pages, writes
    order = np.argsort(blocks, kind="stable")
    sorted_blocks = blocks[order]
    starts = np.flatnonzero(np.r_[True, sorted_blocks[1:] != sorted_blocks[:-1]])
    return (sorted_blocks[starts], np.maximum.reduceat(pages[order], starts),
            np.logical_or.reduceat(writes[order], starts))


# --------------------------------------------------------------------------------------------- summary

def summarize(trace: Trace) -> dict:
    """Headline numbers of a trace (sizes in bytes).

    accessed_bytes_per_iteration: pages x 4096 summed over the accesses of each iteration's kernels
    (by kernel_iteration), mean over iterations; None without iterations. written_fraction: share of
    access rows that write; None without accesses. optional_groups: rows of each present group.
    """
    iterations = trace.iterations
    per_access_iteration = np.repeat(trace.kernel_iteration, np.diff(trace.access_offsets))
    in_iteration = per_access_iteration >= 0
    accessed = np.bincount(per_access_iteration[in_iteration], minlength=iterations,
                           weights=trace.access_pages[in_iteration].astype(np.float64) * PAGE_BYTES)
    used_names = trace.kernel_names[np.unique(trace.kernel_name_idx)]
    groups = {group: int(getattr(trace, members[0]).shape[0])
              for group, members in OPTIONAL_GROUPS.items() if getattr(trace, members[0]) is not None}
    return {
        "kernels": trace.num_kernels,
        "exec_ids": int(np.unique(trace.kernel_exec_id).shape[0]),
        "kernel_names": int(np.unique(used_names).shape[0]),
        "iterations": iterations,
        "accesses": trace.num_accesses,
        "blocks": int(np.unique(trace.access_block).shape[0]),
        "footprint_bytes": trace.footprint_bytes(),
        "accessed_bytes_per_iteration": float(accessed.mean()) if iterations else None,
        "written_fraction": float(trace.access_write.mean()) if trace.num_accesses else None,
        "optional_groups": groups,
        "meta": dict(trace.meta),
    }


def format_summary(trace: Trace) -> str:
    """`summarize(trace)` as readable lines (what `deepum info TRACE` prints)."""
    s = summarize(trace)
    meta = s["meta"]
    capacity = "-" if meta["capacity_bytes"] is None else format_bytes(meta["capacity_bytes"])
    per_iteration = ("-" if s["accessed_bytes_per_iteration"] is None
                     else format_bytes(s["accessed_bytes_per_iteration"]))
    written = "-" if s["written_fraction"] is None else f"{s['written_fraction']:.1%}"
    groups = ", ".join(f"{group} {rows:,}" for group, rows in s["optional_groups"].items()) or "none"
    lines = [
        f"{meta['format']} v{meta['version']}, source {meta['source']}, device {meta['device'] or '-'}, "
        f"capacity {capacity}",
        f"kernels     {s['kernels']:,} launches, {s['exec_ids']:,} exec IDs, {s['kernel_names']:,} names, "
        f"{s['iterations']:,} iterations",
        f"accesses    {s['accesses']:,} rows, {s['blocks']:,} blocks, footprint {format_bytes(s['footprint_bytes'])}",
        f"per iter    {per_iteration} accessed (mean), {written} of accesses write",
        f"recorded    {groups}",
    ]
    if meta["notes"]:
        lines.append(f"notes       {meta['notes']}")
    extra = {key: value for key, value in meta.items() if key not in META_KEYS}
    lines += [f"meta        {key} = {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines)
