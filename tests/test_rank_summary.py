"""`deepum run` on every rank of a torch.distributed job: the per-rank stats files, each rank's
summary gathered on rank 0 through a key-value store (here a stand-in with c10d Store's set/get/wait,
wait raising on a timeout), a missing rank named within a bounded wait, a malformed launcher
environment refused in one line; and, with torch, a real two-rank torchrun job on the CPU."""
from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepum.cli import main
from deepum.cli import run as run_cli
from deepum.runtime import launcher, rank_summary, session

REPO = Path(__file__).resolve().parent.parent
DDP_SCRIPT = REPO / "tests" / "cpu_scripts" / "ddp_script.py"
GiB = 1 << 30


class FakeStore:
    """c10d Store's set/get/wait: get of a missing key and wait past its timeout raise; waiting
    advances `clock` (a list holding the time in seconds) by the time waited instead of sleeping."""

    def __init__(self, clock: list[float] | None = None):
        self.values: dict[str, bytes] = {}
        self.clock = clock if clock is not None else [0.0]
        self.waits: list[tuple[list[str], float]] = []

    def set(self, key: str, value) -> None:
        self.values[key] = value.encode() if isinstance(value, str) else bytes(value)

    def get(self, key: str) -> bytes:
        if key not in self.values:
            raise RuntimeError(f"Timeout waiting for key: {key}")
        return self.values[key]

    def wait(self, keys: list[str], timeout: datetime.timedelta) -> None:
        self.waits.append((list(keys), timeout.total_seconds()))
        if not all(key in self.values for key in keys):
            self.clock[0] += timeout.total_seconds()
            raise RuntimeError(f"Wait timeout after {timeout}")


def entry(rank: int, **changes) -> dict:
    figures = {"exit_status": 0, "optimizer_steps": 3 + rank, "step_s_median": 0.25, "prefetch_coverage": 0.5}
    stats = {"mode": "deepum", "device": rank, "processes_on_device": 1, "capacity_bytes": 2 * GiB,
             "gpu_page_faults": 10, "fault_h2d_bytes": GiB, "prefetch_h2d_bytes": GiB, "d2h_bytes": 0}
    return {**rank_summary.record(rank, rank, figures, stats), **changes}


# --- the pieces ---------------------------------------------------------------------------------

def test_rank_path_puts_the_rank_before_the_suffix():
    assert rank_summary.rank_path("out/stats.json", 1) == Path("out/stats.rank1.json")
    assert rank_summary.rank_path("stats", 0) == Path("stats.rank0")
    assert rank_summary.rank_path("a.b.json", 12) == Path("a.b.rank12.json")


def test_a_record_holds_the_run_figures_and_key_stats():
    record = rank_summary.record(1, 0, {"exit_status": 0, "optimizer_steps": 2, "step_s": [0.1],
                                        "step_s_median": 0.1, "prefetch_coverage": None, "script": "x.py"},
                                 {"mode": "um", "device": 0, "capacity_bytes": 5, "launches": 99})
    assert record["rank"] == 1 and record["local_rank"] == 0 and record["optimizer_steps"] == 2
    assert record["mode"] == "um" and record["capacity_bytes"] == 5 and record["gpu_page_faults"] is None
    assert "launches" not in record and "step_s" not in record
    assert set(rank_summary.record(0, 0, {}, None)) == {"rank", "local_rank", *rank_summary.RUN_FIGURES,
                                                         *rank_summary.KEY_STATS}


def test_keys_keep_runs_and_restarts_apart():
    assert rank_summary.key_prefix({"TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"}) == \
        "deepum/run-summary/abc/2/"
    assert rank_summary.key_prefix({}) == "deepum/run-summary/none/0/"


