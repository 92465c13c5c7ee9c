"""Cost constants of the host link and the UVM driver, read from a calibration JSON."""
from __future__ import annotations

import dataclasses
import json
import os
from importlib import resources
from pathlib import Path

DEFAULT_CALIBRATION = "h200"
# Keys that describe a calibration without entering the cost model.
DESCRIPTIVE_KEYS = frozenset({"measured", "notes"})
# Costs that may be zero: a launching thread that never holds a kernel back.
MAY_BE_ZERO = frozenset({"launch_cpu_s", "hook_cpu_s"})


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Measured costs (seconds, bytes per second) the simulator charges for data movement."""

    device: str
    prefetch_h2d_bytes_per_s: float
    prefetch_call_cpu_s: float
    evict_d2h_bytes_per_s: float
    demand_fault_read_bytes_per_s: float
    demand_fault_write_bytes_per_s: float
    demand_fault_startup_s: float
    fault_batch_pages: int
    driver_prefetch_threshold: float
    populate_bytes_per_s: float | None = None  # fresh GPU pages for a dead block; None: charged as a prefetch
    host_map_bytes_per_s: float | None = None  # kernels' accesses to host-mapped blocks, each direction at
                                               # once; None: charged as a prefetch
    threaded_evict_d2h_bytes_per_s: float | None = None  # deepum's evictions from its eviction threads
                                                         # (DeepUMConfig.eviction_threads); None: as one at a time
    launch_cpu_s: float = 0.0  # the training framework's CPU time per kernel launch on the launching thread;
                               # 0: launches never hold a kernel back
    hook_cpu_s: float = 0.0    # deepum's launch hook per launch, on the same thread, while it sees launches

    def __post_init__(self):
        for key in ("populate_bytes_per_s", "host_map_bytes_per_s"):
            if getattr(self, key) is None:
                object.__setattr__(self, key, self.prefetch_h2d_bytes_per_s)
        if self.threaded_evict_d2h_bytes_per_s is None:
            object.__setattr__(self, "threaded_evict_d2h_bytes_per_s", self.evict_d2h_bytes_per_s)

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_CALIBRATION) -> "Calibration":
        """Loads a bundled calibration by name (e.g. "h200") or a JSON file by path.

        A bare name (no folder, no .json ending) always means a bundled calibration, never a file of
        that name in the working directory; a file is a Path, or a string with a folder in it
        ("./h200") or ending with .json.

        Every error names the calibration: unreadable or invalid JSON, a missing or unknown key, a
        value that is not a positive number."""
        path = Path(name_or_path)
        text = str(name_or_path)
        if (isinstance(name_or_path, os.PathLike) or text.endswith(".json") or os.sep in text
                or (os.altsep and os.altsep in text)):
            where = f"calibration file {path}"
            try:
                text = path.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"cannot read {where}: {exc}") from exc
        else:
            bundled = resources.files("deepum.offline") / "calibrations" / f"{name_or_path}.json"
            if not bundled.is_file():
                names = sorted(item.name[:-len(".json")] for item in bundled.parent.iterdir()
                               if item.name.endswith(".json"))
                raise ValueError(f"no bundled calibration named {name_or_path!r} (bundled: {', '.join(names)}); "
                                 f"name a calibration file by a path with a folder (./{name_or_path}) or a .json name")
            where = f"bundled calibration {name_or_path}"
            text = bundled.read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where} must hold a JSON object")
        fields = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ValueError(f"{where} lacks {missing}")
        unknown = sorted(set(data) - fields - DESCRIPTIVE_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown keys {unknown}; known keys are {sorted(fields | DESCRIPTIVE_KEYS)}")
        if not isinstance(data["device"], str):
            raise ValueError(f"{where}: device must be a string, got {data['device']!r}")
        # null for a field with a default means the default
        values = {k: v for k, v in data.items() if k in fields and not (v is None and k not in required)}
        for key, value in values.items():
            if key == "device":
                continue
            zero_ok = key in MAY_BE_ZERO
            is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not is_number or not (0 <= value if zero_ok else 0 < value) or not value < float("inf"):
                kind = "a number, zero or more" if zero_ok else "a positive number"
                raise ValueError(f"{where}: {key} must be {kind}, got {value!r}")
        if not isinstance(values["fault_batch_pages"], int) or values["fault_batch_pages"] > 2**31:
            raise ValueError(f"{where}: fault_batch_pages must be a whole number of pages up to 2**31, "
                             f"got {values['fault_batch_pages']!r}")
        if values["driver_prefetch_threshold"] > 1:
            raise ValueError(f"{where}: driver_prefetch_threshold is a fraction of a block in (0, 1], "
                             f"got {values['driver_prefetch_threshold']!r}")
        return cls(**values)
