"""bench/bounds.py: the UVM-path and pinned-copy bounds of a training step, on hand-computed records."""
import json
import sys
from pathlib import Path

import pytest

import deepum  # noqa: F401  (the installed package first: the bench scripts put the checkout on sys.path)

BENCH = Path(__file__).resolve().parent.parent / "bench"
_saved_path = list(sys.path)
sys.path.insert(0, str(BENCH))
import bounds  # noqa: E402
from physical_limit import Link  # noqa: E402

sys.path[:] = _saved_path

UVM = Link(h2d_bytes_per_s=50e9, d2h_bytes_per_s=14e9)
PINNED = Link(h2d_bytes_per_s=70e9, d2h_bytes_per_s=35e9)
WORKLOAD = "gpt2 layers=24"


def budgeted(step_s=1.28, touched=17_000_000_000, capacity=10_000_000_000, **extra):
    return {"status": "ok", "workload_id": WORKLOAD, "mode": "deepum", "step_s_median": step_s,
            "footprint_bytes": touched, "capacity_bytes": capacity, **extra}


def test_uvm_path_takes_the_directions_in_turn_and_pinned_copy_at_once():
    # 7 GB in and 7 GB out: UVM 7/50 + 7/14 = 0.14 + 0.5 s; pinned max(7/70, 7/35) = 0.2 s
    figures = bounds.record_bounds(budgeted(), 0.05, UVM, PINNED)
    assert (figures["min_h2d_bytes"], figures["min_d2h_bytes"]) == (7_000_000_000, 7_000_000_000)
    assert figures["uvm_path_s"] == pytest.approx(0.64)
    assert figures["pinned_copy_s"] == pytest.approx(0.2)
    assert figures["step_over_uvm_path"] == pytest.approx(2.0)
    assert figures["step_over_pinned_copy"] == pytest.approx(6.4)
    assert figures["in_memory_step_s"] == 0.05


def test_compute_longer_than_the_link_is_the_bound():
    figures = bounds.record_bounds(budgeted(step_s=1.8), 0.9, UVM, PINNED)
    assert figures["uvm_path_s"] == figures["pinned_copy_s"] == 0.9
    assert figures["step_over_uvm_path"] == pytest.approx(2.0)


def test_clean_bytes_need_not_go_out():
    # half the bytes out are dirty: 7/50 + 3.5/14 = 0.39 s; pinned max(0.1, 0.1) s
    figures = bounds.record_bounds(budgeted(), None, UVM, PINNED, dirty_fraction=0.5)
    assert figures["min_d2h_bytes"] == 3_500_000_000
    assert figures["uvm_path_s"] == pytest.approx(0.39)
    assert figures["pinned_copy_s"] == pytest.approx(0.1)
    assert figures["in_memory_step_s"] is None


def test_a_run_that_fits_or_has_no_budget_moves_nothing():
    fits = bounds.record_bounds(budgeted(step_s=0.3, capacity=20_000_000_000), 0.25, UVM, PINNED)
    unbudgeted = bounds.record_bounds(budgeted(step_s=0.3, capacity=None), 0.25, UVM, PINNED)
    for figures in (fits, unbudgeted):
        assert (figures["min_h2d_bytes"], figures["min_d2h_bytes"]) == (0, 0)
        assert figures["uvm_path_s"] == figures["pinned_copy_s"] == 0.25
        assert figures["step_over_uvm_path"] == pytest.approx(1.2)


def test_unmeasured_pinned_rates_or_footprint_give_no_bound():
    figures = bounds.record_bounds(budgeted(), 0.05, UVM, None)
    assert figures["pinned_copy_s"] is None and figures["step_over_pinned_copy"] is None
    assert figures["uvm_path_s"] == pytest.approx(0.64)
    assert bounds.record_bounds(budgeted(touched=None), 0.05, UVM, PINNED) is None


def test_annotate_takes_the_in_memory_step_from_the_workloads_none_record():
    none = {"status": "ok", "workload_id": WORKLOAD, "mode": "none", "step_s_median": 0.8,
            "footprint_bytes": 12_000_000_000, "capacity_bytes": None}
    other = dict(none, workload_id="bert layers=24", step_s_median=5.0)
    old = budgeted()  # written before records had bounds
    linkless = budgeted(bounds=bounds.record_bounds(budgeted(), None, UVM, None))
    failed = {"status": "failed", "workload_id": WORKLOAD, "mode": "um"}
    out = bounds.annotate([other, old, none, linkless, failed], UVM, PINNED)
    assert out[1]["bounds"]["in_memory_step_s"] == 0.8
    assert out[1]["bounds"]["uvm_path_s"] == 0.8       # compute 0.8 s outlasts the link's 0.64 s
    assert out[1]["bounds"]["step_over_uvm_path"] == pytest.approx(1.6)
    assert out[2]["bounds"]["step_over_uvm_path"] == 1.0  # mode none against itself
    assert out[3]["bounds"]["in_memory_step_s"] == 0.8
    assert "bounds" not in out[4] and "bounds" not in old


