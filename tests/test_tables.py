"""The correlation tables (deepum/specs/tables.py): exact rules on small cases; state machines that drive
them through launches, faults and late lessons in any order against a plain model and the native tables,
and learning late against learning during the launch."""
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deepum import _native as native
from deepum.config import DeepUMConfig
from deepum.specs.tables import (BLOCK_SUCCESSOR_BYTES, BLOCK_TABLE_BYTES, BLOCK_WAY_BYTES, EXEC_ENTRY_BYTES,
                                 EXEC_RECORD_BYTES, HISTORY, NO_EXEC_ID, BlockTable, CorrelationTables, ExecIdTable)

S = NO_EXEC_ID


def run_kernels(tables, kernels):
    """kernels: [(exec_id, [faults])]"""
    for exec_id, faults in kernels:
        tables.on_kernel(exec_id)
        for block in faults:
            tables.on_fault(block)


# --- execution-ID table -------------------------------------------------------------------------

def test_exec_table_prefers_longest_matching_history():
    table = ExecIdTable(records_per_entry=4)
    table.learn(5, (1, 2, 3), 10)   # full history
    table.learn(5, (9, 2, 3), 11)   # agrees on the last two
    table.learn(5, (9, 9, 3), 12)   # agrees on the last one (most recently used)
    assert table.predict(5, (1, 2, 3)) == 10
    assert table.predict(5, (7, 2, 3)) == 11
    assert table.predict(5, (7, 7, 3)) == 12


def test_exec_table_ties_go_to_most_recently_used_and_mismatch_falls_back_to_it():
    table = ExecIdTable(records_per_entry=4)
    table.learn(5, (1, 2, 3), 10)
    table.learn(5, (4, 2, 3), 11)
    assert table.predict(5, (7, 2, 3)) == 11      # both agree on two: the newer wins
    assert table.predict(5, (7, 7, 7)) == 11      # none agrees at all: the most recently used
    table.learn(5, (1, 2, 3), 10)                 # relearning moves it to the front
    assert table.predict(5, (7, 2, 3)) == 10
    assert table.predict(6, (1, 2, 3)) is None    # no entry, no prediction


def test_exec_table_keeps_records_mru_within_bound():
    table = ExecIdTable(records_per_entry=2)
    table.learn(5, (1, 1, 1), 10)
    table.learn(5, (2, 2, 2), 11)
    table.learn(5, (1, 1, 1), 10)
    assert table.records(5) == [((1, 1, 1), 10), ((2, 2, 2), 11)]
    table.learn(5, (3, 3, 3), 12)                 # evicts the least recently used record
    assert table.records(5) == [((3, 3, 3), 12), ((1, 1, 1), 10)]
    table.learn(5, (3, 3, 3), 13)                 # same history, other next: a record of its own
    assert table.records(5) == [((3, 3, 3), 13), ((3, 3, 3), 12)]


def after_sentinels(*exec_ids: int) -> tuple[int, ...]:
    """The HISTORY exec IDs before a launch that follows `exec_ids` from the start of a run."""
    return ((S,) * HISTORY + exec_ids)[-HISTORY:]


def test_transitions_are_recorded_into_the_previous_kernel_with_sentinel_history():
    tables = CorrelationTables(DeepUMConfig())
    launched = tuple(range(1, HISTORY + 3))
    for exec_id in launched:
        tables.on_kernel(exec_id)
    assert tables.exec_table.records(1) == [(after_sentinels(), 2)]
    assert tables.exec_table.records(2) == [(after_sentinels(1), 3)]
    last = launched[-1]
    assert tables.exec_table.records(last - 1) == [(launched[-HISTORY - 2:-2], last)]
    assert tables.exec_table.records(last) == []
    assert tables.history == launched[-HISTORY - 1:]
    assert tables.predict_next(launched[-HISTORY - 2:-1]) == last


# --- UM-block table -----------------------------------------------------------------------------

