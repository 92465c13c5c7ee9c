"""Reading and writing trace files (.npz archives, docs/trace-format.md v1)."""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .trace_format import ARRAY_DTYPES, Trace, TraceError
from .trace_validation import normalize_trace

# First bytes of a zip archive (an .npz), and of an empty one.
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"


def npz_path(path) -> Path:
    """`path` as a Path; TraceError unless it names an .npz file."""
    path = Path(path)
    if path.suffix != ".npz":
        raise TraceError(f"{path}: a trace file name must end with .npz")
    return path


def _decode_meta(value: np.ndarray) -> dict:
    if value.ndim != 0 or value.dtype.kind != "U":
        raise TraceError(f"meta: must be a 0-d str array, got dtype {value.dtype} shape {value.shape}")
    try:
        meta = json.loads(str(value[()]))
    except ValueError as exc:
        raise TraceError(f"meta: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"meta: must hold a JSON object, got {type(meta).__name__}")
    return meta


def read_trace(path) -> Trace:
    """Load and validate a trace file; arrays come back in their documented dtypes.

    Unknown meta keys are kept; unknown extra arrays in the archive are ignored.
    """
    path = npz_path(path)
    if path.is_dir():
        raise TraceError(f"{path}: a directory, not a trace file")
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    try:
        with open(path, "rb") as file:
            magic = file.read(len(_ZIP_MAGIC))
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    if magic not in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        raise TraceError(f"{path}: not a readable trace (not an .npz archive)")
    try:
        archive = np.load(path, allow_pickle=False)
        if isinstance(archive, np.lib.npyio.NpzFile):
            with archive:
                members = {name: archive[name] for name in ("meta", *ARRAY_DTYPES) if name in archive.files}
    # zipfile raises RuntimeError (NotImplementedError among them) when damage hits a header's flags.
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise TraceError(f"{path}: unreadable trace archive, truncated or corrupt ({exc})") from None
        raise TraceError(f"{path}: unreadable trace archive: a member holds Python objects, which a trace "
                         f"never does") from None
    except MemoryError:
        raise TraceError(f"{path}: unreadable trace archive: a member is too large to load") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError) as exc:
        raise TraceError(f"{path}: unreadable trace archive, truncated or corrupt "
                         f"({type(exc).__name__}: {exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise TraceError(f"{path}: not an .npz archive")
    try:
        if "meta" not in members:
            raise TraceError("meta: required member missing")
        meta = _decode_meta(members.pop("meta"))
        return normalize_trace(Trace(meta=meta, **{name: members.get(name) for name in ARRAY_DTYPES}))
    except TraceError as exc:
        raise TraceError(f"{path}: {exc}") from None


def write_trace(trace: Trace, path, compressed: bool = True) -> None:
    """Validate `trace` and write it to `path` (must end with .npz), replacing any file there at once."""
    path = npz_path(path)
    trace = normalize_trace(trace)
    arrays = {name: getattr(trace, name) for name in ARRAY_DTYPES if getattr(trace, name) is not None}
    save = np.savez_compressed if compressed else np.savez
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as file:
            save(file, meta=np.array(json.dumps(trace.meta)), **arrays)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
