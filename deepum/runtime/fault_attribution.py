"""Faults to kernels by GPU time, for recorded traces and for learning online from the fault log.

CUPTI reports each GPU page fault with the time the driver began handling it, and each kernel with
its GPU start and end; a fault belongs to the kernel whose time span holds it. Online, the log is
delivered in rounds (at each iteration mark) while the GPU may still be running the last launches:
`FaultLessons` keeps what cannot be attributed yet for the next round and turns the rest into
lessons for the correlation tables, each launch's faulted UM blocks in fault order.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..offline.trace_format import BLOCK_BYTES

NS_UNKNOWN = -1
BLOCK_SHIFT = BLOCK_BYTES.bit_length() - 1
MAX_CARRIED = 1 << 20
"""Most launches and most faults kept for a later round (records the GPU never delivers must not pile up)."""


def kernel_times(launches: np.ndarray, correlation: np.ndarray, start: np.ndarray, end: np.ndarray):
    """GPU start and end (ns) of each launch, matched by CUPTI correlation ID; -1 where CUPTI gave none."""
    t_start = np.full(launches.shape[0], NS_UNKNOWN, np.int64)
    t_end = np.full(launches.shape[0], NS_UNKNOWN, np.int64)
    if correlation.size and launches.size:
        order = np.argsort(correlation)
        keys = correlation[order].astype(np.int64)
        at = np.clip(np.searchsorted(keys, launches), 0, keys.size - 1)
        found = keys[at] == launches
        t_start[found] = start[order][at[found]].astype(np.int64)
        t_end[found] = np.maximum(end[order][at[found]].astype(np.int64), t_start[found])
    return t_start, t_end


def kernel_at(t_ns: np.ndarray, t_start: np.ndarray, t_end: np.ndarray) -> np.ndarray:
    """Row of the kernel started last before each fault time, or -1 when its GPU time span does not
    hold the time (no kernel had started, or it had ended)."""
    known = np.flatnonzero(t_start >= 0)
    if known.size == 0 or t_ns.size == 0:
        return np.full(t_ns.shape[0], -1, np.int64)
    by_start = known[np.argsort(t_start[known], kind="stable")]
    at = np.searchsorted(t_start[by_start], t_ns, side="right") - 1
    rows = np.where(at >= 0, by_start[np.clip(at, 0, None)], -1)
    inside = (rows >= 0) & (t_ns <= t_end[np.clip(rows, 0, None)])
    return np.where(inside, rows, -1).astype(np.int64)


class Lessons(NamedTuple):
    """Per launch that faulted, in launch order: its exec ID and the UM blocks it faulted on, in fault
    order without consecutive repeats (blocks[offsets[i]:offsets[i + 1]])."""

    exec_ids: np.ndarray  # uint64
    offsets: np.ndarray   # int64, one more than exec_ids
    blocks: np.ndarray    # int64

    def __len__(self) -> int:
        return int(self.exec_ids.shape[0])


class FaultLessons:
    """Attributes the fault log, delivered in rounds, to launches.

    A round brings the launches made since the last one (CUPTI correlation ID and exec ID), the kernel
    records and the faults delivered since. Launches after the last one with a kernel record, and faults
    later than every known kernel's end, wait for the next round (their kernel may still be running);
    the rest are attributed now, and faults outside every kernel's span are counted as unattributed.
    """

    def __init__(self):
        self._launch_correlation = np.zeros(0, np.int64)
        self._launch_exec_id = np.zeros(0, np.uint64)
        self._fault_t = np.zeros(0, np.int64)
        self._fault_address = np.zeros(0, np.uint64)
        self.faults_attributed = 0
        self.faults_unattributed = 0

    def add(self, launch_correlation, launch_exec_id, kernel_correlation, kernel_start_ns, kernel_end_ns,
            fault_t_ns, fault_address) -> Lessons:
        """One round of the log; returns the lessons it completes."""
        correlation = np.concatenate([self._launch_correlation, np.asarray(launch_correlation, np.int64)])
        exec_id = np.concatenate([self._launch_exec_id, np.asarray(launch_exec_id, np.uint64)])
        fault_t = np.concatenate([self._fault_t, np.asarray(fault_t_ns, np.int64)])
        address = np.concatenate([self._fault_address, np.asarray(fault_address, np.uint64)])
        t_start, t_end = kernel_times(correlation, np.asarray(kernel_correlation), np.asarray(kernel_start_ns),
                                      np.asarray(kernel_end_ns))
        timed = np.flatnonzero(t_start >= 0)
        settled = int(timed[-1]) + 1 if timed.size else 0          # launches up to the last one timed
        horizon = int(t_end[timed].max()) if timed.size else NS_UNKNOWN
        order = np.argsort(fault_t, kind="stable")
        fault_t, address = fault_t[order], address[order]
        due = fault_t <= horizon
        self._launch_correlation, self._launch_exec_id = correlation[settled:][-MAX_CARRIED:], exec_id[settled:][-MAX_CARRIED:]
        self._fault_t, self._fault_address = fault_t[~due][-MAX_CARRIED:], address[~due][-MAX_CARRIED:]
        rows = kernel_at(fault_t[due], t_start[:settled], t_end[:settled])
        attributed = rows >= 0
        self.faults_attributed += int(attributed.sum())
        self.faults_unattributed += int((~attributed).sum())
        return _lessons(rows[attributed], (address[due][attributed] >> np.uint64(BLOCK_SHIFT)).astype(np.int64),
                        exec_id)


def _lessons(rows: np.ndarray, blocks: np.ndarray, exec_id: np.ndarray) -> Lessons:
    """Groups time-ordered (launch row, block) faults by launch, in launch order, dropping a block
    that repeats the launch's previous one."""
    order = np.argsort(rows, kind="stable")
    rows, blocks = rows[order], blocks[order]
    first_of_row = np.ones(rows.shape[0], bool)
    first_of_row[1:] = rows[1:] != rows[:-1]
    keep = first_of_row.copy()
    keep[1:] |= blocks[1:] != blocks[:-1]
    rows, blocks, first_of_row = rows[keep], blocks[keep], first_of_row[keep]
    starts = np.flatnonzero(first_of_row)
    offsets = np.append(starts, rows.shape[0]).astype(np.int64)
    return Lessons(exec_id[rows[starts]].astype(np.uint64), offsets, blocks)