def test_block_table_successors_are_mru_and_bounded():
    table = BlockTable(rows=4, ways=2, successors=2)
    table.learn_successor(1, 7)
    table.learn_successor(1, 8)
    assert table.successors(1) == (8, 7)
    table.learn_successor(1, 7)
    assert table.successors(1) == (7, 8)
    table.learn_successor(1, 9)
    assert table.successors(1) == (9, 7)
    assert table.successors(2) == ()


def test_block_table_replaces_least_recently_learned_way_of_the_set():
    table = BlockTable(rows=2, ways=2, successors=2)   # blocks 0, 2, 4 share set 0
    table.learn_successor(0, 1)
    table.learn_successor(2, 3)
    table.learn_successor(0, 5)                        # touches way 0: way 2 is now the LRU one
    table.learn_successor(4, 6)
    assert table.sets()[0] == [(4, (6,)), (0, (5, 1))]
    assert table.successors(2) == ()


def test_chain_walk_is_breadth_first_from_start_blocks_then_end_block():
    table = BlockTable(rows=64, ways=2, successors=4)
    table.learn_start(10)
    table.learn_start(20)                              # start row: (20, 10)
    for block, successor in [(20, 21), (20, 22), (10, 11), (22, 23), (11, 12), (30, 31)]:
        table.learn_successor(block, successor)
    assert table.chain(limit=100) == (20, 10, 22, 21, 11, 23, 12)
    table.end_block = 30                               # not reachable from the start blocks
    assert table.chain(limit=100) == (20, 10, 22, 21, 11, 23, 12, 30, 31)
    table.end_block = 23                               # reachable: no second walk
    assert table.chain(limit=100) == (20, 10, 22, 21, 11, 23, 12)
    assert table.chain(limit=3) == (20, 10, 22)
    assert table.chain(limit=1) == (20,)


def test_chain_walk_survives_cycles():
    table = BlockTable(rows=8, ways=1, successors=1)
    table.learn_start(1)
    for block, successor in [(1, 2), (2, 3), (3, 1)]:
        table.learn_successor(block, successor)
    assert table.chain(limit=10) == (1, 2, 3)


def test_learning_follows_each_launch_separately():
    tables = CorrelationTables(DeepUMConfig(block_rows=64))
    run_kernels(tables, [(1, [5, 5, 6, 6, 7]), (2, [8]), (1, [9, 5])])
    one = tables.block_table(1)
    assert one.start_blocks == [9, 5]
    assert one.successors(5) == (6,)                   # repeats of a fault are ignored
    assert one.successors(6) == (7,)
    assert one.successors(9) == (5,)
    assert one.successors(7) == ()                     # no pair across launches
    assert one.end_block == 7                          # the running launch is not closed yet
    tables.on_kernel(3)
    assert one.end_block == 5
    tables.on_kernel(1)                                # a launch without faults keeps the end block
    tables.on_kernel(3)
    assert one.end_block == 5
    assert tables.chain(2) == (8,)
    assert tables.chain(1) == (9, 5, 6, 7)


def test_faults_before_any_launch_are_ignored():
    tables = CorrelationTables(DeepUMConfig())
    tables.on_fault(3)
    assert tables.bytes_used() == 0 and tables.tracked_exec_ids() == ()


def test_least_recently_launched_exec_id_is_dropped_with_both_tables():
    tables = CorrelationTables(DeepUMConfig(exec_ids=2))
    run_kernels(tables, [(1, [10, 11]), (2, [20]), (1, [10]), (2, [])])
    assert tables.tracked_exec_ids() == (1, 2)
    tables.on_kernel(3)                                # 1 is the least recently launched
    assert tables.tracked_exec_ids() == (2, 3)
    assert tables.block_table(1) is None and tables.chain(1) == ()
    assert tables.exec_table.records(1) == []
    assert tables.exec_table.records(2) == [(after_sentinels(1, 2, 1), 3), (after_sentinels(1), 1)]


