"""A model of PyTorch's CUDA caching allocator (one device, one stream): addresses and block events.

It follows the rules of PyTorch's native allocator closely enough to give realistic addresses:

- requests are rounded up to a multiple of 512 B;
- rounded requests of at most 1 MiB come from the small pool, whose segments are 2 MiB; larger ones
  from the large pool, whose segments are 20 MiB for requests under 10 MiB and the request rounded up
  to 2 MiB otherwise;
- a request takes the best-fitting free block of its pool (smallest that fits, ties by lowest address)
  and the remainder is split off when it is at least 512 B (small pool) or more than 1 MiB (large pool);
- a freed block merges with free neighbours of its own segment;
- segments are never released unless `empty_cache()` is called; a new segment is placed at the next
  2 MiB-aligned virtual address above every earlier one, so the same program yields the same addresses.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Callable

from .trace_format import MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE

MIN_BLOCK_BYTES = 512
SMALL_REQUEST_BYTES = 1 << 20
SMALL_SEGMENT_BYTES = 2 << 20
LARGE_SEGMENT_BYTES = 20 << 20
MIN_LARGE_ALLOC_BYTES = 10 << 20
ROUND_LARGE_BYTES = 2 << 20
DEFAULT_BASE_ADDRESS = 0x7F0000000000



def round_size(nbytes: int) -> int:
    """Bytes the allocator hands out for a request of `nbytes`: rounded up to a multiple of 512 B."""
    return max(MIN_BLOCK_BYTES, -(-nbytes // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)


def segment_size(rounded: int) -> int:
    """Bytes of the segment made for a rounded request that no cached block can serve."""
    if rounded <= SMALL_REQUEST_BYTES:
        return SMALL_SEGMENT_BYTES
    if rounded < MIN_LARGE_ALLOC_BYTES:
        return LARGE_SEGMENT_BYTES
    return -(-rounded // ROUND_LARGE_BYTES) * ROUND_LARGE_BYTES


@dataclasses.dataclass(eq=False)
class _Block:
    address: int
    size: int
    segment: int
    small: bool
    allocated: bool = False
    prev: "_Block | None" = None
    next: "_Block | None" = None


class CachingAllocator:
    """Caching allocator model. `on_event(action, address, nbytes)` hears every block and segment event.

    Events: segment allocated (2) when a segment is made, block allocated (0) on every `malloc`, block
    freed (1) on every `free`, segment released (3) from `empty_cache()`. A block event's size is the
    block's size (the rounded request, plus any remainder too small to split off).
    """

    def __init__(self, on_event: Callable[[int, int, int], None] | None = None,
                 base_address: int = DEFAULT_BASE_ADDRESS):
        if base_address <= 0 or base_address % SMALL_SEGMENT_BYTES:
            raise ValueError(f"base_address must be a positive multiple of 2 MiB, got {base_address:#x}")
        self._on_event = on_event
        self._next_segment = base_address
        self._segments: dict[int, int] = {}              # segment address -> bytes
        self._blocks: dict[int, _Block] = {}             # block address -> block, free or allocated
        self._free: dict[bool, list[tuple[int, int]]] = {True: [], False: []}   # small? -> sorted (size, address)
        self.reserved_bytes = 0
        self.allocated_bytes = 0
        self.peak_reserved_bytes = 0
        self.peak_allocated_bytes = 0

    def malloc(self, nbytes: int) -> int:
        """Address of a new block of at least `nbytes` bytes (> 0)."""
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0:
            raise ValueError(f"malloc size must be a positive integer number of bytes, got {nbytes!r}")
        size = round_size(nbytes)
        small = size <= SMALL_REQUEST_BYTES
        block = self._best_fit(size, small) or self._new_segment(size, small)
        self._remove_free(block)
        remainder = block.size - size
        if (remainder >= MIN_BLOCK_BYTES) if small else (remainder > SMALL_REQUEST_BYTES):
            rest = _Block(block.address + size, remainder, block.segment, small, prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._blocks[rest.address] = rest
            self._insert_free(rest)
        block.allocated = True
        self.allocated_bytes += block.size
        self.peak_allocated_bytes = max(self.peak_allocated_bytes, self.allocated_bytes)
        self._emit(MEM_ALLOC, block.address, block.size)
        return block.address

    def free(self, address: int) -> None:
        """Returns the block at `address` to the cache and merges it with free neighbours."""
        block = self._blocks.get(address)
        if block is None:
            raise ValueError(f"free of address {address:#x}, which is not the start of a block of this allocator")
        if not block.allocated:
            raise ValueError(f"double free of the block at {address:#x} ({block.size} bytes)")
        block.allocated = False
        self.allocated_bytes -= block.size
        self._emit(MEM_FREE, block.address, block.size)
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove_free(neighbour)
                block = self._merge(block, neighbour)
        self._insert_free(block)

    def size_of(self, address: int) -> int:
        """Bytes of the allocated block at `address`."""
        block = self._blocks.get(address)
        if block is None or not block.allocated:
            raise ValueError(f"no allocated block starts at {address:#x}")
        return block.size

    def empty_cache(self) -> None:
        """Releases every segment that holds no allocated block (like `torch.cuda.empty_cache()`)."""
        for address, size in list(self._segments.items()):
            block = self._blocks[address]
            if not block.allocated and block.size == size:
                self._remove_free(block)
                del self._blocks[address]
                del self._segments[address]
                self.reserved_bytes -= size
                self._emit(MEM_SEGMENT_FREE, address, size)

    def segments(self) -> list[tuple[int, int]]:
        """(address, bytes) of every reserved segment, by address."""
        return sorted(self._segments.items())

    def blocks(self) -> list[tuple[int, int, bool]]:
        """(address, bytes, allocated) of every block, free or allocated, by address."""
        return sorted((b.address, b.size, b.allocated) for b in self._blocks.values())

    def _best_fit(self, size: int, small: bool) -> _Block | None:
        free = self._free[small]
        i = bisect.bisect_left(free, (size, 0))
        return self._blocks[free[i][1]] if i < len(free) else None

    def _new_segment(self, size: int, small: bool) -> _Block:
        nbytes = segment_size(size)
        address = self._next_segment
        self._next_segment += nbytes
        self._segments[address] = nbytes
        self.reserved_bytes += nbytes
        self.peak_reserved_bytes = max(self.peak_reserved_bytes, self.reserved_bytes)
        block = _Block(address, nbytes, address, small)
        self._blocks[address] = block
        self._insert_free(block)
        self._emit(MEM_SEGMENT_ALLOC, address, nbytes)
        return block

    def _merge(self, block: _Block, neighbour: _Block) -> _Block:
        first, second = (block, neighbour) if block.address < neighbour.address else (neighbour, block)
        first.size += second.size
        first.next = second.next
        if second.next is not None:
            second.next.prev = first
        del self._blocks[second.address]
        return first

    def _insert_free(self, block: _Block) -> None:
        bisect.insort(self._free[block.small], (block.size, block.address))

    def _remove_free(self, block: _Block) -> None:
        free = self._free[block.small]
        del free[bisect.bisect_left(free, (block.size, block.address))]

    def _emit(self, action: int, address: int, nbytes: int) -> None:
        if self._on_event is not None:
            self._on_event(action, address, nbytes)
