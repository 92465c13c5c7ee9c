"""Where a process sits in a torch.distributed job (deepum/runtime/ranks.py): the launcher's variables
read and every malformed value refused in one line; the device rule and how many processes share a
device; the free memory split among the processes that share a GPU (limits.resolve_limits); the device
enable() picks under a launcher; the placement in stats(). CPU only: the driver is stood in for."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deepum.runtime import gpu, ranks, session
from deepum.runtime.limits import RuntimeConfig, resolve_limits

GiB = 1 << 30
LAUNCHED = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}


# --- the placement from the environment ---------------------------------------------------------

def test_not_under_a_launcher_without_local_rank():
    assert ranks.from_environment({}) is None
    assert ranks.from_environment({"RANK": "0", "WORLD_SIZE": "2"}) is None  # LOCAL_RANK is the mark


def test_the_launchers_variables_are_read():
    assert ranks.from_environment(LAUNCHED) == ranks.Placement(rank=3, world_size=8, local_rank=1,
                                                               local_world_size=4)
    assert ranks.from_environment({**LAUNCHED, "RANK": " 7 "}).rank == 7


def test_the_default_environment_is_os_environ(monkeypatch):
    for name, value in LAUNCHED.items():
        monkeypatch.setenv(name, value)
    assert ranks.from_environment() == ranks.from_environment(LAUNCHED)
    monkeypatch.delenv("LOCAL_RANK")
    assert ranks.from_environment() is None


@pytest.mark.parametrize("change, message", [
    ({"RANK": "one"}, "RANK='one' is not an integer"),
    ({"WORLD_SIZE": ""}, "WORLD_SIZE='' is not an integer"),
    ({"LOCAL_RANK": "1.5"}, "LOCAL_RANK='1.5' is not an integer"),
    ({"LOCAL_WORLD_SIZE": "4x"}, "LOCAL_WORLD_SIZE='4x' is not an integer"),
    ({"RANK": "-1"}, "RANK='-1' is negative"),
    ({"LOCAL_RANK": "-2"}, "LOCAL_RANK='-2' is negative"),
    ({"WORLD_SIZE": "-8"}, "WORLD_SIZE='-8' is negative"),
    ({"LOCAL_WORLD_SIZE": "-4"}, "LOCAL_WORLD_SIZE='-4' is negative"),
    ({"WORLD_SIZE": "0", "RANK": "0"}, "WORLD_SIZE=0"),
    ({"LOCAL_WORLD_SIZE": "0", "LOCAL_RANK": "0"}, "LOCAL_WORLD_SIZE=0"),
    ({"RANK": "8"}, "RANK=8 is not below WORLD_SIZE=8"),
    ({"RANK": "9"}, "RANK=9 is not below WORLD_SIZE=8"),
    ({"LOCAL_RANK": "4"}, "LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4"),
    ({"LOCAL_WORLD_SIZE": "9", "LOCAL_RANK": "1"}, "LOCAL_WORLD_SIZE=9 is more than WORLD_SIZE=8"),
    ({"RANK": None}, "RANK is not set"),
    ({"WORLD_SIZE": None}, "WORLD_SIZE is not set"),
    ({"LOCAL_WORLD_SIZE": None}, "LOCAL_WORLD_SIZE is not set"),
])
def test_malformed_values_are_one_line_naming_the_variable(change, message):
    environ = {**LAUNCHED, **change}
    environ = {name: value for name, value in environ.items() if value is not None}
    with pytest.raises(ValueError) as caught:
        ranks.from_environment(environ)
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith("bad launcher environment:")


def test_the_placement_is_frozen():
    placement = ranks.from_environment(LAUNCHED)
    with pytest.raises(AttributeError):
        placement.rank = 0


# --- the device rule ----------------------------------------------------------------------------

def test_device_rule_examples():
    assert [ranks.device_for(rank, 4) for rank in range(6)] == [0, 1, 2, 3, 0, 1]
    assert [ranks.processes_on_device(rank, 6, 4) for rank in range(6)] == [2, 2, 1, 1, 2, 2]
    assert [ranks.processes_on_device(rank, 2, 8) for rank in range(2)] == [1, 1]
    assert ranks.processes_on_device(0, 3, 1) == 3
    with pytest.raises(ValueError, match="no CUDA device"):
        ranks.device_for(0, 0)
    with pytest.raises(ValueError, match="not one of the 2 local processes"):
        ranks.processes_on_device(2, 2, 4)


@given(st.integers(1, 64), st.integers(1, 16))
def test_processes_on_device_counts_every_local_rank_once(local_world_size, device_count):
    devices = {ranks.device_for(rank, device_count) for rank in range(local_world_size)}
    assert all(0 <= device < device_count for device in devices)
    # Each device in use counted once through any one of its ranks: the counts add up to the ranks.
    first_rank = {ranks.device_for(rank, device_count): rank for rank in reversed(range(local_world_size))}
    assert sum(ranks.processes_on_device(first_rank[device], local_world_size, device_count)
               for device in devices) == local_world_size
    for rank in range(local_world_size):  # and each is the number of ranks that map to its device
        same = sum(ranks.device_for(other, device_count) == ranks.device_for(rank, device_count)
                   for other in range(local_world_size))
        assert ranks.processes_on_device(rank, local_world_size, device_count) == same >= 1


# --- the free memory split among the processes sharing a device ---------------------------------

def test_processes_on_device_is_validated():
    assert RuntimeConfig().processes_on_device == 1
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="processes_on_device must be a count"):
            RuntimeConfig(processes_on_device=bad)


def test_one_process_keeps_the_rules_of_the_whole_gpu():
    limits = resolve_limits(RuntimeConfig(mode="um"), 80 * GiB)
    assert (limits.free_at_enable, limits.capacity, limits.max_managed_bytes) == (80 * GiB, 79 * GiB, 40 * GiB)


@pytest.mark.parametrize("sharing", [2, 3, 4])
def test_each_of_k_processes_gets_a_kth_of_the_free_memory(sharing):
    limits = resolve_limits(RuntimeConfig(mode="um", processes_on_device=sharing), 80 * GiB)
    share = 80 * GiB // sharing
    assert limits.free_at_enable == 80 * GiB  # what the GPU had free, not the share
    assert limits.capacity == share - GiB
    assert limits.max_managed_bytes == share // 2
    assert sharing * limits.max_managed_bytes <= 40 * GiB  # together within half of the free memory


def test_sizes_given_are_checked_against_the_share():
    assert resolve_limits(RuntimeConfig(mode="um", processes_on_device=2, max_managed_bytes="20GiB",
                                        capacity="40GiB"), 80 * GiB).max_managed_bytes == 20 * GiB
    with pytest.raises(ValueError) as caught:
        resolve_limits(RuntimeConfig(mode="um", processes_on_device=2, max_managed_bytes="21GiB"), 80 * GiB)
    assert "with 2 processes of the job on the device" in str(caught.value) and "40.00 GiB" in str(caught.value)
    with pytest.raises(ValueError, match="more than the GPU has free"):
        resolve_limits(RuntimeConfig(mode="um", processes_on_device=2, capacity="41GiB"), 80 * GiB)
    with pytest.raises(ValueError) as caught:  # one process: the message is the plain one
        resolve_limits(RuntimeConfig(mode="um", max_managed_bytes="41GiB"), 80 * GiB)
    assert "processes of the job" not in str(caught.value)


def test_with_the_opt_in_the_host_figure_is_not_split(monkeypatch):
    monkeypatch.delenv("DEEPUM_NO_OVERSUBSCRIBE")
    limits = resolve_limits(RuntimeConfig(mode="um", processes_on_device=2, max_managed_bytes="host"), 80 * GiB,
                            host_backed=500 * GiB)
    assert limits.oversubscribe and limits.max_managed_bytes == 500 * GiB and limits.capacity == 39 * GiB


# --- the device enable() picks -------------------------------------------------------------------

@pytest.fixture
def driver(monkeypatch):
    """gpu.driver_init and gpu.device_count stood in for: a machine with 4 GPUs."""
    calls = []
    monkeypatch.setattr(gpu, "driver_init", lambda: calls.append("init"))
    monkeypatch.setattr(gpu, "device_count", lambda: calls.append("count") or 4)
    return calls


def test_outside_a_launcher_the_device_is_the_one_given_or_0(driver):
    assert session._place(None, None) == (0, 1)
    assert session._place(2, None) == (2, 1)
    assert driver == []  # the driver is not needed


def test_under_a_launcher_the_device_is_local_rank_modulo_the_devices(driver):
    placement = ranks.Placement(rank=5, world_size=12, local_rank=5, local_world_size=6)
    assert session._place(None, placement) == (1, 2)
    assert driver[0] == "init"  # device_count needs the driver initialized first
    assert session._place(None, ranks.Placement(3, 6, 3, 6)) == (3, 1)
    # An explicit device is used; the sharing still comes from the placement.
    assert session._place(2, placement) == (2, 2)


def test_stats_report_the_placement_in_mode_none(monkeypatch):
    for name, value in LAUNCHED.items():
        monkeypatch.setenv(name, value)
    with session.enable(mode="none"):
        figures = session.stats()
    assert (figures["rank"], figures["world_size"], figures["local_rank"]) == (3, 8, 1)
    assert figures["processes_on_device"] == 1 and figures["device"] == 0
    monkeypatch.delenv("LOCAL_RANK")
    with session.enable(mode="none"):
        figures = session.stats()
    assert (figures["rank"], figures["world_size"], figures["local_rank"]) == (None, None, None)
    assert session.stats()["processes_on_device"] is None  # no session


def test_a_malformed_launcher_environment_stops_enable(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "x")
    with pytest.raises(ValueError, match="LOCAL_RANK"):
        session.enable(mode="none")
    assert not session.is_enabled()


def test_enable_resolves_its_limits_from_the_share_of_its_placement():
    """enable() needs a GPU; here, that it takes the sharing from the placement into the settings
    its limits come from (resolve_limits, tested above)."""
    from pathlib import Path

    source = Path(session.__file__).read_text()
    assert "chosen, sharing = _place(device, placement)" in source
    assert "dataclasses.replace(settings, device=chosen, processes_on_device=sharing)" in source
    assert "limits = resolve_limits(settings, _free_at_first_enable, host_backed)" in source
    assert "torch.cuda.set_device(settings.device)" in source
