"""The physical limit of a training step under a GPU memory budget: the least step time the host
link allows, overlapped with computation.

Per step, the part of the working set that does not fit in the capacity must come in over the link
(working_set - capacity bytes, host to GPU), and its dirty part must go out to make room
(dirty_fraction of it, GPU to host); both directions run in parallel with each other and with the
computation, whose time is the in-memory step time. So

    bound = max(compute_s, h2d_bytes / h2d_bytes_per_s, d2h_bytes / d2h_bytes_per_s).

dirty_fraction defaults to 1: training writes parameters, gradients, optimizer state and
activations every step, so every byte evicted in steady state is dirty. The bandwidths are the
calibrated prefetch rates (deepum/offline/calibrations/h200.json).

    python bench/physical_limit.py --working-set 12GiB --capacity 6GiB --compute-ms 150
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modes import BUDGETED_MODES  # noqa: E402  (the script's own folder is first on sys.path)

from deepum.offline.calibration import DEFAULT_CALIBRATION, Calibration  # noqa: E402
from deepum.units import format_bytes, parse_size  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Link:
    """Host-link bandwidths in bytes per second, each direction."""

    h2d_bytes_per_s: float
    d2h_bytes_per_s: float

    def __post_init__(self):
        if self.h2d_bytes_per_s <= 0 or self.d2h_bytes_per_s <= 0:
            raise ValueError(f"link bandwidths must be positive, got {self}")

    @classmethod
    def from_calibration(cls, name_or_path: str | Path = DEFAULT_CALIBRATION) -> "Link":
        """The prefetch (host to GPU) and eviction (GPU to host) rates of a calibration."""
        calibration = Calibration.load(name_or_path)
        return cls(calibration.prefetch_h2d_bytes_per_s, calibration.evict_d2h_bytes_per_s)


def required_bytes(working_set: int, capacity: int, dirty_fraction: float = 1.0) -> tuple[int, int]:
    """(host-to-GPU, GPU-to-host) bytes one step must move at least: the working set beyond the
    capacity comes in, its dirty part goes out."""
    if working_set < 0 or capacity < 0:
        raise ValueError(f"working set and capacity must not be negative, got {working_set}, {capacity}")
    if not 0.0 <= dirty_fraction <= 1.0:
        raise ValueError(f"dirty_fraction must be in [0, 1], got {dirty_fraction}")
    excess = max(0, working_set - capacity)
    return excess, round(excess * dirty_fraction)


def step_bound(compute_s: float, working_set: int, capacity: int, link: Link, dirty_fraction: float = 1.0) -> float:
    """The least step time in seconds: the computation and both link directions overlapped."""
    if compute_s < 0:
        raise ValueError(f"compute time must not be negative, got {compute_s}")
    h2d, d2h = required_bytes(working_set, capacity, dirty_fraction)
    return max(compute_s, h2d / link.h2d_bytes_per_s, d2h / link.d2h_bytes_per_s)


def _reference(group: list[dict]) -> tuple[float | None, int | None]:
    """(in-memory step time, working set) of one workload's records: the step time of mode none; the
    bytes one iteration touches, measured by the unbudgeted deepum run, else mode none's peak."""
    def unbudgeted(mode):
        return next((r for r in group if r["mode"] == mode and r.get("budget_fraction") is None), None)

    none, probe = unbudgeted("none"), unbudgeted("deepum")
    compute = none["step_s_median"] if none else None
    source = probe or none
    return compute, source["footprint_bytes"] if source else None


def annotate(records: list[dict], link: Link, dirty_fraction: float = 1.0) -> list[dict]:
    """Copies of the records, each successful one with its physical limit and the ratios of its step
    time to that limit and to the in-memory step time of its workload (records grouped by
    workload_id). The capacity is the budget for UM modes and the peak GPU memory otherwise."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        if record.get("status") == "ok":
            groups.setdefault(record["workload_id"], []).append(record)
    references = {key: _reference(group) for key, group in groups.items()}
    out = []
    for record in records:
        record = dict(record)
        if record.get("status") == "ok":
            compute, working_set = references[record["workload_id"]]
            capacity = record["capacity_bytes"] if record["mode"] in BUDGETED_MODES else record["peak_resident_bytes"]
            record.update(in_memory_step_s=compute, working_set_bytes=working_set,
                          link={"h2d_bytes_per_s": link.h2d_bytes_per_s, "d2h_bytes_per_s": link.d2h_bytes_per_s},
                          dirty_fraction=dirty_fraction)
            if compute is not None and working_set is not None and capacity is not None:
                h2d, d2h = required_bytes(working_set, capacity, dirty_fraction)
                bound = step_bound(compute, working_set, capacity, link, dirty_fraction)
                record.update(physical_limit_s=bound, physical_limit_h2d_bytes=h2d, physical_limit_d2h_bytes=d2h,
                              ratio_to_physical_limit=record["step_s_median"] / bound if bound > 0 else None)
            record["ratio_to_in_memory"] = record["step_s_median"] / compute if compute else None
        out.append(record)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--working-set", required=True, help="bytes one step touches, e.g. 12GiB")
    parser.add_argument("--capacity", required=True, help="GPU memory budget, e.g. 6GiB")
    parser.add_argument("--compute-ms", type=float, required=True, help="in-memory step time (ms)")
    parser.add_argument("--dirty-fraction", type=float, default=1.0, help="share of evicted bytes that are dirty")
    parser.add_argument("--calibration", default=DEFAULT_CALIBRATION, help="bundled name or JSON file (default h200)")
    args = parser.parse_args(argv)
    try:
        working_set, capacity = parse_size(args.working_set), parse_size(args.capacity)
        link = Link.from_calibration(args.calibration)
        h2d, d2h = required_bytes(working_set, capacity, args.dirty_fraction)
        bound = step_bound(args.compute_ms / 1e3, working_set, capacity, link, args.dirty_fraction)
    except ValueError as exc:
        parser.error(str(exc))
    h2d_ms, d2h_ms = h2d / link.h2d_bytes_per_s * 1e3, d2h / link.d2h_bytes_per_s * 1e3
    print(f"in {format_bytes(h2d)} at {link.h2d_bytes_per_s / 1e9:g} GB/s = {h2d_ms:.1f} ms; "
          f"out {format_bytes(d2h)} at {link.d2h_bytes_per_s / 1e9:g} GB/s = {d2h_ms:.1f} ms; "
          f"compute {args.compute_ms:.1f} ms; bound {bound * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
