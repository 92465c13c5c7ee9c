"""Correlation tables: which kernel follows which (exec-ID table) and which UM blocks each kernel
faults on, in what order (one UM-block table per exec ID).

This is the readable specification; driver_hooks/correlation.hpp implements the same tables natively
and must agree with this module on every input.
"""
from __future__ import annotations

from collections import OrderedDict

from .warm_state import StateReader, StateWriter, fail

# Exec IDs before the current one that a record remembers: training's iterations may alternate in
# their kernels' arguments, so that three exec IDs often name the wrong iteration's successor.
HISTORY = 5

# Bytes each table element costs in the native layout; DeepUMConfig.table_bytes_bound uses them too.
EXEC_RECORD_BYTES = 8 * (HISTORY + 1)  # HISTORY history IDs + next ID
EXEC_ENTRY_BYTES = 8 + 8           # key + bookkeeping
BLOCK_TABLE_BYTES = 8              # end block
BLOCK_WAY_BYTES = 8                # tag
BLOCK_SUCCESSOR_BYTES = 8          # one successor block number

EXEC_ID_LIMIT = 2**64              # exec IDs are unsigned 64-bit
BLOCK_LIMIT = 2**63                # UM block numbers are non-negative signed 64-bit
NO_EXEC_ID = EXEC_ID_LIMIT - 1     # fills the history before the first launches

History = tuple[int, ...]          # HISTORY exec IDs, oldest first
Context = tuple[int, ...]          # HISTORY + 1 exec IDs, oldest first, the current one last


def check_exec_id(exec_id: int) -> int:
    if not 0 <= exec_id < EXEC_ID_LIMIT:
        raise ValueError(f"exec ID must be in [0, 2**64), got {exec_id}")
    return exec_id


def check_block(block: int) -> int:
    if not 0 <= block < BLOCK_LIMIT:
        raise ValueError(f"UM block must be in [0, 2**63), got {block}")
    return block


def push_mru(items: list, value, capacity: int) -> None:
    """Moves `value` to the front of `items` (inserting it if absent), keeping at most `capacity` items."""
    if value in items:
        items.remove(value)
    items.insert(0, value)
    del items[capacity:]


def suffix_match(recorded: History, history: History) -> int:
    """How many of the most recent exec IDs of two histories agree (0..HISTORY)."""
    matched = 0
    for a, b in zip(reversed(recorded), reversed(history)):
        if a != b:
            break
        matched += 1
    return matched


class ExecIdTable:
    """Per current exec ID, up to `records_per_entry` records (HISTORY previous exec IDs -> next exec ID),
    most recently used first."""

    def __init__(self, records_per_entry: int):
        self.records_per_entry = records_per_entry
        self._entries: dict[int, list[tuple[History, int]]] = {}

    def learn(self, current: int, history: History, next_id: int) -> None:
        push_mru(self._entries.setdefault(current, []), (tuple(history), next_id), self.records_per_entry)

    def predict(self, current: int, history: History) -> int | None:
        """Next exec ID of the record whose history agrees longest with `history` (ties: most recently
        used); None if `current` has no records."""
        best_next, best_match = None, -1
        for recorded, next_id in self._entries.get(current, ()):
            matched = suffix_match(recorded, history)
            if matched > best_match:
                best_next, best_match = next_id, matched
        return best_next

    def records(self, current: int) -> list[tuple[History, int]]:
        """The records of `current`, most recently used first."""
        return list(self._entries.get(current, ()))

    def drop(self, exec_id: int) -> None:
        self._entries.pop(exec_id, None)

    def bytes_used(self) -> int:
        return sum(EXEC_ENTRY_BYTES + len(records) * EXEC_RECORD_BYTES for records in self._entries.values())