def test_without_torch_or_a_job_there_is_no_store(monkeypatch):
    for name in ("TORCHELASTIC_USE_AGENT_STORE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert rank_summary.open_store({}) is None


def test_gather_collects_every_rank_in_order():
    store = FakeStore()
    for rank in (2, 1):
        assert rank_summary.publish(store, "p/", entry(rank))
    entries, missing = rank_summary.gather(store, "p/", entry(0), 3, clock=lambda: store.clock[0])
    assert [item["rank"] for item in entries] == [0, 1, 2] and missing == []
    assert entries[2] == json.loads(json.dumps(entry(2)))


def test_a_missing_rank_is_named_and_the_wait_is_bounded_in_all():
    store = FakeStore()
    rank_summary.publish(store, "p/", entry(2))
    entries, missing = rank_summary.gather(store, "p/", entry(0), 5, timeout_s=60, clock=lambda: store.clock[0])
    assert [item["rank"] for item in entries] == [0, 2] and missing == [1, 3, 4]
    # One deadline for all the ranks, not 60 s for each; past it, a short look for each rank left.
    assert store.clock[0] <= 60 + 3 * rank_summary.LAST_LOOK_S
    assert store.waits[0] == (["p/1"], 60)


def test_the_bound_holds_on_the_real_clock():
    class SlowStore(FakeStore):
        def wait(self, keys, timeout):
            time.sleep(timeout.total_seconds())
            raise RuntimeError("Wait timeout")

    started = time.monotonic()
    _, missing = rank_summary.gather(SlowStore(), "p/", entry(0), 4, timeout_s=0.3)
    assert missing == [1, 2, 3] and time.monotonic() - started < 1.0


def test_publish_reports_a_store_that_fails():
    class Broken:
        def set(self, key, value):
            raise RuntimeError("connection reset")

    assert not rank_summary.publish(Broken(), "p/", entry(1))


def test_summary_lines():
    line = rank_summary.rank_line(entry(1))
    assert line.startswith("deepum run [rank 1]: exited with status 0 after 4 optimizer steps, median step 0.250 s;")
    assert "mode deepum on device 1, capacity 2.00 GiB, 10 GPU page faults" in line and "coverage 50.0%" in line
    assert "shared by 2 processes" in rank_summary.rank_line(entry(1, processes_on_device=2))
    assert rank_summary.rank_line(entry(0, mode="none")).endswith("; mode none: nothing routed")
    total = rank_summary.total_line([entry(0), entry(2, exit_status=1)], [1], 3)
    assert total.startswith("deepum run: 2 of 3 ranks reported (missing: 1); exit statuses 0, 1; 8 optimizer steps")
    assert "20 GPU page faults" in total
    assert "no summary within 60 s" in rank_summary.missing_line(1, 60.0)


# --- deepum run under a launcher, against the stand-in store ------------------------------------

@pytest.fixture
def launched(monkeypatch):
    """A torchrun-like environment (rank given per test), the store replaced by a shared FakeStore."""
    store = FakeStore()
    monkeypatch.setattr(rank_summary, "open_store", lambda environ=None, timeout_s=60: store)
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")

    def place(rank: int, world_size: int = 2):
        for name, value in (("RANK", rank), ("WORLD_SIZE", world_size), ("LOCAL_RANK", rank),
                            ("LOCAL_WORLD_SIZE", world_size)):
            monkeypatch.setenv(name, str(value))

    return store, place


STEPPING = "import sys\nsys.exit(int(sys.argv[1]))\n"


def run(capsys, *argv):
    status = main(["run", *map(str, argv)])
    return status, capsys.readouterr().err


def test_every_rank_writes_its_file_and_rank_0_the_gathered_one(capsys, tmp_path, launched, monkeypatch):
    store, place = launched
    monkeypatch.setattr(rank_summary, "GATHER_TIMEOUT_S", 0.5)
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    out = tmp_path / "stats.json"
    place(1)
    status, err = run(capsys, "--mode", "none", "--stats-json", out, script, "3")
    assert status == 3 and err == ""  # a rank other than 0 prints nothing
    assert json.loads((tmp_path / "stats.rank1.json").read_text())["run"]["exit_status"] == 3
    assert json.loads((tmp_path / "stats.rank1.json").read_text())["rank"] == 1
    assert not out.exists()
    place(0)
    status, err = run(capsys, "--mode", "none", "--stats-json", out, script, "0")
    assert status == 0
    assert json.loads((tmp_path / "stats.rank0.json").read_text())["world_size"] == 2
    document = json.loads(out.read_text())
    assert document["world_size"] == 2 and document["missing_ranks"] == []
    assert [(item["rank"], item["exit_status"]) for item in document["ranks"]] == [(0, 0), (1, 3)]
    lines = err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("deepum run [rank 0]: exited with status 0")
    assert lines[1].startswith("deepum run [rank 1]: exited with status 3")
    assert lines[2].startswith("deepum run: 2 of 2 ranks reported; exit statuses 0, 3")


def test_rank_0_names_a_rank_that_never_reported(capsys, tmp_path, launched):
    store, place = launched
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    place(0, world_size=3)
    status = launcher.run_script(str(script), ["0"], enable_kwargs={"mode": "none"},
                                 stats_json=str(tmp_path / "s.json"), gather_timeout_s=5)
    err = capsys.readouterr().err
    assert status == 0 and store.waits[0] == (["deepum/run-summary/job/0/1"], pytest.approx(5, abs=0.5))
    assert "deepum run [rank 1]: no summary within 5 s" in err and "deepum run [rank 2]: no summary" in err
    assert "1 of 3 ranks reported (missing: 1, 2)" in err
    assert json.loads((tmp_path / "s.json").read_text())["missing_ranks"] == [1, 2]


def test_without_a_store_each_rank_prints_its_own_lines(capsys, tmp_path, launched, monkeypatch):
    _, place = launched
    monkeypatch.setattr(rank_summary, "open_store", lambda environ=None, timeout_s=60: None)
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    for rank in (1, 0):
        place(rank)
        status, err = run(capsys, "--mode", "none", "--stats-json", tmp_path / "s.json", script, "0")
        assert status == 0 and err.startswith(f"deepum run [rank {rank}]: train.py exited with status 0"), err
    assert json.loads((tmp_path / "s.json").read_text())["missing_ranks"] == [1]
    assert (tmp_path / "s.rank1.json").exists() and (tmp_path / "s.rank0.json").exists()


@pytest.mark.parametrize("variable, value", [("LOCAL_RANK", "one"), ("RANK", "2"), ("WORLD_SIZE", "-1")])
def test_a_bad_launcher_environment_is_one_line_and_status_2(capsys, tmp_path, launched, variable, value):
    _, place = launched
    place(1)
    os.environ[variable] = value  # restored by monkeypatch with the rest
    script = tmp_path / "train.py"
    script.write_text("open(__file__ + '.ran', 'w')\n")
    status, err = run(capsys, "--mode", "none", script)
    assert status == 2 and err.count("\n") == 1 and err.startswith("deepum"), err
    assert f"{variable}=" in err and "Traceback" not in err
    assert not Path(str(script) + ".ran").exists()


def test_the_help_says_sizes_are_per_rank(capsys):
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "torchrun --nproc-per-node N -m deepum run" in text
    assert "sizes given (--capacity, --max-managed-bytes) are per rank" in text


def test_outside_a_launcher_nothing_changes(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setattr(run_cli, "gpu_missing", lambda: None)
    monkeypatch.setattr(rank_summary, "open_store", lambda *a, **k: pytest.fail("no store outside a launcher"))
    script = tmp_path / "train.py"
    script.write_text(STEPPING)
    status, err = run(capsys, "--mode", "none", "--stats-json", tmp_path / "s.json", script, "0")
    assert status == 0 and err.startswith("deepum run: train.py exited with status 0")
    assert (tmp_path / "s.json").exists() and not (tmp_path / "s.rank0.json").exists()
    assert session.stats()["rank"] is None


# --- a real two-rank job on the CPU (torchrun, gloo) --------------------------------------------

def test_torchrun_two_ranks_on_the_cpu(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.distributed.run")
    torch_root = str(Path(torch.__file__).resolve().parent.parent)
    env = {name: value for name, value in os.environ.items()
           if name not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), torch_root]), OMP_NUM_THREADS="1")
    out = tmp_path / "s.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "deepum", "run", "--mode", "none", "--stats-json", str(out), str(DDP_SCRIPT), "3"]
    # Its own process group, so that a hang ends with the workers too.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               cwd=tmp_path, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        document = json.loads((tmp_path / f"s.rank{rank}.json").read_text())
        assert document["rank"] == rank and document["world_size"] == 2 and document["run"]["optimizer_steps"] == 3
    gathered = json.loads(out.read_text())
    assert gathered["world_size"] == 2 and gathered["missing_ranks"] == []
    assert [(item["rank"], item["optimizer_steps"]) for item in gathered["ranks"]] == [(0, 3), (1, 3)]
    lines = done.stderr.splitlines()
    for rank in (0, 1):
        mine = [line for line in lines if line.startswith(f"deepum run [rank {rank}]:")]
        assert len(mine) == 1 and "exited with status 0 after 3 optimizer steps" in mine[0], done.stderr[-3000:]
    assert sum(line.startswith("deepum run: 2 of 2 ranks reported") for line in lines) == 1
