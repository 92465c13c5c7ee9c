"""Where this process sits in a torch.distributed job started by a launcher such as torchrun: its
rank among all processes, its rank on this machine, and which GPU that gives it.

torchrun (torch.distributed.run) sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE in every
worker's environment; LOCAL_RANK is the mark of a launched worker. The device rule is the usual one
of such jobs: local rank r uses GPU r modulo the number of GPUs, so that with more processes than
GPUs several processes share one GPU (processes_on_device says how many).
Reads only the environment: importing or calling anything here needs neither torch nor a GPU.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
"""Environment variables a launcher sets in each worker, in the order they are checked."""
MARK = "LOCAL_RANK"
"""The variable whose presence says that this process was started by a launcher."""


@dataclasses.dataclass(frozen=True)
class Placement:
    """This process's place in the job (all counts of processes, ranks from 0).

    rank: its rank among all processes of the job, below world_size.
    world_size: the number of processes of the job, on every machine.
    local_rank: its rank among the processes on this machine, below local_world_size.
    local_world_size: the number of processes of the job on this machine.
    """

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int


def _integer(environ: Mapping[str, str], name: str) -> int:
    """The variable's value as a non-negative integer; ValueError in one line naming it otherwise."""
    text = environ.get(name)
    if text is None:
        raise ValueError(f"bad launcher environment: {name} is not set, though {MARK} is "
                         f"(a launched worker needs all of {', '.join(RANK_VARIABLES)})")
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"bad launcher environment: {name}={text!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"bad launcher environment: {name}={text!r} is negative")
    return value


def from_environment(environ: Mapping[str, str] | None = None) -> Placement | None:
    """The placement the launcher's variables give (environ: default os.environ); None when
    LOCAL_RANK is not set, i.e. the process was not started by a launcher. ValueError, one line
    naming the variable and its value, for a missing, non-integer or negative value, a size of 0,
    RANK >= WORLD_SIZE or LOCAL_RANK >= LOCAL_WORLD_SIZE."""
    environ = os.environ if environ is None else environ
    if MARK not in environ:
        return None
    rank, world_size, local_rank, local_world_size = (_integer(environ, name) for name in RANK_VARIABLES)
    for name, size in (("WORLD_SIZE", world_size), ("LOCAL_WORLD_SIZE", local_world_size)):
        if size == 0:
            raise ValueError(f"bad launcher environment: {name}=0, a job has at least one process")
    if rank >= world_size:
        raise ValueError(f"bad launcher environment: RANK={rank} is not below WORLD_SIZE={world_size}")
    if local_rank >= local_world_size:
        raise ValueError(f"bad launcher environment: LOCAL_RANK={local_rank} is not below "
                         f"LOCAL_WORLD_SIZE={local_world_size}")
    if local_world_size > world_size:
        raise ValueError(f"bad launcher environment: LOCAL_WORLD_SIZE={local_world_size} is more than "
                         f"WORLD_SIZE={world_size}")
    return Placement(rank, world_size, local_rank, local_world_size)


def _check_count(device_count: int) -> None:
    if device_count < 1:
        raise ValueError(f"no CUDA device to place the process on (the driver sees {device_count})")


def device_for(local_rank: int, device_count: int) -> int:
    """The CUDA device index of the process of local rank `local_rank` on a machine with
    `device_count` devices: local_rank modulo device_count."""
    _check_count(device_count)
    return local_rank % device_count


def processes_on_device(local_rank: int, local_world_size: int, device_count: int) -> int:
    """How many of the machine's local_world_size processes use the device of local rank
    `local_rank` under device_for() (that process included; at least 1)."""
    _check_count(device_count)
    if not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank} is not one of the {local_world_size} local processes")
    # Local ranks d, d + count, d + 2 count, ... below local_world_size share device d.
    full_rounds, remainder = divmod(local_world_size, device_count)
    return full_rounds + (1 if device_for(local_rank, device_count) < remainder else 0)
