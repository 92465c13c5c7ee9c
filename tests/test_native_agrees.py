"""The native predictor (driver_hooks/correlation.hpp) agrees with the Python specification
(deepum/specs/predictor.py) on every input: a state machine drives both through launches, faults and
faults learned late in any order and compares everything observable after each step; worked cases
pin the bindings."""
import random

import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deepum.config import DeepUMConfig
from deepum.specs.predictor import PredictedKernel, Predictor, WindowChange, make_predictor
from deepum.specs.warm_state import StateWriter

native = pytest.importorskip(
    "deepum._native", reason="deepum._native is not built: run `pip install -e .` (or `python setup.py build_ext --inplace`)")


def assert_same_state(python, fast):
    assert fast.window == python.window
    assert (fast.kernel_hits, fast.kernel_misses) == (python.kernel_hits, python.kernel_misses)
    assert fast.table_bytes() == python.table_bytes()


def assert_same_tables(python, fast):
    """Everything learned, the order of every set's ways included (which decides the next way
    replaced), as a warm start saves it."""
    writer = StateWriter()
    python.tables.save(writer)
    assert fast.saved_tables() == writer.bytes()


def replay_both(config, events, probe_exec_ids=()):
    python, fast = Predictor(config), make_predictor(config)
    for kind, value in events:
        if kind == "kernel":
            assert fast.on_kernel(value) == python.on_kernel(value)
        elif kind == "learn":
            fast.learn_faults(*value)
            python.learn_faults(*value)
        else:
            fast.on_fault(value)
            python.on_fault(value)
        assert_same_state(python, fast)
    for exec_id in probe_exec_ids:
        assert fast.predict_blocks(exec_id) == python.predict_blocks(exec_id)
    return python, fast


# Small tables, so that sets conflict, records and successors overflow and exec IDs are dropped; and
# roomy ones, where a noisy iteration is learned and predicted far ahead.
configs = st.one_of(
    st.builds(DeepUMConfig, lookahead=st.integers(1, 6), exec_ids=st.integers(1, 6), exec_records=st.integers(1, 4),
              block_rows=st.integers(1, 6), block_ways=st.integers(1, 3), block_successors=st.integers(1, 4),
              chain_blocks=st.integers(1, 16), recall_iterations=st.integers(0, 3)),
    st.builds(DeepUMConfig, lookahead=st.integers(1, 40), exec_ids=st.integers(1, 64),
              exec_records=st.integers(1, 6), block_rows=st.integers(1, 512), block_ways=st.integers(1, 4),
              block_successors=st.integers(1, 6), chain_blocks=st.integers(1, 64), recall_iterations=st.integers(0, 3)))
# Few distinct values, so that IDs and blocks repeat; the extremes of both ranges (2**64 - 1 is also
# the history filler) included.
EXEC_IDS = (0, 1, 2, 3, 4, 5, 6, 7, 2**63, 2**64 - 1)
exec_ids = st.sampled_from(EXEC_IDS)
blocks = st.one_of(st.integers(0, 24), st.sampled_from([2**31, 2**62 + 7, 2**63 - 1]))
launch_faults = st.lists(blocks, max_size=6)


@st.composite
def iterations(draw):
    """A training iteration: launches with the faults each reports, of a few kernels, often in runs
    (layers) that repeat, so that the same kernels follow different histories."""
    kernels = st.sampled_from(draw(st.lists(exec_ids, min_size=1, max_size=6, unique=True)))
    layers = draw(st.lists(st.lists(kernels, min_size=1, max_size=4), min_size=1, max_size=3))
    parts = draw(st.lists(st.one_of(st.sampled_from(layers), kernels.map(lambda e: [e])), min_size=1, max_size=6))
    return [(exec_id, draw(launch_faults)) for exec_id in [e for part in parts for e in part][:16]]


class NativePredictorAgrees(RuleBasedStateMachine):
    """A training-like iteration replayed, its launches' faults reported as they happen or learned
    later (after further launches), departures from it, stray faults and late lessons for any exec ID,
    in any order. Everything observable is compared after every launch."""

    @initialize(config=configs, iteration=iterations(), other=iterations())
    def start(self, config, iteration, other):
        note(f"config {config}; iteration {iteration}; the other kind {other}")
        self.spec, self.native = Predictor(config), native.Predictor(config.to_dict())
        self.iteration, self.other, self.position = iteration, other, 0
        self.pending: list[tuple[int, list[int]]] = []  # lessons of launches not yet learned, oldest first

    def _launch(self, exec_id):
        expected = self.spec.on_kernel(exec_id)
        change = self.native.on_kernel(exec_id)
        note(f"launch {exec_id} -> {change}")
        assert change == expected

    def _fault(self, block):
        note(f"fault {block}")
        self.spec.on_fault(block)
        self.native.on_fault(block)

    def _learn(self, exec_id, faults):
        note(f"learn_faults({exec_id}, {faults})")
        self.spec.learn_faults(exec_id, faults)
        self.native.learn_faults(exec_id, faults)

    @rule(launches=st.integers(1, 16), late=st.booleans())
    def the_iteration_runs_on(self, launches, late):
        """The next `launches` launches of the iteration; with `late`, their faults are learned later."""
        for _ in range(launches):
            exec_id, faults = self.iteration[self.position]
            self.position = (self.position + 1) % len(self.iteration)
            self._launch(exec_id)
            if late:
                self.pending.append((exec_id, faults))
            else:
                for block in faults:
                    self._fault(block)
            self.window_counters_and_tables_agree()

    @rule(switch=st.booleans())
    def the_next_iteration_starts(self, switch):
        """Both remember the iteration that ends (recall_iterations); the next starts from its first
        launch, with `switch` the other kind of iteration (kinds that alternate, or change)."""
        note(f"start_iteration (switch {switch})")
        self.spec.start_iteration()
        self.native.start_iteration()
        if switch:
            self.iteration, self.other = self.other, self.iteration
        self.position = 0

    @precondition(lambda self: self.pending)
    @rule()
    def pending_lessons_arrive(self):
        for exec_id, faults in self.pending:
            self._learn(exec_id, faults)
        self.pending.clear()

    @rule(exec_id=exec_ids)
    def a_launch_off_the_iteration(self, exec_id):
        self._launch(exec_id)

    @rule(block=blocks)
    def fault(self, block):
        self._fault(block)

    @rule(exec_id=exec_ids, faults=launch_faults)
    def a_stray_lesson(self, exec_id, faults):
        self._learn(exec_id, faults)

    @invariant()
    def window_counters_and_tables_agree(self):
        assert self.native.window == self.spec.window
        assert (self.native.kernel_hits, self.native.kernel_misses) == (self.spec.kernel_hits, self.spec.kernel_misses)
        assert self.native.table_bytes() == self.spec.table_bytes()

    @invariant()
    def the_learned_tables_save_alike(self):
        """Also mid-launch, where lessons may be held back."""
        assert_same_tables(self.spec, self.native)

    @invariant()
    def every_exec_id_is_predicted_alike(self):
        for exec_id in EXEC_IDS:
            assert self.native.predict_blocks(exec_id) == self.spec.predict_blocks(exec_id), exec_id