class BlockTable:
    """UM-block correlation table of one exec ID.

    `rows` sets of `ways` ways; a block's set is block % rows; each way holds a tag block and up to
    `successors` blocks that faulted right after it, most recent first; ways are replaced least recently
    learned first. The start row holds the blocks the kernel faulted on first (most recent first), and
    the end block is the last fault of the last launch that faulted. Sets are allocated on first use.
    """

    def __init__(self, rows: int, ways: int, successors: int):
        self.rows = rows
        self.ways = ways
        self.successors_per_way = successors
        self._sets: dict[int, list[tuple[int, list[int]]]] = {}
        self.start_blocks: list[int] = []
        self.end_block: int | None = None

    def learn_start(self, block: int) -> None:
        push_mru(self.start_blocks, block, self.successors_per_way)

    def learn_successor(self, block: int, successor: int) -> None:
        ways = self._sets.setdefault(block % self.rows, [])
        for index, way in enumerate(ways):
            if way[0] == block:
                ways.insert(0, ways.pop(index))
                break
        else:
            ways.insert(0, (block, []))
            del ways[self.ways:]
        push_mru(ways[0][1], successor, self.successors_per_way)

    def successors(self, block: int) -> tuple[int, ...]:
        for tag, successors in self._sets.get(block % self.rows, ()):
            if tag == block:
                return tuple(successors)
        return ()

    def sets(self) -> dict[int, list[tuple[int, tuple[int, ...]]]]:
        """Allocated sets: set index -> ways, most recently learned first, as (tag, successors)."""
        return {index: [(tag, tuple(successors)) for tag, successors in ways] for index, ways in self._sets.items()}

    def chain(self, limit: int) -> tuple[int, ...]:
        """Blocks the kernel is predicted to fault on, at most `limit`, no repeats: a breadth-first walk
        of successors from the start blocks (most recent first), then from the end block if the walk
        has not reached it."""
        chain: list[int] = []
        seen: set[int] = set()

        def visit(block: int) -> None:
            if block not in seen and len(chain) < limit:
                seen.add(block)
                chain.append(block)

        for block in self.start_blocks:
            visit(block)
        end_seeded = False
        walked = 0
        while len(chain) < limit:
            if walked == len(chain):
                if end_seeded or self.end_block is None:
                    break
                end_seeded = True
                visit(self.end_block)
                continue
            for successor in self.successors(chain[walked]):
                visit(successor)
            walked += 1
        return tuple(chain)

    def save(self, w: StateWriter) -> None:
        """The learned state: the start row, the end block (-1: none), then every way by set index,
        most recently learned first, each with its successors, most recent first."""
        w.sequence(self.start_blocks)
        w.word(-1 if self.end_block is None else self.end_block)
        ways = [way for index in sorted(self._sets) for way in self._sets[index]]
        w.word(len(ways))
        for tag, successors in ways:
            w.word(tag)
            w.sequence(successors)

    def load(self, r: StateReader) -> None:
        """Into an empty table: relearned oldest first, so that every list keeps its order."""
        starts = [r.block() for _ in range(r.count(self.successors_per_way, 1, "start blocks"))]
        end = r.signed_word()
        if end < -1:
            fail("an end block is negative")
        ways = []
        for _ in range(r.count(self.rows * self.ways, 2, "ways")):
            tag = r.block()
            successors = [r.block() for _ in range(r.count(self.successors_per_way, 1, "successors"))]
            if not successors:
                fail("a way has no successor")
            ways.append((tag, successors))
        for block in reversed(starts):
            self.learn_start(block)
        for tag, successors in reversed(ways):
            for block in reversed(successors):
                self.learn_successor(tag, block)
        self.end_block = None if end == -1 else end

    def bytes_used(self) -> int:
        if not self.start_blocks and not self._sets:
            return 0
        ways = sum(len(ways) for ways in self._sets.values()) + 1  # + the start row
        successors = sum(len(s) for ways in self._sets.values() for _, s in ways) + len(self.start_blocks)
        return BLOCK_TABLE_BYTES + ways * BLOCK_WAY_BYTES + successors * BLOCK_SUCCESSOR_BYTES


