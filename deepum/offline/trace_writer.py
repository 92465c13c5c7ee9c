"""Building traces: TraceWriter (row by row, validated at the end) and the helpers that turn byte
extents into a kernel's block accesses."""
from __future__ import annotations

import operator

import numpy as np

from .trace_format import (ARRAY_DTYPES, BLOCK_BYTES, FORMAT_NAME, FORMAT_VERSION, I16, I64, META_KEYS,
                           OPTIONAL_GROUPS, PAGE_BYTES, PAGES_PER_BLOCK, STR, U64, Trace, TraceError)
from .trace_io import npz_path, write_trace
from .trace_validation import cast_array, check_meta, normalize_trace


class _Column:
    """A 1-d numpy array that grows by doubling (amortised O(1) appends of whole arrays)."""

    def __init__(self, dtype: np.dtype):
        self._data = np.empty(64, dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def extend(self, values: np.ndarray) -> None:
        needed = self._size + values.shape[0]
        if needed > self._data.shape[0]:
            grown = np.empty(max(needed, 2 * self._data.shape[0]), self._data.dtype)
            grown[:self._size] = self._data[:self._size]
            self._data = grown
        self._data[self._size:needed] = values
        self._size = needed

    def array(self) -> np.ndarray:
        return self._data[:self._size].copy()


_ACCESS_COLUMNS = ("access_block", "access_pages", "access_write")
_KERNEL_INTEGERS = ("kernel_exec_id", "kernel_duration_ns", "kernel_t_start_ns", "kernel_t_end_ns")
_BOUNDS: dict[np.dtype, tuple[int, int]] = {}


def _integer(name: str, value, dtype: np.dtype) -> int:
    """`value` as a Python int that fits `dtype`, else TraceError naming the array."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TraceError(f"{name}: must be an integer, got {value!r}") from None
    bounds = _BOUNDS.get(dtype)
    if bounds is None:
        info = np.iinfo(dtype)
        bounds = _BOUNDS[dtype] = (int(info.min), int(info.max))
    if not bounds[0] <= value <= bounds[1]:
        raise TraceError(f"{name}: {value} does not fit {dtype}")
    return value


def _rows(name: str, values) -> np.ndarray:
    """An array-like of one kernel's accesses as a 1-d array of the documented dtype of `name`."""
    dtype = ARRAY_DTYPES[name]
    if type(values) is np.ndarray and values.dtype == dtype and values.ndim == 1:
        return values
    array = np.asarray(values)
    if array.size == 0:
        return np.empty(0, dtype)
    return cast_array(name, array, dtype)


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
        self.path = None if path is None else npz_path(path)
        extra_meta = dict(extra_meta or {})
        clashing = [key for key in META_KEYS if key in extra_meta]
        if clashing:
            raise TraceError(f"meta: extra_meta may not set {', '.join(clashing)} (set by the writer)")
        self._meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "block_bytes": BLOCK_BYTES,
                      "page_bytes": PAGE_BYTES, "source": source, "device": device,
                      "capacity_bytes": capacity_bytes, "notes": notes, **extra_meta}
        check_meta({**self._meta, "iterations": 0})
        self._record = {"faults": record_faults, "memory_events": record_memory_events,
                        "transfers": record_transfers}
        # Accesses grow as arrays, every other array as a list of Python ints until finish().
        self._columns = {name: _Column(ARRAY_DTYPES[name]) if name in _ACCESS_COLUMNS else []
                         for name in ARRAY_DTYPES if name not in ("kernel_names", "access_offsets")}
        self._offsets = [0]
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
        values = (_integer("kernel_exec_id", exec_id, U64), _integer("kernel_duration_ns", duration_ns, I64),
                  _integer("kernel_t_start_ns", t_start_ns, I64), _integer("kernel_t_end_ns", t_end_ns, I64))
        columns = self._columns
        row = len(columns["kernel_exec_id"])
        if self._iteration_pending:
            columns["iteration_first_kernel"].append(row)
            self._iteration_pending = False
        for column, value in zip(_KERNEL_INTEGERS, values):
            columns[column].append(value)
        columns["kernel_name_idx"].append(self._names.setdefault(name, len(self._names)))
        columns["kernel_iteration"].append(self._iterations - 1)
        columns["access_block"].extend(blocks)
        columns["access_pages"].extend(pages)
        columns["access_write"].extend(writes)
        self._offsets.append(len(columns["access_block"]))
        return row

    def _append(self, row: dict) -> None:
        self._live()
        values = [(name, _integer(name, value, ARRAY_DTYPES[name])) for name, value in row.items()]
        for name, value in values:
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
        2 device->host; cause as xfer_cause in docs/trace-format.md."""
        self._append({"xfer_t_ns": t_ns, "xfer_address": address, "xfer_bytes": nbytes,
                      "xfer_dir": direction, "xfer_cause": cause})

    def finish(self) -> Trace:
        """Build and validate the trace, write it if a path was given, and return it."""
        self._live()
        if self._iteration_pending:
            raise TraceError(f"iteration_first_kernel: iteration {self._iterations - 1} has no kernels")
        arrays = {name: column.array() if name in _ACCESS_COLUMNS else np.array(column, ARRAY_DTYPES[name])
                  for name, column in self._columns.items()}
        for group, members in OPTIONAL_GROUPS.items():
            if not self._record[group] and len(self._columns[members[0]]) == 0:
                arrays.update(dict.fromkeys(members))
        names = np.array(list(self._names), dtype=STR) if self._names else np.empty(0, STR)
        trace = normalize_trace(Trace(meta={**self._meta, "iterations": self._iterations},
                                      kernel_names=names, access_offsets=np.array(self._offsets, I64), **arrays))
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
    return blocks, (high - low + 1).astype(I16)


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
