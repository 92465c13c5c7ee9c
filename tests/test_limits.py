"""The limits enable() settles before it starts, on the CPU: the fuse and the capacity by default and
with the opt-in to go past GPU memory, the DEEPUM_NO_OVERSUBSCRIBE guard (which the suite sets for
every test), what the fuse says when it refuses, the host memory that backs the opt-in, the refusal of
expandable segments, and the guard in the benchmarks' training processes."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from deepum.runtime import host_memory
from deepum.runtime import session
from deepum.runtime.limits import (OVERSUBSCRIBE_GUARD, OversubscriptionRefused, RuntimeConfig,
                                   allocator_conf_problem, fuse_message, oversubscription_guarded, resolve_capacity,
                                   resolve_max_managed_bytes)

GiB = 1 << 30
MiB = 1 << 20
BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def unguarded(monkeypatch):
    """The opt-in allowed: the guard the suite sets is removed for this test."""
    monkeypatch.delenv(OVERSUBSCRIBE_GUARD)


# --- the guard -------------------------------------------------------------------------------

def test_the_suite_sets_the_guard_for_every_test_and_its_processes():
    assert os.environ[OVERSUBSCRIBE_GUARD] == "1" and oversubscription_guarded()


@pytest.mark.parametrize("value, guarded", [("1", True), ("yes", True), (" 1 ", True), ("0", False), ("", False),
                                            (None, False)])
def test_guard_is_set_by_any_value_but_empty_or_0(value, guarded):
    environ = {} if value is None else {OVERSUBSCRIBE_GUARD: value}
    assert oversubscription_guarded(environ) is guarded


@pytest.mark.parametrize("kwargs, asked", [({"max_managed_bytes": "host"}, 'max_managed_bytes="host"'),
                                           ({"max_managed_bytes": " Host "}, 'max_managed_bytes="host"'),
                                           ({"oversubscribe": True}, "oversubscribe=True"),
                                           ({"oversubscribe": True, "max_managed_bytes": "64GiB"}, "oversubscribe=True")])
def test_guard_refuses_the_opt_in_naming_the_variable(kwargs, asked):
    with pytest.raises(OversubscriptionRefused) as refused:
        RuntimeConfig(mode="um", **kwargs)
    message = str(refused.value)
    assert message.startswith(asked) and "DEEPUM_NO_OVERSUBSCRIBE=1 forbids" in message
    assert "Unset DEEPUM_NO_OVERSUBSCRIBE" in message and "capacity=" in message


def test_guard_refuses_the_opt_in_in_enable_before_anything_starts():
    with pytest.raises(OversubscriptionRefused, match=OVERSUBSCRIBE_GUARD):
        session.enable(mode="deepum", max_managed_bytes="host")
    with pytest.raises(OversubscriptionRefused, match=OVERSUBSCRIBE_GUARD):
        session.enable(mode="none", oversubscribe=True)
    assert not session.is_enabled()


def test_guard_refuses_the_opt_in_at_the_fuse_too():
    with pytest.raises(OversubscriptionRefused, match=OVERSUBSCRIBE_GUARD):
        resolve_max_managed_bytes(None, 80 * GiB, oversubscribe=True, host_backed=500 * GiB)


def test_package_exports_the_refusal():
    import deepum

    assert deepum.OversubscriptionRefused is OversubscriptionRefused and issubclass(OversubscriptionRefused,
                                                                                     RuntimeError)


# --- settings ---------------------------------------------------------------------------------

def test_host_sets_the_opt_in_and_leaves_the_size_to_the_host(unguarded):
    config = RuntimeConfig(mode="um", max_managed_bytes="host")
    assert config.oversubscribe is True and config.max_managed_bytes is None
    config = RuntimeConfig(mode="um", max_managed_bytes="200GiB", oversubscribe=True)
    assert config.oversubscribe is True and config.max_managed_bytes == 200 * GiB
    assert RuntimeConfig().oversubscribe is False


@pytest.mark.parametrize("kwargs, message", [({"oversubscribe": "yes"}, "oversubscribe must be True or False"),
                                             ({"oversubscribe": 1}, "oversubscribe must be True or False"),
                                             ({"max_managed_bytes": "hostly"}, "cannot read size")])
def test_bad_opt_in_values_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RuntimeConfig(**kwargs)


# --- the fuse by default: managed memory at most half of the free GPU memory -------------------

def test_fuse_defaults_to_half_the_free_memory():
    assert resolve_max_managed_bytes(None, 80 * GiB) == 40 * GiB


def test_fuse_accepts_values_up_to_half_the_free_memory():
    assert resolve_max_managed_bytes(2 * GiB, 80 * GiB) == 2 * GiB
    assert resolve_max_managed_bytes(40 * GiB, 80 * GiB) == 40 * GiB


def test_fuse_refuses_more_than_half_the_free_memory_and_says_the_opt_in_is_off_here():
    with pytest.raises(ValueError, match=r"above the safety limit of half the free GPU memory \(40.00 GiB") as refused:
        resolve_max_managed_bytes(40 * GiB + 1, 80 * GiB)
    assert "switched off here (DEEPUM_NO_OVERSUBSCRIBE is set)" in str(refused.value)
    assert 'max_managed_bytes="host"' not in str(refused.value)


def test_fuse_refusal_names_the_opt_in_when_unguarded(unguarded):
    with pytest.raises(ValueError, match="above the safety limit") as refused:
        resolve_max_managed_bytes(41 * GiB, 80 * GiB)
    assert 'max_managed_bytes="host"' in str(refused.value) and "oversubscribe=True" in str(refused.value)


def test_a_size_above_the_gpu_limit_without_the_flag_is_refused_even_when_the_host_could_back_it(unguarded):
    with pytest.raises(ValueError, match="above the safety limit"):
        resolve_max_managed_bytes(100 * GiB, 80 * GiB, oversubscribe=False, host_backed=500 * GiB)


def test_fuse_needs_free_memory():
    with pytest.raises(ValueError, match="no room for managed memory"):
        resolve_max_managed_bytes(None, 1)


def test_fuse_refuses_nonpositive_sizes():
    with pytest.raises(ValueError, match="must be positive"):
        resolve_max_managed_bytes(0, 80 * GiB)


# --- the fuse with the opt-in: up to what the host can back ------------------------------------

def test_opt_in_defaults_to_what_the_host_can_back(unguarded):
    assert resolve_max_managed_bytes(None, 80 * GiB, oversubscribe=True, host_backed=500 * GiB) == 500 * GiB


def test_opt_in_never_lowers_the_cap_below_the_default(unguarded):
    assert resolve_max_managed_bytes(None, 80 * GiB, oversubscribe=True, host_backed=8 * GiB) == 40 * GiB
    assert resolve_max_managed_bytes(None, 80 * GiB, oversubscribe=True, host_backed=0) == 40 * GiB


def test_opt_in_accepts_sizes_past_gpu_memory_up_to_the_host(unguarded):
    assert resolve_max_managed_bytes(200 * GiB, 80 * GiB, oversubscribe=True, host_backed=500 * GiB) == 200 * GiB
    assert resolve_max_managed_bytes(500 * GiB, 80 * GiB, oversubscribe=True, host_backed=500 * GiB) == 500 * GiB
    assert resolve_max_managed_bytes(2 * GiB, 80 * GiB, oversubscribe=True, host_backed=500 * GiB) == 2 * GiB


def test_opt_in_refuses_more_than_the_host_can_back(unguarded):
    with pytest.raises(ValueError, match=r"more than the host can back: 500.00 GiB") as refused:
        resolve_max_managed_bytes(500 * GiB + 1, 80 * GiB, oversubscribe=True, host_backed=500 * GiB)
    assert 'max_managed_bytes="host"' in str(refused.value)


def test_opt_in_needs_the_host_figure(unguarded):
    with pytest.raises(ValueError, match="host_backed"):
        resolve_max_managed_bytes(None, 80 * GiB, oversubscribe=True)


# --- the capacity: the free GPU memory less the headroom, with or without the opt-in -----------

def test_capacity_defaults_to_free_minus_headroom():
    assert resolve_capacity(None, 80 * GiB, GiB) == 79 * GiB
    assert resolve_capacity(8 * GiB, 80 * GiB, GiB) == 8 * GiB


def test_capacity_never_exceeds_free_memory():
    with pytest.raises(ValueError, match="more than the GPU has free"):
        resolve_capacity(81 * GiB, 80 * GiB, GiB)
    with pytest.raises(ValueError, match="less than the headroom"):
        resolve_capacity(None, GiB // 2, GiB)


def test_with_the_opt_in_the_fuse_passes_the_capacity(unguarded):
    """Past GPU memory the engine keeps residency under the capacity while managed memory exceeds it."""
    free = 80 * GiB
    capacity = resolve_capacity(None, free, GiB)
    fuse = resolve_max_managed_bytes(None, free, oversubscribe=True, host_backed=500 * GiB)
    assert capacity == 79 * GiB < free < fuse


# --- what the fuse says when it refuses --------------------------------------------------------

def test_fuse_message_names_cap_use_and_request():
    message = fuse_message(256 * MiB, 64 * MiB, 512 * MiB)
    assert "512.00 MiB" in message and "64.00 MiB" in message and "256.00 MiB" in message
    assert "max_managed_bytes" in message


def test_fuse_message_says_how_to_go_past_gpu_memory(unguarded):
    message = fuse_message(256 * MiB, 64 * MiB, 512 * MiB)
    assert 'max_managed_bytes="host"' in message and "oversubscribe=True" in message
    assert "--max-managed-bytes host" in message


def test_fuse_message_under_the_guard_names_the_guard_instead():
    message = fuse_message(256 * MiB, 64 * MiB, 512 * MiB)
    assert "DEEPUM_NO_OVERSUBSCRIBE is set" in message and 'max_managed_bytes="host"' not in message


def test_fuse_message_past_gpu_memory_names_the_host(unguarded):
    message = fuse_message(600 * GiB, 590 * GiB, 20 * GiB, oversubscribe=True)
    assert "what the host can back" in message and "free host memory" in message
    assert "half of the free GPU memory" not in message


# --- host memory -------------------------------------------------------------------------------

def test_meminfo_available_reads_kib(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000 kB\nMemFree:         10 kB\nMemAvailable:    300 kB\n")
    assert host_memory.meminfo_available(meminfo) == 300 * 1024
    meminfo.write_text("MemTotal:       1000 kB\n")
    assert host_memory.meminfo_available(meminfo) is None
    assert host_memory.meminfo_available(tmp_path / "absent") is None


def test_cgroup_room_is_the_least_over_the_levels_that_set_a_limit(tmp_path):
    root = tmp_path / "cgroup"
    leaf = root / "a" / "b"
    leaf.mkdir(parents=True)
    for folder, limit, current in ((root / "a", str(10 * GiB), 4 * GiB), (leaf, "max", 3 * GiB)):
        (folder / "memory.max").write_text(limit + "\n")
        (folder / "memory.current").write_text(f"{current}\n")
    proc = tmp_path / "self_cgroup"
    proc.write_text("0::/a/b\n")
    assert host_memory.cgroup_room(proc, root) == 6 * GiB
    (leaf / "memory.max").write_text(f"{5 * GiB}\n")
    assert host_memory.cgroup_room(proc, root) == 2 * GiB
    proc.write_text("1:memory:/a/b\n")  # cgroup v1 only: no v2 entry
    assert host_memory.cgroup_room(proc, root) is None
    proc.write_text("0::/\n")
    assert host_memory.cgroup_room(proc, root) is None


def test_host_backed_is_available_less_the_margin():
    assert host_memory.margin(8 * GiB) == host_memory.HOST_MARGIN_MIN == 4 * GiB
    assert host_memory.margin(1000 * GiB) == 100 * GiB
    assert host_memory.host_backed_bytes(1000 * GiB) == 900 * GiB
    assert host_memory.host_backed_bytes(10 * GiB) == 6 * GiB
    assert host_memory.host_backed_bytes(2 * GiB) == 0


def test_available_bytes_falls_back_and_takes_the_cgroup_into_account(monkeypatch):
    monkeypatch.setattr(host_memory, "meminfo_available", lambda: None)
    monkeypatch.setattr(host_memory, "sysconf_available", lambda: 64 * GiB)
    monkeypatch.setattr(host_memory, "cgroup_room", lambda: None)
    assert host_memory.available_bytes() == 64 * GiB
    monkeypatch.setattr(host_memory, "cgroup_room", lambda: 16 * GiB)
    assert host_memory.available_bytes() == 16 * GiB
    monkeypatch.setattr(host_memory, "sysconf_available", lambda: None)
    with pytest.raises(ValueError, match="cannot tell how much host memory is available"):
        host_memory.available_bytes()


def test_this_host_reports_its_available_memory():
    assert host_memory.available_bytes() > 0


# --- expandable segments -----------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
                                         ("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128, expandable_segments:true"),
                                         ("PYTORCH_ALLOC_CONF", "expandable_segments:True")])
def test_expandable_segments_are_named(name, value):
    problem = allocator_conf_problem({name: value})
    assert problem.startswith(f"deepum cannot run with {name}={value}: expandable segments")
    assert "Remove expandable_segments:True" in problem


@pytest.mark.parametrize("value", ["", "expandable_segments:False", "max_split_size_mb:128",
                                   "garbage_collection_threshold:0.6"])
def test_other_allocator_settings_pass(value):
    assert allocator_conf_problem({"PYTORCH_CUDA_ALLOC_CONF": value}) is None


def test_enable_refuses_expandable_segments_before_anything_starts(monkeypatch):
    """The refusal comes before torch is even imported (here there may be no torch at all)."""
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setattr(session, "_import_torch", lambda: pytest.fail("enable() went on to import torch"))
    with pytest.raises(RuntimeError, match="cannot run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"):
        session.enable(mode="um")
    assert not session.is_enabled()
    with session.enable(mode="none"):  # nothing is routed in mode none: no refusal
        assert session.is_enabled()


def test_stats_say_whether_the_session_oversubscribes():
    assert session.stats()["oversubscribe"] is False


# --- the benchmarks' training processes run under the guard ------------------------------------

@pytest.fixture
def bench_modules():
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        import gpu_check
        import guard
        import run_all
        yield guard, gpu_check, run_all
    finally:
        sys.path[:] = saved


def test_bench_child_environment_sets_the_guard_unless_set(bench_modules, monkeypatch):
    guard, _, _ = bench_modules
    assert guard.child_env({"PATH": "/bin"}) == {"PATH": "/bin", OVERSUBSCRIBE_GUARD: "1"}
    assert guard.child_env({OVERSUBSCRIBE_GUARD: "0"})[OVERSUBSCRIBE_GUARD] == "0"
    monkeypatch.delenv(OVERSUBSCRIBE_GUARD)
    assert guard.child_env()[OVERSUBSCRIBE_GUARD] == "1" and OVERSUBSCRIBE_GUARD not in os.environ


def test_bench_scripts_start_training_under_the_guard(bench_modules, monkeypatch, tmp_path):
    _, gpu_check, run_all = bench_modules
    monkeypatch.delenv(OVERSUBSCRIBE_GUARD)
    seen = []

    def fake_run(command, **kwargs):
        seen.append(kwargs.get("env"))
        output = Path(command[command.index("-o") + 1])
        output.write_text('{"status": "ok"}')
        return argparse.Namespace(returncode=0)

    monkeypatch.setattr(gpu_check.subprocess, "run", fake_run)
    gpu_check.train("um", tmp_path, [])
    args = argparse.Namespace(out=tmp_path, resume=False, dry_run=False, timeout=10, steps=1, warmup=0,
                              sizes={"gpt2": []})
    run_all.run_one(args, "gpt2", "um", None, None)
    assert len(seen) == 2 and all(env and env[OVERSUBSCRIBE_GUARD] == "1" for env in seen)
    assert 'os.environ.setdefault("DEEPUM_NO_OVERSUBSCRIBE", "1")' in (BENCH / "train.py").read_text()
