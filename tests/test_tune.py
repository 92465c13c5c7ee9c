"""Tuning: the selection rule, the Pareto frontier, and `deepum tune` on a tiny trace."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deepum.cli import main
from deepum.config import DeepUMConfig
from deepum.offline.tune import STAGES, TIME_TOLERANCE, Candidate, pareto_frontier, select, tune

TINY = ["--layers", "4", "--hidden", "256", "--heads", "4", "--seq", "256", "--batch", "8", "--vocab", "512",
        "--iterations", "3", "--seed", "1"]


@st.composite
def candidate_lists(draw):
    points = draw(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 12)), min_size=1, max_size=25))
    # Coarse grids make ties in time and table memory common.
    return [Candidate(DeepUMConfig(lookahead=i + 1), time_s=t / 10, table_bytes=b * 1024, faults=0)
            for i, (t, b) in enumerate(points)]


def dominated(c, others):
    return any(o.time_s <= c.time_s and o.table_bytes <= c.table_bytes
               and (o.time_s < c.time_s or o.table_bytes < c.table_bytes) for o in others)


@given(candidate_lists())
def test_pareto_frontier_is_exactly_the_non_dominated(cands):
    frontier = pareto_frontier(cands)
    assert {id(c) for c in frontier} == {id(c) for c in cands if not dominated(c, cands)}
    assert [c.table_bytes for c in frontier] == sorted(c.table_bytes for c in frontier)


@given(candidate_lists(), st.none() | st.integers(1, 12 * 1024))
def test_select_follows_the_rule_and_lies_on_the_frontier(cands, budget):
    best = select(cands, budget)
    fitting = [c for c in cands if budget is None or c.table_bytes <= budget]
    if not fitting:
        assert best is None
        return
    fastest = min(c.time_s for c in fitting)
    assert best in fitting
    assert best.time_s <= fastest * (1 + TIME_TOLERANCE)
    assert not any(c.table_bytes < best.table_bytes and c.time_s <= fastest * (1 + TIME_TOLERANCE) for c in fitting)
    assert any(c is best for c in pareto_frontier(cands))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """(trace path, best.json path, parsed best.json, stdout) of one `deepum tune` run."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("tune")
    trace = tmp / "tiny.npz"
    assert main(["synth", "transformer", "-o", str(trace), *TINY]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["tune", str(trace), "--capacity", "0.5", "-o", str(tmp / "best.json")]) == 0
    return trace, tmp / "best.json", json.loads((tmp / "best.json").read_text()), out.getvalue()


def test_tune_writes_a_loadable_config_on_the_frontier(tuned):
    _, path, best, stdout = tuned
    config = DeepUMConfig.load(path)
    assert config.to_dict() == best["config"]
    assert {"config", "time_s", "table_bytes", "capacity_bytes", "trace", "candidates", "pareto"} <= set(best)
    assert config.to_dict() in [p["config"] for p in best["pareto"]]
    assert (best["time_s"], best["table_bytes"]) in [(p["time_s"], p["table_bytes"]) for p in best["pareto"]]
    assert path.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Pareto" in stdout and "chosen" in stdout


def test_tune_chose_by_the_documented_rule(tuned):
    _, _, best, _ = tuned
    cands = best["candidates"]
    fastest = min(c["time_s"] for c in cands)
    assert best["time_s"] <= fastest * (1 + TIME_TOLERANCE)
    assert best["table_bytes"] == min(c["table_bytes"] for c in cands
                                      if c["time_s"] <= fastest * (1 + TIME_TOLERANCE))


def test_tune_search_is_staged_and_small(tuned):
    _, _, best, _ = tuned
    cands = best["candidates"]
    configs = [json.dumps(c["config"], sort_keys=True) for c in cands]
    assert len(configs) == len(set(configs))  # each configuration replayed once
    assert len(cands) <= sum(len(values) for _, values in STAGES) <= 30
    tried = {field: {c["config"][field] for c in cands} for field, _ in STAGES}
    for field, values in STAGES:
        assert tried[field] == set(values), field


class FakeResult:
    """Replay figures of a made-up cost model: bigger tables are faster, lookahead 32 is best."""

    def __init__(self, config):
        c = config
        self.table_bytes = 8 * c.block_rows * c.block_ways * c.block_successors * c.exec_records
        self.time_s = (1 + 64 / (c.block_rows * c.block_ways) + 0.5 / c.block_successors + 0.1 / c.exec_records
                       + 0.02 * abs(c.lookahead.bit_length() - 6))
        self.faults = int(1000 * self.time_s)


@pytest.fixture
def fake_simulator(monkeypatch):
    """Replaces the simulator with FakeResult; returns the list of configs replayed."""
    from deepum.offline import simulator

    calls = []

    def simulate(trace, policy, capacity_bytes, config=None, calibration=None):
        assert policy == "deepum" and capacity_bytes == 123
        calls.append(config)
        return FakeResult(config)

    monkeypatch.setattr(simulator, "simulate", simulate)
    return calls


def test_tune_replays_each_config_once_in_stages(fake_simulator):
    result = tune(None, 123)
    assert len(fake_simulator) == len(set(fake_simulator)) == len(result.candidates) <= 30
    assert result.best.config.lookahead == 32
    assert result.best is select(result.candidates)
    assert result.best in result.pareto


@pytest.mark.parametrize("budget", [2**10, 3 * 2**10, 10 * 2**10, 40 * 2**10])
def test_tune_budget_bites(fake_simulator, budget):
    free = tune(None, 123)
    result = tune(None, 123, budget_bytes=budget, base_config=DeepUMConfig(learn_from="faults"))
    assert result.best.table_bytes <= budget < free.best.table_bytes
    assert result.best is select(result.candidates, budget)
    assert result.best.config.learn_from == "faults"  # what the search does not vary comes from base_config
    assert result.budget_bytes == budget


def test_tune_cli_budget_errors(tuned, capsys, tmp_path):
    trace, _, _, _ = tuned
    capsys.readouterr()
    assert main(["tune", str(trace), "--capacity", "0.5", "-o", str(tmp_path / "c.json"),
                 "--budget-bytes", "1"]) == 2
    err = capsys.readouterr().err
    assert "no configuration fits the table budget of 1 B (1 bytes)" in err and "raise the budget" in err
    assert main(["tune", str(trace), "--capacity", "0.5", "--budget-bytes", "lots"]) == 2
    assert "'lots'" in capsys.readouterr().err


def test_tune_help_states_the_tolerance(capsys):
    assert main(["tune", "--help"]) == 0
    assert f"within {100 * TIME_TOLERANCE:g}% of the fastest" in " ".join(capsys.readouterr().out.split())
