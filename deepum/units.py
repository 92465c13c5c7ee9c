"""Byte sizes: parse "8GiB"-style sizes and capacities given as a fraction of a footprint; print them."""
from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Bytes from an integer or a string like "8GiB", "512 MiB", "1.5e9", "4g"."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"size must not be negative, got {text}")
        return text
    match = _SIZE.match(str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read size {text!r}: use bytes or a unit like 8GiB, 512MiB, 2GB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_capacity(text: str | int | float, footprint_bytes: int) -> int:
    """Capacity in bytes: a fraction of the footprint (a number in (0, 1], e.g. "0.5") or a size ("8GiB")."""
    if isinstance(text, float) or (isinstance(text, str) and re.fullmatch(r"\s*(0?\.[0-9]+|1(\.0*)?)\s*", text)):
        fraction = float(text)
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"capacity fraction must be in (0, 1], got {fraction}")
        return max(1, int(fraction * footprint_bytes))
    capacity = parse_size(text)
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {text!r}")
    return capacity


def format_bytes(n: float) -> str:
    """Human-readable binary size, e.g. 1.50 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
