"""bench/warm_start.py replaying a recorded trace (--trace) with a configuration (--config): the cold
replay, the warm one from its learned state and oracle, and the record they write."""
import json
import sys

from bench_scripts import load
from deepum.offline.synth import GENERATORS
from deepum.offline.trace_io import write_trace

(warm_start,) = load("warm_start")


def test_a_recorded_trace_is_replayed_cold_then_warm(tmp_path, monkeypatch, capsys):
    trace_path, config_path, out = tmp_path / "t.npz", tmp_path / "c.json", tmp_path / "w.json"
    write_trace(GENERATORS["transformer"](iterations=5), trace_path)
    config_path.write_text(json.dumps({"foresight_iterations": 8}))
    monkeypatch.setattr(sys, "argv", ["warm_start.py", "--trace", str(trace_path), "--config", str(config_path),
                                      "-o", str(out)])
    warm_start.main()
    record = json.loads(out.read_text())
    (row,) = record["results"]
    assert row["workload"] == "trace:t.npz" and row["options"] == {"trace": str(trace_path)}
    assert row["config"]["foresight_iterations"] == 8
    assert row["foreign"] is None and set(row["per_iteration_s"]) == {"cold", "warm", "oracle"}
    assert all(len(times) == 5 for times in row["per_iteration_s"].values())
    assert row["warm_start"]["state"] == "kept"
    assert row["warm_first_vs_steady"] == row["per_iteration_s"]["warm"][0] / row["steady_s"]
    assert "trace:t.npz" in capsys.readouterr().out
