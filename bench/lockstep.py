"""Processes that take turns at their training steps, so that a drift of the shared machine's speed
falls alike on adjacent steps of each.

A conductor (run_in_lockstep) starts the processes, each with its own pair of pipes, and lets them run
one step each in turn while the others wait, the order alternating from step to step (A then B, then B
then A, ...). A process holds its side as a Turns (built from the --turns R,W argument the conductor
adds to its command line) and, for each step, asks for a turn, runs the step, and says it is done:

    conductor                     process
                        <- "w"    ready for its next step
    "g" ->                        runs the step alone
                        <- "d"    done

A round starts once every process is ready, so no step runs beside another's set-up. When a process
exits, the turns end for all: the others' pipes close and their next take() raises LockstepEnded. So
the processes must run the same number of steps; one that runs more fails at its extra step.
"""
from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

READY, GO, DONE = b"w", b"g", b"d"


class LockstepEnded(RuntimeError):
    """The conductor ended the turns (another process exited, or the conductor did)."""


class Turns:
    """A process's side of the turns: the pipe end it reads its turns from, the one it answers on."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    @classmethod
    def parse(cls, text: str) -> "Turns":
        """The Turns of a --turns value "R,W" (two open file descriptors); ValueError naming what is wrong."""
        parts = text.split(",")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f'--turns takes two file descriptors as "R,W", got {text!r}')
        read_fd, write_fd = (int(p) for p in parts)
        for fd in (read_fd, write_fd):
            try:
                os.fstat(fd)
            except OSError:
                raise ValueError(f"--turns names file descriptor {fd}, which is not open") from None
        return cls(read_fd, write_fd)

    def take(self) -> None:
        """Waits for this process's turn at its next step."""
        try:
            os.write(self.write_fd, READY)
            answer = os.read(self.read_fd, 1)
        except BrokenPipeError:
            answer = b""
        if answer != GO:
            raise LockstepEnded("the turns ended before this step (another process in the lockstep exited)")

    def give(self) -> None:
        """Ends this process's turn: its step is done."""
        try:
            os.write(self.write_fd, DONE)
        except BrokenPipeError:
            raise LockstepEnded("the conductor of the turns exited") from None


class _Player:
    """A started process and the conductor's ends of its pipes: `go` gives it turns, `answers` reads
    its requests and completions."""

    def __init__(self, command: list[str], log: Path, env: dict):
        to_child, self.go = os.pipe()
        self.answers, from_child = os.pipe()
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as sink:
            self.process = subprocess.Popen([*command, "--turns", f"{to_child},{from_child}"], stdout=sink,
                                            stderr=subprocess.STDOUT, env=env, pass_fds=(to_child, from_child))
        os.close(to_child)
        os.close(from_child)

    def close(self) -> None:
        for fd in (self.go, self.answers):
            try:
                os.close(fd)
            except OSError:
                pass


def _answer(player: _Player, deadline: float) -> bytes:
    """The player's next byte ("" at its exit), or TimeoutError past the deadline."""
    ready, _, _ = select.select([player.answers], [], [], max(0.0, deadline - time.monotonic()))
    if not ready:
        raise TimeoutError
    return os.read(player.answers, 1)


def _round(order: list[_Player], deadline: float) -> bool:
    """One round: once every player is ready, each runs one step alone, in `order`; False where a
    player has exited instead."""
    if any(_answer(p, deadline) != READY for p in order):
        return False
    for p in order:
        os.write(p.go, GO)
        if _answer(p, deadline) != DONE:
            return False
    return True


def run_in_lockstep(commands: list[list[str]], logs: list[Path], env: dict, timeout: float) -> tuple[list, int]:
    """Runs the commands (each accepts --turns R,W, appended here) in lockstep, each one's output into
    its log; returns each one's exit status (None where the run passed `timeout` seconds and was
    killed, all of them then) and the rounds of turns given."""
    deadline = time.monotonic() + timeout
    players = [_Player(command, log, env) for command, log in zip(commands, logs)]
    rounds, timed_out = 0, False
    try:
        while _round(players if rounds % 2 == 0 else players[::-1], deadline):
            rounds += 1
    except TimeoutError:
        timed_out = True
    except BrokenPipeError:
        pass
    for p in players:
        p.close()
    codes = []
    for p in players:
        try:
            codes.append(None if timed_out else p.process.wait(max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            timed_out = True
            codes.append(None)
    if timed_out:
        for p in players:
            p.process.kill()
            p.process.wait()
        codes = [None] * len(players)
    return codes, rounds
