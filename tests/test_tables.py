"""The correlation tables (deepum/specs/tables.py): exact rules on small cases, invariants on random streams."""
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.config import DeepUMConfig
from deepum.specs.tables import NO_EXEC_ID, BlockTable, CorrelationTables, ExecIdTable

S = NO_EXEC_ID


def feed(tables, events):
    for kind, value in events:
        (tables.on_kernel if kind == "kernel" else tables.on_fault)(value)


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


def test_transitions_are_recorded_into_the_previous_kernel_with_sentinel_history():
    tables = CorrelationTables(DeepUMConfig())
    for exec_id in (1, 2, 3, 4, 5):
        tables.on_kernel(exec_id)
    assert tables.exec_table.records(1) == [((S, S, S), 2)]
    assert tables.exec_table.records(2) == [((S, S, 1), 3)]
    assert tables.exec_table.records(4) == [((1, 2, 3), 5)]
    assert tables.exec_table.records(5) == []
    assert tables.history == (2, 3, 4, 5)
    assert tables.predict_next((1, 2, 3, 4)) == 5


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
    assert tables.exec_table.records(2) == [((1, 2, 1), 3), ((S, S, 1), 1)]


def test_bytes_used_counts_each_element():
    tables = CorrelationTables(DeepUMConfig(block_rows=64))
    run_kernels(tables, [(1, [1, 2, 3])])
    # block table: end block 8 + (2 ways + start row) * 8 + (2 successors + 1 start block) * 8
    assert tables.bytes_used() == 8 + 3 * 8 + 3 * 8
    tables.on_kernel(2)
    assert tables.bytes_used() == 56 + (16 + 32)       # + exec entry of 1 with one record


def test_invalid_inputs_are_rejected():
    tables = CorrelationTables(DeepUMConfig())
    tables.on_kernel(2**64 - 1)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            tables.on_kernel(bad)
    for bad in (-1, 2**63):
        with pytest.raises(ValueError):
            tables.on_fault(bad)


# --- invariants on random streams ---------------------------------------------------------------

small_configs = st.builds(
    DeepUMConfig, lookahead=st.integers(1, 4), exec_ids=st.integers(1, 4), exec_records=st.integers(1, 3),
    block_rows=st.integers(1, 5), block_ways=st.integers(1, 3), block_successors=st.integers(1, 3),
    chain_blocks=st.integers(1, 12))
event = st.one_of(st.tuples(st.just("kernel"), st.integers(0, 6)), st.tuples(st.just("fault"), st.integers(0, 20)))
events = st.integers(0, 200).flatmap(lambda n: st.lists(event, min_size=n, max_size=n))


def check_tables(tables, config, observed, launches):
    expected_tracked = tuple(dict.fromkeys(reversed(launches)))[:config.exec_ids][::-1]
    assert tables.tracked_exec_ids() == expected_tracked
    for exec_id in range(7):
        records = tables.exec_table.records(exec_id)
        assert len(records) <= config.exec_records and len(set(records)) == len(records)
        table = tables.block_table(exec_id)
        if exec_id not in expected_tracked:
            assert records == [] and table is None
            continue
        seen = observed[exec_id]
        for _, next_id in records:
            assert next_id in launches
        if table is None:
            continue
        for index, ways in table.sets().items():
            assert len(ways) <= config.block_ways
            assert len({tag for tag, _ in ways}) == len(ways)
            for tag, successors in ways:
                assert tag % config.block_rows == index and tag in seen
                assert 1 <= len(successors) <= config.block_successors
                assert len(set(successors)) == len(successors) and tag not in successors
                assert set(successors) <= seen
        assert 1 <= len(table.start_blocks) <= config.block_successors
        assert len(set(table.start_blocks)) == len(table.start_blocks) and set(table.start_blocks) <= seen
        assert table.end_block is None or table.end_block in seen
        chain = tables.chain(exec_id)
        assert len(chain) <= config.chain_blocks and len(set(chain)) == len(chain) and set(chain) <= seen
    assert tables.bytes_used() <= config.table_bytes_bound()


@settings(max_examples=300, deadline=None)
@given(small_configs, events)
def test_invariants_hold_on_random_streams(config, events):
    tables = CorrelationTables(config)
    observed = defaultdict(set)   # blocks each tracked exec ID faulted on since it was last tracked
    launches = []
    last_fault = None
    for kind, value in events:
        if kind == "kernel":
            running = launches[-1] if launches else None
            tables.on_kernel(value)
            if last_fault is not None and running in tables.tracked_exec_ids():
                assert tables.block_table(running).end_block == last_fault   # the launch's last fault
            launches.append(value)
            for dropped in set(observed) - set(tables.tracked_exec_ids()):
                del observed[dropped]
            last_fault = None
        else:
            tables.on_fault(value)
            if not launches:
                continue
            running = launches[-1]
            observed[running].add(value)
            table = tables.block_table(running)
            if last_fault is None:
                assert table.start_blocks[0] == value
            elif value != last_fault:
                assert table.successors(last_fault)[0] == value                   # newest successor first
                assert table.sets()[last_fault % config.block_rows][0][0] == last_fault  # its way is MRU
            last_fault = value
        check_tables(tables, config, observed, launches)


def snapshot(tables, exec_ids):
    tables_of = {e: tables.block_table(e) for e in exec_ids}
    return (tables.tracked_exec_ids(), tables.history, tables.bytes_used(),
            [tables.exec_table.records(e) for e in exec_ids],
            [(t.sets(), t.start_blocks, t.end_block) if t else None for t in tables_of.values()],
            [tables.chain(e) for e in exec_ids],
            [tables.predict_next((a, b, c, d)) for a in (S, 0, 1) for b in (0, 1) for c in (0, 1, 2) for d in range(7)])


@settings(max_examples=100, deadline=None)
@given(small_configs, events)
def test_same_stream_gives_same_tables(config, events):
    first, second = CorrelationTables(config), CorrelationTables(config)
    feed(first, events)
    feed(second, events)
    assert snapshot(first, range(7)) == snapshot(second, range(7))


# --- learning after the fact (the GPU's fault log arrives after the kernel ran) --------------------

launches_with_faults = st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 20), max_size=8)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(small_configs.map(lambda c: DeepUMConfig(**{**c.to_dict(), "exec_ids": 7})), launches_with_faults,
       st.lists(st.integers(0, 40), max_size=40))
def test_faults_learned_late_teach_what_faults_during_the_launch_teach(config, kernels, lags):
    """While every exec ID stays tracked, learning each launch's faults late, in launch order and at any
    later point, builds the tables that learning them during the launch builds."""
    during, late = CorrelationTables(config), CorrelationTables(config)
    run_kernels(during, kernels)
    due = []  # launches whose faults are not learned yet, oldest first
    for position, (exec_id, faults) in enumerate(kernels):
        late.on_kernel(exec_id)
        due.append((exec_id, faults))
        lag = lags[position] if position < len(lags) else 0
        while due and lag == 0:
            late.learn_faults(*due.pop(0))
            lag = lags[(position + len(due)) % len(lags)] if lags else 0
    for exec_id, faults in due:
        late.learn_faults(exec_id, faults)
    for tables in (during, late):
        tables.on_kernel(0)  # ends the last launch's learning in `during`
    assert snapshot(late, range(7)) == snapshot(during, range(7))


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
