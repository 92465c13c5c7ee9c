"""`deepum run` on a real GPU: an unchanged Hugging Face Trainer script (tests/gpu_scripts/hf_trainer.py:
a tiny Llama-style model, random weights and tokens from fixed seeds) trained once plainly and once
through `python -m deepum run` under a capacity below its footprint ends with the same parameters.

Every run is a fresh process under DEEPUM_NO_OVERSUBSCRIBE=1 on one visible GPU, with managed memory
tiny (well under 1 GiB) and the fuse at 2 GiB."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "tests" / "gpu_scripts" / "hf_trainer.py"
MiB = 1 << 20
GiB = 1 << 30
STEPS = 6
CAPACITY = "32MiB"   # below what the model, its gradients and Adam's state take together
FUSE = "2GiB"

pytestmark = pytest.mark.gpu


def environment() -> dict:
    """The runs' environment: the checkout importable, one GPU visible (no DataParallel), deterministic
    cuBLAS, no network, never past GPU memory."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                CUDA_VISIBLE_DEVICES=visible, CUBLAS_WORKSPACE_CONFIG=":4096:8", PYTHONUNBUFFERED="1",
                DEEPUM_NO_OVERSUBSCRIBE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                TOKENIZERS_PARALLELISM="false", WANDB_DISABLED="true")


def run(command: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, env=environment(), timeout=timeout)
    print(f"$ {' '.join(command)}\n{done.stderr[-4000:]}")
    return done


@pytest.fixture(scope="module")
def transformers_installed():
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")


def test_hf_trainer_through_deepum_run_equals_the_plain_run(allocator_built, transformers_installed, tmp_path):
    plain_out, managed_out, stats_out = tmp_path / "plain.json", tmp_path / "managed.json", tmp_path / "stats.json"
    plain = run([sys.executable, str(SCRIPT), str(plain_out), str(STEPS)])
    assert plain.returncode == 0, plain.stderr
    managed = run([sys.executable, "-m", "deepum", "run", "--capacity", CAPACITY, "--max-managed-bytes", FUSE,
                   "--stats-json", str(stats_out), str(SCRIPT), str(managed_out), str(STEPS)])
    assert managed.returncode == 0, managed.stderr

    plain_result, managed_result = json.loads(plain_out.read_text()), json.loads(managed_out.read_text())
    print(f"plain: {plain_result}\nthrough deepum run: {managed_result}")
    for result in (plain_result, managed_result):
        assert result["global_step"] == STEPS and len(result["losses"]) == STEPS
        assert result["n_gpu"] == 1 and result["parameter_device"] == "cuda" and result["data_parallel"] is False
    assert managed_result["losses"] == plain_result["losses"]
    assert managed_result["digest"] == plain_result["digest"]

    stats = json.loads(stats_out.read_text())
    assert stats["mode"] == "deepum" and stats["oversubscribe"] is False
    assert stats["capacity_bytes"] == 32 * MiB and stats["max_managed_bytes"] == 2 * GiB
    # The script's memory was managed, more of it than the capacity (so the budget pressed), and tiny.
    assert stats["capacity_bytes"] < stats["managed_bytes_peak"] <= GiB
    assert stats["fuse_refusals"] == 0 and stats["cuda_errors"] == 0, stats.get("last_cuda_error")
    assert stats["run"]["exit_status"] == 0 and stats["run"]["optimizer_steps"] == STEPS
    assert stats["run"]["argv"] == [str(SCRIPT), str(managed_out), str(STEPS)]
    assert len(stats["per_iteration"]) == STEPS  # enable() marked an iteration at each optimizer step
    assert f"deepum run: hf_trainer.py exited with status 0 after {STEPS} optimizer steps" in managed.stderr
    assert "prefetch coverage" in managed.stderr


def test_a_second_run_keeps_what_the_first_learned(allocator_built, transformers_installed, tmp_path):
    """Two processes of the same script lay their memory out at unrelated addresses; exec IDs and block
    numbers from portable addresses let the second keep the state the first saved, and train alike."""
    state = tmp_path / "state.deepum-warm"
    results = []
    for run_index in range(2):
        out, stats_out = tmp_path / f"run{run_index}.json", tmp_path / f"stats{run_index}.json"
        done = run([sys.executable, "-m", "deepum", "run", "--capacity", CAPACITY, "--max-managed-bytes", FUSE,
                    "--warm-start", str(state), "--stats-json", str(stats_out), str(SCRIPT), str(out), str(STEPS)])
        assert done.returncode == 0, done.stderr
        assert state.is_file()
        results.append((json.loads(out.read_text()), json.loads(stats_out.read_text())))
    (first, first_stats), (second, second_stats) = results
    print(f"trials: {first_stats['warm_start']} then {second_stats['warm_start']}")
    assert first_stats["warm_start"]["state"] == "cold"
    trial = second_stats["warm_start"]
    assert trial["state"] == "kept" and trial["known"] >= trial["launched"] / 2 > 0
    assert second["digest"] == first["digest"] and second["losses"] == first["losses"]
