"""Cost constants of the host link and the UVM driver, read from a calibration JSON."""
from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

DEFAULT_CALIBRATION = "h200"


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

    def __post_init__(self):
        if self.populate_bytes_per_s is None:
            object.__setattr__(self, "populate_bytes_per_s", self.prefetch_h2d_bytes_per_s)

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_CALIBRATION) -> "Calibration":
        """Loads a bundled calibration by name (e.g. "h200") or a JSON file by path."""
        path = Path(name_or_path)
        if path.suffix == ".json" or path.exists():
            try:
                text = path.read_text()
            except OSError as exc:
                raise ValueError(f"cannot read calibration file {path}: {exc}") from exc
        else:
            bundled = resources.files("deepum.offline") / "calibrations" / f"{name_or_path}.json"
            if not bundled.is_file():
                raise ValueError(f"no bundled calibration named {name_or_path!r} and no such file")
            text = bundled.read_text()
        data = json.loads(text)
        fields = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ValueError(f"calibration {name_or_path} lacks {missing}")
        # null for a field with a default means the default
        values = {k: v for k, v in data.items() if k in fields and not (v is None and k not in required)}
        for key, value in values.items():
            if key != "device" and (not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"calibration {name_or_path}: {key} must be a positive number, got {value!r}")
        return cls(**values)
