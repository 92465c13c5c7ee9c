"""The predictor (deepum/specs/predictor.py): the window rules on a worked example, exact predictions on
periodic traces, graceful degradation on noisy ones."""
import random
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import deepum
from deepum.config import DeepUMConfig
from deepum.specs.predictor import PredictedKernel, Predictor, WindowChange, make_predictor
from deepum.specs.tables import HISTORY, NO_EXEC_ID


def launch(predictor, exec_id, faults=()):
    change = predictor.on_kernel(exec_id)
    for block in faults:
        predictor.on_fault(block)
    return change


def test_worked_example_of_stop_resume_hit_and_miss():
    A, B, C, D, X = 1, 2, 3, 4, 5
    p = Predictor(DeepUMConfig(lookahead=2))
    # First sight of each kernel: nothing to predict (stop rule), each launch rebuilds the window.
    assert launch(p, A, [10, 11]) == WindowChange(0, 1)
    assert p.window == [PredictedKernel(A, ())]
    for exec_id, faults in ((B, [20]), (C, [30, 31]), (D, [])):
        assert launch(p, exec_id, faults) == WindowChange(1, 1)
        assert p.window == [PredictedKernel(exec_id, ())]
    assert (p.kernel_hits, p.kernel_misses) == (0, 0)      # no prediction existed
    # A again: its chain is known, and B, C follow from the learned transitions.
    assert launch(p, A, [10, 11]) == WindowChange(1, 3)
    assert p.window == [(A, (10, 11)), (B, (20,)), (C, (30, 31))]
    # B as predicted: a hit pops one and the tail grows again (resume rule).
    assert launch(p, B) == WindowChange(1, 1)
    assert p.window == [(B, (20,)), (C, (30, 31)), (D, ())]
    assert (p.kernel_hits, p.kernel_misses) == (1, 0)
    # X instead of C: a miss drops the window; X is new, so nothing follows it.
    assert launch(p, X) == WindowChange(3, 1)
    assert p.window == [(X, ())]
    assert (p.kernel_hits, p.kernel_misses) == (1, 1)
    assert p.predict_blocks(C) == (30, 31)


def test_prediction_follows_the_predicted_kernels_not_only_the_last_launch():
    # Kernel 7 is followed by 8 after (1, 2, 3) and by 9 after (4, 5, 6): the window must pick
    # the right one from the history formed by the predicted kernels ahead of it.
    p = Predictor(DeepUMConfig(lookahead=10))
    period = [1, 2, 3, 7, 8, 4, 5, 6, 7, 9]
    for _ in range(3):
        for exec_id in period:
            launch(p, exec_id)
    assert [entry.exec_id for entry in p.window] == period[-1:] + period


# --- recall of remembered iterations ------------------------------------------------------------

def alternating_iterations(count):
    """Iterations that repeat every other one: 40 kernels, the 21st differs between the two kinds,
    after a history the tables cannot tell apart (the same HISTORY launches before it)."""
    base = list(range(100, 140))
    kinds = [base[:20] + [1] + base[21:], base[:20] + [2] + base[21:]]
    return [kinds[i % 2] for i in range(count)]


@pytest.mark.parametrize("native", [False, True])
def test_recall_follows_the_iteration_two_back_where_the_tables_cannot_tell(native):
    misses = {}
    for recall in (0, 1, 2):
        p = make_predictor(DeepUMConfig(lookahead=4, recall_iterations=recall), native=native)
        per_iteration = []
        for iteration in alternating_iterations(8):
            before = p.kernel_misses
            for exec_id in iteration:
                launch(p, exec_id)
            per_iteration.append(p.kernel_misses - before)
            p.start_iteration()
        misses[recall] = per_iteration
    # The tables alone, and recall of the last iteration only, miss the 21st launch every iteration;
    # recall of two follows the iteration two back from the fourth iteration on.
    assert misses[0][2:] == [1] * 6 and misses[1][2:] == [1] * 6
    assert misses[2][3:] == [0] * 5
    # Mid-iteration the window holds the remembered iteration's next launches, past the place where
    # the two kinds differ.
    p = make_predictor(DeepUMConfig(lookahead=4, recall_iterations=2), native=native)
    for iteration in alternating_iterations(4):
        for exec_id in iteration:
            launch(p, exec_id)
        p.start_iteration()
    for exec_id in alternating_iterations(5)[4][:18]:
        launch(p, exec_id)
    assert [entry.exec_id for entry in p.window] == [117, 118, 119, 1, 121]


