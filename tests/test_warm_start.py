"""Warm start: the policy's learned state saved and loaded, spec and native alike; bad states refused in
one line with bounded memory; a foreign state forgotten after its trial; the runtime's file handling;
and, in the simulator, a second replay that starts in steady state."""
from __future__ import annotations

import struct
import warnings

import pytest
from hypothesis import given, settings, strategies as st

from deepum import _native
from deepum.config import DeepUMConfig
from deepum.offline.simulator import simulate
from deepum.offline.synth import GENERATORS
from deepum.runtime import warm_start as warm
from deepum.specs import warm_state
from deepum.specs.next_use import UNFORESEEN
from deepum.specs.policy import Policy
from deepum.units import parse_capacity

CAPACITY = 5
CONFIGS = [DeepUMConfig(block_rows=4, exec_records=3, foresight_iterations=2),
           DeepUMConfig(block_rows=4, exec_records=3, foresight_iterations=3, schedule=True, schedule_ahead=3),
           DeepUMConfig(block_rows=4, eviction="lru"),
           DeepUMConfig(learn_from="faults", foresight_iterations=2)]

launches = st.lists(st.tuples(st.integers(0, 11), st.lists(st.integers(0, 17), min_size=1, max_size=4, unique=True)),
                    min_size=1, max_size=25)
runs = st.lists(launches, min_size=1, max_size=4)


def pair(config):
    return Policy("deepum", CAPACITY, config, lambda b: b % 3 == 0), NativePolicy(config)


class NativePolicy:
    """deepum._native.Policy with the spec's dead blocks (every third)."""

    def __init__(self, config):
        self.policy = _native.Policy("deepum", CAPACITY, config.to_dict())
        for b in range(0, 18, 3):
            self.policy.set_dead(b, True)

    def __getattr__(self, name):
        return getattr(self.policy, name)


def run(policies, iterations, faults=False):
    """Runs every policy through `iterations`, checking that they decide alike launch by launch; every
    fourth kernel is indexed."""
    for iteration in iterations:
        for exec_id, blocks in iteration:
            plans = [tuple(p.on_launch(exec_id, blocks, exec_id % 4 == 1)) for p in policies]
            assert all(plan == plans[0] for plan in plans), plans
            if faults:
                for p in policies:
                    p.learn_fault(blocks[0])
        for p in policies:
            p.next_iteration()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CONFIGS), runs, runs)
def test_spec_and_native_save_the_same_state_and_continue_alike_from_it(config, learned, later):
    spec, native = pair(config)
    run([spec, native], learned, faults=config.learn_from == "faults")
    state = spec.save_state()
    assert native.save_state() == state
    warm_spec, warm_native = pair(config)
    warm_spec.load_state(state)
    warm_native.load_state(state)
    assert warm_spec.save_state() == warm_native.save_state() == state  # the round trip keeps every byte
    run([warm_spec, warm_native], later, faults=config.learn_from == "faults")
    assert warm_spec.warm_start == warm_native.warm_start
    assert warm_spec.save_state() == warm_native.save_state()


@settings(max_examples=40, deadline=None)
@given(runs)
def test_a_loaded_state_predicts_and_foresees_as_the_original(learned):
    """What the learners know survives the round trip: the tables' records, chains and predictions, each
    block's foreseen uses from every remembered iteration, and the schedule's plan."""
    config = CONFIGS[1]
    original, _ = pair(config)
    run([original], learned)
    loaded, _ = pair(config)
    loaded.load_state(original.save_state())
    tables, copy = original._predictor.tables, loaded._predictor.tables
    assert tables.tracked_exec_ids() == copy.tracked_exec_ids()
    for exec_id in tables.tracked_exec_ids():
        assert tables.exec_table.records(exec_id) == copy.exec_table.records(exec_id)
        assert tables.chain(exec_id) == copy.chain(exec_id)
        for history, _ in tables.exec_table.records(exec_id):
            assert tables.predict_next((*history, exec_id)) == copy.predict_next((*history, exec_id))

    def foreseen(rule, block, position):  # counted from the current iteration's start
        launch = rule.foresee(block, rule._start + position)
        return None if launch == UNFORESEEN else launch - rule._start

    for block in range(18):
        for position in range(30):
            assert foreseen(original._next_use, block, position) == foreseen(loaded._next_use, block, position)
    for indexed_any_span in (False, True):
        assert (original._next_use.short_lived(3, 10, indexed_any_span)
                == loaded._next_use.short_lived(3, 10, indexed_any_span))
    first = learned[-1][0][0]
    plans = [s.launch(first, learned[-1][0][1], []) for s in (original._schedule, loaded._schedule)]
    assert plans[0] == plans[1]


