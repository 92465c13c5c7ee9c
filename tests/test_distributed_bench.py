"""bench/distributed.py and bench/distributed_check.py on the CPU: (with torch) two ranks under
torchrun over gloo training a tiny GPT-2 with DDP and with FSDP in mode none, the job's record; the
check's digest comparison on constructed records; the check's orchestration with a stand-in for the
torchrun job (failures, timeouts, a wrong digest); argument errors."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from bench_scripts import BENCH, load

distributed, distributed_check = load("distributed", "distributed_check")

TINY_GPT2 = ["--layers", "2", "--hidden", "64", "--heads", "2", "--seq", "16", "--batch", "2", "--vocab", "128",
             "--steps", "3", "--warmup", "1"]
TORCHRUN_ENV = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}


# --- distributed.py under torchrun (torch) --------------------------------------------------------

@pytest.fixture(scope="module", params=["ddp", "fsdp"])
def job(request, tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp(request.param) / "record.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH.parent), *sys.path])}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               str(BENCH / "distributed.py"), "--parallel", request.param, "--mode", "none", "--device", "cpu",
               "--backend", "gloo", *TINY_GPT2, "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, json.loads(out.read_text())


def test_job_record(job):
    parallel, record = job
    assert record["status"] == "ok" and record["parallel"] == parallel and record["mode"] == "none"
    assert record["world_size"] == 2 and record["command"]["world_size"] == 2
    assert record["backend"] == "gloo" and record["device_type"] == "cpu"
    assert record["workload_id"] == "gpt2 batch=2 heads=2 hidden=64 layers=2 seq=16 vocab=128"
    assert record["global_batch"] == 4 and record["capacity_bytes"] is None
    assert [rank["rank"] for rank in record["ranks"]] == [0, 1]
    for rank in record["ranks"]:
        assert len(rank["step_s"]) == 3 and rank["measured_steps"] == 2 and len(rank["losses"]) == 3
        assert rank["step_s_median"] > 0
        assert len(rank["parameter_sha256"]) == 64
    assert record["step_s_median"] == max(record["step_s_median_by_rank"])
    assert record["parameter_sha256_by_rank"] == [rank["parameter_sha256"] for rank in record["ranks"]]
    for key in ("date", "torch_version", "device", "env"):
        assert key in record


def test_ranks_train_on_their_own_data_to_equal_parameters(job):
    _, record = job
    first, second = record["ranks"]
    assert first["losses"][0] != second["losses"][0]  # each rank its own batches
    # DDP keeps the replicas equal; FSDP's digest is of the full parameters every rank gathers.
    assert first["parameter_sha256"] == second["parameter_sha256"]


# --- the comparison -------------------------------------------------------------------------------

def job_record(digests, mode="um", step_s=0.2, status="ok", **extra):
    ranks = [{"rank": r, "parameter_sha256": d, "step_s_median": step_s, "faults_per_step": 10.0,
              "gpu_page_faults": 100, "cuda_errors": 0, "peak_resident_bytes": 1 << 20} for r, d in enumerate(digests)]
    return {"status": status, "mode": mode, "world_size": len(digests), "parameter_sha256_by_rank": list(digests),
            "step_s_median": step_s, "step_s_median_by_rank": [step_s] * len(digests), "ranks": ranks,
            "footprint_bytes": 1000, "footprint_bytes_by_rank": [1000] * len(digests), **extra}


def test_footprint_of_an_engine_asleep_is_the_allocators_peak():
    rows = [{"touched_bytes": 900}, {"touched_bytes": 700}, {"touched_bytes": 500}, {"touched_bytes": 600}]
    assert distributed.footprint(None, "deepum", rows, managed_peak=1200) == 600     # after the first two
    asleep = [{"touched_bytes": 0}] * 4
    assert distributed.footprint(None, "deepum", asleep, managed_peak=1200) == 1200  # on managed memory
    assert distributed.footprint(None, "deepum", [], managed_peak=1200) == 1200      # on device memory: no rows
    assert distributed.footprint(None, "deepum", []) is None


def test_bitwise_equal_compares_every_rank_with_the_same_rank():
    none = job_record(["a", "b"], mode="none")
    assert distributed_check.bitwise_equal(job_record(["a", "b"]), none) is True
    assert distributed_check.bitwise_equal(job_record(["a", "x"]), none) is False   # one rank differs
    assert distributed_check.bitwise_equal(job_record(["b", "a"]), none) is False   # ranks swapped
    assert distributed_check.bitwise_equal(job_record(["a"]), none) is False        # fewer ranks
    assert distributed_check.bitwise_equal(job_record(["a", None]), none) is False
    assert distributed_check.bitwise_equal({"status": "failed"}, none) is None
    assert distributed_check.bitwise_equal(job_record(["a", "b"]), {"status": "timeout"}) is None


def test_summary_ratios():
    runs = {"none": job_record(["a", "b"], mode="none", step_s=0.1),
            "um": job_record(["a", "b"], step_s=0.4, bitwise_equal_to_none=True),
            "deepum": job_record(["a", "c"], mode="deepum", step_s=0.2, bitwise_equal_to_none=False),
            "lost": {"status": "failed", "reason": "exit status 1", "returncode": 1}}
    summary = distributed_check.summarize(runs)
    assert summary["runs"]["um"]["ratio_to_none"] == pytest.approx(4.0)
    assert summary["runs"]["deepum"]["bitwise_equal_to_none"] is False
    assert summary["um_over_deepum"] == pytest.approx(2.0)
    assert summary["runs"]["lost"] == {"status": "failed", "reason": "exit status 1", "returncode": 1}


# --- the check's orchestration with a stand-in job ------------------------------------------------

STUB = textwrap.dedent("""
    import argparse, json, os, sys, time
    p = argparse.ArgumentParser()
    for flag in ("--parallel", "--mode", "--capacity", "--backend", "-o"):
        p.add_argument(flag)
    a, rest = p.parse_known_args()
    if os.environ.get("STUB_FAIL") == a.mode:
        sys.exit("stub: " + a.mode + " failed")
    if os.environ.get("STUB_SLEEP") == a.mode:
        time.sleep(60)
    digests = ["d0", "d1"]
    if os.environ.get("STUB_WRONG") == a.mode:
        digests[1] = "wrong"
    step = {"none": 0.1, "um": 0.5, "deepum": 0.25}[a.mode]
    footprint = 4000 if a.mode != "none" else 5000
    ranks = [{"rank": r, "parameter_sha256": d, "step_s_median": step, "faults_per_step": 1.0,
              "gpu_page_faults": 3, "cuda_errors": 0, "peak_resident_bytes": 10} for r, d in enumerate(digests)]
    record = {"status": "ok", "parallel": a.parallel, "mode": a.mode, "world_size": 2, "step_s_median": step,
              "step_s_median_by_rank": [step, step], "parameter_sha256_by_rank": digests, "ranks": ranks,
              "capacity_bytes": a.capacity and int(a.capacity), "footprint_bytes": footprint,
              "footprint_bytes_by_rank": [footprint, footprint - 1], "env": {"CVD": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "backend": a.backend, "rest": rest}}
    open(a.o, "w").write(json.dumps(record))
