"""DeepUMConfig: the sizes of the correlation tables, the lookahead and the policy switches."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .specs.tables import (BLOCK_SUCCESSOR_BYTES, BLOCK_TABLE_BYTES, BLOCK_WAY_BYTES, EXEC_ENTRY_BYTES,
                           EXEC_RECORD_BYTES)

LEARN_FROM = ("accesses", "faults")
EVICTION = ("lru", "next_use")


@dataclasses.dataclass(frozen=True)
class DeepUMConfig:
    """Configuration of the DeepUM correlation prefetcher.

    lookahead: kernels predicted ahead of the running one (paper: 32 best of 8..256).
    exec_ids: execution IDs tracked at once (each has one exec-ID entry and one UM-block table);
        the least recently launched one is dropped when a new one arrives past this bound.
    exec_records: successor records kept per exec-ID entry (MRU replacement). A kernel launched with
        the same arguments in many places of an iteration (a reused temporary) needs one record per
        place: 24 covers the 21 places seen in a recorded GPT-2 step, where 4 mispredicted 2.7% of launches.
    block_rows, block_ways, block_successors: shape of each per-exec-ID UM-block table
        (paper: 2048 rows, 2 ways, 4 successors).
    chain_blocks: most blocks one kernel's chain walk may yield.
    learn_from: what the UM-block tables learn from: "faults" (the blocks each kernel faults on, as
        DeepUM's driver sees them; on the GPU, the CUPTI fault log attributed to launches at each
        iteration mark) or "accesses" (every block the kernel's arguments cover, which the launch
        hook reads anyway to compute the execution ID; learns in one iteration what faults reveal
        over several, and was 1.35x faster on a 24-layer GPT-2 at half its footprint on the H200).
    eviction: how pre-eviction picks its victim among the blocks the running kernel and the
        prediction window do not need (without pre-eviction the driver's rule applies): "next_use" (the block whose next use, foreseen from the last
        iteration's launches, comes last; 1.6x faster than "lru" on a 24-layer GPT-2 at half its
        footprint on the H200) or "lru" (least recently migrated, DeepUM's rule).
    prefetch, pre_evict, invalidate: switches of the deepum policy (for ablation).
    """

    lookahead: int = 32
    exec_ids: int = 16384
    exec_records: int = 24
    block_rows: int = 2048
    block_ways: int = 2
    block_successors: int = 4
    chain_blocks: int = 4096
    learn_from: str = "accesses"
    eviction: str = "next_use"
    prefetch: bool = True
    pre_evict: bool = True
    invalidate: bool = True

    def __post_init__(self):
        for name in ("lookahead", "exec_ids", "exec_records", "block_rows", "block_ways",
                     "block_successors", "chain_blocks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"DeepUMConfig.{name} must be a positive integer, got {value!r}")
        if self.learn_from not in LEARN_FROM:
            raise ValueError(f"DeepUMConfig.learn_from must be one of {LEARN_FROM}, got {self.learn_from!r}")
        if self.eviction not in EVICTION:
            raise ValueError(f"DeepUMConfig.eviction must be one of {EVICTION}, got {self.eviction!r}")
        for name in ("prefetch", "pre_evict", "invalidate"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"DeepUMConfig.{name} must be true or false, got {getattr(self, name)!r}")

    def table_bytes_bound(self) -> int:
        """Upper bound, in bytes, on the memory the tables can hold with this configuration."""
        per_exec_entry = EXEC_ENTRY_BYTES + self.exec_records * EXEC_RECORD_BYTES
        per_way = BLOCK_WAY_BYTES + self.block_successors * BLOCK_SUCCESSOR_BYTES
        # +1 row: the start row that holds the kernel's first-fault blocks.
        per_block_table = (self.block_rows * self.block_ways + 1) * per_way + BLOCK_TABLE_BYTES
        return self.exec_ids * (per_exec_entry + per_block_table)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "DeepUMConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown DeepUMConfig keys {unknown}; known keys are {sorted(known)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> "DeepUMConfig":
        """Reads a JSON file: either a config object or `deepum tune` output (its "config" member)."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read DeepUM config {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"DeepUM config {path} must hold a JSON object")
        return cls.from_dict(data.get("config", data))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