def test_bytes_used_counts_each_element():
    tables = CorrelationTables(DeepUMConfig(block_rows=64))
    run_kernels(tables, [(1, [1, 2, 3])])
    # block table: end block 8 + (2 ways + start row) * 8 + (2 successors + 1 start block) * 8
    assert tables.bytes_used() == 8 + 3 * 8 + 3 * 8
    tables.on_kernel(2)
    assert tables.bytes_used() == 56 + (16 + 8 * (HISTORY + 1))  # + exec entry of 1 with one record


def test_invalid_inputs_are_rejected():
    tables = CorrelationTables(DeepUMConfig())
    tables.on_kernel(2**64 - 1)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            tables.on_kernel(bad)
    for bad in (-1, 2**63):
        with pytest.raises(ValueError):
            tables.on_fault(bad)


# --- state machines ------------------------------------------------------------------------------

EXEC_IDS = range(8)   # 7 is launched by no rule: only ever learned about
small_configs = st.builds(
    DeepUMConfig, lookahead=st.integers(1, 4), exec_ids=st.integers(1, 4), exec_records=st.integers(1, 3),
    block_rows=st.integers(1, 5), block_ways=st.integers(1, 3), block_successors=st.integers(1, 3),
    chain_blocks=st.integers(1, 12))
launched = st.integers(0, 6)
faults = st.lists(st.integers(0, 20), max_size=8)


def exact_bytes(tables) -> int:
    """What the tables hold, costed from what they show (deepum.specs.tables' element costs)."""
    total = 0
    for exec_id in tables.tracked_exec_ids():
        records = tables.exec_table.records(exec_id)
        total += (EXEC_ENTRY_BYTES + len(records) * EXEC_RECORD_BYTES) if records else 0
        table = tables.block_table(exec_id)
        if table is not None and (table.start_blocks or table.sets()):
            ways = [way for ways in table.sets().values() for way in ways]
            total += (BLOCK_TABLE_BYTES + (len(ways) + 1) * BLOCK_WAY_BYTES
                      + (sum(len(s) for _, s in ways) + len(table.start_blocks)) * BLOCK_SUCCESSOR_BYTES)
    return total


