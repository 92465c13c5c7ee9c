"""Shares of py-spy's native samples (`--format raw`) of the launching threads, by where each sample
was: deepum's launch hook (a CUPTI callback of deepum's on the stack), deepum's allocator hook, CUPTI
outside deepum's callback, else the library of the innermost frame. deepum's own threads are left out;
the main thread apart from the others (PyTorch's autograd thread among them).

    python3 stack_shares.py call_a/gpt2_deepum.txt [...]   (after tar -xzf call_a/native_stacks.tgz)
"""
import collections
import re
import sys


def where(frames: list[str]) -> str:
    stack = ";".join(frames)
    if "on_callback" in stack and "deepum" in stack:
        return "deepum launch hook"
    if "deepum" in stack and ("on_event" in stack or "MemoryMap" in stack or "DiscardEvent" in stack):
        return "deepum allocator hook"
    if "libcupti" in stack:
        return "CUPTI outside deepum's callback"
    found = re.search(r"\(([^()]*?)(?::\d+)?\)$", frames[-1])
    library = found.group(1) if found else frames[-1]
    if "libcuda" in library:
        return "libcuda"
    return "Python" if library.endswith(".py") or "python" in library else library


for path in sys.argv[1:]:
    counts, totals = collections.Counter(), collections.Counter()
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if "deepum" in frames[0]:
            continue
        thread = "main" if "MainThread" in frames[0] else "other"
        counts[thread, where(frames[1:])] += int(n)
        totals[thread] += int(n)
    print(f"== {path}: samples {dict(totals)}")
    for (thread, place), n in sorted(counts.items(), key=lambda item: (item[0][0], -item[1])):
        if n * 50 >= totals[thread]:
            print(f"  {thread:5s} {n / totals[thread]:6.1%}  {place}")