def test_recall_reads_an_iteration_only_where_the_launch_matches_it():
    # A launch no remembered iteration has at its place: the tables predict until one matches again.
    p = Predictor(DeepUMConfig(lookahead=3, recall_iterations=1))
    for _ in range(2):
        for exec_id in (1, 2, 3, 4, 5, 6):
            launch(p, exec_id)
        p.start_iteration()
    launch(p, 1)
    assert [entry.exec_id for entry in p.window] == [1, 2, 3, 4]   # recalled
    launch(p, 9)                                                    # new: nothing recalled nor learned
    assert [entry.exec_id for entry in p.window] == [9]
    launch(p, 3)                                                    # the iteration's place 2 again
    assert [entry.exec_id for entry in p.window] == [3, 4, 5, 6]


# --- periodic traces ----------------------------------------------------------------------------

exec_id_values = st.integers(0, NO_EXEC_ID - 1)


def contexts_are_unambiguous(period):
    """True if the 4 kernels up to each position of the repeated period determine the next one."""
    n = len(period)
    following = {}
    for i in range(n):
        context = tuple(period[(i - 3 + j) % n] for j in range(4))
        if following.setdefault(context, period[(i + 1) % n]) != period[(i + 1) % n]:
            return False
    return True


@st.composite
def periodic_workloads(draw, distinct):
    """(config, period of exec IDs, faults of each exec ID) with tables large enough to hold it all:
    no set of a UM-block table receives more than block_ways blocks of one exec ID, chains may be as
    long as the longest fault list, and nothing is dropped from the exec-ID table."""
    length = draw(st.integers(1, 10))
    if distinct:
        period = draw(st.lists(exec_id_values, min_size=length, max_size=length, unique=True))
        exec_records = draw(st.integers(1, 3))   # every record of an exec ID names the same next one
    else:
        pool = draw(st.lists(exec_id_values, min_size=1, max_size=length, unique=True))
        period = draw(st.lists(st.sampled_from(pool), min_size=length, max_size=length))
        assume(contexts_are_unambiguous(period))
        exec_records = length + HISTORY          # one record per position, + those of the first launches
    kernels = list(dict.fromkeys(period))
    faults = {e: draw(st.lists(st.integers(0, 2**63 - 1), unique=True, max_size=12)) for e in kernels}
    rows = draw(st.integers(1, 32))
    ways = max([1] + [sum(1 for b in blocks if b % rows == r) for blocks in faults.values() for r in range(rows)])
    config = DeepUMConfig(
        lookahead=draw(st.integers(1, 6)), exec_ids=len(kernels) + draw(st.integers(0, 2)),
        exec_records=exec_records, block_rows=rows, block_ways=ways, block_successors=draw(st.integers(1, 3)),
        chain_blocks=max([1] + [len(blocks) for blocks in faults.values()]))
    return config, period, faults


def check_exact_from(first_exact_launch, config, period, faults):
    """From launch `first_exact_launch` on (0-based, counting every launch), the window holds the
    running kernel and the true next `lookahead` kernels, each with exactly its faults in fault order."""
    p = Predictor(config)
    n = len(period)
    for t in range(first_exact_launch + 2 * n + 1):
        misses = p.kernel_misses
        change = launch(p, period[t % n], faults[period[t % n]])
        if t >= first_exact_launch:
            truth = [period[(t + j) % n] for j in range(config.lookahead + 1)]
            assert p.window == [PredictedKernel(e, tuple(faults[e])) for e in truth]
        if t > first_exact_launch:
            assert change == WindowChange(1, 1) and p.kernel_misses == misses


