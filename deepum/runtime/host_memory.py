"""How much managed memory the host can back: what going past GPU memory (enable(max_managed_bytes=
"host")) may use. Managed pages evicted from the GPU live in host memory, so the host must be able to
hold them without the kernel's out-of-memory killer stepping in.

The available memory is /proc/meminfo's MemAvailable (os.sysconf where there is no /proc), lowered to
what the process's cgroup (v2) still allows when its memory.max is set, as in a container. From it a
margin is kept back for everything else the process and the machine need (the Python heap, pinned
buffers, data loaders, other processes): HOST_MARGIN_FRACTION of the available memory, at least
HOST_MARGIN_MIN."""
from __future__ import annotations

import os
from pathlib import Path

HOST_MARGIN_MIN = 4 << 30
"""The least host memory left for everything but managed memory."""
HOST_MARGIN_FRACTION = 0.1
"""The share of the available host memory left for everything but managed memory (when above HOST_MARGIN_MIN)."""


def meminfo_available(path: str | Path = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes from a meminfo file, or None when it cannot be read."""
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name == "MemAvailable":
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return None


def sysconf_available() -> int | None:
    """Free physical memory in bytes from os.sysconf, or None where it is not offered."""
    try:
        pages, page = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def cgroup_room(proc_cgroup: str | Path = "/proc/self/cgroup",
                cgroup_root: str | Path = "/sys/fs/cgroup") -> int | None:
    """What the process's cgroup v2 and its parents still allow (memory.max - memory.current, the
    least over the levels that set a limit), or None when no level sets one or none can be read."""
    try:
        entries = Path(proc_cgroup).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    relative = next((line[3:] for line in entries if line.startswith("0::")), None)
    if relative is None:
        return None
    root = Path(cgroup_root)
    folder = root / relative.strip().lstrip("/")
    room = None
    while True:
        try:
            limit = (folder / "memory.max").read_text().strip()
            current = int((folder / "memory.current").read_text().strip())
            if limit != "max":
                left = max(0, int(limit) - current)
                room = left if room is None else min(room, left)
        except (OSError, ValueError, UnicodeDecodeError):
            pass
        if folder == root or root not in folder.parents:
            return room
        folder = folder.parent


def available_bytes() -> int:
    """Host memory available now, in bytes (the cgroup's room when smaller); ValueError when the
    host does not say."""
    available = meminfo_available()
    if available is None:
        available = sysconf_available()
    if available is None:
        raise ValueError("cannot tell how much host memory is available (no /proc/meminfo MemAvailable, no "
                         "os.sysconf SC_AVPHYS_PAGES): give max_managed_bytes as a size with oversubscribe=True")
    room = cgroup_room()
    return available if room is None else min(available, room)


def margin(available: int) -> int:
    """Host memory kept back from managed memory: HOST_MARGIN_FRACTION of `available`, at least HOST_MARGIN_MIN."""
    return max(HOST_MARGIN_MIN, int(available * HOST_MARGIN_FRACTION))


def host_backed_bytes(available: int | None = None) -> int:
    """The most managed memory the host can back: the available host memory less the margin (0 when
    the margin takes it all). `available` defaults to available_bytes()."""
    if available is None:
        available = available_bytes()
    return max(0, available - margin(available))
