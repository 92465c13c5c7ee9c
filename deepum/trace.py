"""The deepum trace (TRACE_FORMAT.md v1): an in-memory container plus read, write and validate."""
from __future__ import annotations

import dataclasses

import numpy as np

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
