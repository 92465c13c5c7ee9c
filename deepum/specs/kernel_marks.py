"""A kernel's kind by its name: the readable specification of driver_hooks/kernel_marks.hpp. A kernel is
of a kind (deepum.specs.indexed_kernels, deepum.specs.fill_kernels) when its name, as the launch hook or
the trace gives it (mangled or not), contains one of the kind's marks."""
from __future__ import annotations


def has_mark(name: str | None, marks: tuple[str, ...]) -> bool:
    """Whether `name` contains one of `marks` (False without a name)."""
    return bool(name) and any(mark in name for mark in marks)