class CorrelationTables:
    """The exec-ID table and one UM-block table per tracked exec ID, learning from launches and faults.

    At most `exec_ids` exec IDs are tracked; launching a new one past that bound drops the least
    recently launched one with its exec-ID entry and its UM-block table.
    """

    def __init__(self, config):
        """config: a DeepUMConfig (or anything with its table-size fields)."""
        self.exec_ids = config.exec_ids
        self.block_rows = config.block_rows
        self.block_ways = config.block_ways
        self.block_successors = config.block_successors
        self.chain_blocks = config.chain_blocks
        self.exec_table = ExecIdTable(config.exec_records)
        self._block_tables: dict[int, BlockTable] = {}
        self._launch_order: OrderedDict[int, None] = OrderedDict()  # least recently launched first
        self.history: Context = (NO_EXEC_ID,) * (HISTORY + 1)     # last launches, the running one last
        self._launched = False
        self._last_fault: int | None = None                         # of the running kernel

    def on_kernel(self, exec_id: int) -> None:
        """A kernel launched: ends learning of the previous one and records the transition."""
        check_exec_id(exec_id)
        if self._launched:
            previous = self.history[-1]
            if self._last_fault is not None:
                self._block_tables[previous].end_block = self._last_fault
            self.exec_table.learn(previous, self.history[:-1], exec_id)
        self._track(exec_id)
        self.history = self.history[1:] + (exec_id,)
        self._launched = True
        self._last_fault = None

    def on_fault(self, block: int) -> None:
        """The running kernel faulted on `block` (a repeat of its previous fault is ignored)."""
        check_block(block)
        if not self._launched or block == self._last_fault:
            return
        _learn_fault(self._block_table_of(self.history[-1]), self._last_fault, block)
        self._last_fault = block

    def learn_faults(self, exec_id: int, blocks) -> None:
        """The UM blocks one earlier launch of `exec_id` faulted on, in fault order, learned after the
        fact (a GPU's fault log arrives after the kernel ran): the lessons on_fault would have taught
        during that launch, its last block as the end block; repeats of the previous block are ignored.
        Nothing is learned when `exec_id` is no longer tracked."""
        check_exec_id(exec_id)
        blocks = [check_block(block) for block in blocks]
        if exec_id not in self._launch_order or not blocks:
            return
        table = self._block_table_of(exec_id)
        last = None
        for block in blocks:
            if block != last:
                _learn_fault(table, last, block)
                last = block
        table.end_block = last

    def _block_table_of(self, exec_id: int) -> BlockTable:
        table = self._block_tables.get(exec_id)
        if table is None:
            table = self._block_tables[exec_id] = BlockTable(self.block_rows, self.block_ways, self.block_successors)
        return table

    def _track(self, exec_id: int) -> None:
        if exec_id in self._launch_order:
            self._launch_order.move_to_end(exec_id)
            return
        self._launch_order[exec_id] = None
        if len(self._launch_order) > self.exec_ids:
            dropped, _ = self._launch_order.popitem(last=False)
            self.exec_table.drop(dropped)
            self._block_tables.pop(dropped, None)

    def predict_next(self, context: Context) -> int | None:
        """The exec ID predicted to follow `context` (HISTORY + 1 exec IDs, the current one last)."""
        return self.exec_table.predict(context[-1], context[:-1])

    def chain(self, exec_id: int) -> tuple[int, ...]:
        """Predicted UM blocks of one launch of `exec_id` (see BlockTable.chain)."""
        table = self._block_tables.get(exec_id)
        return table.chain(self.chain_blocks) if table is not None else ()

    def block_table(self, exec_id: int) -> BlockTable | None:
        return self._block_tables.get(exec_id)

    def tracked_exec_ids(self) -> tuple[int, ...]:
        """Tracked exec IDs, least recently launched first."""
        return tuple(self._launch_order)

    def bytes_used(self) -> int:
        return self.exec_table.bytes_used() + sum(t.bytes_used() for t in self._block_tables.values())

    def save(self, w: StateWriter) -> None:
        """The learned state: every tracked exec ID, least recently launched first, with its records
        (most recently used first) and its UM-block table. Not the launch history: a run that loads it
        starts with none."""
        w.word(len(self._launch_order))
        for exec_id in self._launch_order:
            w.word(exec_id)
            records = self.exec_table.records(exec_id)
            w.word(len(records))
            for history, next_id in records:
                for word in (*history, next_id):
                    w.word(word)
            table = self._block_tables.get(exec_id)
            (table or BlockTable(self.block_rows, self.block_ways, self.block_successors)).save(w)

    def load(self, r: StateReader) -> None:
        """Into tables that have seen no launch."""
        for _ in range(r.count(self.exec_ids, 4, "exec IDs")):
            exec_id = r.word()
            if exec_id in self._launch_order:
                fail("an exec ID appears twice")
            self._track(exec_id)
            records = []
            for _ in range(r.count(self.exec_table.records_per_entry, HISTORY + 1, "records")):
                history = tuple(r.word() for _ in range(HISTORY))
                records.append((history, r.word()))
            for history, next_id in reversed(records):
                self.exec_table.learn(exec_id, history, next_id)
            self._block_table_of(exec_id).load(r)


def _learn_fault(table: BlockTable, previous: int | None, block: int) -> None:
    """One fault's lesson: the first block of a launch starts the chain, later ones succeed `previous`."""
    if previous is None:
        table.learn_start(block)
    else:
        table.learn_successor(previous, block)
