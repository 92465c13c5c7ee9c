"""The `deepum` command line: run (a training script under deepum on the GPU), and synth, info, replay,
tune, report, demo, record and timeline.

Errors in what the user gave (a bad size, a missing or invalid file, an output that cannot be written)
print one line on stderr and exit with status 2, before any long work starts. Progress bars appear on
stderr when it is a terminal. A reader that stops reading (`deepum demo | head -1`) is not an error:
the command finishes its files and exits quietly.
"""
from __future__ import annotations

import os
import sys

from .. import __version__
from .common import CLIError, Parser

__all__ = ["CLIError", "build_parser", "main"]


def build_parser() -> Parser:
    from . import replays, run, traces

    parser = Parser(
        prog="deepum",
        description="DeepUM correlation prefetching for CUDA Unified Memory: synthesize and inspect traces, "
                    "replay them against the um / advise / deepum / oracle policies, tune the tables, report, "
                    "run an unchanged training script under deepum on a GPU, or record its trace. `deepum COMMAND --help` "
                    "describes each command.")
    parser.add_argument("--version", action="version", version=f"deepum {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    traces.add_synth_info(sub)
    replays.add_parsers(sub)
    traces.add_timeline_record(sub)
    run.add_parser(sub)
    return parser


class _ReaderGone:
    """stdout that stops writing, quietly, once its reader has closed the pipe (`deepum demo | head -1`):
    from then on what is printed goes to the null device, so the command completes its files."""

    def __init__(self, stream):
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.gone = True
        # What the stream still buffers, and any later flush at exit, goes to the null device.
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status (0 ok, 2 bad input, 1 a write that failed, 130
    interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    stdout = sys.stdout
    sys.stdout = guarded = _ReaderGone(stdout)
    try:
        return args.func(args)
    except CLIError as exc:
        print(f"deepum: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write that failed after its path was checked (a full disk, a vanished folder)
        print(f"deepum {args.command}: error: {exc.strerror or exc}"
              + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 1
    except MemoryError:
        print(f"deepum {args.command}: error: out of memory; give a smaller input", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deepum: interrupted", file=sys.stderr)
        return 130
    finally:
        guarded.flush()
        sys.stdout = stdout