def test_a_foreign_state_is_forgotten_after_its_trial_and_a_matching_one_kept():
    iteration = [(e, [e % 7, (e + 3) % 11 + 7]) for e in range(10)]
    foreign = [(e + 100, blocks) for e, blocks in iteration]
    for config in CONFIGS[:2]:
        for later, expected in ((iteration, "kept"), (foreign, "forgotten")):
            spec, native = pair(config)
            run([spec, native], [iteration] * 3)
            state = native.save_state()
            warm_spec, warm_native = pair(config)
            warm_spec.load_state(state)
            warm_native.load_state(state)
            run([warm_spec, warm_native], [later])
            assert warm_native.warm_start["state"] == ("kept" if expected == "kept" else "on_trial")
            run([warm_spec, warm_native], [later])
            assert warm_spec.warm_start == warm_native.warm_start
            assert warm_native.warm_start["state"] == expected
            # Each judged iteration's ten distinct exec IDs: all known, or none.
            assert warm_native.warm_start["trial"] == ([(10, 10)] if expected == "kept" else [(10, 0), (10, 0)])
            run([warm_spec, warm_native], [later])
            assert warm_spec.save_state() == warm_native.save_state()
            # Forgotten: the tables hold only what this run taught since.
            assert set(warm_spec._predictor.tables.tracked_exec_ids()) == {e for e, _ in later}


def valid_state(config=CONFIGS[1]):
    spec, native = pair(config)
    run([spec, native], [[(e, [e, e + 5]) for e in range(8)]] * 3)
    return native.save_state()


def refusal(data: bytes, config=CONFIGS[1]) -> str:
    """The one-line refusal, the same from spec and native, each left cold."""
    messages = []
    for policy in pair(config):
        with pytest.raises(ValueError) as error:
            policy.load_state(data)
        messages.append(str(error.value))
        assert policy.warm_start["state"] == "cold"
        assert policy.save_state() == pair(config)[0].save_state()  # nothing of the bad state stayed
    assert messages[0] == messages[1] and "\n" not in messages[0]
    return messages[0]


def test_corrupt_wrong_version_and_foreign_settings_are_one_line_each():
    state = valid_state()
    assert refusal(b"junk") == "bad learned state: it is not a deepum learned state (no DEEPUMWS header)"
    assert refusal(state[:8] + struct.pack("<Q", warm_state.VERSION + 1) + state[16:]) == "bad learned state: it was saved with another format version"
    assert refusal(state[:-5]) == "bad learned state: it ends early (truncated)"
    assert refusal(state + b"\0" * 8) == "bad learned state: it has bytes past its end"
    assert refusal(state, CONFIGS[0]) == "bad learned state: it was saved with another foresight_iterations"


def test_a_count_past_the_settings_or_the_bytes_is_refused_before_anything_is_built():
    header = valid_state()[:16 + 9 * 8]
    assert refusal(header + struct.pack("<Q", 2**40)) == "bad learned state: it holds more exec IDs than its settings allow"
    assert refusal(header + struct.pack("<Q", 1000)) == "bad learned state: it ends early (truncated)"


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_damage_is_a_one_line_refusal_or_a_state(data):
    state = bytearray(valid_state())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(16, len(state) - 1))
        state[at] = data.draw(st.integers(0, 255))
    outcomes = []
    for policy in pair(CONFIGS[1]):
        try:
            policy.load_state(bytes(state))
            outcomes.append(policy.save_state())
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_native_and_spec_share_the_layout_constants():
    assert warm_state.MAX_BYTES == 1 << 30 and warm_state.MAGIC == valid_state()[:8]
    assert struct.unpack_from("<Q", valid_state(), 8)[0] == warm_state.VERSION
    with pytest.raises(ValueError, match="more than the"):
        NativePolicy(CONFIGS[1]).load_state(b"DEEPUMWS" + bytes(warm_state.MAX_BYTES))


# --- the runtime's file ------------------------------------------------------------------------------

