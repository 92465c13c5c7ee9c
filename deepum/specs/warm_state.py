"""The learned state's byte layout: the readable specification of driver_hooks/state_io.hpp, which the
policy core's save_state and load_state use for a warm start (docs/warm-start.md).

A state is the magic ``DEEPUMWS`` and then 64-bit little-endian words: the format version, the
settings its shape depends on, and the sections of the policy's learners (deepum.specs.policy). Reading
is bounded: a count is checked against the words left before anything is built from it, so a corrupt
file costs at most its own size in memory, and every problem is one ValueError line.
"""
from __future__ import annotations

import struct

MAGIC = b"DEEPUMWS"
VERSION = 5
MAX_BYTES = 1 << 30
"""A larger state is refused unread."""

_WORD = struct.Struct("<Q")
_WORD_LIMIT = 2**64


def fail(why: str):
    raise ValueError(f"bad learned state: {why}")


class StateWriter:
    """Appends words after the magic."""

    def __init__(self):
        self._parts = [MAGIC]

    def word(self, value: int) -> None:
        """An unsigned word, or a signed one (a UM block, -1 for none) in two's complement."""
        self._parts.append(_WORD.pack(value % _WORD_LIMIT))

    def sequence(self, values) -> None:
        """Their number, then each as a word."""
        values = list(values)
        self.word(len(values))
        for value in values:
            self.word(value)

    def bytes(self) -> bytes:
        return b"".join(self._parts)


class StateReader:
    """Reads the words of `data`, checking the header and every count."""

    def __init__(self, data: bytes):
        if len(data) > MAX_BYTES:
            fail(f"it holds {len(data)} bytes, more than the {MAX_BYTES} allowed")
        if not data.startswith(MAGIC):
            fail("it is not a deepum learned state (no DEEPUMWS header)")
        self._data, self._at = memoryview(data), len(MAGIC)

    def word(self) -> int:
        if len(self._data) - self._at < 8:
            fail("it ends early (truncated)")
        (value,) = _WORD.unpack_from(self._data, self._at)
        self._at += 8
        return value

    def signed_word(self) -> int:
        value = self.word()
        return value - _WORD_LIMIT if value >= _WORD_LIMIT // 2 else value

    def block(self) -> int:
        """A UM block number: non-negative."""
        value = self.signed_word()
        if value < 0:
            fail("a UM block number is negative")
        return value

    def count(self, limit: int | None, words_each: int, what: str) -> int:
        """A count of items of at least `words_each` words, at most `limit` (None: any), that the words
        left can hold."""
        n = self.word()
        if limit is not None and n > limit:
            fail(f"it holds more {what} than its settings allow")
        if words_each and n > (len(self._data) - self._at) // 8 // words_each:
            fail("it ends early (truncated)")
        return n

    def expect(self, value: int, what: str) -> None:
        if self.word() != value:
            fail(f"it was saved with another {what}")

    def finish(self) -> None:
        if self._at != len(self._data):
            fail("it has bytes past its end")