class TablesFollowTheirRules(RuleBasedStateMachine):
    """Launches, faults of the running launch and faults learned late (for tracked, dropped and never
    launched exec IDs) in any order, on tables small enough to overflow everywhere. The tables are
    checked against a plain model of what they must know (which exec IDs are tracked, the history,
    each tracked exec ID's blocks and end block, the newest lessons first) and against the native
    tables (deepum._native.Predictor fed the same calls), which must build the same chains and hold
    the same bytes."""

    @initialize(config=small_configs)
    def start(self, config):
        note(f"config {config}")
        self.config = config
        self.tables = CorrelationTables(config)
        self.native = native.Predictor(config.to_dict())
        self.launches: list[int] = []
        self.observed: dict[int, set[int]] = defaultdict(set)  # blocks learned since it was last tracked
        self.end: dict[int, int] = {}                            # exec ID -> its end block
        self.last_fault = None                                   # of the running launch

    def tracked(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(reversed(self.launches)))[:self.config.exec_ids][::-1]

    @rule(exec_id=launched)
    def launch(self, exec_id):
        note(f"launch {exec_id}")
        running, history = (self.launches[-1] if self.launches else None), self.tables.history
        self.tables.on_kernel(exec_id)
        self.native.on_kernel(exec_id)
        if self.last_fault is not None:
            self.end[running] = self.last_fault                  # the launch's last fault
        self.launches.append(exec_id)
        self.last_fault = None
        for gone in (set(self.observed) | set(self.end)) - set(self.tracked()):
            self.observed.pop(gone, None)
            self.end.pop(gone, None)
        if running in self.tracked():                            # the transition, newest record first
            assert self.tables.exec_table.records(running)[0] == (history[:-1], exec_id)

    @rule(block=st.integers(0, 20))
    def fault(self, block):
        note(f"fault {block}")
        self.tables.on_fault(block)
        self.native.on_fault(block)
        if not self.launches:
            return                                               # before any launch: ignored
        running = self.launches[-1]
        table = self.tables.block_table(running)
        if self.last_fault is None:
            assert table.start_blocks[0] == block
        elif block != self.last_fault:
            assert table.successors(self.last_fault)[0] == block                          # newest first
            assert table.sets()[self.last_fault % self.config.block_rows][0][0] == self.last_fault  # way MRU
        self.observed[running].add(block)
        self.last_fault = block

    @rule(exec_id=st.sampled_from(EXEC_IDS), blocks=faults)
    def faults_learned_late(self, exec_id, blocks):
        note(f"learn_faults({exec_id}, {blocks})")
        before = self.tables.bytes_used()
        self.tables.learn_faults(exec_id, blocks)
        self.native.learn_faults(exec_id, blocks)
        if exec_id not in self.tracked() or not blocks:
            assert self.tables.bytes_used() == before            # nothing learned
            return
        table = self.tables.block_table(exec_id)
        assert table.start_blocks[0] == blocks[0] and table.end_block == blocks[-1]
        pairs = [(a, b) for a, b in zip(blocks, blocks[1:]) if a != b]
        if pairs:
            assert table.successors(pairs[-1][0])[0] == pairs[-1][1]
        self.observed[exec_id] |= set(blocks)
        self.end[exec_id] = blocks[-1]

    @invariant()
    def launches_are_remembered(self):
        assert self.tables.tracked_exec_ids() == self.tracked()
        assert self.tables.history == ((S,) * (HISTORY + 1) + tuple(self.launches))[-(HISTORY + 1):]

    @invariant()
    def tables_keep_their_bounds_and_know_only_what_they_saw(self):
        config, tracked = self.config, self.tracked()
        for exec_id in EXEC_IDS:
            records = self.tables.exec_table.records(exec_id)
            table = self.tables.block_table(exec_id)
            if exec_id not in tracked:
                assert records == [] and table is None and self.tables.chain(exec_id) == ()
                continue
            assert len(records) <= config.exec_records and len(set(records)) == len(records)
            assert all(next_id in self.launches for _, next_id in records)
            if table is None:
                assert exec_id not in self.observed
                continue
            seen = self.observed[exec_id]
            for index, ways in table.sets().items():
                assert len(ways) <= config.block_ways and len({tag for tag, _ in ways}) == len(ways)
                for tag, successors in ways:
                    assert tag % config.block_rows == index and tag in seen
                    assert 1 <= len(successors) <= config.block_successors
                    assert len(set(successors)) == len(successors) and tag not in successors
                    assert set(successors) <= seen
            assert 1 <= len(table.start_blocks) <= config.block_successors
            assert len(set(table.start_blocks)) == len(table.start_blocks) and set(table.start_blocks) <= seen
            assert table.end_block == self.end.get(exec_id)
            chain = self.tables.chain(exec_id)
            assert len(chain) <= config.chain_blocks and len(set(chain)) == len(chain) and set(chain) <= seen
            assert chain[:1] == tuple(table.start_blocks[:1])
        assert self.tables.bytes_used() == exact_bytes(self.tables) <= config.table_bytes_bound()

    @invariant()
    def native_tables_agree(self):
        for exec_id in EXEC_IDS:
            assert self.native.predict_blocks(exec_id) == self.tables.chain(exec_id), exec_id
        assert self.native.table_bytes() == self.tables.bytes_used()


TablesFollowTheirRules.TestCase.settings = settings(max_examples=400, stateful_step_count=60, deadline=None,
                                                    suppress_health_check=[HealthCheck.too_slow])
TestTablesFollowTheirRules = TablesFollowTheirRules.TestCase


