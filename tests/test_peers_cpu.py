"""bench/peers.py, bench/peer_report.py and bench/peer_methods.py on the CPU: the runs and their
order with a stand-in for bench/train.py, each peer's peak becoming the capacity, the bitwise marks,
the report and plot from synthetic records, argument errors, and (with torch) activation
checkpointing, the optimizer recipe and the process group of one."""
import json
from pathlib import Path

import pytest

from bench_scripts import load, use_stub_train

peer_methods, peer_report, peers, run_all, bench_train, workloads = load(
    "peer_methods", "peer_report", "peers", "run_all", "train", "workloads")

GIB = 1 << 30
PNG = b"\x89PNG\r\n\x1a\n"

STUB = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference"):
    p.add_argument(flag)
p.add_argument("--capacity", type=int)
a, rest = p.parse_known_args()
GIB = 1 << 30
if a.mode == os.environ.get("STUB_FAIL"):
    sys.exit(a.mode + " broke")
peak = {"none": 8, "checkpoint": 3, "save_on_cpu": 4, "cpu_offload": 5}.get(a.mode)
step = {"none": 0.1, "checkpoint": 0.15, "save_on_cpu": 0.3, "cpu_offload": 0.5, "um": 0.8, "deepum": 0.2}[a.mode]
record = {"status": "ok", "workload": a.workload, "workload_id": a.workload + " " + " ".join(rest), "mode": a.mode,
          "capacity_bytes": a.capacity, "step_s_median": step, "gpu_free_bytes_at_start": int(os.environ["STUB_FREE"]),
          "parameter_sha256": "other" if a.mode == "cpu_offload" else "same",
          "memory_method": {"checkpoint": "activation checkpointing over 2 blocks"}.get(a.mode),
          "device": "stub", "date": "2026-11-23T00:00:00+00:00", "argv": sys.argv[1:]}
if peak:
    record.update(footprint_bytes=peak * GIB, peak_resident_bytes=peak * GIB, peak_allocated_bytes=peak * GIB - 7)
