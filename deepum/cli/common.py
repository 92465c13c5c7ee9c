"""What every subcommand shares: the one-line input error, reading a trace, a capacity, a config and a
calibration from the arguments, and checking output paths (creating their folders) before any work starts."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import tempfile
import textwrap
from pathlib import Path

from ..config import DeepUMConfig, describe_knobs
from ..units import format_bytes, parse_capacity

# The deepum policy's ablation switches: option name -> DeepUMConfig field.
SWITCHES = {"--no-prefetch": "prefetch", "--no-pre-evict": "pre_evict", "--no-invalidate": "invalidate"}


class CLIError(Exception):
    """A problem with the user's input: reported as one line, exit status 2."""


class _Formatter(argparse.HelpFormatter):
    """Keeps the lines of descriptions and epilogs, wrapping each long one under its own indent."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            lead = indent + " " * (len(line) - len(line.lstrip()))
            lines.append(textwrap.fill(line.strip(), width, initial_indent=lead, break_on_hyphens=False,
                                       subsequent_indent=lead + ("    " if lead.strip() == "" and lead else ""))
                         if line.strip() else "")
        return "\n".join(lines)


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (status 2) and help texts kept line by line."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def progress() -> bool:
    """Whether to draw progress bars: only on a terminal (they go to stderr)."""
    return sys.stderr.isatty()


@contextlib.contextmanager
def input_errors(prefix: str = ""):
    """Turns a ValueError raised on the user's input into a CLIError (one line, exit status 2)."""
    try:
        yield
    except ValueError as exc:
        raise CLIError(f"{prefix}{exc}") from exc


def load_trace(path: str):
    from ..offline.trace_io import read_trace

    with input_errors():  # TraceError is a ValueError that names the file, the array and the rule
        return read_trace(path)


def capacity(text: str, trace) -> int:
    """Capacity in bytes from --capacity: bytes, a size like 8GiB, or a fraction of the footprint."""
    footprint = trace.footprint_bytes()
    with input_errors(f"bad --capacity {text!r}: "):
        value = parse_capacity(text, footprint)
    block = int(trace.meta["block_bytes"])
    if value < block:
        raise CLIError(f"bad --capacity {text!r}: {format_bytes(value)} is less than one UM block "
                       f"({format_bytes(block)}); give a size like 8GiB or a fraction of the footprint "
                       f"({format_bytes(footprint)}) in (0, 1]")
    return value


def config(args) -> DeepUMConfig:
    """The DeepUMConfig of --config (or the defaults) with the ablation switches applied."""
    with input_errors():
        loaded = DeepUMConfig.load(args.config) if args.config else DeepUMConfig()
    switches = {field: False for option, field in SWITCHES.items() if getattr(args, field_dest(option), False)}
    return dataclasses.replace(loaded, **switches)


def field_dest(option: str) -> str:
    return option[2:].replace("-", "_")


def refuse_switches(args, policies: str) -> None:
    """CLIError if an ablation switch was given where no deepum policy replays (it would mean nothing)."""
    given = [option for option in SWITCHES if getattr(args, field_dest(option), False)]
    if given:
        raise CLIError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to the deepum policy "
                       f"only, not to {policies}")


def calibration(args):
    from ..offline.calibration import Calibration

    if args.calibration is None:
        return None
    with input_errors():
        return Calibration.load(args.calibration)


def replay_inputs(args):
    """(trace, capacity in bytes, DeepUMConfig, Calibration or None) from a replaying command's arguments."""
    trace = load_trace(args.trace)
    return trace, capacity(args.capacity, trace), config(args), calibration(args)


def lookahead_note(config_: DeepUMConfig, trace) -> None:
    """Says on stderr when the lookahead reaches past the trace (the replay looks no further)."""
    if config_.lookahead > trace.num_kernels:
        print(f"deepum: note: lookahead {config_.lookahead} is more than the trace's {trace.num_kernels:,} "
              f"kernels; the replay looks {trace.num_kernels:,} ahead", file=sys.stderr)


def _writable_folder(folder: Path, option: str, given: str) -> None:
    """Creates `folder` (with its parents) if absent and tries a file in it; CLIError naming what
    stands in the way. Trying beats asking for permissions, which say yes to root everywhere."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise CLIError(f"{option} {given}: {existing} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise CLIError(f"{option} {given}: cannot write in {folder}: {exc.strerror or exc}") from exc


def output_file(given: str, option: str = "-o", suffix: str | None = None) -> Path:
    """The Path of an output file, checked before any work: a file name (not a folder) ending with
    `suffix` when one is required, in a folder that exists or is created now and can be written in."""
    path = Path(given)
    if suffix is not None and path.suffix != suffix:
        raise CLIError(f"{option} {given}: must be a {suffix} file")
    if path.is_dir():
        raise CLIError(f"{option} {given}: a folder; give a file name")
    _writable_folder(path.parent, option, given)
    if path.exists():
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            raise CLIError(f"{option} {given}: cannot write the file: {exc.strerror or exc}") from exc
    return path


def output_folder(given: str, option: str = "-o") -> Path:
    """The Path of an output folder, checked before any work: a folder, or a name created now."""
    path = Path(given)
    if path.exists() and not path.is_dir():
        raise CLIError(f"{option} {given}: a file, not a folder; give a folder for the output files")
    _writable_folder(path, option, given)
    return path


def add_capacity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--capacity", required=True, metavar="SIZE",
                   help="GPU memory for UM data: bytes, a size like 8GiB or 512MiB, or a fraction of the "
                        "trace's footprint in (0, 1] like 0.5")


def add_policy_options(p: argparse.ArgumentParser, switches: bool) -> None:
    p.add_argument("--config", metavar="FILE", help="DeepUMConfig JSON (a config object or `deepum tune` output); "
                                                    "its keys are listed below")
    p.add_argument("--calibration", metavar="NAME|FILE",
                   help="cost calibration: a bundled name such as h200 or a JSON file (default: h200)")
    if switches:
        p.add_argument("--no-prefetch", action="store_true", help="deepum policy without correlation prefetch")
        p.add_argument("--no-pre-evict", action="store_true", help="deepum policy without pre-eviction")
        p.add_argument("--no-invalidate", action="store_true", help="deepum policy without invalidation")


def config_epilog() -> str:
    return "DeepUMConfig keys (--config JSON), with default and allowed values:\n" + describe_knobs()
