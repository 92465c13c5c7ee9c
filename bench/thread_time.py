"""Where a thread's wall time goes: running, waiting for a CPU, or asleep in the kernel (Linux).

read() takes the calling thread's counters (/proc/thread-self/schedstat and getrusage(RUSAGE_THREAD))
as ThreadTimes; the difference of two readings splits a span of wall time:

- run_s: on a CPU (user_s in user mode, sys_s in the kernel);
- runqueue_s: runnable but waiting for a CPU (other threads took it);
- asleep_s: the rest, neither running nor runnable: blocked in the kernel (a lock, an ioctl, a page
  fault waiting for I/O or for the address space's lock) or in a wait of its own;
- voluntary_switches (the thread blocked), involuntary_switches (preempted), minor_faults.

`python3 bench/thread_time.py --pid P -o OUT.json` prints "ready", then samples every thread of
another process from a SIGUSR1 until a SIGTERM or SIGINT: per thread name, its scheduler states and
the kernel functions it sleeps in (wchan) as counts of samples, and its time on a CPU meanwhile, so
that a thread's asleep_s can be named and the thread that ran meanwhile found (PyTorch runs the
backward pass of CUDA tensors on an autograd thread of its own while the main thread waits). bench/train.py --sample-thread-step
runs it while the main thread issues one step.
"""
from __future__ import annotations

import argparse
import collections
import json
import resource
import signal
import sys
import time
import typing
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")
READY = "ready"
"""What the sampler prints on its standard output once it waits for SIGUSR1."""


class ThreadTimes(typing.NamedTuple):
    """Counters of one thread; the difference of two readings (later - earlier) is a span's share.
    Seconds, counts."""

    wall_s: float
    run_s: float
    runqueue_s: float
    user_s: float
    sys_s: float
    voluntary_switches: int
    involuntary_switches: int
    minor_faults: int

    def __sub__(self, other: "ThreadTimes") -> "ThreadTimes":
        return ThreadTimes(*(a - b for a, b in zip(self, other)))

    def split(self) -> dict:
        """The span's wall time split (seconds) and its counts; asleep_s is the wall time neither
        run nor waited on the run queue (never below 0: the clocks are read a few µs apart)."""
        figures = self._asdict()
        figures["asleep_s"] = max(0.0, self.wall_s - self.run_s - self.runqueue_s)
        return figures


def read() -> ThreadTimes | None:
    """The calling thread's counters now; None where /proc gives no schedstat (not Linux, or the
    kernel built without schedstats)."""
    try:
        run_ns, runqueue_ns = (int(field) for field in SCHEDSTAT.read_text().split()[:2])
    except (OSError, ValueError):
        return None
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return ThreadTimes(time.perf_counter(), run_ns / 1e9, runqueue_ns / 1e9, usage.ru_utime, usage.ru_stime,
                       usage.ru_nvcsw, usage.ru_nivcsw, usage.ru_minflt)


def summarize(spans: list[dict]) -> dict | None:
    """Medians over per-span splits (ThreadTimes.split()), key by key; None for no spans."""
    if not spans:
        return None
    keys = spans[0].keys()
    return {key: sorted(span[key] for span in spans)[len(spans) // 2] for key in keys}


def state_and_wchan(task: Path) -> tuple[str, str]:
    """A thread's scheduler state letter (R, S, D, ...) and the kernel function it waits in ('0' or ''
    where it runs or the kernel hides it)."""
    stat = (task / "stat").read_text()
    state = stat[stat.rindex(")") + 2]
    try:
        wchan = (task / "wchan").read_text().strip()
    except OSError:
        wchan = ""
    return state, wchan


def task_clock(task: Path) -> tuple[float, float]:
    """A thread's time on a CPU and on the run queue so far, seconds (its schedstat)."""
    run_ns, runqueue_ns = (int(field) for field in (task / "schedstat").read_text().split()[:2])
    return run_ns / 1e9, runqueue_ns / 1e9


def thread_label(task: Path, main_tid: int) -> str:
    """A thread's name (its comm), "main" for the process's first thread."""
    return "main" if int(task.name) == main_tid else (task / "comm").read_text().strip()


def sample(pid: int, output: Path, interval_s: float) -> int:
    """Samples every thread of process `pid` every interval_s from SIGUSR1 until SIGTERM/SIGINT or the
    process ends; writes, per thread name (threads of one name pooled), the samples, their scheduler
    states ({letter: n}), the kernel functions slept in ({"S:function": n}) and the time run and
    waited on the run queue between the first and the last sample (seconds), to `output`."""
    tasks = Path(f"/proc/{pid}/task")
    begin, stop = [], []
    signal.signal(signal.SIGUSR1, lambda *_: begin.append(True))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    print(READY, flush=True)
    while not begin and not stop:
        time.sleep(1e-4)
    threads = collections.defaultdict(lambda: {"states": collections.Counter(), "wchan": collections.Counter()})
    first, last, labels = {}, {}, {}
    start = time.perf_counter()
    while not stop:
        try:
            task_list = list(tasks.iterdir())
        except OSError:
            break
        for task in task_list:
            try:
                if task.name not in labels:
                    labels[task.name] = thread_label(task, pid)
                state, wchan = state_and_wchan(task)
                last[task.name] = task_clock(task)
            except (OSError, IndexError, ValueError):
                continue  # the thread ended
            first.setdefault(task.name, last[task.name])
            counts = threads[labels[task.name]]
            counts["states"][state] += 1
            if state != "R":
                counts["wchan"][f"{state}:{wchan or '?'}"] += 1
        if interval_s:
            time.sleep(interval_s)
    seconds = time.perf_counter() - start
    report = {}
    for tid, label in labels.items():
        if tid not in first:
            continue
        entry = report.setdefault(label, {"threads": 0, "samples": sum(threads[label]["states"].values()),
                                          "states": dict(threads[label]["states"]),
                                          "wchan": dict(threads[label]["wchan"].most_common(12)),
                                          "run_s": 0.0, "runqueue_s": 0.0})
        entry["threads"] += 1
        entry["run_s"] += last[tid][0] - first[tid][0]
        entry["runqueue_s"] += last[tid][1] - first[tid][1]
    output.write_text(json.dumps({"pid": pid, "seconds": seconds,
                                  "threads": dict(sorted(report.items(), key=lambda kv: -kv[1]["run_s"]))},
                                 indent=1))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--interval-us", type=float, default=0.0, help="pause between samples (default: none)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if not Path(f"/proc/{args.pid}/task").is_dir():
        parser.error(f"no process {args.pid}")
    return sample(args.pid, args.output, args.interval_us / 1e6)


if __name__ == "__main__":
    sys.exit(main())
