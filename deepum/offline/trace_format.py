"""The deepum trace (docs/trace-format.md v1): the in-memory container, the format's constants and
the documented dtype of every array."""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import _native

FORMAT_NAME = "deepum-trace"
FORMAT_VERSION = 1
BLOCK_BYTES: int = _native.BLOCK_BYTES  # one UM block (defined once, in driver_hooks/units.hpp)
PAGE_BYTES: int = _native.PAGE_BYTES
PAGES_PER_BLOCK = BLOCK_BYTES // PAGE_BYTES
MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE = (
    _native.MEM_ACTIONS[name] for name in ("alloc", "free", "segment_alloc", "segment_free"))
"""Codes of the `mem_action` column."""


@dataclasses.dataclass
class Trace:
    """One trace. Array names and dtypes are exactly those of docs/trace-format.md; optional groups are None.

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

    def iteration_kernels(self, iteration: int) -> range:
        """The kernels of `iteration` (0-based, as iteration_first_kernel numbers them), in launch order."""
        starts = self.iteration_first_kernel
        end = int(starts[iteration + 1]) if iteration + 1 < starts.size else self.num_kernels
        return range(int(starts[iteration]), end)

    def kernel_blocks(self, kernel: int) -> np.ndarray:
        """The blocks kernel `kernel` accessed, as the trace lists them."""
        return self.access_block[self.access_offsets[kernel]:self.access_offsets[kernel + 1]]

    def footprint_bytes(self) -> int:
        """Bytes a GPU must hold to run the trace with no eviction: distinct blocks accessed x block size."""
        return int(np.unique(self.access_block).shape[0]) * int(self.meta.get("block_bytes", BLOCK_BYTES))


class TraceError(ValueError):
    """A trace breaks docs/trace-format.md; the message names the array (or meta key) and the rule."""


I8, I16, I32, I64 = (np.dtype(t) for t in ("<i1", "<i2", "<i4", "<i8"))
U64, BOOL, STR = np.dtype("<u8"), np.dtype(np.bool_), np.dtype(np.str_)

# Every array of the format and its documented dtype, in the order of docs/trace-format.md.
ARRAY_DTYPES: dict[str, np.dtype] = {
    "kernel_exec_id": U64,
    "kernel_name_idx": I32,
    "kernel_names": STR,
    "kernel_iteration": I32,
    "kernel_duration_ns": I64,
    "kernel_t_start_ns": I64,
    "kernel_t_end_ns": I64,
    "access_offsets": I64,
    "access_block": I64,
    "access_pages": I16,
    "access_write": BOOL,
    "fault_t_ns": I64,
    "fault_address": U64,
    "fault_kernel": I64,
    "fault_kind": I8,
    "mem_kernel": I64,
    "mem_action": I8,
    "mem_address": U64,
    "mem_bytes": U64,
    "xfer_t_ns": I64,
    "xfer_address": U64,
    "xfer_bytes": U64,
    "xfer_dir": I8,
    "xfer_cause": I8,
    "iteration_first_kernel": I64,
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
