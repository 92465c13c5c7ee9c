"""Shares of the samples of a py-spy raw profile (native frames) inside the training steps that fall in
the engine's launch hook, split by the two frames below Engine::on_launch and by leaf function.

Usage: python3 profile_shares.py call_a/profile_gpt2.txt.gz
"""
from __future__ import annotations

import collections
import gzip
import re
import sys

HOOK = "Engine::on_launch"
STEPS = "timed_steps"  # bench/train.py's loop over the training steps


def frame_name(frame: str) -> str:
    """The function of a py-spy frame, without its "(file:line)" or "(library)"."""
    return re.sub(r" \(.*\)$", "", frame)


def main(path: str) -> None:
    total = in_steps = in_hook = 0
    below, leaves = collections.Counter(), collections.Counter()
    with gzip.open(path, "rt") as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            samples, frames = int(count), stack.split(";")
            total += samples
            if not any(STEPS in f for f in frames):
                continue
            in_steps += samples
            hook = next((i for i, f in enumerate(frames) if HOOK in f), None)
            if hook is None:
                continue
            in_hook += samples
            first = frame_name(frames[hook + 1]) if hook + 1 < len(frames) else "<self>"
            second = frame_name(frames[hook + 2]) if hook + 2 < len(frames) else ""
            below[(first[:80], second[:70])] += samples
            leaves[frame_name(frames[-1])[:100]] += samples
    print("samples", total, "in steps", in_steps, f"in {HOOK}", in_hook, f"{in_hook / in_steps:.1%}")
    print(f"--- below {HOOK}")
    for frames, samples in below.most_common(40):
        print(f"{samples / in_hook:6.1%}", frames)
    print(f"--- leaves in {HOOK}")
    for leaf, samples in leaves.most_common(30):
        print(f"{samples / in_hook:6.1%}", leaf)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