""")


@pytest.fixture
def stub_check(tmp_path, monkeypatch):
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    monkeypatch.setattr(distributed_check, "launch_command", lambda nproc, args: [sys.executable, str(stub), *args])
    for name in ("STUB_FAIL", "STUB_SLEEP", "STUB_WRONG"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "out"


def test_check_runs_every_mode_and_marks_a_wrong_digest(stub_check, monkeypatch):
    monkeypatch.setenv("STUB_WRONG", "um")
    assert distributed_check.main(["--out", str(stub_check), "--parallel", "ddp", "--", "--layers", "2"]) == 0
    summary = json.loads((stub_check / "distributed_check.json").read_text())
    ddp = summary["parallel"]["ddp"]
    assert ddp["footprint_bytes"] == 4000 and ddp["capacity_bytes"] == 2000
    runs = ddp["runs"]
    assert list(runs) == ["none", "deepum_unbudgeted", "um", "deepum"]
    assert runs["none"]["bitwise_equal_to_none"] is True
    assert runs["um"]["bitwise_equal_to_none"] is False and runs["deepum"]["bitwise_equal_to_none"] is True
    assert runs["um"]["ratio_to_none"] == pytest.approx(5.0) and ddp["um_over_deepum"] == pytest.approx(2.0)
    record = json.loads((stub_check / "ddp_um.json").read_text())
    assert record["bitwise_equal_to_none"] is False and record["capacity_bytes"] == 2000
    assert record["env"]["rest"] == ["--layers", "2"]
    assert json.loads((stub_check / "ddp_deepum_unbudgeted.json").read_text())["capacity_bytes"] is None


def test_check_records_failures_and_goes_on(stub_check, monkeypatch):
    monkeypatch.setenv("STUB_FAIL", "deepum")
    assert distributed_check.main(["--out", str(stub_check)]) == 0
    summary = json.loads((stub_check / "distributed_check.json").read_text())
    for parallel in ("ddp", "fsdp"):
        runs = summary["parallel"][parallel]["runs"]
        assert runs["none"]["status"] == "ok"
        assert runs["deepum_unbudgeted"]["status"] == "failed" and runs["deepum_unbudgeted"]["returncode"] == 1
        assert runs["um"]["status"] == "skipped" and runs["deepum"]["status"] == "skipped"
    assert "stub: deepum failed" in (stub_check / "ddp_deepum_unbudgeted.err").read_text()


def test_check_timeout(stub_check, monkeypatch):
    monkeypatch.setenv("STUB_SLEEP", "um")
    assert distributed_check.main(["--out", str(stub_check), "--parallel", "fsdp", "--timeout", "2"]) == 0
    runs = json.loads((stub_check / "distributed_check.json").read_text())["parallel"]["fsdp"]["runs"]
    assert runs["um"]["status"] == "timeout" and runs["deepum"]["status"] == "ok"


def test_smoke_runs_gloo_on_the_first_visible_gpu(stub_check, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert distributed_check.main(["--out", str(stub_check), "--smoke"]) == 0
    summary = json.loads((stub_check / "distributed_check.json").read_text())
    assert summary["backend"] == "gloo" and summary["cuda_visible_devices"] == "3"
    assert summary["workload_args"] == distributed_check.SMOKE_WORKLOAD
    assert list(summary["parallel"]["ddp"]["runs"]) == ["none", "deepum_unbudgeted", "deepum"]
    record = json.loads((stub_check / "fsdp_deepum.json").read_text())
    assert record["env"]["CVD"] == "3" and record["env"]["backend"] == "gloo"


# --- argument errors ------------------------------------------------------------------------------

def error_lines(text):
    return [line for line in text.splitlines() if "error:" in line]


@pytest.mark.parametrize("argv, message", [
    (["--parallel", "zero", "-o", "x"], "invalid choice"),
    (["--parallel", "ddp", "--mode", "none", "--capacity", "1GiB", "-o", "x"], "--capacity applies"),
    (["--parallel", "ddp", "--mode", "um", "--capacity", "lots", "-o", "x"], "bad --capacity"),
    (["--parallel", "ddp", "--mode", "deepum", "--device", "cpu", "-o", "x"], "--device cpu runs mode none only"),
    (["--parallel", "ddp", "--mode", "none", "--device", "cpu", "--backend", "nccl", "-o", "x"], "needs --device cuda"),
    (["--parallel", "fsdp", "--steps", "2", "--warmup", "2", "-o", "x"], "--warmup"),
    (["--parallel", "fsdp", "--heads", "3", "--hidden", "64", "-o", "x"], "must divide"),
    (["--parallel", "ddp", "--workload", "dlrm", "-o", "x"], "sparse embedding"),
])
def test_distributed_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        distributed.parse_args(argv, environ=TORCHRUN_ENV)
    assert exc.value.code == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and message in lines[0]


def test_distributed_needs_torchrun(capsys):
    with pytest.raises(SystemExit) as exc:
        distributed.parse_args(["--parallel", "ddp", "-o", "x"], environ={})
    assert exc.value.code == 2
    assert "not started by torchrun" in capsys.readouterr().err


def test_distributed_script_exits_2_before_starting(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH / "distributed.py"), "--parallel", "ddp", "--mode", "none",
                           "--capacity", "1GiB", "-o", str(tmp_path / "x.json")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and len(error_lines(done.stderr)) == 1
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("argv, message", [
    (["--parallel", "ddp,pp"], "--parallel: pp"),
    (["--modes", "um,none"], "cannot run under a budget"),
    (["--fraction", "0"], "--fraction must be in (0, 1]"),
    (["--nproc", "0"], "--nproc must be at least 1"),
    (["--smoke", "--backend", "nccl"], "NCCL refuses"),
    (["--", "--layers", "2", "--mode", "um"], "set by the check itself"),
])
def test_check_argument_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        distributed_check.parse_args(["--out", str(tmp_path), *argv])
    assert exc.value.code == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and message in lines[0]


def test_bucket_memory_device_is_ddp_on_cuda_only():
    for argv in (["--parallel", "fsdp", "--bucket-memory", "device"],
                 ["--parallel", "ddp", "--device", "cpu", "--mode", "none", "--bucket-memory", "device"]):
        done = subprocess.run([sys.executable, str(BENCH / "distributed.py"), *argv, "-o", "x.json"],
                              capture_output=True, text=True, env={**os.environ, **TORCHRUN_ENV}, timeout=60)
        assert done.returncode == 2 and "--bucket-memory device applies to" in done.stderr, done.stderr
