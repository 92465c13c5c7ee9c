"""Two lower bounds on a training step under a GPU memory budget, from a bench/train.py record, and
the run's ratio to each.

The bytes that must move per step (bench/physical_limit.py required_bytes): the part of the bytes
one iteration touches that does not fit in the capacity comes in, min_h2d = touched - capacity, and
its dirty part goes out, min_d2h = dirty_fraction x min_h2d (default 1: training writes parameters,
gradients and optimizer state every step). Both bounds overlap the link with the computation, whose
time is the in-memory step (step_s_median of mode none on the same workload; 0 when unknown, and
the bound is then the link's alone):

- UVM-path bound: the driver runs one migration at a time, so the two directions take turns at the
  calibrated managed-memory rates (prefetch in, eviction out; deepum/offline/calibrations/), or at
  the rates bench/migration_probe.py measured on the machine itself (uvm_link):
      max(compute, min_h2d / uvm_h2d + min_d2h / uvm_d2h)
- pinned-copy bound: copies between pinned host memory and the GPU run both directions at once,
  at the rates bench/pinned_copy_probe.py measures:
      max(compute, min_h2d / pinned_h2d, min_d2h / pinned_d2h)

Sizes in bytes, rates in bytes per second, times in seconds.

    python bench/bounds.py RECORD.json [RECORD.json ...] [--pinned-rates PROBE.json] [--uvm-rates PROBE.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from physical_limit import Link, required_bytes  # noqa: E402

from deepum.offline.calibration import DEFAULT_CALIBRATION  # noqa: E402

PINNED_PROBE = HERE / "results" / "gpu_check" / "pinned_copy_probe.json"
"""Where the measured pinned-copy rates are committed (bench/pinned_copy_probe.py's record)."""


def pinned_link(path: str | Path | None = PINNED_PROBE) -> Link | None:
    """The pinned-copy rates of each direction while both run at once, from a pinned_copy_probe.py
    record; None when the record does not exist (not measured yet)."""
    if path is None or not Path(path).exists():
        return None
    probe = json.loads(Path(path).read_text())
    return Link(probe["both_h2d_bytes_per_s"], probe["both_d2h_bytes_per_s"])


UVM_CALL_MIB = 16
"""Default migration call size whose measured rates the UVM-path bound takes from a migration probe's
record: the probe's size nearest the engine's calls (docs/results.md)."""


def uvm_link(probe: str | Path | None = None, call_mib: int = UVM_CALL_MIB,
             calibration: str | Path = DEFAULT_CALIBRATION) -> Link:
    """The managed-memory rates of the UVM-path bound: the calibration's, or, with `probe`, a
    bench/migration_probe.py record's for calls of `call_mib` MiB, each direction alone (ValueError
    when the record has no such size)."""
    if probe is None:
        return Link.from_calibration(calibration)
    rows = json.loads(Path(probe).read_text())["by_call_mib"]
    row = rows.get(str(call_mib))
    if row is None:
        raise ValueError(f"{probe} has no migration rates for {call_mib} MiB calls (it has {', '.join(rows)})")
    return Link(row["in_GBps"] * 1e9, row["out_GBps"] * 1e9)


def uvm_source(probe: str | Path | None = None, calibration: str | Path = DEFAULT_CALIBRATION) -> str:
    """Where uvm_link(probe, ..., calibration) takes its rates from, as the records name it."""
    return str(probe) if probe is not None else f"calibration {calibration}"


def uvm_path_s(h2d_bytes: float, d2h_bytes: float, compute_s: float, uvm: Link) -> float:
    """Seconds: one migration at a time in either direction, overlapped with compute."""
    return max(compute_s, h2d_bytes / uvm.h2d_bytes_per_s + d2h_bytes / uvm.d2h_bytes_per_s)


def pinned_copy_s(h2d_bytes: float, d2h_bytes: float, compute_s: float, pinned: Link) -> float:
    """Seconds: both directions at once, overlapped with compute."""
    return max(compute_s, h2d_bytes / pinned.h2d_bytes_per_s, d2h_bytes / pinned.d2h_bytes_per_s)


def _ratio(step_s: float | None, bound_s: float | None) -> float | None:
    return step_s / bound_s if step_s is not None and bound_s else None


def record_bounds(record: dict, in_memory_step_s: float | None, uvm: Link, pinned: Link | None,
                  dirty_fraction: float = 1.0, uvm_rates: str = uvm_source()) -> dict | None:
    """The "bounds" entry of a successful record: the bytes that must move, both bounds and the
    record's step_s_median over each; uvm_rates names where `uvm` came from. A record without a
    budget (capacity_bytes None, mode none) must move nothing. None when the record has no
    footprint_bytes (nothing to compare)."""
    touched = record.get("footprint_bytes")
    if touched is None:
        return None
    capacity = record.get("capacity_bytes")
    h2d, d2h = required_bytes(touched, touched if capacity is None else capacity, dirty_fraction)
    compute = in_memory_step_s or 0.0
    uvm_s = uvm_path_s(h2d, d2h, compute, uvm)
    pinned_s = pinned_copy_s(h2d, d2h, compute, pinned) if pinned else None
    step = record.get("step_s_median")
    return {
        "min_h2d_bytes": h2d, "min_d2h_bytes": d2h, "dirty_fraction": dirty_fraction,
        "in_memory_step_s": in_memory_step_s,
        "uvm_rates": uvm_rates, "uvm_h2d_bytes_per_s": uvm.h2d_bytes_per_s, "uvm_d2h_bytes_per_s": uvm.d2h_bytes_per_s,
        "pinned_h2d_bytes_per_s": pinned.h2d_bytes_per_s if pinned else None,
        "pinned_d2h_bytes_per_s": pinned.d2h_bytes_per_s if pinned else None,
        "uvm_path_s": uvm_s, "pinned_copy_s": pinned_s,
        "step_over_uvm_path": _ratio(step, uvm_s), "step_over_pinned_copy": _ratio(step, pinned_s),
    }


def in_memory_step(records: list[dict], workload_id: str) -> float | None:
    """step_s_median of the successful mode-none record of the workload, or None."""
    return next((r["step_s_median"] for r in records if r.get("status") == "ok" and r.get("mode") == "none"
                 and r.get("workload_id") == workload_id), None)


def annotate(records: list[dict], uvm: Link, pinned: Link | None, dirty_fraction: float = 1.0,
             uvm_rates: str = uvm_source()) -> list[dict]:
    """Copies of the records, each successful one given a "bounds" entry where it has none, or one
    without an in-memory step, that step taken from the mode-none record of its workload. Records
    written before records had bounds thus read like new ones."""
    out = []
    for record in records:
        record = dict(record)
        if record.get("status") == "ok" and (record.get("bounds") or {}).get("in_memory_step_s") is None:
            record["bounds"] = record_bounds(record, in_memory_step(records, record["workload_id"]), uvm, pinned,
                                             dirty_fraction, uvm_rates)
        out.append(record)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="bench/train.py records (mode none among them "
                                                              "gives the in-memory step)")
    parser.add_argument("--calibration", default=DEFAULT_CALIBRATION, help="UVM rates: bundled name or JSON file")
    parser.add_argument("--uvm-rates", type=Path, default=None, metavar="PROBE",
                        help="UVM rates from a bench/migration_probe.py record instead of the calibration")
    parser.add_argument("--uvm-call-mib", type=int, default=UVM_CALL_MIB,
                        help="the probe's call size whose rates are taken (default %(default)s)")
    parser.add_argument("--pinned-rates", type=Path, default=PINNED_PROBE,
                        help="pinned_copy_probe.py record (default: %(default)s)")
    parser.add_argument("--dirty-fraction", type=float, default=1.0, help="share of the bytes out that are dirty")
    args = parser.parse_args(argv)
    records = [dict(json.loads(path.read_text()), path=str(path)) for path in args.records]
    try:
        uvm = uvm_link(args.uvm_rates, args.uvm_call_mib, args.calibration)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--uvm-rates: {exc}")
    annotated = annotate(records, uvm, pinned_link(args.pinned_rates), args.dirty_fraction,
                         uvm_source(args.uvm_rates, args.calibration))
    for record in annotated:
        bounds = record.get("bounds") or {}
        figures = {key: bounds.get(key) for key in ("uvm_path_s", "pinned_copy_s", "step_over_uvm_path",
                                                    "step_over_pinned_copy", "in_memory_step_s")}
        print(record["path"], record.get("mode"), json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
