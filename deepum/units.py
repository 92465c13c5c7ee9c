"""Byte sizes: parse "8GiB"-style sizes and capacities given as a fraction of a footprint; print them."""
from __future__ import annotations

import math
import re
from fractions import Fraction

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*([+-]?)([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_FRACTION = re.compile(r"\s*(0?\.[0-9]+|1(\.0*)?)\s*")

# The largest size accepted: what a signed 64-bit byte count holds (the native code's sizes), 8 EiB.
MAX_SIZE = 2**63 - 1
_MAX_SIZE_TEXT = "8 EiB"
_HINT = "use bytes or a unit like 8GiB, 512MiB, 2GB"


def _too_large(text) -> ValueError:
    return ValueError(f"size {text!r} is more than {_MAX_SIZE_TEXT}, the largest size accepted")


def _read(text: str | int) -> tuple[Fraction, bool]:
    """(bytes as an exact fraction, whether `text` had a unit); ValueError for what is no size at all,
    is negative or exceeds MAX_SIZE."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"size must not be negative, got {text}")
        if text > MAX_SIZE:
            raise _too_large(text)
        return Fraction(text), False
    match = _SIZE.match(str(text))
    if not match or match.group(3).lower() not in _UNITS:
        raise ValueError(f"cannot read size {text!r}: {_HINT}")
    sign, number, unit = match.groups()
    approximate = float(number) * _UNITS[unit.lower()]  # inf for exponents past the float range
    if not math.isfinite(approximate) or approximate > 2 * MAX_SIZE:
        raise _too_large(text)
    # Exact from here on: the float only bounded the exponent, so that Fraction never builds a huge power.
    value = Fraction(number) * _UNITS[unit.lower()] if approximate > 0 else Fraction(0)
    if sign == "-" and value > 0:
        raise ValueError(f"size must not be negative, got {text!r}")
    if value > MAX_SIZE:
        raise _too_large(text)
    return value, bool(unit)


def parse_size(text: str | int) -> int:
    """Bytes from an integer or a string like "8GiB", "512 MiB", "1.5e9", "4g" (fractions of a byte are
    dropped); ValueError for anything else, for a negative size and for more than MAX_SIZE bytes."""
    return int(_read(text)[0])


def parse_capacity(text: str | int | float, footprint_bytes: int) -> int:
    """Capacity in bytes: a fraction of the footprint (a number in (0, 1], e.g. "0.5") or a size ("8GiB")."""
    if isinstance(text, float) or (isinstance(text, str) and _FRACTION.fullmatch(text)):
        fraction = float(text)
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"capacity fraction must be in (0, 1], got {fraction}")
        return max(1, int(fraction * footprint_bytes))
    try:
        value, has_unit = _read(text)
    except ValueError as exc:
        if "negative" not in str(exc):
            raise
        value, has_unit = Fraction(-1), False
    if value <= 0:
        raise ValueError(f"capacity must be positive: a size like 8GiB or a fraction of the footprint in "
                         f"(0, 1], got {text!r}")
    if not has_unit and value.denominator != 1:
        raise ValueError(f"{text!r} is neither a fraction of the footprint, which lies in (0, 1], nor a whole "
                         f"number of bytes; give a fraction like 0.5 or a size like 8GiB")
    return int(value)


def format_bytes(n: float) -> str:
    """Human-readable binary size, e.g. 1.50 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, in the plural unless n is 1: "1 block", "3 blocks", "2,677 kernels"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