json.dump(record, open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FREE", str(100 * GIB))
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def load(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def test_peers_run_none_each_peer_then_unified_memory_at_its_peak(stub_train, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert peers.main(["--out", str(out), "--workloads", "gpt2", "--steps", "12", "--warmup", "2",
                       "--size", "gpt2=--layers 2 --hidden 32 --heads 4"]) == 0
    expected = {"peer_gpt2_none", *(f"peer_gpt2_{p}" for p in ("checkpoint", "save_on_cpu", "cpu_offload")),
                *(f"peer_gpt2_{m}_at_{p}" for m in ("um", "deepum") for p in ("checkpoint", "save_on_cpu", "cpu_offload"))}
    assert {p.stem for p in out.glob("peer_*.json")} == expected
    for peer, peak in (("checkpoint", 3), ("save_on_cpu", 4), ("cpu_offload", 5)):
        for mode in ("um", "deepum"):
            run = load(out, f"peer_gpt2_{mode}_at_{peer}")
            assert run["capacity_bytes"] == peak * GIB and run["peer"] == peer
            assert run["capacity_from"] == f"peak_resident_bytes of peer_gpt2_{peer}"
            assert run["argv"][run["argv"].index("--reference") + 1] == str(out / "peer_gpt2_none.json")
            assert run["bitwise_equal_to_none"] is True and "--steps 12" in run["command"]
    assert load(out, "peer_gpt2_none")["peer"] is None and "--reference" not in load(out, "peer_gpt2_none")["argv"]
    assert load(out, "peer_gpt2_checkpoint")["bitwise_equal_to_none"] is True
    assert load(out, "peer_gpt2_cpu_offload")["bitwise_equal_to_none"] is False       # the truth, as recorded
    assert (out / "peers.png").read_bytes().startswith(PNG)
    table = (out / "peers.md").read_text()
    row = next(line for line in table.splitlines() if "activation checkpointing" in line)
    # 3 GiB peak of 8 GiB in memory; 100 ms in memory, 150 checkpointed, um 800, deepum 200
    assert row == ("| gpt2 | activation checkpointing over 2 blocks | 3.00 GiB (8.00 GiB) | 100.0 | 150.0 | 800.0 | "
                   "200.0 | 5.33x | 1.33x | checkpoint | yes, yes, yes |")
    offload = next(line for line in table.splitlines() if line.startswith("| gpt2 | cpu_offload |"))
    assert "| 0.40x | deepum | no, yes, yes |" in offload
    summary = json.loads((out / "peers.json").read_text())
    assert summary["command"].startswith("python3 bench/peers.py --out") and len(summary["records"]) == 10
    assert "peers.md" in capsys.readouterr().out
    assert run_all.load_records(out) == []                 # the sweep's report leaves the peers' records out


def test_peak_allocated_becomes_the_capacity(stub_train, tmp_path):
    assert peers.main(["--out", str(tmp_path), "--workloads", "dlrm", "--peers", "checkpoint", "--modes", "deepum",
                       "--peak", "allocated"]) == 0
    run = load(tmp_path, "peer_dlrm_deepum_at_checkpoint")
    assert run["capacity_bytes"] == 3 * GIB - 7 and run["capacity_from"] == "peak_allocated_bytes of peer_dlrm_checkpoint"
    assert not (tmp_path / "peer_dlrm_um_at_checkpoint.json").exists()


def test_a_failed_peer_gets_no_unified_memory_runs(stub_train, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FAIL", "cpu_offload")
    assert peers.main(["--out", str(tmp_path), "--workloads", "dlrm", "--peers", "checkpoint,cpu_offload"]) == 0
    failed = load(tmp_path, "peer_dlrm_cpu_offload")
    assert failed["status"] == "failed" and "cpu_offload broke" in failed["error"]
    assert failed["bitwise_equal_to_none"] is None
    skipped = load(tmp_path, "peer_dlrm_deepum_at_cpu_offload")
    assert skipped["status"] == "skipped" and "the cpu_offload run did not succeed" in skipped["error"]
    assert load(tmp_path, "peer_dlrm_um_at_checkpoint")["status"] == "ok"
    assert "| peer_dlrm_cpu_offload | failed | cpu_offload broke |" in (tmp_path / "peers.md").read_text()


def test_no_unified_memory_runs_above_the_fuse(stub_train, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FREE", str(12 * GIB))        # in-memory peak 8 GiB > half of 12 GiB
    assert peers.main(["--out", str(tmp_path), "--workloads", "resnet152", "--peers", "save_on_cpu"]) == 0
    skipped = load(tmp_path, "peer_resnet152_um_at_save_on_cpu")
    assert skipped["status"] == "skipped" and "half of the free GPU memory" in skipped["error"]
    assert load(tmp_path, "peer_resnet152_save_on_cpu")["status"] == "ok"


def test_dry_run_plans_without_running(tmp_path, capsys):
    assert peers.main(["--out", str(tmp_path), "--dry-run", "--workloads", "bert-large", "--peers", "checkpoint"]) == 0
    out = capsys.readouterr().out
    assert "[peer_bert-large_none]" in out and "[peer_bert-large_checkpoint]" in out
    assert "[peer_bert-large_deepum_at_checkpoint]" in out and "--capacity '<reserved peak of checkpoint>'" in out
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("argv, message", [
    (["--workloads", "gpt3"], "unknown or no workload"),
    (["--peers", "zero"], "unknown or no peer"),
    (["--peers", "none"], "unknown or no peer"),
    (["--modes", "save_on_cpu"], "unknown or no mode"),
    (["--peak", "max"], "invalid choice"),
    (["--size", "gpt2=--rows 5"], "--rows not used by workload gpt2"),
    (["--steps", "3", "--warmup", "3"], "--warmup"),
])
def test_peers_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        peers.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_capacity_at_and_mark_bitwise():
    ok = {"status": "ok", "peak_resident_bytes": 5 * GIB, "peak_allocated_bytes": 4 * GIB, "parameter_sha256": "a"}
    assert peers.capacity_at(ok, "reserved") == 5 * GIB and peers.capacity_at(ok, "allocated") == 4 * GIB
    assert peers.capacity_at(dict(ok, status="failed"), "reserved") is None
    assert peers.capacity_at({"status": "ok"}, "allocated") is None     # a record without the allocated peak
    runs = [ok, dict(ok, parameter_sha256="b"), {"status": "failed"}]
    assert [r["bitwise_equal_to_none"] for r in peers.mark_bitwise(runs, ok)] == [True, False, None]
    assert [r["bitwise_equal_to_none"] for r in peers.mark_bitwise(runs, {"status": "failed"})] == [None] * 3
    assert peers.run_name("gpt2", "none") == "peer_gpt2_none"
    assert peers.run_name("gpt2", "checkpoint", "checkpoint") == "peer_gpt2_checkpoint"
    assert peers.run_name("gpt2", "um", "checkpoint") == "peer_gpt2_um_at_checkpoint"


def synthetic(mode, peer, step, **extra):
    return {"status": "ok", "run": f"peer_gpt2_{mode}", "workload": "gpt2", "workload_id": "gpt2 layers=2",
            "mode": mode, "peer": peer, "step_s_median": step, "peak_resident_bytes": 2 * GIB,
            "bitwise_equal_to_none": True, "device": "NVIDIA H200", "date": "2026-11-23T00:00:00+00:00", **extra}


def test_comparisons_without_a_unified_memory_run():
    records = [synthetic("none", None, 0.1), synthetic("save_on_cpu", "save_on_cpu", 0.4),
               synthetic("um", "save_on_cpu", 0.9),
               {"status": "failed", "run": "peer_gpt2_deepum_at_save_on_cpu", "workload": "gpt2", "mode": "deepum",
                "peer": "save_on_cpu", "error": "boom"}]
    (row,) = peer_report.comparisons(records)
    assert row["step_s"] == {"save_on_cpu": 0.4, "um": 0.9, "deepum": None, "none": 0.1}
    assert row["um_over_peer"] == pytest.approx(2.25) and row["deepum_over_peer"] is None
    assert row["fastest"] == "save_on_cpu" and row["memory_method"] == "save_on_cpu"
    assert row["bitwise_equal_to_none"] == {"save_on_cpu": True, "um": True}
    assert "| 2.25x | – | save_on_cpu | yes, yes, – |" in peer_report.markdown_table([row])


def test_steps_taken_beside_another_job_are_marked(tmp_path):
    records = [synthetic("none", None, 0.1), synthetic("save_on_cpu", "save_on_cpu", 0.4, shared_host=True),
               synthetic("um", "save_on_cpu", 0.9), synthetic("deepum", "save_on_cpu", 0.3, shared_host=False)]
    (row,) = peer_report.comparisons(records)
    assert row["shared_host"] == ["save_on_cpu"]
    assert "| 400.0† | 900.0 | 300.0 |" in peer_report.markdown_table([row])
    peer_report.write_report(records, tmp_path, "cmd")
    assert peer_report.SHARED_NOTE in (tmp_path / "peers.md").read_text()
    peer_report.write_report(records[:1] + [dict(r, shared_host=False) for r in records[1:]], tmp_path, "cmd")
    assert peer_report.SHARED_NOTE not in (tmp_path / "peers.md").read_text()


def test_report_without_comparisons(tmp_path):
    paths = peer_report.write_report([synthetic("none", None, 0.1)], tmp_path, "cmd")
    assert [p.name for p in paths] == ["peers.json", "peers.md"]


# --- bench/peer_methods.py and train.py's peer modes ---------------------------------------------------

TINY_GPT2 = ["--layers", "2", "--hidden", "32", "--heads", "4", "--seq", "16", "--batch", "2", "--vocab", "64"]


def test_offload_flag_only_for_cpu_offload(capsys):
    assert bench_train.parse_args(["-o", "x", "--mode", "cpu_offload", "--offload", "fsdp"]).offload == "fsdp"
    with pytest.raises(SystemExit):
        bench_train.parse_args(["-o", "x", "--mode", "checkpoint", "--offload", "torchao"])
    assert "--offload applies to mode cpu_offload, not checkpoint" in capsys.readouterr().err


def test_offload_implementation_falls_back_to_fsdp(monkeypatch):
    monkeypatch.setattr(peer_methods, "torchao_offload_optimizer", lambda: None)
    assert peer_methods.offload_implementation(None) == peer_methods.FSDP
    with pytest.raises(RuntimeError, match="not importable"):
        peer_methods.offload_implementation(peer_methods.TORCHAO)
    monkeypatch.setattr(peer_methods, "torchao_offload_optimizer", lambda: object)
    assert peer_methods.offload_implementation(None) == peer_methods.TORCHAO
    assert peer_methods.offload_implementation(peer_methods.FSDP) == peer_methods.FSDP


def test_checkpointing_trains_bitwise_alike_on_the_cpu():
    torch = pytest.importorskip("torch")
    torch.use_deterministic_algorithms(True)
    try:
        runs = {}
        for mode in ("none", "checkpoint"):
            args = bench_train.parse_args(["-o", "x", "--mode", mode, *TINY_GPT2, "--steps", "2", "--warmup", "1"])
            workload = workloads.build(torch, args, seed=0)
            runs[mode] = bench_train.train(torch, args, workload, "cpu")
            assert runs[mode]["parameter_sha256"] == bench_train.parameter_digest(workload.model)
    finally:
        torch.use_deterministic_algorithms(False)
    assert runs["none"]["memory_method"] is None
    assert runs["checkpoint"]["memory_method"] == "activation checkpointing over 2 blocks"
    assert runs["checkpoint"]["parameter_sha256"] == runs["none"]["parameter_sha256"]


def test_checkpointed_block_runs_its_forward_again_in_backward():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(4, 4)
    runs = []
    layer.register_forward_pre_hook(lambda module, inputs: runs.append(module))  # recomputation may stop early
    wrapped = torch.nn.Sequential(layer)
    assert peer_methods.checkpoint_blocks(torch, [wrapped]) == 1
    wrapped(torch.randn(2, 4, requires_grad=True)).sum().backward()
    assert len(runs) == 2                                          # forward, then the recomputation


@pytest.mark.parametrize("name, precision", [("gpt2", "fp32"), ("gpt2", "bf16"), ("resnet152", "fp32"),
                                             ("dlrm", "fp32")])
def test_optimizer_recipe_rebuilds_the_workloads_optimizer(name, precision):
    torch = pytest.importorskip("torch")
    args = bench_train.parse_args(["-o", "x", "--workload", name, "--precision", precision, "--image", "32",
                                   "--classes", "10"] if name == "resnet152" else
                                  ["-o", "x", "--workload", name, "--precision", precision,
                                   *(TINY_GPT2 if name == "gpt2" else ["--rows", "100", "--dim", "8"])])
    workload = workloads.build(torch, args)
    built = workload.make_optimizer(torch, workload.model)
    cls, kwargs = peer_methods.optimizer_recipe(built)
    host = [p.detach().clone().requires_grad_() for p in workload.model.parameters()]
    again = cls(host, **kwargs)
    assert type(again) is type(built) and again.defaults == built.defaults


def test_process_group_of_one():
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("torch without torch.distributed")
    close = peer_methods.single_process_group(torch, "gloo")
    try:
        assert torch.distributed.get_world_size() == 1 and torch.distributed.get_rank() == 0
    finally:
        close()
    assert not torch.distributed.is_initialized()
