"""Shares of py-spy's native samples, idle ones included (`--idle --format raw`), of the main thread and
of PyTorch's autograd thread (the other thread that waits in torch::autograd::ReadyQueue::pop) by
where each was: waiting for autograd work (ReadyQueue::pop), in deepum's launch hook, in the driver or
CUPTI, else elsewhere (Python and PyTorch); running or waiting (a wait call among the innermost frames).

    python3 wait_shares.py gpt2_overlapped.txt gpt2_synced.txt   (after tar -xzf call_b/native_stacks.tgz)
"""
import collections
import sys

WAIT_CALLS = ("pthread_cond", "futex", "lll_lock", "ioctl", "poll", "nanosleep", "sched_yield", "mutex_lock",
              "epoll", "syscall")


def where(stack: str, frames: list[str]) -> str:
    if any("ReadyQueue::pop" in f for f in frames):
        return "waiting for autograd work"
    waiting = any(call in f for f in frames[-6:] for call in WAIT_CALLS)
    place = ("deepum's launch hook" if any(f.startswith("deepum::") for f in frames) else
             "CUPTI or the driver" if "libcupti" in stack or "libcuda" in stack else "elsewhere")
    return ("waits " if waiting else "runs ") + place


for path in sys.argv[1:]:
    counts, totals = collections.Counter(), collections.Counter()
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        thread, *frames = stack.split(";")
        names = [f.rsplit(" (", 1)[0] for f in frames]
        counts[thread, where(stack, names)] += int(n)
        totals[thread] += int(n)
    print(f"== {path}")
    for thread in totals:
        autograd = counts[thread, "waiting for autograd work"]
        if "MainThread" not in thread and autograd * 2 < totals[thread]:
            continue  # neither the main thread nor the autograd thread
        print(f"  {thread}: {totals[thread]} samples")
        for (t, place), n in sorted(counts.items(), key=lambda item: -item[1]):
            if t == thread:
                print(f"    {n / totals[thread]:6.1%} {place}")
