"""The native predictor (driver_hooks/correlation.hpp) agrees with the Python specification
(deepum/specs/predictor.py) on every input."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.config import DeepUMConfig
from deepum.specs.predictor import PredictedKernel, Predictor, WindowChange, make_predictor

native = pytest.importorskip(
    "deepum._native", reason="deepum._native is not built: run `pip install -e .` (or `python setup.py build_ext --inplace`)")


def assert_same_state(python, fast):
    assert fast.window == python.window
    assert (fast.kernel_hits, fast.kernel_misses) == (python.kernel_hits, python.kernel_misses)
    assert fast.table_bytes() == python.table_bytes()


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
    return python


configs = st.builds(
    DeepUMConfig, lookahead=st.integers(1, 6), exec_ids=st.integers(1, 6), exec_records=st.integers(1, 4),
    block_rows=st.integers(1, 6), block_ways=st.integers(1, 3), block_successors=st.integers(1, 4),
    chain_blocks=st.integers(1, 16))
# Few distinct values, so that IDs and blocks repeat, sets conflict and tables overflow; the extremes
# of both ranges (2**64 - 1 is also the history filler) included.
exec_id_values = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 2**63, 2**64 - 1])
block_values = st.one_of(st.integers(0, 24), st.sampled_from([2**31, 2**62 + 7, 2**63 - 1]))
event = st.one_of(st.tuples(st.just("kernel"), exec_id_values), st.tuples(st.just("fault"), block_values),
                  st.tuples(st.just("learn"), st.tuples(exec_id_values, st.lists(block_values, max_size=6))))
events = st.integers(0, 300).flatmap(lambda n: st.lists(event, min_size=n, max_size=n))


@settings(max_examples=400, deadline=None)
@given(configs, events)
def test_agrees_on_random_streams_with_small_tables(config, events):
    replay_both(config, events, probe_exec_ids=range(8))


@st.composite
def noisy_periodic_events(draw):
    """A periodic kernel sequence with substitutions, each launch followed by its faults."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    length = draw(st.integers(1, 40))
    kernels = [rng.randrange(2**64) for _ in range(length)]
    period = [rng.choice(kernels[:i]) if i and rng.random() < 0.2 else kernels[i] for i in range(length)]
    universe = range(draw(st.integers(40, 2000)))   # small ones make kernels share blocks
    faults = {e: rng.sample(universe, rng.randrange(0, 40)) for e in kernels}
    substitution = draw(st.sampled_from([0.0, 0.02, 0.1, 0.5]))
    out = []
    for t in range(draw(st.integers(1, 8)) * length):
        exec_id = period[t % length] if rng.random() >= substitution else rng.choice(kernels)
        out.append(("kernel", exec_id))
        out += [("fault", b) for b in faults[exec_id] if rng.random() > substitution]
    return out, kernels


@settings(max_examples=150, deadline=None)
@given(st.builds(DeepUMConfig, lookahead=st.integers(1, 40), exec_ids=st.integers(1, 64),
                 exec_records=st.integers(1, 6), block_rows=st.integers(1, 512), block_ways=st.integers(1, 4),
                 block_successors=st.integers(1, 6), chain_blocks=st.integers(1, 64)),
       noisy_periodic_events())
def test_agrees_on_noisy_periodic_traces(config, workload):
    events, kernels = workload
    replay_both(config, events, probe_exec_ids=kernels)


def test_agrees_with_default_config_on_a_long_periodic_trace():
    rng = random.Random(7)
    kernels = [rng.randrange(2**64) for _ in range(60)]
    faults = {e: rng.sample(range(100_000), 50) for e in kernels}
    events = [ev for _ in range(4) for e in kernels for ev in [("kernel", e)] + [("fault", b) for b in faults[e]]]
    python = replay_both(DeepUMConfig(), events, probe_exec_ids=kernels)
    assert python.kernel_hits == 3 * 60 - 1 and python.kernel_misses == 0


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
