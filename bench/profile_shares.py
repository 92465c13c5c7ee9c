"""Shares of a py-spy raw profile (`py-spy record --native --format raw`): of the samples taken inside
the training steps (stacks through bench/train.py's loop, --steps-frame), those inside a function
(--within, default the engine's launch hook), split by the two frames below it and by leaf function.

    python3 bench/profile_shares.py bench/results/hook_under_pressure/call_a/profile_gpt2.txt.gz
    python3 bench/profile_shares.py PROFILE --within Engine::submit -o shares.json

Prints the shares (the --top most sampled of each split); with -o, also writes them as JSON (command,
the profile, sample counts, and each split as [frames, samples] rows, most sampled first). A profile
that cannot be read, holds no py-spy raw line or no sample inside the steps is refused with one line
and exit status 2, as is one with no sample inside --within.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import shlex
import sys
from pathlib import Path


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="py-spy raw profile, plain or gzip-compressed (.gz)")
    parser.add_argument("--within", default="Engine::on_launch",
                        help="the function whose samples are split (a substring of its frame; default %(default)s)")
    parser.add_argument("--steps-frame", default="timed_steps",
                        help="a frame every sample inside the training steps passes through (default %(default)s)")
    parser.add_argument("--top", type=int, default=40, help="rows printed of each split (1 to 1000, default 40)")
    parser.add_argument("-o", "--output", type=Path, default=None, help="also write the shares as JSON here")
    args = parser.parse_args(argv)
    if not 1 <= args.top <= 1000:
        parser.error("--top must be from 1 to 1000")
    if not args.within.strip() or not args.steps_frame.strip():
        parser.error("--within and --steps-frame must name a frame")
    return args


def frame_name(frame: str) -> str:
    """The function of a py-spy frame, without its "(file:line)" or "(library)"."""
    return re.sub(r" \(.*\)$", "", frame)


def raw_lines(path: Path):
    """The profile's lines (gzip-compressed where the name ends with .gz)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as lines:
        yield from lines


def shares(lines, within: str, steps_frame: str) -> dict:
    """Sample counts: all, inside the steps, inside `within`; and Counters of the samples inside it by
    the two frames below it ("below") and by leaf function ("leaves"). Raises ValueError on a line that
    is not "stack count"."""
    total = in_steps = inside = 0
    below, leaves = collections.Counter(), collections.Counter()
    for number, line in enumerate(lines, 1):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {number} is not a py-spy raw sample (frames;... count)")
        samples, frames = int(count), stack.split(";")
        total += samples
        if not any(steps_frame in f for f in frames):
            continue
        in_steps += samples
        at = next((i for i, f in enumerate(frames) if within in f), None)
        if at is None:
            continue
        inside += samples
        first = frame_name(frames[at + 1]) if at + 1 < len(frames) else "<self>"
        second = frame_name(frames[at + 2]) if at + 2 < len(frames) else ""
        below[(first[:80], second[:70])] += samples
        leaves[frame_name(frames[-1])[:100]] += samples
    return {"samples": total, "in_steps": in_steps, "inside": inside, "below": below, "leaves": leaves}


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        found = shares(raw_lines(args.profile), args.within, args.steps_frame)
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        print(f"profile_shares.py: cannot read {args.profile}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"profile_shares.py: {args.profile}: {exc}", file=sys.stderr)
        return 2
    if not found["in_steps"]:
        print(f"profile_shares.py: {args.profile}: no sample passes through {args.steps_frame!r}", file=sys.stderr)
        return 2
    if not found["inside"]:
        print(f"profile_shares.py: {args.profile}: no sample inside the steps passes through {args.within!r}",
              file=sys.stderr)
        return 2
    inside, within = found["inside"], args.within
    print("samples", found["samples"], "in steps", found["in_steps"], f"in {within}", inside,
          f"{inside / found['in_steps']:.1%}")
    for title, counter in ((f"--- below {within}", found["below"]), (f"--- leaves in {within}", found["leaves"])):
        print(title)
        for key, samples in counter.most_common(args.top):
            print(f"{samples / inside:6.1%}", key)
    if args.output is not None:
        record = {
            "command": "python3 bench/profile_shares.py " + shlex.join(sys.argv[1:] if argv is None else argv),
            "profile": str(args.profile), "within": within, "steps_frame": args.steps_frame,
            "samples": found["samples"], "in_steps": found["in_steps"], "inside": inside,
            "below": [[list(key), n] for key, n in found["below"].most_common()],
            "leaves": [[key, n] for key, n in found["leaves"].most_common()],
        }
        args.output.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
