"""bench/first_step_floor.py on the CPU: the floor and the warm first step recomputed from every
warm_start_gpu.json under the folders given, failed workloads left out, and bad input as one line with
exit status 2."""
import json

import pytest

from bench_scripts import load

(first_step_floor,) = load("first_step_floor")


def summary(budget: float, workloads: dict) -> dict:
    return {"command": "python3 bench/warm_start_gpu.py", "device": "NVIDIA H200", "date": "2026-11-27T02:12:23+00:00",
            "budget_fraction": budget, "workloads": workloads}


def ran(none: list[float], warm: list[float], trial: str = "kept") -> dict:
    return {"status": "ok", "step_s": {"none": none, "um": none, "cold": warm, "warm": warm},
            "warm_trial": {"state": trial}, "bitwise_equal": True}


@pytest.fixture
def calls(tmp_path):
    (tmp_path / "a" / "records" / "warm_gpt2").mkdir(parents=True)
    (tmp_path / "b" / "warm_dlrm").mkdir(parents=True)
    steady = [0.1, 0.1, 0.1, 0.1, 0.1]
    # in memory, the first step takes 0.5 s; the warm run's steady step 0.5 s: floor 1.0
    (tmp_path / "a" / "records" / "warm_gpt2" / "warm_start_gpu.json").write_text(json.dumps(summary(
        0.5, {"gpt2": ran([0.5, *steady[1:]], [0.9, 0.7, 0.6, 0.5, 0.5])})))
    # DLRM: 0.4 s in memory against a 0.02 s steady step: floor 20, out of reach
    (tmp_path / "b" / "warm_dlrm" / "warm_start_gpu.json").write_text(json.dumps(summary(
        0.75, {"dlrm": ran([0.4, 0.01, 0.01, 0.01, 0.01], [0.6, 0.1, 0.02, 0.02, 0.02]),
               "moe": {"status": "failed", "failed_runs": ["warm"]}})))
    return tmp_path


def test_every_summary_under_the_folders_gives_its_floor(calls, tmp_path, capsys):
    out = tmp_path / "out"
    assert first_step_floor.main([str(calls / "a"), str(calls / "b"), "--out", str(out)]) == 0
    record = json.loads((out / "first_step_floor.json").read_text())
    rows = {row["workload"]: row for row in record["rows"]}
    assert set(rows) == {"gpt2", "dlrm"}  # the failed MoE is left out
    assert rows["gpt2"]["in_memory_first_vs_warm_steady"] == pytest.approx(1.0)
    assert rows["gpt2"]["warm_first_vs_steady"] == pytest.approx(1.8)
    assert rows["gpt2"]["warm_first_vs_steady_past_start_up"] == pytest.approx(1.0)  # (0.9 - 0.4) / 0.5
    assert rows["gpt2"]["target_reachable"] is True and rows["gpt2"]["budget_fraction"] == 0.5
    assert rows["dlrm"]["in_memory_first_vs_warm_steady"] == pytest.approx(20.0)
    assert rows["dlrm"]["target_reachable"] is False and rows["dlrm"]["trial"] == "kept"
    assert rows["dlrm"]["summary"].endswith("b/warm_dlrm/warm_start_gpu.json")
    assert record["rows_reachable"] == 1 and record["target_first_vs_steady"] == 1.25
    assert record["command"].startswith("python3 bench/first_step_floor.py")
    assert (out / "first_step_floor.png").stat().st_size > 0
    assert "reachable by its floor in 1 of 2" in capsys.readouterr().out


def test_a_folder_that_does_not_exist_is_one_line_and_status_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        first_step_floor.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    assert "not a folder" in capsys.readouterr().err


def test_no_summary_or_an_unreadable_one_is_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert first_step_floor.main([str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no warm_start_gpu.json" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "warm_start_gpu.json").write_text("{")
    assert first_step_floor.main([str(tmp_path / "bad"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err
    assert not (tmp_path / "out").exists()