class Engine:
    """The online engine's warm-start calls over the native policy."""

    def __init__(self):
        self.policy = NativePolicy(CONFIGS[1])

    def load_state(self, data):
        self.policy.load_state(data)

    def save_state(self):
        return self.policy.save_state()


def test_the_file_round_trips_and_a_missing_one_is_a_quiet_cold_start(tmp_path):
    path = tmp_path / "train.py.deepum-warm"
    assert warm.default_path(tmp_path / "train.py") == path
    engine = Engine()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm.load(engine, path)
    assert engine.policy.warm_start["state"] == "cold"
    engine.policy.load_state(valid_state())
    warm.save(engine, path, learned_bytes=1)
    assert path.read_bytes() == valid_state() and list(tmp_path.iterdir()) == [path]
    again = Engine()
    warm.load(again, path)
    assert again.policy.warm_start["state"] == "on_trial"
    warm.save(Engine(), path, learned_bytes=0)  # nothing learned: the file stays
    assert path.read_bytes() == valid_state()


def test_bad_and_oversized_files_are_one_warning_each(tmp_path):
    bad, big = tmp_path / "bad", tmp_path / "big"
    bad.write_bytes(b"DEEPUMWS" + b"\1" * 20)
    big.write_bytes(valid_state())
    with pytest.warns(UserWarning, match=r"warm start .*bad ignored: bad learned state: it"):
        warm.load(Engine(), bad)
    with pytest.warns(UserWarning, match="larger than 100 bytes"):
        assert warm.read(big, limit=100) is None
    with pytest.warns(UserWarning, match="cannot read it"):
        assert warm.read(tmp_path) is None  # a folder


def test_a_forgotten_trial_is_reported(recwarn):
    assert not warm.report_trial({"state": "on_trial", "iterations": 1, "launched": 5, "known": 0}, "w")
    assert warm.report_trial({"state": "kept", "iterations": 1, "launched": 5, "known": 5}, "w") and not recwarn
    with pytest.warns(UserWarning, match="w forgotten: .*first 2 iterations.*0 of 5 known"):
        assert warm.report_trial({"state": "forgotten", "iterations": 2, "launched": 5, "known": 0}, "w")


# --- the simulator -------------------------------------------------------------------------------------

def replay(name, warm_state=None, config=None):
    trace = GENERATORS[name]()
    return simulate(trace, "deepum", parse_capacity(0.5, trace.footprint_bytes()), config, warm_state=warm_state)


def test_a_second_replay_warm_started_from_the_first_starts_in_steady_state():
    """The learners' state makes the first iteration nearly as fast as the steady ones, and the next
    steady, where a cold replay is still learning. (Host mapping is off: the optimizer's state it maps
    is made during the first iteration, so it maps from the second on. The first iteration also brings
    in the trace's first touches, which no state saves: 2.5 times a steady iteration's bytes.)"""
    config = DeepUMConfig(host_map_uses=0)
    first = replay("transformer", config=config)
    second = replay("transformer", first.learned_state, config)
    assert second.warm_start["state"] == "kept"
    times = [row["time_s"] for row in second.per_iteration]
    steady = first.per_iteration[-1]["time_s"]
    assert times[0] <= 1.3 * steady < first.per_iteration[0]["time_s"]
    assert max(times[1:]) <= 1.05 * steady < first.per_iteration[1]["time_s"]


def test_a_replay_forgets_a_foreign_state_and_refuses_a_bad_one():
    foreign = replay("cnn").learned_state
    trace = GENERATORS["transformer"]()
    capacity = parse_capacity(0.5, trace.footprint_bytes())
    with pytest.warns(UserWarning, match="warm state ignored.*another exec_ids"):
        simulate(trace, "deepum", capacity, warm_state=foreign)
    cnn = GENERATORS["cnn"]()
    config = DeepUMConfig(exec_ids=min(trace.num_kernels, cnn.num_kernels))  # a header both replays share
    foreign = simulate(cnn, "deepum", parse_capacity(0.5, cnn.footprint_bytes()), config=config).learned_state
    with pytest.warns(UserWarning, match="forgotten after its trial"):
        result = simulate(trace, "deepum", capacity, config=config, warm_state=foreign)
    assert result.warm_start["state"] == "forgotten"
    with pytest.raises(ValueError, match="applies to policy deepum"):
        simulate(trace, "um", capacity, warm_state=foreign)