@settings(max_examples=200, deadline=None)
@given(periodic_workloads(distinct=True))
def test_periodic_distinct_kernels_are_predicted_exactly_from_the_second_iteration(workload):
    """Each exec ID appears once per period, so every record of it names the true next kernel: at
    the first launch of iteration 2 all transitions and all chains are known."""
    config, period, faults = workload
    check_exact_from(len(period), config, period, faults)


@settings(max_examples=200, deadline=None)
@given(periodic_workloads(distinct=False))
def test_periodic_repeated_kernels_are_predicted_exactly_once_learned(workload):
    """With exec IDs repeated within the period, the record with the full history decides; every
    4-kernel context of the period has been followed once by launch P + 3, and wrong entries
    predicted before that have left the window lookahead - 1 launches later."""
    config, period, faults = workload
    check_exact_from(len(period) + 3 + config.lookahead - 1, config, period, faults)


# --- noisy traces -------------------------------------------------------------------------------

def noisy_run(seed, length, iterations, substitution, config):
    """Runs a periodic trace in which each launch is replaced, with probability `substitution`, by a
    random other kernel; checks the window rules at every launch; returns the hit rate after two
    iterations of warm-up."""
    rng = random.Random(seed)
    kernels = [rng.randrange(2**64) for _ in range(length)]
    period = [rng.choice(kernels[:i]) if i and rng.random() < 0.1 else kernels[i] for i in range(length)]
    noise = [rng.randrange(2**64) for _ in range(5)]
    faults = {e: rng.sample(range(10_000), rng.randrange(1, 30)) for e in period + noise}
    p = Predictor(config)
    hits = misses = 0
    for t in range(iterations * length):
        exec_id = period[t % length]
        if rng.random() < substitution:
            exec_id = rng.choice(period + noise)
        before = p.window
        old = (p.kernel_hits, p.kernel_misses)
        change = launch(p, exec_id, faults[exec_id])
        window = p.window
        assert window[0].exec_id == exec_id and len(window) <= config.lookahead + 1
        assert len(window) == len(before) - change.popped + change.pushed
        assert window[:len(window) - change.pushed] == before[change.popped:]
        assert (p.kernel_hits - old[0]) + (p.kernel_misses - old[1]) == (len(before) >= 2)
        if t == 2 * length:
            hits, misses = p.kernel_hits, p.kernel_misses
    return (p.kernel_hits - hits) / max(1, p.kernel_hits - hits + p.kernel_misses - misses)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), length=st.integers(20, 60), lookahead=st.integers(1, 32))
def test_hit_rate_degrades_gracefully_with_noise(seed, length, lookahead):
    config = DeepUMConfig(lookahead=lookahead, exec_records=8, block_rows=256)
    assert noisy_run(seed, length, iterations=3000 // length, substitution=0.05, config=config) >= 0.8


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), length=st.integers(1, 12), substitution=st.floats(0, 1),
       lookahead=st.integers(1, 6), exec_ids=st.integers(1, 8), block_rows=st.integers(1, 8),
       block_ways=st.integers(1, 3), block_successors=st.integers(1, 3), chain_blocks=st.integers(1, 20))
def test_window_rules_hold_on_any_noisy_trace(seed, length, substitution, lookahead, exec_ids, block_rows,
                                              block_ways, block_successors, chain_blocks):
    config = DeepUMConfig(lookahead=lookahead, exec_ids=exec_ids, exec_records=2, block_rows=block_rows,
                          block_ways=block_ways, block_successors=block_successors, chain_blocks=chain_blocks)
    noisy_run(seed, length, iterations=8, substitution=substitution, config=config)


# --- choosing the implementation ----------------------------------------------------------------

def test_make_predictor_python():
    p = make_predictor(DeepUMConfig(lookahead=3), native=False)
    assert isinstance(p, Predictor) and p.lookahead == 3


def test_make_predictor_native_without_extension_says_how_to_build(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepum._native", None)   # makes the import fail
    monkeypatch.delattr(deepum, "_native", raising=False)
    with pytest.raises(ImportError, match="pip install -e"):
        make_predictor(DeepUMConfig())
