"""DeepUMConfig: the sizes of the correlation tables, the lookahead and the policy switches.

Each knob is declared once, in the class body, with its default, its minimum, its maximum (or its
choices) and what it means; KNOBS reads them back as one table. The maxima keep the native tables and
the prediction window within a workstation's memory; a value outside its range is refused when the
config is built or read.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

from .specs.tables import (BLOCK_SUCCESSOR_BYTES, BLOCK_TABLE_BYTES, BLOCK_WAY_BYTES, EXEC_ENTRY_BYTES,
                           EXEC_RECORD_BYTES)

LEARN_FROM = ("accesses", "faults")
EVICTION = ("lru", "next_use")
FAR_PREFETCHES = ("evict", "dead_only", "skip")
SWITCH = (False, True)


class Knob(typing.NamedTuple):
    """One DeepUMConfig field: default, minimum and maximum (None for a choice), choices, meaning."""

    default: object
    minimum: int | None
    maximum: int | None
    choices: tuple | None
    doc: str

    def allowed(self) -> str:
        """The allowed values in words: "1..1,024" or 'one of "lru", "next_use"'."""
        if self.choices is None:
            return f"{self.minimum:,}..{self.maximum:,}"
        return "true or false" if self.choices == SWITCH else "one of " + ", ".join(map(json.dumps, self.choices))


def _size(default: int, minimum: int, maximum: int, doc: str):
    return dataclasses.field(default=default, metadata={"knob": (minimum, maximum, None, doc)})


def _choice(default, choices: tuple, doc: str):
    return dataclasses.field(default=default, metadata={"knob": (None, None, choices, doc)})


@dataclasses.dataclass(frozen=True)
class DeepUMConfig:
    """Configuration of the DeepUM correlation prefetcher; KNOBS lists every field with its range."""

    lookahead: int = _size(32, 1, 1024, "kernels predicted ahead of the running one (the paper's best of 8..256 "
                                        "was 32); a replay looks no further than the trace's kernels")
    exec_ids: int = _size(16384, 1, 2**20, "execution IDs tracked at once, each with one exec-ID entry and one "
                                           "UM-block table; the least recently launched is dropped past this bound")
    exec_records: int = _size(24, 1, 1024, "successor records per exec-ID entry (MRU replacement): a kernel launched "
                                           "with the same arguments in many places of an iteration needs one per place")
    block_rows: int = _size(2048, 1, 2**20, "rows (sets) of each UM-block table; a block's row is its number modulo "
                                            "this (paper: 2048)")
    block_ways: int = _size(2, 1, 16, "ways per row of a UM-block table (paper: 2)")
    block_successors: int = _size(4, 1, 16, "successor blocks per way, most recent first (paper: 4)")
    chain_blocks: int = _size(4096, 1, 65536, "most blocks one kernel's chain walk may yield")
    recall_iterations: int = _size(0, 0, 16, "deepum predictor: iterations whose launches it remembers; where the "
                                             "running launch matches one of them at its place in the iteration (the "
                                             "one followed so far first, else the latest), the window's next entries "
                                             "are that iteration's next launches instead of the correlation tables' "
                                             "prediction; 0: the tables alone (off by default: on the GPU it moved "
                                             "fewer bytes but took no less time a step, docs/results.md)")
    prefetch_batch: int = _size(1, 1, 64, "deepum policy: the prediction window's entries are prefetched a batch at a "
                                          "time, once the nearest entry not yet prefetched is needed within lookahead + "
                                          "1 - prefetch_batch launches (the batch at most the lookahead): each launch's "
                                          "new prediction waits up to prefetch_batch - 1 launches, and their moves go to "
                                          "the worker in one hand-over; 1 prefetches at every launch")
    far_prefetches: str = _choice("dead_only", FAR_PREFETCHES,
                                  "deepum policy with next-use eviction, a full GPU: how a block of the prediction "
                                  "window that next-use foresight needs only beyond the window (more than lookahead "
                                  "+ 1 launches ahead, or nowhere) is prefetched: 'evict' (as any other, a victim "
                                  "leaving for it), 'dead_only' (the default: only in a dead block's place, else the "
                                  "window waits for the next launch) or 'skip' (not at all; it comes when it is due). "
                                  "'dead_only' and 'skip' bring in the oracle's bytes in the replays of the recorded "
                                  "transformers; on the GPU 'dead_only' was the faster (docs/results.md)")
    learn_from: str = _choice("accesses", LEARN_FROM,
                              "what the UM-block tables learn from: 'faults' (the blocks each kernel faults on, as "
                              "DeepUM's driver sees them) or 'accesses' (every block the kernel's arguments cover, "
                              "which the launch hook reads anyway; learns in one iteration what faults reveal over "
                              "several)")
    eviction: str = _choice("next_use", EVICTION,
                            "how pre-eviction picks its victim among the blocks the running kernel and the prediction "
                            "window do not need: 'next_use' (the block whose next use, foreseen from an earlier "
                            "iteration's launches, comes last) or 'lru' (least recently migrated, DeepUM's rule)")
    foresight_iterations: int = _size(4, 1, 16, "iterations next_use eviction and the schedule remember: eviction "
                                                "foresees from the latest whose launches so far match the current "
                                                "iteration's by execution ID (bucketed shapes repeat two or more "
                                                "back), else from the last; 1 foresees from the last iteration only")
    schedule: bool = _choice(False, SWITCH, "deepum policy: at each iteration's first launch, plan its migrations by "
                                            "Belady's MIN (the fewest blocks moved under the capacity) over the "
                                            "latest remembered iteration that began with the same execution ID, and "
                                            "follow the plan while the launches match it by execution ID; the "
                                            "correlation tables from the first launch that does not (off by "
                                            "default until measured on a GPU: docs/results.md)")
    repeat_plans_percent: int = _size(95, 0, 100, "deepum policy: once an iteration has launched and decided "
                                                  "what the iteration 1 to 8 before it did at this share of its "
                                                  "places or more, in percent, and the iteration to repeat did the "
                                                  "same against its own cycle before it, the next iteration "
                                                  "repeats the plans remembered for it, each launch making the "
                                                  "remembered moves of its place that still apply, without the "
                                                  "predictor's and the replacement rule's work (not with the "
                                                  "schedule); 0: off, every launch decided in full (on the GPU "
                                                  "repeating halves the decision's time on GPT-2 and shortened "
                                                  "its step by 1-5%, docs/results.md)")
    schedule_ahead: int = _size(32, 1, 1024, "most launches ahead of its need the schedule prefetches a block")
    schedule_accesses: int = _size(2**20, 1, 2**26, "most block uses (one per block per launch) the schedule records "
                                                    "of each remembered iteration, 4 bytes each, and at most about "
                                                    "100 bytes each while a plan is made; an iteration using more "
                                                    "is not planned from")
    confident_hits: int = _size(16, 0, 32, "deepum policy: kernel hits (launches the prediction window foresaw) "
                                             "among the last 32 launches under pressure before the window is "
                                             "trusted (prefetched and protected from eviction); until then only "
                                             "each kernel's own blocks are prefetched, just before it; 0 trusts "
                                             "it at once (docs/results.md: the first steps on the GPU)")
    host_map_uses: int = _size(4, 0, 16, "deepum policy, under pressure: at each iteration's start, a block the "
                                         "last iteration used in at most this many launches, all within "
                                         "host_map_span_percent of its launches (the optimizer's state), is "
                                         "mapped from the host instead of migrated: its kernels read and write it "
                                         "over the link and it takes no GPU capacity; it migrates again once its "
                                         "uses spread; 0 maps nothing (eviction next_use with pre_evict only)")
    host_map_span_percent: int = _size(25, 1, 100, "the share of an iteration's launches, in percent, that a "
                                                   "host-mapped block's uses may span (host_map_uses)")
    host_map_indexed: bool = _choice(True, SWITCH, "host mapping also takes a block the last iteration used in at "
                                                   "most host_map_uses launches, all of indexed kernels (embedding "
                                                   "lookups, gathers, scatters, a sparse update: "
                                                   "deepum/specs/indexed_kernels.py), whatever their span: an "
                                                   "embedding table, whose kernels read and write only the rows "
                                                   "they look up")
    host_map_keep_uses: int = _size(3, 0, 16, "host mapping: a block it would map stays migrated if the last "
                                              "iteration went over it in at least this many passes (launches that "
                                              "used it, a run of consecutive launches counted once: a kernel split "
                                              "over consecutive launches goes over each part once) and the capacity "
                                              "holds it beside the other blocks used within the mapped blocks' span "
                                              "(most passes first): a block read over the link in each of several "
                                              "passes crosses it more often than one migrated in and out once; "
                                              "0 maps every block that qualifies")
    wake_percent: int = _size(90, 0, 100, "every mode: the engine sleeps (no launch hook, no policy work) while "
                                          "deepum's live managed segments hold at most this percentage of the "
                                          "capacity, and wakes for good once they hold more; 0 never sleeps "
                                          "(deepum/specs/sleep.py)")
    populate_segments: bool = _choice(True, SWITCH, "deepum policy: while the engine sleeps, each managed segment "
                                                    "that leaves it asleep is populated on the GPU as it is made "
                                                    "(fresh pages, no copy; the live segments fit the capacity), so "
                                                    "its first touches do not fault (deepum/specs/sleep.py)")
    device_memory_without_pressure: bool = _choice(True, SWITCH, "deepum policy: where the fuse (max_managed_bytes) "
                                                                 "cannot pass the capacity, no block ever has to leave "
                                                                 "the GPU, so deepum's segments come from device memory, "
                                                                 "which costs less than managed memory; off keeps them "
                                                                 "managed (deepum/specs/sleep.py)")
    prefetch: bool = _choice(True, SWITCH, "deepum policy: correlation prefetch (off for ablation)")
    pre_evict: bool = _choice(True, SWITCH, "deepum policy: pre-eviction (off for ablation)")
    invalidate: bool = _choice(True, SWITCH, "deepum policy: invalidation of blocks the caching allocator freed "
                                             "(off for ablation)")
    eviction_threads: int = _size(4, 0, 16, "online engine: threads that issue the evictions straight to the "
                                            "unified-memory driver, side by side (it runs several at once where the "
                                            "CUDA driver runs one: docs/results.md); 0 issues them through the CUDA "
                                            "driver on the worker's stream, as does a process whose driver file "
                                            "cannot be found. Replays charge deepum's and the oracle's evictions at the "
                                            "calibration's threaded_evict_d2h_bytes_per_s when not 0")
    prefetch_threads: int = _size(4, 0, 16, "online engine: threads that issue the prediction window's prefetches "
                                            "straight to the unified-memory driver, so that kernel launches do not "
                                            "wait behind them for the CUDA driver's lock (docs/results.md); 0 issues "
                                            "them through the CUDA driver on the worker's stream. No effect on "
                                            "replays")
    discard_threads: int = _size(4, 0, 16, "online engine: threads that issue invalidation's discards and "
                                           "populations straight to the unified-memory driver (UVM_DISCARD, then for "
                                           "a population UVM_MIGRATE), so that kernel launches do not wait behind them for the "
                                           "CUDA driver's lock (docs/results.md); 0 issues them through the CUDA "
                                           "driver on the worker's stream. No effect on replays")
    drop_to_host: bool = _choice(False, SWITCH, "online engine, discard threads: a dead block dropped from the GPU "
                                               "moves to the host after its discard, which gives it host pages the "
                                               "driver allocates and zero-fills; off: the discard alone, after which "
                                               "no processor holds the block and the driver lists its GPU memory as "
                                               "unused, the first it reclaims, with nothing to move, as after an "
                                               "eviction. No effect on replays")
    keep_host_heap: bool = _choice(True, SWITCH, "online engine, deepum policy under pressure: glibc's malloc keeps "
                                                 "the host heap it has grown instead of giving it back, so the "
                                                 "launching threads make no call that waits for the address space's "
                                                 "lock the migrations hold (deepum/runtime/host_heap.py); set for the "
                                                 "rest of the process. No effect on replays")

    def __post_init__(self):
        for name, knob in KNOBS.items():
            value = getattr(self, name)
            if knob.choices is None:
                if not isinstance(value, int) or isinstance(value, bool) or not knob.minimum <= value <= knob.maximum:
                    raise ValueError(f"DeepUMConfig.{name} must be an integer in {knob.allowed()}, got {value!r}")
            elif not any(value is choice or (type(value) is type(choice) and value == choice)
                         for choice in knob.choices):
                raise ValueError(f"DeepUMConfig.{name} must be {knob.allowed()}, got {value!r}")

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
        unknown = sorted(set(data) - set(KNOBS), key=str)
        if unknown:
            raise ValueError(f"unknown DeepUMConfig keys {unknown}; known keys are {sorted(KNOBS)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> "DeepUMConfig":
        """Reads a JSON file: either a config object or `deepum tune` output (its "config" member)."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read DeepUM config {path}: {exc}") from exc
        if isinstance(data, dict) and "config" in data:
            data = data["config"]
        if not isinstance(data, dict):
            raise ValueError(f"DeepUM config {path} must hold a JSON object")
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"DeepUM config {path}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")


KNOBS: dict[str, Knob] = {f.name: Knob(f.default, *f.metadata["knob"]) for f in dataclasses.fields(DeepUMConfig)}


def describe_knobs() -> str:
    """Every knob on one line each: name, default, allowed values, meaning (for --help)."""
    def shown(value) -> str:
        return json.dumps(value)

    return "\n".join(f"  {name} (default {shown(k.default)}; {k.allowed()}): {k.doc}" for name, k in KNOBS.items())