class LateLessonsTeachWhatTimelyOnesTeach(RuleBasedStateMachine):
    """The GPU's fault log arrives after the kernel ran: one copy of the tables learns each launch's
    faults during the launch, the other learns them late, in launch order, at any later point. While
    every exec ID stays tracked, an exec ID with no lessons due has the same UM-block table in both
    (but for the end block of the running launch, which learning during it sets only when it ends),
    and once every lesson has arrived the tables are the same."""

    @initialize(config=small_configs.map(lambda c: DeepUMConfig(**{**c.to_dict(), "exec_ids": 7})))
    def start(self, config):
        note(f"config {config}")
        self.during, self.late = CorrelationTables(config), CorrelationTables(config)
        self.due: list[tuple[int, list[int]]] = []  # launches whose faults `late` has not learned, oldest first
        self.running, self.running_faults = None, []

    @rule(exec_id=launched, blocks=faults)
    def launch(self, exec_id, blocks):
        note(f"launch {exec_id} faulting on {blocks}")
        self.during.on_kernel(exec_id)
        for block in blocks:
            self.during.on_fault(block)
        self.late.on_kernel(exec_id)
        self.due.append((exec_id, blocks))
        self.running, self.running_faults = exec_id, blocks

    @precondition(lambda self: self.due)
    @rule(count=st.integers(1, 3))
    def late_lessons_arrive(self, count):
        for exec_id, blocks in self.due[:count]:
            note(f"late: learn_faults({exec_id}, {blocks})")
            self.late.learn_faults(exec_id, blocks)
        del self.due[:count]

    @invariant()
    def launches_are_learned_alike(self):
        during, late = self.during, self.late
        assert late.tracked_exec_ids() == during.tracked_exec_ids() and late.history == during.history
        for exec_id in EXEC_IDS:
            assert late.exec_table.records(exec_id) == during.exec_table.records(exec_id)

    @invariant()
    def caught_up_block_tables_are_alike(self):
        waiting = {exec_id for exec_id, _ in self.due}
        for exec_id in set(EXEC_IDS) - waiting:
            late, during = self.late.block_table(exec_id), self.during.block_table(exec_id)
            if during is None:
                assert late is None, exec_id
                continue
            assert (late.sets(), late.start_blocks) == (during.sets(), during.start_blocks), exec_id
            if exec_id == self.running and self.running_faults:
                assert late.end_block == self.running_faults[-1], exec_id
            else:
                assert late.end_block == during.end_block, exec_id
                assert self.late.chain(exec_id) == self.during.chain(exec_id), exec_id
        if not self.due:
            assert self.late.bytes_used() == self.during.bytes_used()


LateLessonsTeachWhatTimelyOnesTeach.TestCase.settings = settings(
    max_examples=400, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TestLateLessonsTeachWhatTimelyOnesTeach = LateLessonsTeachWhatTimelyOnesTeach.TestCase


def test_faults_learned_late_skip_repeats_set_the_end_and_ignore_untracked_exec_ids():
    tables = CorrelationTables(DeepUMConfig(exec_ids=2, block_rows=1, block_ways=4))
    tables.on_kernel(1)
    tables.learn_faults(1, [5, 5, 7, 5])
    table = tables.block_table(1)
    assert table.start_blocks == [5] and table.successors(5) == (7,) and table.successors(7) == (5,)
    assert table.end_block == 5
    tables.learn_faults(9, [1, 2])         # never launched
    tables.on_kernel(2), tables.on_kernel(3)  # 1 is dropped (two exec IDs tracked)
    tables.learn_faults(1, [1, 2])
    assert tables.block_table(9) is None and tables.block_table(1) is None
    tables.learn_faults(3, [])
    assert tables.block_table(3) is None
    with pytest.raises(ValueError):
        tables.learn_faults(2, [4, -1])
    with pytest.raises(ValueError):
        tables.learn_faults(-1, [4])