NativePredictorAgrees.TestCase.settings = settings(max_examples=500, stateful_step_count=50, deadline=None,
                                                   suppress_health_check=[HealthCheck.too_slow])
TestNativePredictorAgrees = NativePredictorAgrees.TestCase


# ----------------------------------------------------------------------------------- worked cases
def test_agrees_with_default_config_on_a_long_periodic_trace():
    rng = random.Random(7)
    kernels = [rng.randrange(2**64) for _ in range(60)]
    faults = {e: rng.sample(range(100_000), 50) for e in kernels}
    events = [ev for _ in range(4) for e in kernels for ev in [("kernel", e)] + [("fault", b) for b in faults[e]]]
    python, _ = replay_both(DeepUMConfig(), events, probe_exec_ids=kernels)
    assert python.kernel_hits == 3 * 60 - 1 and python.kernel_misses == 0


# One set of three ways, so that the order of the ways (which decides the next one replaced) shows in
# the saved tables. Exec ID 1's lessons [1, 2, 3, 4] settle at its second launch (learning them again
# changes nothing), so its third is held back; 9 is another kernel, without faults.
SETTLED = [("kernel", 1), ("fault", 1), ("fault", 2), ("fault", 3), ("fault", 4), ("kernel", 9)] * 3
HELD_BACK_CASES = {
    "a launch that ends short of its settled lessons learns the part it taught":
        [("kernel", 1), ("fault", 1), ("fault", 2), ("kernel", 9)],
    "a launch that departs from them learns what it held back first":
        [("kernel", 1), ("fault", 1), ("fault", 2), ("fault", 9), ("kernel", 9)],
    "faults learned late unsettle an exec ID's lessons":
        [("learn", (1, [1, 2])), ("kernel", 1)] + [("fault", b) for b in (1, 2, 3, 4)] + [("kernel", 9)],
    "faults learned late during a launch are learned after what it held back":
        [("kernel", 1), ("fault", 1), ("fault", 2), ("learn", (1, [1, 2])), ("fault", 3), ("fault", 4),
         ("kernel", 9)] + [("kernel", 1)] + [("fault", b) for b in (1, 2, 3, 4)] + [("kernel", 9)],
}


@pytest.mark.parametrize("case", HELD_BACK_CASES)
def test_held_back_lessons_leave_the_tables_as_learning_each_would(case):
    config = DeepUMConfig(lookahead=2, block_rows=1, block_ways=3, block_successors=2)
    assert_same_tables(*replay_both(config, SETTLED + HELD_BACK_CASES[case]))


def test_entries_compare_equal_across_implementations():
    fast = native.Predictor(DeepUMConfig(lookahead=2).to_dict())
    change = fast.on_kernel(3)
    fast.on_fault(9)
    assert change == WindowChange(0, 1) and WindowChange(0, 1) == change and change != WindowChange(1, 1)
    assert (change.popped, change.pushed) == (0, 1)
    [entry] = fast.window
    assert entry.exec_id == 3 and entry.blocks == ()
    assert entry == PredictedKernel(3, ()) and PredictedKernel(3, ()) == entry
    assert entry != PredictedKernel(3, (9,)) and entry != PredictedKernel(4, ())
    assert repr(entry) == "PredictedKernel(exec_id=3, blocks=())"


def test_the_native_predictor_reads_the_config_dict():
    fast = native.Predictor(DeepUMConfig(lookahead=5, prefetch=False).to_dict())
    assert fast.window == [] and fast.table_bytes() == 0
    with pytest.raises(KeyError):
        native.Predictor({"lookahead": 5})        # every size comes from DeepUMConfig: no native defaults
    with pytest.raises(ValueError):
        native.Predictor({**DeepUMConfig().to_dict(), "block_ways": 0})


@pytest.mark.parametrize("method, bad", [("on_kernel", (-1,)), ("on_kernel", (2**64,)), ("on_fault", (-1,)),
                                         ("on_fault", (2**63,)), ("predict_blocks", (-1,)),
                                         ("learn_faults", (-1, [1])), ("learn_faults", (1, [2, -1]))])
def test_both_reject_the_same_invalid_inputs(method, bad):
    for predictor in (Predictor(), make_predictor(DeepUMConfig())):
        predictor.on_kernel(1)
        with pytest.raises(ValueError):
            getattr(predictor, method)(*bad)
