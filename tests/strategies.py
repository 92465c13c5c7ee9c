"""Hypothesis strategies for deepum traces: `valid_traces()` draws small traces that obey docs/trace-format.md v1."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from deepum.offline.trace_format import (BLOCK_BYTES, FORMAT_NAME, FORMAT_VERSION, PAGE_BYTES, PAGES_PER_BLOCK, SOURCES,
                                         Trace)

_I64_MAX = 2**63 - 1
_U64_MAX = 2**64 - 1
_JSON_SCALARS = st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8)
# numpy str arrays drop trailing NULs, so kernel names avoid them.
_NAMES = st.text(st.characters(blacklist_characters="\x00"), max_size=12)


def _sorted(draw, rows: int, low: int, high: int) -> np.ndarray:
    if rows == 0:
        return np.empty(0, np.int64)
    return np.sort(np.array(draw(st.lists(st.integers(low, high), min_size=rows, max_size=rows)), dtype=np.int64))


def _kernel_times(draw) -> tuple[int, int]:
    start = draw(st.integers(-1, 2**40))
    end = draw(st.just(-1) | st.integers(max(start, 0), 2**41))
    return start, end


@st.composite
def valid_traces(draw, max_kernels: int = 8, max_accesses_per_kernel: int = 6, max_rows: int = 6) -> Trace:
    """A valid trace in exact documented dtypes; each optional group is present or absent at random."""
    kernels = draw(st.integers(0, max_kernels))
    names = draw(st.lists(_NAMES, min_size=1 if kernels else 0, max_size=4))
    iterations = draw(st.integers(0, min(kernels, 3)))
    first = np.array(sorted(draw(st.sets(st.integers(0, max(kernels - 1, 0)),
                                         min_size=iterations, max_size=iterations))), dtype=np.int64)
    times = [_kernel_times(draw) for _ in range(kernels)]
    blocks, pages, writes, offsets = [], [], [], [0]
    for _ in range(kernels):
        kernel_blocks = draw(st.lists(st.integers(0, 2**43), unique=True, max_size=max_accesses_per_kernel))
        blocks += kernel_blocks
        pages += draw(st.lists(st.integers(1, PAGES_PER_BLOCK), min_size=len(kernel_blocks),
                               max_size=len(kernel_blocks)))
        writes += draw(st.lists(st.booleans(), min_size=len(kernel_blocks), max_size=len(kernel_blocks)))
        offsets.append(len(blocks))

    def ints(rows, low, high, dtype):
        if rows == 0:
            return np.empty(0, dtype)
        return np.array(draw(st.lists(st.integers(low, high), min_size=rows, max_size=rows)), dtype=dtype)

    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "block_bytes": BLOCK_BYTES,
            "page_bytes": PAGE_BYTES, "source": draw(st.sampled_from(SOURCES)),
            "device": draw(st.none() | st.text(max_size=10)),
            "capacity_bytes": draw(st.none() | st.integers(0, 2**50)), "iterations": iterations,
            "notes": draw(st.text(max_size=20))}
    extra = draw(st.dictionaries(st.text(max_size=6).filter(lambda key: key not in meta),
                                 _JSON_SCALARS | st.lists(_JSON_SCALARS, max_size=3), max_size=3))
    arrays = dict(
        kernel_exec_id=ints(kernels, 0, _U64_MAX, np.uint64),
        kernel_name_idx=ints(kernels, 0, len(names) - 1, np.int32),
        kernel_names=np.array(names, dtype=str) if names else np.empty(0, dtype=str),
        kernel_iteration=ints(kernels, -1, iterations - 1, np.int32),
        kernel_duration_ns=ints(kernels, 0, _I64_MAX, np.int64),
        kernel_t_start_ns=np.array([t[0] for t in times], dtype=np.int64),
        kernel_t_end_ns=np.array([t[1] for t in times], dtype=np.int64),
        access_offsets=np.array(offsets, dtype=np.int64),
        access_block=np.array(blocks, dtype=np.int64),
        access_pages=np.array(pages, dtype=np.int16),
        access_write=np.array(writes, dtype=bool),
        iteration_first_kernel=first,
    )
    if draw(st.booleans()):
        rows = draw(st.integers(0, max_rows))
        arrays.update(fault_t_ns=_sorted(draw, rows, -2**40, 2**40),
                      fault_address=ints(rows, 0, _U64_MAX // PAGE_BYTES, np.uint64) * np.uint64(PAGE_BYTES),
                      fault_kernel=ints(rows, -1, kernels - 1, np.int64),
                      fault_kind=ints(rows, 1, 4, np.int8))
    if draw(st.booleans()):
        rows = draw(st.integers(0, max_rows))
        arrays.update(mem_kernel=_sorted(draw, rows, -1, kernels - 1),
                      mem_action=ints(rows, 0, 3, np.int8),
                      mem_address=ints(rows, 0, _U64_MAX, np.uint64),
                      mem_bytes=ints(rows, 0, _U64_MAX, np.uint64))
    if draw(st.booleans()):
        rows = draw(st.integers(0, max_rows))
        arrays.update(xfer_t_ns=_sorted(draw, rows, 0, 2**40),
                      xfer_address=ints(rows, 0, _U64_MAX, np.uint64),
                      xfer_bytes=ints(rows, 0, _U64_MAX, np.uint64),
                      xfer_dir=ints(rows, 1, 2, np.int8),
                      xfer_cause=ints(rows, 0, 5, np.int8))
    return Trace(meta={**meta, **extra}, **arrays)