def test_annotate_keeps_bounds_written_with_an_in_memory_step():
    written = {"in_memory_step_s": 0.3, "uvm_path_s": 0.7}
    out = bounds.annotate([budgeted(bounds=written)], UVM, PINNED)
    assert out[0]["bounds"] is written


def test_pinned_rates_come_from_the_probe_record_of_both_directions_at_once(tmp_path):
    probe = tmp_path / "pinned_copy_probe.json"
    probe.write_text(json.dumps({"alone_h2d_bytes_per_s": 55e9, "alone_d2h_bytes_per_s": 52e9,
                                 "both_h2d_bytes_per_s": 50e9, "both_d2h_bytes_per_s": 45e9}))
    assert bounds.pinned_link(probe) == Link(50e9, 45e9)
    assert bounds.pinned_link(tmp_path / "missing.json") is None
    assert bounds.pinned_link(None) is None


def test_command_line_prints_each_records_bounds(tmp_path, capsys):
    none = tmp_path / "none.json"
    none.write_text(json.dumps({"status": "ok", "workload_id": WORKLOAD, "mode": "none", "step_s_median": 0.5,
                                "footprint_bytes": 1, "capacity_bytes": None}))
    run = tmp_path / "deepum.json"
    run.write_text(json.dumps(budgeted()))
    assert bounds.main([str(none), str(run), "--pinned-rates", str(tmp_path / "missing.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = json.loads(lines[1].split(" deepum ", 1)[1])
    assert figures["in_memory_step_s"] == 0.5
    assert figures["uvm_path_s"] == pytest.approx(0.64)  # the bundled h200 calibration: 50 GB/s in, 14 out
    assert figures["pinned_copy_s"] is None


def migration_probe(tmp_path, rows):
    probe = tmp_path / "migration_probe.json"
    probe.write_text(json.dumps({"by_call_mib": {str(mib): {"in_GBps": gbps_in, "out_GBps": gbps_out}
                                                 for mib, (gbps_in, gbps_out) in rows.items()}}))
    return probe


def test_uvm_rates_come_from_the_calibration_or_a_migration_probe_at_one_call_size(tmp_path):
    probe = migration_probe(tmp_path, {2: (40.0, 10.0), 16: (48.0, 12.5), 64: (50.0, 14.0)})
    assert bounds.uvm_link(probe) == Link(48e9, 12.5e9)  # the default call size
    assert bounds.uvm_link(probe, 64) == Link(50e9, 14e9)
    assert bounds.uvm_link(None) == Link.from_calibration()
    with pytest.raises(ValueError, match="no migration rates for 8 MiB calls"):
        bounds.uvm_link(probe, 8)


def test_command_line_takes_the_probes_rates_and_names_them(tmp_path, capsys):
    run = tmp_path / "deepum.json"
    run.write_text(json.dumps(budgeted()))
    probe = migration_probe(tmp_path, {16: (35.0, 7.0)})
    assert bounds.main([str(run), "--pinned-rates", str(tmp_path / "missing.json"), "--uvm-rates", str(probe)]) == 0
    figures = json.loads(capsys.readouterr().out.split(" deepum ", 1)[1])
    assert figures["uvm_path_s"] == pytest.approx(7 / 35 + 7 / 7)  # 7 GB each way at the probe's rates
    assert bounds.annotate([budgeted()], Link(35e9, 7e9), None, uvm_rates=str(probe))[0]["bounds"]["uvm_rates"] == str(probe)


def test_a_probe_without_the_call_size_is_one_line_and_status_2(tmp_path, capsys):
    run = tmp_path / "deepum.json"
    run.write_text(json.dumps(budgeted()))
    probe = migration_probe(tmp_path, {2: (40.0, 10.0)})
    with pytest.raises(SystemExit) as exit_:
        bounds.main([str(run), "--uvm-rates", str(probe)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--uvm-rates" in err and "no migration rates for 16 MiB calls (it has 2)" in err
