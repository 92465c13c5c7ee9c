"""The GPU benchmark's pure logic on the CPU: the mode registry, the physical limit, aggregation and
the report from synthetic records, the sweep's orchestration with a stand-in for bench/train.py,
argument errors, and (with torch) every workload training a step at tiny sizes."""
import functools
import gzip
import types
import json
import math
import subprocess
import sys

import pytest

from bench_scripts import BENCH, load, use_stub_train

bench_report, bounds, modes, physical_limit, run_all, bench_train, thread_time, workloads = load(
    "bench_report", "bounds", "modes", "physical_limit", "run_all", "train", "thread_time", "workloads")

GIB = 1 << 30
PNG = b"\x89PNG\r\n\x1a\n"
LINK = physical_limit.Link(h2d_bytes_per_s=50e9, d2h_bytes_per_s=14e9)
PINNED = physical_limit.Link(h2d_bytes_per_s=70e9, d2h_bytes_per_s=35e9)
TINY = {
    "gpt2": ["--layers", "2", "--hidden", "32", "--heads", "4", "--seq", "16", "--batch", "2", "--vocab", "64"],
    "moe": ["--layers", "2", "--hidden", "32", "--heads", "4", "--seq", "16", "--batch", "2", "--vocab", "64"],
    "bert-large": ["--layers", "2", "--hidden", "32", "--heads", "4", "--seq", "16", "--batch", "2", "--vocab", "64"],
    "resnet152": ["--image", "32", "--batch", "2", "--classes", "10"],
    "dlrm": ["--tables", "3", "--rows", "100", "--dim", "8", "--lookups", "4", "--batch", "16",
             "--bottom-mlp", "16", "--top-mlp", "16,8"],
}


# --- the mode registry ----------------------------------------------------------------------------

def test_mode_registry_lists():
    assert modes.SWEEP_MODES == ("none", "save_on_cpu", "um", "advise", "deepum", "deepum-no-pre-evict",
                                 "deepum-no-invalidate", "deepum-lru")
    assert modes.UNBUDGETED_MODES == ("none", "save_on_cpu", "checkpoint", "cpu_offload")
    assert modes.PEER_MODES == ("save_on_cpu", "checkpoint", "cpu_offload")
    assert all(modes.BY_NAME[name].runtime == "none" for name in modes.PEER_MODES)
    assert {"deepum-lru", "deepum-faults"} <= set(modes.BUDGETED_MODES)
    assert set(modes.GPU_MODES) == set(modes.UNBUDGETED_MODES) | set(modes.BUDGETED_MODES)
    assert "oracle" in modes.SIMULATED_MODES and "oracle" not in modes.GPU_MODES
    assert all(modes.BY_NAME[name].runtime == "deepum" for name in modes.ABLATIONS)


# --- physical limit -------------------------------------------------------------------------------

def test_required_bytes():
    assert physical_limit.required_bytes(10 * GIB, 4 * GIB) == (6 * GIB, 6 * GIB)
    assert physical_limit.required_bytes(10 * GIB, 4 * GIB, dirty_fraction=0.5) == (6 * GIB, 3 * GIB)
    assert physical_limit.required_bytes(4 * GIB, 10 * GIB) == (0, 0)


def test_step_bound_takes_the_slowest_of_compute_and_both_directions():
    # 7e9 bytes over the budget: 0.14 s in at 50 GB/s, 0.5 s out at 14 GB/s.
    assert physical_limit.step_bound(0.1, 17_000_000_000, 10_000_000_000, LINK) == pytest.approx(0.5)
    assert physical_limit.step_bound(0.1, 17_000_000_000, 10_000_000_000, LINK, dirty_fraction=0.0) == \
        pytest.approx(0.14)
    assert physical_limit.step_bound(0.9, 17_000_000_000, 10_000_000_000, LINK) == pytest.approx(0.9)
    assert physical_limit.step_bound(0.1, GIB, 2 * GIB, LINK) == 0.1


@pytest.mark.parametrize("call", [
    lambda: physical_limit.required_bytes(-1, 0),
    lambda: physical_limit.required_bytes(1, 0, dirty_fraction=1.5),
    lambda: physical_limit.step_bound(-0.1, 1, 0, LINK),
    lambda: physical_limit.Link(0, 1e9),
])
def test_physical_limit_rejects_bad_input(call):
    with pytest.raises(ValueError):
        call()


def test_link_from_the_bundled_calibration():
    assert physical_limit.Link.from_calibration("h200") == physical_limit.Link(50e9, 14e9)


def test_physical_limit_cli(capsys):
    assert physical_limit.main(["--working-set", "17e9", "--capacity", "10e9", "--compute-ms", "100"]) == 0
    assert "bound 500.0 ms" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        physical_limit.main(["--working-set", "lots", "--capacity", "1GiB", "--compute-ms", "1"])
    assert exc.value.code == 2


# --- synthetic records ----------------------------------------------------------------------------

STEP_S = {  # workload -> mode -> budget -> step time (s); the in-memory step takes 0.1 s.
    "gpt2": {"none": {None: 0.1}, "save_on_cpu": {None: 0.2}, "deepum": {None: 0.11, 1.0: 0.12, 0.5: 0.4},
             "um": {1.0: 0.15, 0.5: 1.6}, "advise": {1.0: 0.14, 0.5: 1.2},
             "deepum-no-pre-evict": {0.5: 0.6}, "deepum-no-invalidate": {0.5: 0.5}},
    "dlrm": {"none": {None: 0.1}, "deepum": {None: 0.1, 0.5: 0.9}, "um": {0.5: 0.9}},
}
WORKING_SET = 10 * GIB


def record(workload, mode, budget, step_s, **extra):
    um = mode not in ("none", "save_on_cpu")
    capacity = int(budget * WORKING_SET) if budget is not None else (80 * GIB if um else None)
    peak = {"none": 11 * GIB, "save_on_cpu": 6 * GIB}.get(mode, min(capacity or 0, WORKING_SET))
    out = {"status": "ok", "run": run_all.run_name(workload, mode, budget), "workload": workload,
           "workload_id": f"{workload} batch=2", "mode": mode, "budget_fraction": budget, "batch": 2,
           "capacity_bytes": capacity, "footprint_bytes": WORKING_SET if um else peak, "peak_resident_bytes": peak,
           "step_s_median": step_s, "step_s_spread": step_s / 10, "samples_per_s": 2 / step_s,
           "faults_per_step": (1000.0 if mode == "um" else 10.0) if um and budget is not None else (0.0 if um else None),
           "h2d_bytes_per_step": GIB if um else None, "d2h_bytes_per_step": GIB if um else None,
           "link_busy_s_per_step": {"h2d": 0.02, "d2h": 0.08} if um else None,
           "prefetch_coverage": 0.9 if mode.startswith("deepum") else (0.0 if um else None),
           "offloaded_bytes_per_step": 2 * GIB if mode == "save_on_cpu" else None,
           "parameter_sha256": "same", "device": "NVIDIA H200", "driver_version": "580.159.04",
           "cuda_version": "13.0", "torch_version": "2.11.0+cu130", "date": "2026-11-23T10:00:00+00:00"}
    out.update(extra)
    return out


@pytest.fixture
def records():
    out = [record(w, m, b, s) for w, modes in STEP_S.items() for m, budgets in modes.items() for b, s in budgets.items()]
    out.append({"status": "timeout", "run": "dlrm_advise_b0.50", "workload": "dlrm", "mode": "advise",
                "budget_fraction": 0.5, "error": "step 0 ...\nstill faulting"})
    return bounds.annotate(physical_limit.annotate(out, LINK), LINK, PINNED)


def find(records, workload, mode, budget):
    return next(r for r in records if r["workload"] == workload and r["mode"] == mode and r["budget_fraction"] == budget)


def test_annotate_adds_the_limit_and_the_ratios(records):
    at_half = find(records, "gpt2", "deepum", 0.5)
    # 5 GiB over the budget: out at 14 GB/s bounds the step.
    assert at_half["physical_limit_s"] == pytest.approx(5 * GIB / 14e9)
    assert at_half["ratio_to_physical_limit"] == pytest.approx(0.4 / (5 * GIB / 14e9))
    assert at_half["ratio_to_in_memory"] == pytest.approx(4.0)
    assert at_half["working_set_bytes"] == WORKING_SET and at_half["in_memory_step_s"] == 0.1
    assert find(records, "gpt2", "deepum", 1.0)["physical_limit_s"] == 0.1          # fits: compute-bound
    assert find(records, "gpt2", "none", None)["ratio_to_physical_limit"] == pytest.approx(1.0)
    offload = find(records, "gpt2", "save_on_cpu", None)                             # its own peak is the capacity
    assert offload["physical_limit_s"] == pytest.approx(4 * GIB / 14e9)
    assert "physical_limit_s" not in find(records, "dlrm", "advise", 0.5)            # failed runs pass through


def test_every_budgeted_mode_is_limited_by_its_budget():
    rows = [record("gpt2", "none", None, 0.1), record("gpt2", "deepum", None, 0.11),
            *(record("gpt2", mode, 0.5, 0.4, peak_resident_bytes=2 * GIB) for mode in modes.BUDGETED_MODES)]
    for row in physical_limit.annotate(rows, LINK)[2:]:
        # 5 GiB beyond the budget of 5 GiB, not 8 GiB beyond the peak resident bytes
        assert row["physical_limit_s"] == pytest.approx(5 * GIB / 14e9), row["mode"]


def test_geomean():
    assert bench_report.geomean([2, 8]) == pytest.approx(4)
    assert bench_report.geomean([None, 3]) == pytest.approx(3)
    assert bench_report.geomean([]) is None and bench_report.geomean([0, None]) is None


def test_headline_ratios(records):
    h = bench_report.headline(records)
    # Oversubscribed pairs: gpt2 at 0.5 (1.6 / 0.4 = 4) and dlrm at 0.5 (0.9 / 0.9 = 1).
    assert h["deepum_speedup_over_um"]["geomean"] == pytest.approx(2.0)
    assert h["deepum_speedup_over_um"]["n"] == 2
    assert h["deepum_vs_in_memory"]["geomean"] == pytest.approx(math.sqrt(4.0 * 9.0))
    assert h["ablation_no_pre_evict"]["geomean"] == pytest.approx(1.5)
    assert h["ablation_no_invalidate"]["geomean"] == pytest.approx(1.25)
    assert h["deepum_overhead_unbudgeted"]["geomean"] == pytest.approx(math.sqrt(1.1 * 1.0))
    assert h["save_on_cpu_vs_in_memory"]["geomean"] == pytest.approx(2.0)
    assert h["deepum_faults_vs_um"]["geomean"] == pytest.approx(0.01)
    assert h["deepum_vs_physical_limit"]["n"] == 2
    assert h["per_budget"]["1.00"]["deepum_speedup_over_um"] == pytest.approx(0.15 / 0.12)
    assert set(h["per_budget"]) == {"1.00", "0.50"}


def test_headline_ratios_to_the_bounds(records):
    h = bench_report.headline(records)
    # deepum at 0.5 on gpt2 (0.4 s) and dlrm (0.9 s), 5 GiB to move each way
    uvm, pinned = 5 * GIB / 50e9 + 5 * GIB / 14e9, 5 * GIB / 35e9
    assert h["deepum_vs_uvm_path_bound"]["geomean"] == pytest.approx(math.sqrt(0.4 * 0.9) / uvm)
    assert h["deepum_vs_pinned_copy_bound"]["geomean"] == pytest.approx(math.sqrt(0.4 * 0.9) / pinned)
    assert h["deepum_vs_uvm_path_bound"]["n"] == h["deepum_vs_pinned_copy_bound"]["n"] == 2
    assert "`deepum_vs_uvm_path_bound`" in bench_report.headline_text(h)


def test_time_split_stacks_compute_link_and_the_rest(records):
    deepum = find(records, "gpt2", "deepum", 0.5)                    # 0.4 s: 0.1 compute, 0.02 in, 0.08 out
    assert bench_report.time_split(deepum) == pytest.approx(
        {"compute": 0.1, "h2d": 0.02, "d2h": 0.08, "other": 0.2, "step": 0.4})
    overlapped = dict(deepum, step_s_median=0.15)                   # the parts overlapped: nothing else
    assert bench_report.time_split(overlapped)["other"] == 0.0
    old = {"step_s_median": 0.3}                                     # a record from before bounds and busy time
    assert bench_report.time_split(old) == {"compute": 0.0, "h2d": 0.0, "d2h": 0.0, "other": 0.3, "step": 0.3}


def test_gpu_split_is_compute_slower_kernels_and_idle_summing_to_the_step(records):
    deepum = find(records, "gpt2", "deepum", 0.5)                    # 0.4 s step, 0.1 s in memory
    assert bench_report.gpu_split(deepum) is None                    # no kernel records
    assert bench_report.gpu_split(dict(deepum, gpu_busy_s_per_step=0.15)) == pytest.approx(
        {"compute": 0.1, "slower_kernels": 0.05, "idle": 0.25})
    fast = dict(deepum, gpu_busy_s_per_step=0.08)                   # less than the in-memory step: all compute
    assert bench_report.gpu_split(fast) == pytest.approx({"compute": 0.08, "slower_kernels": 0.0, "idle": 0.32})
    assert sum(bench_report.gpu_split(dict(deepum, gpu_busy_s_per_step=0.5)).values()) == pytest.approx(0.4)


def test_time_accounting_cuts_the_axis_above_every_run_but_um():
    deepum = {"mode": "deepum", "step_s_median": 0.5, "bounds": {"uvm_path_s": 0.6, "pinned_copy_s": 0.2}}
    um = {"mode": "um", "step_s_median": 4.0}
    assert bench_report.accounting_top([um, deepum]) == pytest.approx(bench_report.CLIP_OVER * 0.6)  # the bound
    assert bench_report.accounting_top([dict(um, step_s_median=0.9), deepum]) is None  # nothing would be cut
    assert bench_report.accounting_top([um]) is None                                   # um alone: fit it
    assert bench_report.accounting_top([um, {"mode": "deepum", "step_s_median": 0.3}]) == pytest.approx(
        bench_report.CLIP_OVER * 0.3)                                                   # a record without bounds


def test_markdown_table(records):
    text = bench_report.markdown(records, "python3 bench/run_all.py --out x")
    assert "GPU NVIDIA H200; driver 580.159.04; CUDA 13.0; PyTorch 2.11.0+cu130" in text
    assert "`python3 bench/run_all.py --out x`" in text
    assert "`deepum_speedup_over_um`: 2.00x (geomean of 2;" in text
    assert "(50 GB/s in, 14 GB/s out" in text and "| gpt2 | unbudgeted | deepum |" in text
    row = next(line for line in text.splitlines() if line.startswith("| gpt2 | 0.50 | deepum |"))
    assert "400.0 (40.0)" in row and "| 4.00x |" in row and "| 90% |" in row and row.endswith("| yes |")
    offload = next(line for line in text.splitlines() if "| save_on_cpu |" in line)
    assert offload.startswith("| gpt2 | own peak (0.60) |") and "| 2.00 GiB | 2.00 GiB |" in offload
    assert "| dlrm_advise_b0.50 | timeout | still faulting |" in text
    rows = [line for line in text.splitlines() if line.startswith("| gpt2 |")]
    assert [r.split("|")[3].strip() for r in rows][:3] == ["none", "save_on_cpu", "deepum"]  # unbudgeted first


def test_write_report(records, tmp_path):
    awake = find(records, "gpt2", "deepum", 0.5)
    records = [dict(r, gpu_busy_s_per_step=0.15) if r is awake else r for r in records]  # one with the GPU's view
    paths = bench_report.write_report(records, tmp_path, "cmd")
    assert {p.name for p in paths} == {"results.json", "results.md", *bench_report.PLOTS}
    for name in bench_report.PLOTS:
        assert (tmp_path / name).read_bytes().startswith(PNG)
    summary = json.loads((tmp_path / "results.json").read_text())
    assert summary["command"] == "cmd" and len(summary["records"]) == len(records)
    assert summary["headline"]["deepum_speedup_over_um"]["geomean"] == pytest.approx(2.0)


def test_report_without_successful_runs(tmp_path):
    failed = [{"status": "failed", "run": "gpt2_um_b0.50", "workload": "gpt2", "mode": "um", "budget_fraction": 0.5,
               "error": "OutOfMemoryError"}]
    paths = bench_report.write_report(failed, tmp_path, "cmd")
    assert [p.name for p in paths] == ["results.json", "results.md"]
    assert "no successful runs" in (tmp_path / "results.md").read_text()


# --- bench/train.py ---------------------------------------------------------------------------------

def test_step_figures_from_per_iteration_rows():
    rows = [{"touched_bytes": t, "gpu_page_faults": f, "fault_h2d_bytes": 100, "prefetch_h2d_bytes": 300,
             "other_h2d_bytes": 0, "d2h_bytes": 200, "prefetch_bytes": 300, "evict_bytes": 200,
             "kernel_prediction_hits": 9, "kernel_prediction_misses": 1, "h2d_link_busy_ns": busy,
             "d2h_link_busy_ns": 2 * busy, "hook_ns": 1000, "worker_evict_ns": 3 * busy, "gpu_busy_ns": busy,
             "launch_driver_ns": busy}
            for t, f, busy in ((900, 50, 9), (1000, 4, 4e8), (1000, 6, 6e8))]
    figures = bench_train.step_figures([3.0, 1.0, 2.0], rows, warmup=1, batch=4, capacity=800)
    assert figures["step_s_median"] == 1.5 and figures["step_s_spread"] == 1.0
    assert figures["samples_per_s"] == pytest.approx(4 / 1.5) and figures["measured_steps"] == 2
    assert figures["footprint_bytes"] == 1000 and figures["faults_per_step"] == 5
    assert figures["faults_by_step"] == [50, 4, 6]
    assert figures["h2d_bytes_per_step"] == 400 and figures["d2h_bytes_per_step"] == 200
    assert figures["prefetch_coverage"] == 0.75 and figures["kernel_prediction_accuracy"] == 0.9
    assert figures["h2d_amplification"] == 2.0                      # 400 bytes in where 200 had to come
    assert figures["link_busy_s_per_step"] == {"h2d": 0.5, "d2h": 1.0} and figures["hook_s_per_step"] == 1e-6
    assert figures["worker_s_per_step"] == {"prefetch": None, "evict": 1.5, "discard": None, "populate": None,
                                            "map": None}           # counters an engine gave, and those it did not
    assert figures["gpu_busy_s_per_step"] == 0.5 and figures["gpu_idle_s_per_step"] == 1.0
    assert figures["launch_driver_s_per_step"] == 0.5
    older = [{key: value for key, value in row.items() if "link_busy" not in key} for row in rows]
    assert bench_train.step_figures([3.0, 1.0, 2.0], older, 1, 4, 800)["link_busy_s_per_step"] == \
        {"h2d": None, "d2h": None}                                   # records of engines without the counters
    asleep = [{**row, "touched_bytes": 0, "gpu_busy_ns": 0} for row in rows]  # no pressure: the engine counted nothing
    slept = bench_train.step_figures([3.0, 1.0, 2.0], asleep, 1, 4, None, managed_peak=1200)
    assert slept["footprint_bytes"] == 1200
    assert slept["gpu_busy_s_per_step"] is None and slept["gpu_idle_s_per_step"] is None  # no kernel records
    on_device = bench_train.step_figures([3.0, 1.0], [], warmup=1, batch=4, capacity=None, managed_peak=1200)
    assert on_device["footprint_bytes"] == 1200 and "faults_per_step" not in on_device  # device memory: no rows
    plain = bench_train.step_figures([3.0, 1.0], [], warmup=1, batch=4, capacity=None)
    assert plain["footprint_bytes"] is None and plain["step_s_spread"] == 0.0


def parse_train(*argv):
    return bench_train.parse_args(["-o", "out.json", *argv])


@pytest.mark.parametrize("footprint", [4000, None])
def test_gpu_check_budgets_from_the_unbudgeted_runs_footprint(footprint, tmp_path, monkeypatch, capsys):
    (gpu_check,) = load("gpu_check")
    ran = []

    def train(mode, out, extra, capacity=None, tag=""):
        ran.append((mode + tag, capacity))
        return {"step_s_median": 1.0, "parameter_sha256": "same", "stats": {"per_iteration": []},
                "footprint_bytes": footprint if tag == "_unbudgeted" else None}

    monkeypatch.setattr(gpu_check, "train", train)
    monkeypatch.setattr(sys, "argv", ["gpu_check.py", "--fraction", "0.5", "--out", str(tmp_path)])
    if footprint is None:  # an engine that reported none: nothing runs under a budget
        assert gpu_check.main() == 1
        assert "reported no footprint" in capsys.readouterr().err and ran == [("none", None), ("deepum_unbudgeted", None)]
        return
    assert gpu_check.main() == 0
    assert ran == [("none", None), ("deepum_unbudgeted", None), ("um", 2000), ("deepum", 2000)]
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert (summary["footprint_bytes"], summary["capacity_bytes"]) == (4000, 2000)


def test_train_keeps_the_gpu_check_call_form():
    args = parse_train("--mode", "um", "--capacity", "8GiB", "--layers", "2", "--hidden", "32", "--heads", "4",
                       "--seq", "8", "--batch", "2", "--steps", "3", "--warmup", "1")
    assert args.workload == "gpt2" and args.capacity == 8 * GIB
    assert workloads.workload_id(args) == "gpt2 batch=2 heads=4 hidden=32 layers=2 seq=8 vocab=50304"
    assert args.record is None
    assert parse_train("--mode", "deepum", "--record", "run.npz").record == "run.npz"


def test_train_takes_the_uvm_rates_of_a_migration_probe(tmp_path):
    probe = tmp_path / "migration_probe.json"
    probe.write_text('{"by_call_mib": {"16": {"in_GBps": 45.0, "out_GBps": 12.0}}}')
    assert parse_train("--uvm-rates", str(probe)).uvm_link == physical_limit.Link(45e9, 12e9)
    assert parse_train().uvm_link == physical_limit.Link.from_calibration()


@pytest.mark.parametrize("mode, switches", [
    ("deepum", dict(prefetch=True, pre_evict=True, invalidate=True)),
    ("deepum-no-pre-evict", dict(prefetch=True, pre_evict=False, invalidate=True)),
    ("deepum-no-invalidate", dict(prefetch=True, pre_evict=True, invalidate=False)),
])
def test_train_modes_map_to_config_switches(mode, switches):
    config = parse_train("--mode", mode).deepum_config
    assert {name: getattr(config, name) for name in switches} == switches
    assert modes.BY_NAME[mode].runtime == "deepum"
    assert parse_train("--mode", mode, "--no-prefetch").deepum_config.prefetch is False


@pytest.mark.parametrize("argv, message", [
    (["--mode", "none", "--capacity", "1GiB"], "runs without a budget"),
    (["--mode", "save_on_cpu", "--capacity", "1GiB"], "runs without a budget"),
    (["--mode", "none", "--record", "run.npz"], "--record needs a unified-memory mode"),
    (["--mode", "save_on_cpu", "--record", "run.npz"], "--record needs a unified-memory mode"),
    (["--mode", "um", "--capacity", "lots"], "bad --capacity"),
    (["--steps", "3", "--warmup", "3"], "at least one step is measured"),
    (["--steps", "0"], "--steps must be at least 1"),
    (["--mode", "magic"], "invalid choice"),
    (["--workload", "resnet152", "--layers", "4"], "--layers not used by workload resnet152"),
    (["--hidden", "100", "--heads", "16"], "--heads 16 must divide --hidden 100"),
    (["--workload", "dlrm", "--top-mlp", "a,b"], "--top-mlp must be positive widths"),
    (["--layers", "0"], "--layers must be a positive integer"),
    (["--mode", "none", "--timeline-step", "1"], "--timeline-step needs a unified-memory mode"),
    (["--steps", "3", "--warmup", "1", "--timeline-step", "3"], "--timeline-step must be in [0, --steps)"),
    (["--steps", "3", "--warmup", "1", "--sample-thread-step", "-1"], "--sample-thread-step must be in [0, --steps)"),
    (["--turns", "3"], 'two file descriptors as "R,W"'),
    (["--turns", "1,x"], 'two file descriptors as "R,W"'),
    (["--turns", "987,988"], "file descriptor 987, which is not open"),
    (["--uvm-rates", "/nonexistent/migration_probe.json"], "--uvm-rates: "),
])
def test_train_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_train(*argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# --- workloads on the CPU (torch) ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(TINY))
def test_workload_trains_one_step_on_cpu(name):
    torch = pytest.importorskip("torch")
    args = parse_train("--workload", name, *TINY[name], "--steps", "2", "--warmup", "1")
    torch.use_deterministic_algorithms(True)
    try:
        workload = workloads.build(torch, args, seed=0)
        run = bench_train.train(torch, args, workload, "cpu")
        digest = bench_train.parameter_digest(workload.model)
        again = workloads.build(torch, args, seed=0)
        bench_train.train(torch, args, again, "cpu")
    finally:
        torch.use_deterministic_algorithms(False)
    assert len(run["step_s"]) == 2 and all(math.isfinite(loss) for loss in run["losses"])
    assert len(run["enqueue_s"]) == 2 and all(0 < e <= s for e, s in zip(run["enqueue_s"], run["step_s"]))
    assert run["offloaded_bytes_per_step"] is None
    for enqueue, split in zip(run["enqueue_s"], run["enqueue_thread"]):  # the enqueue's wall time, split
        assert split["run_s"] + split["runqueue_s"] + split["asleep_s"] == pytest.approx(enqueue, rel=0.2, abs=2e-3)
        assert split["user_s"] + split["sys_s"] <= split["run_s"] + 0.02
    assert bench_train.parameter_digest(again.model) == digest      # same seed, same training: bitwise equal
    batch = workload.make_batch(0)
    assert all(t.device.type == "cpu" for t in batch) and workload.make_batch(2) is batch


# --- bench/thread_time.py ------------------------------------------------------------------------------

def test_thread_times_split_a_span_into_running_and_asleep():
    import time
    before = thread_time.read()
    if before is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    spin_until = time.perf_counter() + 0.05
    while time.perf_counter() < spin_until:
        pass
    time.sleep(0.1)
    split = (thread_time.read() - before).split()
    assert split["run_s"] == pytest.approx(0.05, abs=0.03)          # the spin ran, the sleep did not
    assert split["asleep_s"] + split["runqueue_s"] == pytest.approx(0.1, abs=0.03)
    assert split["voluntary_switches"] >= 1                         # the sleep blocked once at least
    spans = [{"a": 3.0, "b": 1}, {"a": 1.0, "b": 2}, {"a": 2.0, "b": 9}]
    assert thread_time.summarize(spans) == {"a": 2.0, "b": 2} and thread_time.summarize([]) is None


def test_thread_sampler_names_where_each_thread_sleeps_and_what_it_ran(tmp_path):
    import threading
    import time
    if thread_time.read() is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    sampler = bench_train.ThreadSampler(tmp_path / "states.json")
    done = threading.Event()

    def spin():
        while not done.is_set():
            pass

    spinner = threading.Thread(target=spin, name="spinner")
    spinner.start()
    sampler.begin()
    time.sleep(0.3)
    counts = sampler.end()["threads"]
    done.set()
    spinner.join()
    assert not (tmp_path / "states.json").exists()
    main = counts.pop("main")
    spun = max(counts.values(), key=lambda thread: thread["run_s"])  # Python names no OS thread: by its time
    assert main["samples"] > 10 and main["threads"] == 1
    assert main["states"].get("R", 0) < 0.5 * main["samples"]       # mostly asleep or waiting for the GIL
    assert spun["run_s"] > 0.1 and main["run_s"] < spun["run_s"]     # the spinner held the GIL and ran


def test_overlapped_steps_train_alike_and_time_every_step():
    torch = pytest.importorskip("torch")
    args = parse_train(*TINY["gpt2"], "--steps", "3", "--warmup", "1")
    overlapped = parse_train(*TINY["gpt2"], "--steps", "3", "--warmup", "1", "--overlap-steps")
    runs, digests = [], []
    for parsed in (args, overlapped):
        workload = workloads.build(torch, parsed, seed=0)
        runs.append(bench_train.train(torch, parsed, workload, "cpu"))
        digests.append(bench_train.parameter_digest(workload.model))
    synced, issued = runs
    assert digests[0] == digests[1] and issued["losses"] == synced["losses"]
    assert len(issued["step_s"]) == len(issued["enqueue_s"]) == 3
    assert all(0 < e <= s for e, s in zip(issued["enqueue_s"], issued["step_s"]))


@pytest.mark.parametrize("flag", [["--timeline-step", "1"], ["--sample-thread-step", "1"], ["--turns", "3,4"]])
def test_overlapped_steps_refuse_what_needs_steps_separated(flag, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_train("--mode", "deepum", "--steps", "3", "--warmup", "1", "--overlap-steps", *flag)
    assert exc.value.code == 2 and f"{flag[0]} needs them separated" in capsys.readouterr().err


def test_save_on_cpu_counts_offloaded_bytes():
    torch = pytest.importorskip("torch")
    args = parse_train("--mode", "save_on_cpu", *TINY["gpt2"], "--steps", "1", "--warmup", "0")
    run = bench_train.train(torch, args, workloads.build(torch, args), "cpu")
    assert run["offloaded_bytes_per_step"] == 0                    # CPU tensors stay put: nothing crosses a link


def test_resnet152_layout():
    torch = pytest.importorskip("torch")
    with torch.device("meta"):
        model, implementation = workloads.resnet152_model(torch, 1000)
    assert sum(p.numel() for p in model.parameters()) == 60_192_808  # torchvision's ResNet-152
    assert implementation in ("torchvision", "built-in")
    assert [len(getattr(model, f"layer{i}")) for i in range(1, 5)] == list(workloads.RESNET152_BLOCKS)


def test_presets():
    for name, sizes in (("gpt2-l", (36, 1280, 20)), ("gpt2-xl", (48, 1600, 25)), ("bert-large", (24, 1024, 16))):
        args = parse_train("--workload", name)
        _, values = workloads.sizes(args)
        assert (values["layers"], values["hidden"], values["heads"]) == sizes
    _, dlrm = workloads.sizes(parse_train("--workload", "dlrm", "--bottom-mlp", "64,32"))
    assert dlrm["bottom_mlp"] == [64, 32] and dlrm["top_mlp"] == [1024, 512, 256]


# --- bench/run_all.py -------------------------------------------------------------------------------

STUB = """
import argparse, json, os, sys
p = argparse.ArgumentParser()
for flag in ("--workload", "--mode", "-o", "--steps", "--warmup", "--reference"):
    p.add_argument(flag)
p.add_argument("--capacity", type=int)
a, rest = p.parse_known_args()
if a.mode == "advise":
    sys.exit("advise broke")
GIB = 1 << 30
um = a.mode not in ("none", "save_on_cpu")
step = {"none": 0.1, "save_on_cpu": 0.2, "um": 0.8, "deepum": 0.3}.get(a.mode, 0.4)
record = {"status": "ok", "workload": a.workload, "workload_id": a.workload + " " + " ".join(rest), "mode": a.mode,
          "capacity_bytes": a.capacity if um else None, "footprint_bytes": int(os.environ.get("STUB_FOOTPRINT", 4 * GIB)),
          "peak_resident_bytes": 4 * GIB, "gpu_free_bytes_at_start": int(os.environ["STUB_FREE"]),
          "step_s_median": step if a.capacity else 0.1, "faults_per_step": 5.0, "parameter_sha256": "x",
          "device": "stub", "date": "2026-11-23T00:00:00+00:00", "argv": sys.argv[1:]}
json.dump(record, open(a.o, "w"))
"""


@pytest.fixture
def stub_train(tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FREE", str(100 * GIB))
    return use_stub_train(run_all, monkeypatch, tmp_path / "stub_train.py", STUB)


def test_sweep_runs_references_probe_and_budgets(stub_train, tmp_path, capsys):
    out = tmp_path / "results"
    assert run_all.main(["--out", str(out), "--workloads", "gpt2", "--budgets", "1,0.5", "--steps", "3",
                         "--warmup", "1", "--size", "gpt2=--layers 2 --hidden 32 --heads 4"]) == 0
    names = sorted(p.stem for p in out.glob("gpt2_*.json"))
    assert names == sorted(["gpt2_none_full", "gpt2_save_on_cpu_full", "gpt2_deepum_full",
                            *(f"gpt2_{m}_b{b}" for m in ("um", "advise", "deepum") for b in ("1.00", "0.50")),
                            "gpt2_deepum-no-pre-evict_b0.50", "gpt2_deepum-no-invalidate_b0.50", "gpt2_deepum-lru_b0.50"])
    um = json.loads((out / "gpt2_um_b0.50.json").read_text())
    assert um["capacity_bytes"] == 2 * GIB and um["budget_fraction"] == 0.5 and um["status"] == "ok"
    assert um["argv"][um["argv"].index("--layers") + 1] == "2" and "--steps 3" in um["command"]
    assert um["argv"][um["argv"].index("--reference") + 1] == str(out / "gpt2_none_full.json")
    assert "--reference" not in json.loads((out / "gpt2_none_full.json").read_text())["argv"]
    reported = json.loads((out / "results.json").read_text())["records"]
    assert all(r["bounds"]["in_memory_step_s"] == 0.1 for r in reported if r["status"] == "ok")
    advise = json.loads((out / "gpt2_advise_b1.00.json").read_text())
    assert advise["status"] == "failed" and "advise broke" in advise["error"]
    assert (out / "logs" / "gpt2_advise_b1.00.log").exists()
    for name in ("results.json", "results.md", *bench_report.PLOTS):
        assert (out / name).exists()
    assert "`deepum_speedup_over_um`: 2.67x" in capsys.readouterr().out   # 0.8 / 0.3


def test_sweep_takes_the_uvm_rates_of_a_migration_probe(stub_train, tmp_path):
    probe = tmp_path / "migration_probe.json"
    probe.write_text('{"by_call_mib": {"16": {"in_GBps": 40.0, "out_GBps": 10.0}}}')
    out = tmp_path / "results"
    assert run_all.main(["--out", str(out), "--workloads", "dlrm", "--modes", "none,um", "--budgets", "0.5",
                         "--uvm-rates", str(probe)]) == 0
    um = json.loads((out / "dlrm_um_b0.50.json").read_text())
    assert um["argv"][um["argv"].index("--uvm-rates") + 1] == str(probe)
    assert "--uvm-rates" not in json.loads((out / "dlrm_none_full.json").read_text())["argv"]
    reported = {r["run"]: r["bounds"] for r in json.loads((out / "results.json").read_text())["records"]}
    bound = reported["dlrm_um_b0.50"]
    assert (bound["uvm_h2d_bytes_per_s"], bound["uvm_d2h_bytes_per_s"], bound["uvm_rates"]) == (40e9, 10e9, str(probe))
    # 2 GiB in at 40 GB/s and 2 GiB out at 10 GB/s, one at a time, over the 0.1 s in-memory step
    assert bound["uvm_path_s"] == pytest.approx(2 * GIB / 40e9 + 2 * GIB / 10e9)


def test_sweep_resume_keeps_successful_runs(stub_train, tmp_path, capsys):
    argv = ["--out", str(tmp_path), "--workloads", "dlrm", "--modes", "none,um", "--budgets", "0.5"]
    assert run_all.main(argv) == 0
    assert run_all.main([*argv, "--resume"]) == 0
    assert capsys.readouterr().out.count("kept from an earlier sweep") == 3   # none, the probe, um


def test_sweep_skips_budgets_when_the_probe_measured_no_footprint(stub_train, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FOOTPRINT", "0")
    assert run_all.main(["--out", str(tmp_path), "--workloads", "dlrm", "--modes", "none,um", "--budgets", "0.5"]) == 0
    um = json.loads((tmp_path / "dlrm_um_b0.50.json").read_text())
    assert um["status"] == "skipped" and "no footprint: the unbudgeted deepum run reported none" in um["error"]


def test_sweep_skips_unified_memory_runs_above_the_safety_limit(stub_train, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_FREE", str(6 * GIB))    # in-memory peak 4 GiB > half of 6 GiB
    assert run_all.main(["--out", str(tmp_path), "--workloads", "dlrm", "--modes", "none,um"]) == 0
    skipped = json.loads((tmp_path / "dlrm_um_full.json").read_text())
    assert skipped["status"] == "skipped" and "half of the free GPU memory" in skipped["error"]
    assert not (tmp_path / "dlrm_um_b0.50.json").exists()


def test_dry_run_plans_without_running(tmp_path, capsys):
    assert run_all.main(["--out", str(tmp_path), "--dry-run", "--workloads", "resnet152"]) == 0
    out = capsys.readouterr().out
    assert "[resnet152_none_full]" in out and "--capacity '<0.75 x footprint>'" in out
    assert "[resnet152_deepum-no-invalidate_b0.50]" in out and "deepum-no-invalidate_b0.75" not in out
    assert not list(tmp_path.glob("*.json"))


def test_sweep_stops_when_the_native_build_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_all, "PREBUILD", "raise SystemExit('nvcc not found')")
    assert run_all.main(["--out", str(tmp_path), "--workloads", "dlrm"]) == 1
    assert "no unified-memory run can start: nvcc not found" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("argv, message", [
    (["--workloads", "gpt3"], "unknown or no workload"),
    (["--modes", "deepum,fast"], "unknown or no mode"),
    (["--budgets", "1.5"], "fractions in (0, 1]"),
    (["--budgets", "1,0.75", "--ablation-budgets", "0.5"], "must be among --budgets"),
    (["--size", "gpt2"], "WORKLOAD=FLAGS"),
    (["--size", "gpt2=--rows 5"], "--rows not used by workload gpt2"),
    (["--size", "gpt2=--mode um"], "not a sizing flag"),
    (["--steps", "2", "--warmup", "2"], "--warmup"),
    (["--uvm-rates", "/nonexistent/migration_probe.json"], "--uvm-rates: "),
])
def test_run_all_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        run_all.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_report_only_rewrites_the_report_from_records(tmp_path, records, capsys):
    for r in records:
        (tmp_path / f"{r['run']}.json").write_text(json.dumps(r))
    (tmp_path / "gpu_check.json").write_text(json.dumps({"footprint_bytes": 1, "runs": {}}))   # not a run
    assert run_all.main(["--out", str(tmp_path), "--report-only"]) == 0
    assert "`deepum_speedup_over_um`: 2.00x" in (tmp_path / "results.md").read_text()


# --- the in-memory reference, precision and the MoE workload ----------------------------------------

def test_train_reads_the_in_memory_step_of_the_workloads_none_record(tmp_path, capsys):
    sizes = TINY["gpt2"]
    workload_id = workloads.workload_id(parse_train(*sizes))
    reference = tmp_path / "none.json"
    reference.write_text(json.dumps({"mode": "none", "workload_id": workload_id, "step_s_median": 0.25}))
    assert parse_train("--mode", "deepum", *sizes, "--reference", str(reference)).reference_step_s == 0.25
    assert parse_train("--mode", "deepum", *sizes).reference_step_s is None
    for argv, message in ((["--layers", "3", *sizes[2:], "--reference", str(reference)], "it must be mode none of"),
                          ([*sizes, "--reference", str(tmp_path / "missing.json")], "not a bench/train.py record")):
        with pytest.raises(SystemExit):
            parse_train("--mode", "deepum", *argv)
        assert message in capsys.readouterr().err


def test_precision_is_part_of_the_workload_id_and_only_for_transformers(capsys):
    assert "precision" not in workloads.workload_id(parse_train())
    assert workloads.workload_id(parse_train("--precision", "bf16")).endswith(" precision=bf16")
    for argv, message in ((["--workload", "resnet152", "--precision", "bf16"], "applies to the transformers"),
                          (["--workload", "moe", "--experts", "1"], "--experts must be at least 2"),
                          (["--workload", "gpt2", "--experts", "8"], "--experts not used by workload gpt2")):
        with pytest.raises(SystemExit):
            parse_train(*argv)
        assert message in capsys.readouterr().err


def test_device_moments_are_part_of_the_workload_id_and_need_bf16(capsys):
    assert "device_moments" not in workloads.workload_id(parse_train("--precision", "bf16"))
    assert workloads.workload_id(parse_train("--precision", "bf16", "--device-moments", "0.5")).endswith(
        " precision=bf16 device_moments=0.5")
    for argv in (["--device-moments", "0.5"], ["--precision", "bf16", "--device-moments", "1.5"],
                 ["--precision", "bf16", "--device-moments", "-0.25"]):
        with pytest.raises(SystemExit) as exc:
            parse_train(*argv)
        assert exc.value.code == 2
        assert "--device-moments must be in (0, 1] and needs --precision bf16" in capsys.readouterr().err


class _Parameter:
    """A parameter's size as device_moment_parameters and device_moment_bytes read it."""

    def __init__(self, size: int):
        self.size = size

    def numel(self) -> int:
        return self.size // 4

    def element_size(self) -> int:
        return 4


def test_device_moments_take_the_longest_prefix_within_the_fraction_and_bound_its_segments():
    MiB = workloads.MiB
    sizes = [12 * MiB, 4 * MiB, 4096, 512 * 1024, 16 * MiB]   # 32.5 MiB and 4 KiB in all
    params = [_Parameter(size) for size in sizes]
    model = type("Model", (), {"parameters": lambda self: params})()
    total = sum(sizes)
    assert workloads.device_moment_parameters(model, 12 * MiB / total) == params[:1]
    assert workloads.device_moment_parameters(model, (12 * MiB - 1) / total) == []
    assert workloads.device_moment_parameters(model, 0.5) == params[:3]    # 16 MiB 4 KiB; 16.5 MiB > half
    assert workloads.device_moment_parameters(model, 1.0) == params
    # Two moments each: 12 and 4 MiB as they are, 16 MiB too; the small ones (8 KiB and 1 MiB) in one
    # 2 MiB run; one 20 MiB segment more for the tensors under 10 MiB.
    assert workloads.device_moment_bytes(params) == 2 * (12 + 4 + 16) * MiB + 2 * MiB + 20 * MiB
    assert workloads.device_moment_bytes([_Parameter(3 * MiB)]) == 2 * 4 * MiB + 20 * MiB


def test_train_takes_the_device_moments_out_of_the_unified_memory_budget():
    pytest.importorskip("torch")
    sizes = TINY["gpt2"]
    args = parse_train("--mode", "deepum", *sizes, "--precision", "bf16", "--device-moments", "1",
                       "--capacity", "1GiB")
    reserve = bench_train.reserve_device_moments(args, "deepum")
    assert 0 < reserve < 1 << 30 and args.capacity == (1 << 30) - reserve
    none = parse_train(*sizes, "--precision", "bf16", "--device-moments", "1")
    assert bench_train.reserve_device_moments(none, "none") == reserve and none.capacity is None
    assert bench_train.reserve_device_moments(parse_train(*sizes, "--precision", "bf16"), "none") == 0
    small = parse_train("--mode", "deepum", *sizes, "--precision", "bf16", "--device-moments", "1", "--capacity", "1MiB")
    with pytest.raises(SystemExit, match="--device-moments takes"):
        bench_train.reserve_device_moments(small, "deepum")


@pytest.mark.parametrize("name", ["gpt2", "moe", "bert-large"])
def test_bf16_trains_under_autocast_with_fused_adamw(name):
    torch = pytest.importorskip("torch")
    args = parse_train("--workload", name, *TINY[name], "--precision", "bf16", "--steps", "2", "--warmup", "1")
    workload = workloads.build(torch, args, seed=0)
    optimizer = workload.make_optimizer(torch, workload.model)
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["fused"]
    seen = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, inputs, output: seen.append(output.dtype) if isinstance(module, torch.nn.Linear) else None)
    try:
        workload.loss_fn(workload.model, workload.make_batch(0))
    finally:
        handle.remove()
    assert seen and set(seen) == {torch.bfloat16}                  # every linear layer ran in bfloat16
    torch.use_deterministic_algorithms(True)
    try:
        run = bench_train.train(torch, args, workload, "cpu")
        again = workloads.build(torch, args, seed=0)
        bench_train.train(torch, args, again, "cpu")
        fp32 = workloads.build(torch, parse_train("--workload", name, *TINY[name], "--steps", "2", "--warmup", "1"),
                                seed=0)
        bench_train.train(torch, args, fp32, "cpu")
    finally:
        torch.use_deterministic_algorithms(False)
    assert all(math.isfinite(loss) for loss in run["losses"])
    assert all(p.dtype == torch.float32 for p in workload.model.parameters())  # bf16 compute, fp32 state
    assert bench_train.parameter_digest(again.model) == bench_train.parameter_digest(workload.model)
    assert bench_train.parameter_digest(fp32.model) != bench_train.parameter_digest(workload.model)


def test_moe_layer_sums_its_two_best_experts_weighted_by_their_softmax():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = workloads.moe_layer(torch, hidden=8, experts=4)
    x = torch.randn(2, 5, 8)
    every = torch.stack([expert(x) for expert in layer.experts], -2)          # (2, 5, experts, 8)
    scores = layer.router(x)
    best = scores.topk(2, dim=-1)
    expected = (every.gather(-2, best.indices.unsqueeze(-1).expand(-1, -1, -1, 8))
                * best.values.softmax(-1).unsqueeze(-1)).sum(-2)
    out = layer(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out, expected)
    out.sum().backward()
    assert all(p.grad is not None for p in layer.parameters())


def test_moe_replaces_each_feed_forward_layer_with_eight_experts_and_a_router():
    torch = pytest.importorskip("torch")
    moe_args = parse_train("--workload", "moe", *TINY["moe"])
    moe = workloads.build(torch, moe_args).model
    dense = workloads.build(torch, parse_train(*TINY["gpt2"])).model
    mlp = 32 * 128 + 128 + 128 * 32 + 32                                  # one 4x MLP at hidden 32
    extra = sum(p.numel() for p in moe.parameters()) - sum(p.numel() for p in dense.parameters())
    assert extra == 2 * (7 * mlp + 32 * 8)                                # per layer: 7 more experts, a router
    assert workloads.sizes(moe_args)[1]["experts"] == 8 and workloads.MOE_TOP_K == 2


@pytest.mark.parametrize("script, argv, message", [
    ("launch_contention", ["--mib", "16"], "--mib must be at least 32"),
    ("launch_contention", ["--launches", "0"], "--mib must be at least 32"),
    ("launch_contention", ["--repeats", "0"], "--mib must be at least 32"),
    ("launch_contention", ["--kernel-us", "-1"], "--kernel-us in 0..10000"),
    ("launch_contention", ["--kernel-us", "10001"], "--kernel-us in 0..10000"),
    ("launch_contention", ["--modes", "calls,bogus"], "--modes must name some of"),
    ("launch_contention", ["--modes", ""], "--modes must name some of"),
    ("managed_kernel_probe", ["--gib", "0.01"], "--gib must be from 0.0625 to 64"),
    ("managed_kernel_probe", ["--gib", "65"], "--gib must be from 0.0625 to 64"),
    ("managed_kernel_probe", ["--rounds", "0"], "--rounds must be from 1 to 1000"),
    ("managed_kernel_probe", ["--calls", "0"], "--calls from 1 to 10000"),
    ("managed_kernel_probe", ["--repeats", "101"], "--repeats from 1 to 100"),
    ("managed_kernel_probe", ["--matmul", "32"], "--matmul must be from 64 to 16384"),
    ("managed_kernel_probe", ["--gib", "0.0625", "--matmul", "4096"], "its three matrices within --gib"),
    ("optimizer_over_link", ["--models", "gpt2,resnet"], "--models: unknown ['resnet']"),
    ("optimizer_over_link", ["--models", ","], "--models: unknown empty"),
    ("optimizer_over_link", ["--steps", "0"], "--steps must be in [1, 1000]"),
])
def test_probe_refuses_bad_arguments_before_touching_a_gpu(script, argv, message, capsys):
    (probe,) = load(script)
    with pytest.raises(SystemExit) as exc:
        probe.main([*argv, "-o", "x.json"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_optimizer_probe_shapes_hold_the_models_parameter_counts():
    (probe,) = load("optimizer_over_link")
    counts = {name: sum(math.prod(shape) for shape in probe.parameter_shapes(*sizes))
              for name, sizes in probe.MODELS.items()}
    # 24 layers of 12.6 M weights and biases (12 h^2 + 13 h at h = 1024) and the embedding rows
    assert counts == {"bert-large": 24 * (12 * 1024**2 + 13 * 1024) + (30522 + 512 + 2) * 1024 + 2 * 1024,
                      "gpt2": 24 * (12 * 1024**2 + 13 * 1024) + (50257 + 1024) * 1024 + 2 * 1024}
    assert counts["gpt2"] == 354_823_168  # as the GPU record counted them


@pytest.mark.parametrize("argv", [["--mib", "32"], ["--mib", "100"], ["--repeats", "0"]])
def test_duplicates_probe_refuses_bad_sizes_before_touching_a_gpu(argv, capsys):
    (duplicates,) = load("duplicates")
    with pytest.raises(SystemExit) as exc:
        duplicates.main([*argv, "-o", "x.json"])
    assert exc.value.code == 2
    assert "--mib must be a multiple of 64" in capsys.readouterr().err


def test_duplicates_probe_refuses_an_unknown_case(capsys):
    (duplicates,) = load("duplicates")
    with pytest.raises(SystemExit) as exc:
        duplicates.main(["--cases", "migrate,drop", "-o", "x.json"])
    assert exc.value.code == 2
    assert "--cases takes names among migrate" in capsys.readouterr().err


def test_probes_refuse_managed_memory_past_a_quarter_of_the_free_gpu_memory(capsys):
    import argparse
    import types

    (link_paths,) = load("link_paths")
    free_gib = lambda gib: types.SimpleNamespace(cuda=types.SimpleNamespace(mem_get_info=lambda: (gib << 30, 80 << 30)))
    parser = argparse.ArgumentParser()
    link_paths.refuse_past_a_quarter_of_free(parser, 1024, free_gib(4))   # 1 GiB of 4 GiB free: allowed
    with pytest.raises(SystemExit) as exc:
        link_paths.refuse_past_a_quarter_of_free(parser, 1025, free_gib(4))
    assert exc.value.code == 2
    assert "--mib 1025 is more than a quarter of the free 4096 MiB" in capsys.readouterr().err


def test_iteration_overlap_counts_the_exec_ids_iterations_share():
    np = pytest.importorskip("numpy")
    (iteration_overlap,) = load("iteration_overlap")
    exec_ids = np.array([7, 8, 9, 9, 1, 2, 3, 1, 2, 3, 4])
    iteration = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    result = iteration_overlap.overlap(exec_ids, iteration, 3)
    assert result["launches"] == [4, 3, 4]
    assert result["exec_ids"] == [3, 3, 4]                       # 9 launched twice counts once
    assert result["shared"] == [[3, 0, 0], [0, 3, 3], [0, 3, 4]]


@pytest.mark.parametrize("argv, message", [(["--iterations", "1"], "--iterations must be at least 2"),
                                           (["--trace", "no_such.npz"], "no such trace: no_such.npz")])
def test_iteration_overlap_argument_errors(argv, message, capsys):
    (iteration_overlap,) = load("iteration_overlap")
    with pytest.raises(SystemExit) as exc:
        iteration_overlap.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_captured_step_is_saved_with_its_breakdown_and_transfer_runs(tmp_path):
    np = pytest.importorskip("numpy")
    from deepum.runtime import timeline as tl

    rows = [(0, 10, 1, tl.KERNEL, 0), (20, 30, 2, tl.KERNEL, 0), (5, 9, 2 << 20, tl.D2H, 0),
            (9, 14, 2 << 20, tl.D2H, 0), (12, 18, 2 << 20, tl.H2D, 0)]
    start, end, value, kind, detail = (np.array(c, dtype=t) for c, t in
                                       zip(zip(*rows), (np.uint64, np.uint64, np.uint64, np.uint8, np.uint8)))
    captured = tl.StepTimeline(start, end, value, kind, detail)
    entry = bench_train.save_timeline(captured, tmp_path / "run.json", 3, 0.25)
    assert (entry["step"], entry["step_s"], entry["gpu_idle_ns"]) == (3, 0.25, 10)
    assert entry["d2h_runs"] == captured.transfer_runs(tl.D2H) and entry["d2h_runs"]["runs"] == 1
    assert entry["h2d_runs"]["transfers"] == 1 and entry["h2d_runs"]["bytes"] == 2 << 20
    assert (tmp_path / entry["spans"]).is_file() and (tmp_path / entry["plot"]).is_file()


# --- bench/memory_map_cost.py ---------------------------------------------------------------------------

def test_memory_map_cost_replays_a_traces_memory_events(tmp_path):
    (cost,) = load("memory_map_cost")
    segment, block = 1 << 30, 1 << 21
    actions = [2] + [0, 1] * 6                                   # a segment, then six allocations and frees
    addresses = [segment] + [segment + (i // 2) * block for i in range(12)]
    trace = tmp_path / "t.npz"
    np = pytest.importorskip("numpy")
    np.savez(trace, mem_action=np.array(actions, np.int8), mem_address=np.array(addresses, np.uint64),
             mem_bytes=np.array([64 * block] + [block] * 12, np.uint64), iteration_first_kernel=np.array([0, 5, 9]))
    out = tmp_path / "cost.json"
    assert cost.main(["--trace", str(trace), "--repeats", "3", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["events_per_iteration"] == 12 / 3 and record["iterations"] == 3 and record["repeats"] == 3
    assert record["asleep_ns_per_event"] > 0 and record["awake_ns_per_event"] > 0
    assert record["awake_asked_ns_per_event"] > 0 and record["questions_per_s"] >= 0  # starved on a short replay
    assert record["asleep_us_per_iteration"] == pytest.approx(record["asleep_ns_per_event"] * 4 / 1e3)
    assert record["awake_asked_us_per_iteration"] == pytest.approx(record["awake_asked_ns_per_event"] * 4 / 1e3)


@pytest.mark.parametrize("argv, message", [(["--repeats", "0"], "--repeats must be from 1 to 10000"),
                                           (["--trace", "README.md"], "is not a trace with memory events")])
def test_memory_map_cost_refuses_bad_arguments(argv, message, capsys, tmp_path):
    (cost,) = load("memory_map_cost")
    with pytest.raises(SystemExit) as exc:
        cost.main([*argv, "-o", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# --- bench/policy_cost.py -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _small_trace():
    """A four-iteration trace of a two-layer transformer, built once (tests only read it)."""
    from deepum.offline.synth_transformer import synth_transformer
    return synth_transformer(layers=2, hidden=256, heads=4, seq=256, batch=2, vocab=4096, iterations=4)


@pytest.fixture(scope="module")
def small_trace_path(tmp_path_factory):
    """_small_trace() written to a file once for the module."""
    from deepum.offline.trace_io import write_trace
    path = tmp_path_factory.mktemp("trace") / "t.npz"
    write_trace(_small_trace(), path)
    return path


def test_knob_sweep_replays_each_value_against_the_base(small_trace_path, tmp_path, capsys):
    (sweep,) = load("knob_sweep")
    from deepum.config import DeepUMConfig
    from deepum.offline.simulator import simulate
    trace = _small_trace()
    capacity = trace.footprint_bytes() // 2
    out = tmp_path / "sweep.json"
    assert sweep.main(["--trace", str(small_trace_path), "--capacity", str(capacity), "--from-iteration", "1",
                       "--knob", "lookahead=2,64", "--knob", 'eviction="lru"', "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert [row["setting"] for row in record["rows"]] == [None, {"lookahead": 2}, {"lookahead": 64}, {"eviction": "lru"}]
    assert record["rows"][0]["time_vs_base"] == 1.0 and record["capacity_bytes"] == capacity
    lru = simulate(trace, "deepum", capacity, config=DeepUMConfig(eviction="lru"))
    steady = sorted(i["time_s"] for i in lru.per_iteration[1:])  # iterations 1-3 of 4
    assert record["rows"][3]["time_s"] == pytest.approx(steady[1])
    assert record["rows"][3]["time_vs_base"] == pytest.approx(record["rows"][3]["time_s"] / record["rows"][0]["time_s"])
    assert "lookahead=64" in capsys.readouterr().out


@pytest.mark.parametrize("knob, message", [("nosuch=1", "--knob nosuch: not a DeepUMConfig key"),
                                           ("lookahead=0", "--knob lookahead=0: DeepUMConfig.lookahead"),
                                           ("lookahead", "is not KEY=V1,V2,..."), ("lookahead=x", "must be JSON")])
def test_knob_sweep_refuses_a_bad_knob(small_trace_path, tmp_path, capsys, knob, message):
    (sweep,) = load("knob_sweep")
    with pytest.raises(SystemExit) as exc:
        sweep.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--knob", knob, "-o", str(tmp_path / "x")])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_timed_launches_decide_as_launches_one_by_one():
    np = pytest.importorskip("numpy")
    from deepum import _native
    from deepum.config import DeepUMConfig
    from deepum.offline.simulator import kernel_kinds
    trace = _small_trace()
    capacity = max(4, int(np.unique(trace.access_block).size) // 2)
    launch = np.arange(trace.num_kernels)  # some launches indexed, some fills, whatever their names
    kinds = kernel_kinds(trace) | np.where(launch % 7 == 3, 1, 0).astype(np.uint8) | \
        np.where(launch % 5 == 1, 2, 0).astype(np.uint8)
    config = DeepUMConfig(host_map_indexed=True).to_dict()
    timed, stepped = _native.Policy("deepum", capacity, config), _native.Policy("deepum", capacity, config)
    bounds = [0, *(k for k in trace.iteration_first_kernel.tolist() if k > 0), trace.num_kernels]
    times = []
    for first, last in zip(bounds[:-1], bounds[1:]):  # an iteration a call
        if first:
            timed.next_iteration()
        offsets = trace.access_offsets[first:last + 1]
        times.append(timed.time_launches(trace.kernel_exec_id[first:last].astype(np.uint64),
                                         (offsets - offsets[0]).astype(np.int64),
                                         trace.access_block[offsets[0]:offsets[-1]].astype(np.int64),
                                         kinds[first:last], 4096))
    starts = set(bounds[1:-1])
    for k in range(trace.num_kernels):
        if k in starts:
            stepped.next_iteration()
        blocks = trace.access_block[trace.access_offsets[k]:trace.access_offsets[k + 1]].tolist()
        stepped.on_launch(int(trace.kernel_exec_id[k]), blocks, bool(kinds[k] & 1), bool(kinds[k] & 2))
    times = np.concatenate(times)
    assert times.shape == (trace.num_kernels,) and (times >= 0).all()
    assert timed.kernel_hits == stepped.kernel_hits > 0 and timed.kernel_misses == stepped.kernel_misses
    assert timed.resident_blocks == stepped.resident_blocks and timed.peak_resident_blocks == capacity
    assert all(timed.resident(int(b)) == stepped.resident(int(b)) and timed.host_mapped(int(b)) == stepped.host_mapped(int(b))
               for b in np.unique(trace.access_block))
    with pytest.raises(ValueError, match="one more entry"):
        timed.time_launches(trace.kernel_exec_id.astype(np.uint64), trace.access_offsets[:-1].astype(np.int64),
                            trace.access_block.astype(np.int64), kinds, 0)


def test_policy_cost_tells_the_policy_the_traces_memory_events():
    np = pytest.importorskip("numpy")
    (cost,) = load("policy_cost")
    from deepum.offline.trace_format import MEM_ALLOC, MEM_FREE, MEM_SEGMENT_ALLOC, MEM_SEGMENT_FREE

    class Told:
        def __init__(self):
            self.dead, self.absent, self.released = {}, {}, []

        def set_dead(self, number, dead):
            self.dead[number] = dead

        def set_absent(self, number, absent):
            self.absent[number] = absent

        def release(self, number):
            self.released.append(number)

    block = 1 << 21
    segment = 64 * block
    events = [(-1, MEM_SEGMENT_ALLOC, segment, 4 * block),             # blocks 64..67
              (0, MEM_ALLOC, segment, block + block // 2),               # block 64 whole, 65 half
              (0, MEM_ALLOC, segment + 2 * block, block // 4),           # block 66 a quarter
              (1, MEM_FREE, segment, block + block // 2),                # 64 and 65 hold nothing now
              (2, MEM_SEGMENT_FREE, segment, 4 * block)]
    trace = type("Trace", (), {})()
    trace.mem_kernel, trace.mem_action, trace.mem_address, trace.mem_bytes = (
        np.array(column) for column in zip(*events))
    told = Told()
    memory = cost.TraceMemory(trace, told)
    memory.apply_through(-1)
    assert told.absent == {64: False, 65: False, 66: False, 67: False} and not told.dead
    memory.apply_through(0)
    assert told.dead == {64: False, 65: False, 66: False}
    memory.apply_through(1)
    assert told.dead == {64: True, 65: True, 66: False}                  # 66 still holds its allocation
    memory.apply_through(5)
    assert told.absent == {64: True, 65: True, 66: True, 67: True} and told.released == [64, 65, 66, 67]


def test_policy_cost_decides_as_launches_one_by_one_told_the_memory_events():
    np = pytest.importorskip("numpy")
    (cost,) = load("policy_cost")
    from deepum import _native
    from deepum.config import DeepUMConfig
    from deepum.offline.simulator import kernel_kinds
    trace = _small_trace()
    assert trace.mem_action.size > 0
    capacity = max(4, int(np.unique(trace.access_block).size) // 2) * cost.BLOCK_BYTES
    timed = cost.new_policy(capacity, DeepUMConfig())
    times = cost.time_launches(trace, timed, 0)
    stepped = _native.Policy("deepum", capacity // cost.BLOCK_BYTES, DeepUMConfig().to_dict())
    memory, kinds = cost.TraceMemory(trace, stepped), kernel_kinds(trace)
    for k in range(trace.num_kernels):
        memory.apply_through(k - 1)
        if k in trace.iteration_first_kernel.tolist() and k > 0:
            stepped.next_iteration()
        blocks = trace.access_block[trace.access_offsets[k]:trace.access_offsets[k + 1]].tolist()
        stepped.on_launch(int(trace.kernel_exec_id[k]), blocks, bool(kinds[k] & 1), bool(kinds[k] & 2))
    assert times.shape == (trace.num_kernels,)
    assert timed.kernel_hits == stepped.kernel_hits and timed.resident_blocks == stepped.resident_blocks
    assert all(timed.resident(int(b)) == stepped.resident(int(b)) and timed.host_mapped(int(b)) == stepped.host_mapped(int(b))
               for b in np.unique(trace.access_block))
    told_nothing = _native.Policy("deepum", capacity // cost.BLOCK_BYTES, DeepUMConfig().to_dict())
    for k in range(trace.num_kernels):                                  # the events change what it decides
        if k in trace.iteration_first_kernel.tolist() and k > 0:
            told_nothing.next_iteration()
        blocks = trace.access_block[trace.access_offsets[k]:trace.access_offsets[k + 1]].tolist()
        told_nothing.on_launch(int(trace.kernel_exec_id[k]), blocks, bool(kinds[k] & 1), bool(kinds[k] & 2))
    assert any(told_nothing.resident(int(b)) != stepped.resident(int(b)) or
               told_nothing.host_mapped(int(b)) != stepped.host_mapped(int(b)) for b in np.unique(trace.access_block))


def test_policy_cost_tells_each_event_between_the_launches_around_it():
    np = pytest.importorskip("numpy")
    (cost,) = load("policy_cost")

    class Logged:  # what a policy is told, in order: ("launch", k), ("told", number), ("iteration",)
        def __init__(self):
            self.log, self.launched = [], 0

        def time_launches(self, ids, offsets, blocks, kinds, displace):
            self.log += [("launch", self.launched + i) for i in range(len(ids))]
            self.launched += len(ids)
            return np.zeros(len(ids), np.int64)

        def set_dead(self, number, dead):
            self.log.append(("told", number))

        set_absent = set_dead

        def release(self, number):
            self.log.append(("told", number))

        def next_iteration(self):
            self.log.append(("iteration",))

    trace = _small_trace()
    policy = Logged()
    assert cost.time_launches(trace, policy, 0).shape == (trace.num_kernels,)
    launches_before = np.cumsum([entry[0] == "launch" for entry in policy.log])
    told_after = [int(n) for entry, n in zip(policy.log, launches_before) if entry[0] == "told"]
    from deepum.offline.trace_format import MEM_SEGMENT_FREE
    expected = []                        # each event's blocks, after launch mem_kernel and before the next
    for k, action, address, size in zip(trace.mem_kernel, trace.mem_action, trace.mem_address, trace.mem_bytes):
        if size:
            blocks = (int(address) + int(size) - 1 >> 21) - (int(address) >> 21) + 1
            expected += [int(k) + 1] * blocks * (2 if action == MEM_SEGMENT_FREE else 1)  # absent, released
    assert told_after == expected
    iterations_after = [int(n) for entry, n in zip(policy.log, launches_before) if entry[0] == "iteration"]
    assert iterations_after == [k for k in trace.iteration_first_kernel.tolist() if k > 0]


def test_policy_cost_displaces_from_one_kernel_and_stops_before_another():
    np = pytest.importorskip("numpy")
    (cost,) = load("policy_cost")

    class Chunks:  # each time_launches call: (first kernel, kernels, displace)
        def __init__(self):
            self.calls, self.launched, self.hooked_at = [], 0, None

        def time_launches(self, ids, offsets, blocks, kinds, displace):
            self.calls.append((self.launched, len(ids), displace))
            self.launched += len(ids)
            return np.zeros(len(ids), np.int64)

        def set_dead(self, number, dead):
            pass

        set_absent = set_dead

        def release(self, number):
            pass

        def next_iteration(self):
            pass

    trace = _small_trace()
    start, end = int(trace.iteration_first_kernel[1]) + 1, int(trace.iteration_first_kernel[3])
    policy = Chunks()
    hooked = []
    times = cost.time_launches(trace, policy, 4096, displace_from=start, until=end,
                               on_displace=lambda: hooked.append(policy.launched))
    assert times.shape == (end,) and policy.launched == end
    assert hooked == [start]                                         # once, just before the first displaced launch
    for first, count, displace in policy.calls:
        assert displace == (4096 if first >= start else 0) and (first + count <= start or first >= start)


def test_policy_cost_times_a_traces_launches(small_trace_path, tmp_path):
    (cost,) = load("policy_cost")
    trace, out = _small_trace(), tmp_path / "cost.json"
    assert cost.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--displace", "0,64KiB", "--repeats", "3",
                      "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    first = int(trace.iteration_first_kernel[2])
    assert record["launches_per_iteration"] == (trace.num_kernels - first) / 2
    assert [case["displace_bytes"] for case in record["cases"]] == [0, 64 << 10]
    for case in record["cases"]:
        assert len(case["repeats"]) == 3
        for repeat in case["repeats"]:
            assert 0 < repeat["median_us"] <= repeat["p90_us"]
            assert repeat["per_iteration_ms"] == pytest.approx(repeat["mean_us"] * record["launches_per_iteration"] / 1e3)
        assert case["mean_us"] == sorted(r["mean_us"] for r in case["repeats"])[1]   # the median of three
        for repeat in case["repeats"]:  # the bins by block count hold every launch, each once
            bins = record["launches_by_blocks"]
            assert sum(repeat[f"share_blocks_{name}"] for name in bins) == pytest.approx(1)
            assert sum(n * repeat[f"mean_us_blocks_{name}"] for name, n in bins.items()) == \
                pytest.approx(repeat["mean_us"] * sum(bins.values()))
    blocks = [int(b - a) for a, b in zip(trace.access_offsets[first:-1].tolist(), trace.access_offsets[first + 1:].tolist())]
    assert record["launches_by_blocks"] == {
        name: count for name, count in (
            (name, sum(low <= b < high for b in blocks))
            for name, low, high in (("0_4", 0, 4), ("4_16", 4, 16), ("16_64", 16, 64), ("64_256", 64, 256),
                                    ("256_up", 256, 1 << 62))) if count}


@pytest.fixture
def refusal_on_trace(capsys, small_trace_path, tmp_path):
    """refusal(module, argv): what module.main printed on stderr, run on the small trace at 64 MiB
    with `argv` (a later --capacity wins), which must exit with status 2."""
    def refusal(module, argv):
        with pytest.raises(SystemExit) as exc:
            module.main(["--trace", str(small_trace_path), "--capacity", "64MiB", *argv, "-o", str(tmp_path / "x.json")])
        assert exc.value.code == 2
        return capsys.readouterr().err
    return refusal


@pytest.mark.parametrize("argv, message", [
    (["--capacity", "1MiB"], "--capacity must hold at least one 2 MiB block"),
    (["--displace", "2GiB"], "--displace sizes must be from 0 to 1GiB"),
    (["--displace", "lots"], "--displace: cannot read size 'lots'"),
    (["--capacity", "lots"], "--capacity: cannot read size 'lots'"),
    (["--from-iteration", "9"], "--from-iteration must be in [0, 4)"),
    (["--repeats", "0"], "--repeats must be from 1 to 100"),
])
def test_policy_cost_refuses_bad_arguments(argv, message, refusal_on_trace):
    (cost,) = load("policy_cost")
    assert message in refusal_on_trace(cost, argv)


# --- bench/prefetch_lead.py ------------------------------------------------------------------------------

def test_prefetch_lead_measures_each_block_brought_in_to_its_next_use():
    (lead,) = load("prefetch_lead")
    launches = [(1, (0, 1), (("demand", 0), ("demand", 1), ("prefetch", 2))),
                (2, (1,), (("evict", 0), ("populate", 3))),
                (3, (2,), ()),
                (4, (0, 3), (("prefetch", 0), ("prefetch", 9)))]  # block 9 is never used
    assert lead.leads(launches) == [[("prefetch", 2)], [("populate", 2)], [], [("prefetch", 0), ("prefetch", None)]]


def test_prefetch_lead_rows_count_every_block_brought_in_of_an_iteration(small_trace_path, tmp_path):
    from deepum.config import DeepUMConfig
    (lead,) = load("prefetch_lead")
    trace, out = _small_trace(), tmp_path / "lead.json"
    capacity = max(4, len(set(trace.access_block.tolist())) // 2) * (2 << 20)  # under pressure
    assert lead.main(["--trace", str(small_trace_path), "--capacity", str(capacity), "--from-iteration", "1",
                      "--early", "8", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    launches, _, _ = lead.launch_plans(trace, capacity, DeepUMConfig())
    assert [it["iteration"] for it in record["iterations"]] == [1, 2, 3] and record["early"] == 8
    for it in record["iterations"]:
        first = int(trace.iteration_first_kernel[it["iteration"]])
        plans = [plan for _, _, plan in launches[first:first + it["launches"]]]
        assert sum(it["brought_in"]) == sum(move in ("prefetch", "populate") for plan in plans for move, _ in plan)
        assert sum(it["hand_overs"]) == sum(any(move != "demand" for move, _ in plan) for plan in plans)
        assert all(0 <= e <= b for e, b in zip(it["early"], it["brought_in"]))
    assert sum(sum(it["brought_in"]) for it in record["iterations"]) > 0


@pytest.mark.parametrize("argv, message", [
    (["--early", "0"], "--early must be from 1 to 1000000, got 0"),
    (["--from-iteration", "9"], "--from-iteration must be in [0, 4)"),
])
def test_prefetch_lead_refuses_bad_arguments(argv, message, refusal_on_trace):
    (lead,) = load("prefetch_lead")
    assert message in refusal_on_trace(lead, argv)


# --- bench/irregular.py ----------------------------------------------------------------------------------

def test_irregular_replays_each_config_as_one_more_deepum_variant(tmp_path, monkeypatch):
    (irregular,) = load("irregular")
    monkeypatch.setattr(irregular, "WORKLOADS", {"transformer": ("transformer", {})})
    config = tmp_path / "recall.json"
    config.write_text('{"recall_iterations": 2}')
    out = tmp_path / "irregular.json"
    irregular.main(["--iterations", "3", "--config", str(config), "-o", str(out)])
    rows = json.loads(out.read_text())["results"]
    assert [row["variant"] for row in rows] == ["deepum", "deepum-last-iteration", "deepum-recall"]
    assert rows[2]["config"]["recall_iterations"] == 2 and rows[0]["config"]["recall_iterations"] == 0


def test_irregular_refuses_a_bad_config(tmp_path, capsys):
    (irregular,) = load("irregular")
    bad = tmp_path / "bad.json"
    bad.write_text('{"lookahead": -3}')
    with pytest.raises(SystemExit) as exc:
        irregular.main(["--config", str(bad), "-o", str(tmp_path / "x.json")])
    assert exc.value.code == 2 and f"--config {bad}" in capsys.readouterr().err


# --- bench/window_at.py ---------------------------------------------------------------------------------

def test_window_at_shows_a_recalled_window_foreseeing_every_launch(small_trace_path, tmp_path):
    """The small trace's iterations repeat exactly, so a predictor that recalls the iteration before
    predicts each next launch's exec ID and, having learned its blocks then, all of them."""
    (window,) = load("window_at")
    config = tmp_path / "recall.json"
    config.write_text('{"recall_iterations": 1}')
    trace, out = _small_trace(), tmp_path / "window.json"
    assert window.main(["--trace", str(small_trace_path), "--config", str(config), "--iteration", "2",
                        "--launch", "5", "-o", str(out)]) == 0
    entries = json.loads(out.read_text())["entries"]
    first = int(trace.iteration_first_kernel[2])
    assert len(entries) == 33
    for e in entries:
        k = first + 5 + e["entry"]
        assert e["exec_id"] == int(trace.kernel_exec_id[k]) and 5 + e["entry"] in e["places"]
        assert e["used_by_the_launch_then"] == e["blocks"] == len(set(trace.kernel_blocks(k).tolist()))


@pytest.mark.parametrize("argv, message", [
    (["--iteration", "4", "--launch", "0"], "--iteration must be in [0, 4)"),
    (["--iteration", "1", "--launch", "-1"], "--launch must be in [0, "),
])
def test_window_at_refuses_bad_arguments(argv, message, capsys, small_trace_path, tmp_path):
    (window,) = load("window_at")
    with pytest.raises(SystemExit) as exc:
        window.main(["--trace", str(small_trace_path), *argv, "-o", str(tmp_path / "x.json")])
    assert exc.value.code == 2 and message in capsys.readouterr().err


# --- bench/policy_cache_misses.py ------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--iterations", "0"], "--iterations must be from 1 to 2"),
    (["--iterations", "3"], "--iterations must be from 1 to 2"),
    (["--ll-bytes", "3MiB"], "--ll-bytes must be a power of two from 64KiB to 1GiB"),
    (["--ll-bytes", "lots"], "cannot read size 'lots'"),
    (["--displace", "1MiB"], "--displace must exceed --ll-bytes"),
])
def test_policy_cache_misses_refuses_bad_arguments(argv, message, refusal_on_trace):
    (misses,) = load("policy_cache_misses")
    assert message in refusal_on_trace(misses, argv)


def test_policy_cache_misses_needs_valgrind(refusal_on_trace, monkeypatch):
    (misses,) = load("policy_cache_misses")
    monkeypatch.setattr(misses.shutil, "which", lambda name: None)
    assert "valgrind (with callgrind_control) is not installed" in refusal_on_trace(misses, [])


def test_policy_cache_misses_counts_per_launch_of_the_counted_iterations(small_trace_path, tmp_path, monkeypatch):
    """valgrind replaced by the child run in-process and made-up totals: the record divides callgrind's
    totals by the counted launches, and the counted hits and misses are those after the zeroing."""
    from pathlib import Path
    (misses,) = load("policy_cache_misses")
    monkeypatch.setattr(misses.shutil, "which", lambda name: "/usr/bin/" + name)
    totals = [700, 300, 200, 40, 20, 14, 7]                       # Ir Dr Dw D1mr D1mw DLmr DLmw
    zeroed, real_run = [], subprocess.run

    def fake_run(command, **kwargs):
        if command[0] not in ("callgrind_control", "valgrind"):
            return real_run(command, **kwargs)
        if command[0] == "callgrind_control":
            zeroed.append(command[1])
            return subprocess.CompletedProcess(command, 0, "", "")
        assert command[0] == "valgrind" and "--toggle-collect=deepum::Policy::on_launch*" in command
        out = next(c.split("=", 1)[1] for c in command if c.startswith("--callgrind-out-file="))
        assert misses.main(command[command.index(str(Path(misses.__file__).resolve())) + 1:]) == 0
        Path(out).write_text("events: Ir Dr Dw D1mr D1mw DLmr DLmw\nsummary: " + " ".join(map(str, totals)) + "\n")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(misses.subprocess, "run", fake_run)
    out, trace = tmp_path / "misses.json", _small_trace()
    capacity = max(4, len(set(trace.access_block.tolist())) // 2) * misses.policy_cost.BLOCK_BYTES   # under pressure
    assert misses.main(["--trace", str(small_trace_path), "--capacity", str(capacity), "--from-iteration", "1",
                        "--iterations", "2", "--ll-bytes", "64KiB", "--displace", "128KiB", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    counted = int(trace.iteration_first_kernel[3]) - int(trace.iteration_first_kernel[1])
    assert zeroed == ["-z"] and record["measured_launches"] == counted
    assert record["per_launch"]["instructions"] == pytest.approx(700 / counted)
    assert record["per_launch"]["ll_misses"] == pytest.approx(21 / counted)
    assert 0 < record["kernel_hits"] + record["kernel_misses"] <= counted


# --- bench/link_traffic_probe.py --------------------------------------------------------------------------

def test_link_traffic_probe_alternates_quiet_and_streaming_replays(small_trace_path, tmp_path, monkeypatch):
    (probe,) = load("link_traffic_probe")
    order = []

    def streaming(args, launches_per_iteration, bins, first):  # no GPU here: the replay alone, a made-up stream
        order.append("streaming")
        figures = probe.replay(args, launches_per_iteration, bins, first)
        return {**figures, "mean_us": 3.0, "stream": {"bytes_per_s_each_way": 4e10}}

    real_replay = probe.replay

    def quiet(*args):  # the replay as it runs, its mean set aside for one the ratio can be checked against
        order.append("quiet")
        return {**real_replay(*args), "mean_us": 1.0}

    monkeypatch.setattr(probe, "streaming_replay", streaming)
    monkeypatch.setattr(probe, "replay", quiet)
    monkeypatch.setattr(probe, "gpu_name", lambda: "stand-in")
    out = tmp_path / "probe.json"
    assert probe.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--displace", "64KiB", "--pairs", "2",
                       "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert order == ["quiet", "streaming", "quiet", "quiet", "streaming", "quiet"]  # streaming replays call replay
    assert len(record["quiet"]) == len(record["streaming"]) == 2 and record["displace_bytes"] == 64 << 10
    assert record["streaming_over_quiet_mean"] == 3.0                  # streaming over quiet, not the other way
    assert all(r["p90_us"] >= r["median_us"] > 0 for r in record["quiet"] + record["streaming"])


@pytest.mark.parametrize("argv, message", [
    (["--host-bytes", "1MiB"], "--host-bytes must be from 64MiB to 16GiB"),
    (["--displace", "2GiB"], "--displace must be from 0 to 1GiB"),
    (["--host-bytes", "lots"], "cannot read size 'lots'"),
    (["--pairs", "0"], "--pairs must be from 1 to 20"),
])
def test_link_traffic_probe_refuses_bad_arguments(argv, message, refusal_on_trace):
    (probe,) = load("link_traffic_probe")
    assert message in refusal_on_trace(probe, argv)


# --- bench/kernel_misses.py --------------------------------------------------------------------------------

def test_kernel_misses_classes_by_the_two_iterations_before():
    np = pytest.importorskip("numpy")
    (misses,) = load("kernel_misses")
    # four iterations of three launches whose middle exec ID alternates: 1 2 3 | 1 9 3 | 1 2 3 | 1 9 3
    trace = types.SimpleNamespace(num_kernels=12, iteration_first_kernel=np.array([0, 3, 6, 9]),
                                  kernel_exec_id=np.array([1, 2, 3, 1, 9, 3, 1, 2, 3, 1, 9, 3], np.uint64))
    missed = np.zeros(12, bool)
    missed[[1, 4, 7, 10, 11]] = True   # launch 1 is in iteration 0, before from_iteration
    assert misses.miss_classes(trace, missed, 1) == {"iteration before: other, two before: same": 2,
                                                     "iteration before: other, two before: none": 1,
                                                     "iteration before: same, two before: same": 1}


def test_kernel_misses_splits_the_decision_time_at_the_misses(small_trace_path, tmp_path):
    (misses,) = load("kernel_misses")
    from deepum.config import DeepUMConfig
    from deepum.specs.predictor import make_predictor
    trace, out = _small_trace(), tmp_path / "misses.json"
    assert misses.main(["--trace", str(small_trace_path), "--capacity", "24MiB", "--displace", "0", "--repeats", "1",
                        "--from-iteration", "1", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    predictor = make_predictor(DeepUMConfig(), native=False)   # the readable spec, fed the same launches
    first = int(trace.iteration_first_kernel[0])                # launches before it belong to no iteration
    for k, exec_id in enumerate(trace.kernel_exec_id.tolist()):
        if k == first:
            before = predictor.kernel_misses
        if k in trace.iteration_first_kernel.tolist()[1:]:
            predictor.start_iteration()
        predictor.on_kernel(int(exec_id))
    assert sum(row["misses"] for row in record["iterations"]) == predictor.kernel_misses - before > 0
    assert sum(row["launches"] for row in record["iterations"]) == trace.num_kernels - first
    assert sum(record["miss_classes"].values()) == sum(row["misses"] for row in record["iterations"][1:])
    (case,) = record["cases"]
    assert 0 < case["miss_share"] < 1 and case["miss_ms_per_iteration"] < case["ms_per_iteration"]
    assert case["miss_ms_per_iteration"] == pytest.approx(case["miss_share"] * case["ms_per_iteration"])


def test_kernel_misses_refuses_bad_arguments(refusal_on_trace):
    (misses,) = load("kernel_misses")
    assert "--repeats must be from 1 to 100" in refusal_on_trace(misses, ["--repeats", "0"])
    assert "--from-iteration must be in [0, 4)" in refusal_on_trace(misses, ["--from-iteration", "4"])


# --- bench/optimizer_inputs.py -----------------------------------------------------------------------------

def test_optimizer_inputs_next_use_is_the_first_later_launch():
    np = pytest.importorskip("numpy")
    (inputs,) = load("optimizer_inputs")
    # launches 0..3 use blocks {5}, {5, 7}, {}, {7}
    trace = types.SimpleNamespace(num_kernels=4, access_offsets=np.array([0, 1, 3, 3, 4]),
                                  access_block=np.array([5, 5, 7, 7]))
    after = inputs.next_uses(trace)
    assert [after(5, k) for k in (-1, 0, 1)] == [0, 1, None]
    assert [after(7, k) for k in (0, 1, 2, 3)] == [1, 3, 3, None]
    assert after(9, 0) is None


def test_optimizer_inputs_counts_the_moves_around_the_optimizer_step(small_trace_path, tmp_path):
    (inputs,) = load("optimizer_inputs")
    trace, out = _small_trace(), tmp_path / "inputs.json"
    assert inputs.main(["--trace", str(small_trace_path), "--capacity", "24MiB", "--iteration", "2", "--before", "40",
                        "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    first = trace.iteration_first_kernel.tolist()
    names = [str(trace.kernel_names[k]) for k in trace.kernel_name_idx[first[2]:first[3]]]
    optimizer = record["optimizer_first_launch"]
    assert "adam" in names[optimizer].lower() and not any("adam" in n.lower() for n in names[:optimizer])
    assert record["optimizer_launches"] == len(names) - optimizer
    before, during = record["windows"]["before"], record["windows"]["during"]
    assert before["launches"] == min(40, optimizer) and during["launches"] == record["optimizer_launches"]
    prefetched = 0
    for window in (before, during):
        counts = window["prefetches_by_next_use"]
        assert set(counts) <= set(inputs.NEXT_USES)
        assert sum(n for n, _ in counts.values()) == window["moves"].get("prefetch", [0, 0])[0]
        assert all(size == n * 2 ** 21 for n, size in [*counts.values(), *window["moves"].values()])
        prefetched += counts.get("the optimizer step", [0, 0])[1]
    assert prefetched > 0   # at 24 MiB (46 MiB touched) the optimizer step's blocks are brought back ahead of it
    offsets = {int(k): v for k, v in record["optimizer_prefetch_bytes_by_offset"].items()}
    assert sum(offsets.values()) == prefetched and all(-40 <= k < record["optimizer_launches"] for k in offsets)
    # the step's blocks, counted from the trace: resident or mapped at most all of them, the budget full
    step_blocks = set(trace.access_block[trace.access_offsets[first[2] + optimizer]:trace.access_offsets[first[3]]].tolist())
    assert record["step_blocks"] == len(step_blocks) and record["capacity_blocks"] == 12
    for counts in record["occupancy"].values():
        assert counts["resident_blocks"] <= 12
        assert counts["step_blocks_resident"] + counts["step_blocks_host_mapped"] <= len(step_blocks)
    # the passes' own blocks are prefetched earlier in the iteration, and told apart from the step's
    assert inputs.main(["--trace", str(small_trace_path), "--capacity", "24MiB", "--iteration", "2", "--before", "1000",
                        "-o", str(out)]) == 0
    whole = json.loads(out.read_text())["windows"]["before"]
    assert whole["launches"] == optimizer and whole["prefetches_by_next_use"]["the passes before the step"][0] > 0
    assert whole["prefetches_by_next_use"]["the optimizer step"][1] >= before["prefetches_by_next_use"]["the optimizer step"][1]
    # with room for everything nothing is moved
    assert inputs.main(["--trace", str(small_trace_path), "--capacity", "8GiB", "--iteration", "2",
                        "-o", str(out)]) == 0
    assert all(not w["moves"] for w in json.loads(out.read_text())["windows"].values())


@pytest.mark.parametrize("argv, message", [
    (["--iteration", "3"], "--iteration must be in [0, 3)"),
    (["--before", "-1"], "--before must be from 0 to 100000"),
    (["--next-launches", "100001"], "--next-launches must be from 0 to 100000"),
    (["--optimizer-kernel", "lamb"], "--optimizer-kernel 'lamb' names no kernel of iteration 2"),
])
def test_optimizer_inputs_refuses_bad_arguments(argv, message, refusal_on_trace):
    (inputs,) = load("optimizer_inputs")
    assert message in refusal_on_trace(inputs, ["--iteration", "2", *argv])


# --- bench/replay_phases.py -------------------------------------------------------------------------------

def test_replay_phases_split_an_iteration_into_passes_optimizer_and_parts(small_trace_path, tmp_path):
    (phases,) = load("replay_phases")
    trace, out = _small_trace(), tmp_path / "phases.json"
    assert phases.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--iterations", "2,3", "--parts", "4",
                        "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    first = trace.iteration_first_kernel.tolist() + [trace.num_kernels]
    for row in record["iterations"]:
        i = row["iteration"]
        names = [str(trace.kernel_names[k]) for k in trace.kernel_name_idx[first[i]:first[i + 1]]]
        optimizer = row["optimizer_first_launch"]
        assert "adam" in names[optimizer].lower() and not any("adam" in n.lower() for n in names[:optimizer])
        assert row["passes"]["launches"] + row["optimizer"]["launches"] == first[i + 1] - first[i]
        assert sum(p["launches"] for p in row["parts"]) == row["passes"]["launches"] and len(row["parts"]) == 4
        for key in ("kernel_s", "prefetch_wait_s"):
            assert sum(p[key] for p in row["parts"]) == pytest.approx(row["passes"][key])
        assert row["passes"]["time_s"] + row["optimizer"]["time_s"] <= row["time_s"] + 1e-9
        assert row["passes"]["time_s"] >= row["passes"]["kernel_s"] - 1e-9


@pytest.mark.parametrize("argv, message", [
    (["--iterations", "9"], "--iterations must name iterations in [0, 4)"),
    (["--iterations", "x"], "--iterations must be comma-separated integers"),
    (["--parts", "0"], "--parts must be from 1 to 1000"),
    (["--calibration", "nowhere.json"], "--calibration nowhere.json"),
])
def test_replay_phases_refuses_bad_arguments(argv, message, refusal_on_trace):
    (phases,) = load("replay_phases")
    assert message in refusal_on_trace(phases, argv)


def test_replay_phases_cut_a_gpu_step_timeline_the_same_way(small_trace_path, tmp_path):
    np = pytest.importorskip("numpy")
    (phases,) = load("replay_phases")
    from deepum.runtime import timeline as tl
    # six kernels: [0,10) [12,20) [20,25) [30,40) [35,38) [50,60); the last one the optimizer's; the
    # parts' windows for what moved: [0,20), [20,50) and the optimizer's [50,60)
    kernels = [(0, 10, 1, tl.KERNEL, 0), (12, 20, 2, tl.KERNEL, 0), (20, 25, 3, tl.KERNEL, 0),
               (30, 40, 4, tl.KERNEL, 0), (35, 38, 5, tl.KERNEL, 0), (50, 60, 6, tl.KERNEL, 0)]
    prefetch, evict, discard = (tl.CALL_OPS.index(op) for op in ("prefetch", "evict", "discard"))
    # migrations (value: bytes) and the worker's calls (value: bytes, detail: the move)
    moves = [(5, 15, 100, tl.H2D, 0), (18, 24, 200, tl.H2D, 0), (45, 55, 300, tl.H2D, 0), (52, 58, 400, tl.D2H, 0),
             (1, 3, 100, tl.CALL, prefetch), (20, 22, 200, tl.CALL, evict), (23, 24, 50, tl.CALL, evict),
             (51, 52, 300, tl.CALL, discard)]
    start, end, value, kind, detail = (np.array(column, dtype) for column, dtype in
                                       zip(zip(*kernels, *moves), (np.uint64, np.uint64, np.uint64, np.uint8, np.uint8)))
    step = tl.StepTimeline(start, end, value, kind, detail)
    gpu = phases.gpu_phases(step, 2, 1)
    assert gpu["optimizer"] == {"kernels": 1, "time_s": 10e-9, "idle_s": 10e-9,   # idle [40,50) before it
                                "h2d_bytes": 0, "h2d_busy_s": 5e-9, "d2h_bytes": 400, "d2h_busy_s": 6e-9,
                                "calls": {"discard": [1, 300]}}
    first, second = gpu["parts"]
    assert (first["kernels"], second["kernels"]) == (2, 3)
    assert first == {"kernels": 2, "time_s": 20e-9, "idle_s": 2e-9,              # [10,12)
                     "h2d_bytes": 300, "h2d_busy_s": 12e-9, "d2h_bytes": 0, "d2h_busy_s": 0.0,
                     "calls": {"prefetch": [1, 100]}}
    assert second == {"kernels": 3, "time_s": 20e-9, "idle_s": 5e-9,             # [25,30); [35,38) inside [30,40)
                      "h2d_bytes": 300, "h2d_busy_s": 9e-9, "d2h_bytes": 0, "d2h_busy_s": 0.0,
                      "calls": {"evict": [2, 250]}}
    assert gpu["passes"]["idle_s"] == pytest.approx(first["idle_s"] + second["idle_s"]) and gpu["time_s"] == 60e-9
    assert gpu["passes"]["h2d_bytes"] == 600 and gpu["passes"]["h2d_busy_s"] == 21e-9
    assert gpu["passes"]["calls"] == {"prefetch": [1, 100], "evict": [2, 250]}
    path = tmp_path / "step.timeline.npz"
    step.save(path)
    out = tmp_path / "phases.json"
    assert phases.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--iterations", "2", "--parts", "2",
                        "--gpu-timeline", str(path), "--gpu-optimizer-kernels", "1", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["gpu_step"] == gpu
    with pytest.raises(SystemExit) as exc:
        phases.main(["--trace", str(small_trace_path), "--capacity", "64MiB", "--gpu-timeline", str(path),
                     "--gpu-optimizer-kernels", "6", "-o", str(out)])
    assert exc.value.code == 2


# --- bench/mark_cost.py ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--calls", "0"], "--calls must be from 1 to 100000"),
    (["--warmup", "-1"], "--warmup must be from 0 to 100000"),
    (["--rounds", "101"], "--rounds must be from 1 to 100"),
    (["--calls", "many"], "--calls: invalid int value"),
])
def test_mark_cost_refuses_bad_arguments(argv, message, capsys):
    (marks,) = load("mark_cost")
    with pytest.raises(SystemExit) as exc:
        marks.parse_args(["-o", "x.json", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_mark_cost_takes_its_defaults():
    (marks,) = load("mark_cost")
    args = marks.parse_args(["-o", "x.json"])
    assert (args.calls, args.warmup, args.rounds, args.out) == (2000, 200, 5, "x.json")


# --- bench/profile_shares.py -------------------------------------------------------------------------------

RAW_PROFILE = [
    "<module> (train.py:1);timed_steps (train.py:9);deepum::Engine::on_launch (x.so);deepum::Engine::submit (x.so);"
    "deepum::Engine::work_before (x.so);cuEventRecord (libcuda.so) 6",
    "<module> (train.py:1);timed_steps (train.py:9);deepum::Engine::on_launch (x.so);deepum::Engine::submit (x.so);"
    "pthread_cond_signal (libc.so) 2",
    "<module> (train.py:1);timed_steps (train.py:9);deepum::Engine::on_launch (x.so);deepum::Policy::on_launch (x.so) 4",
    "<module> (train.py:1);timed_steps (train.py:9);forward (model.py:3) 8",
    "<module> (train.py:1);setup (train.py:2);deepum::Engine::submit (x.so) 5",
]


def test_profile_shares_splits_the_samples_inside_a_function(tmp_path, capsys):
    (profile,) = load("profile_shares")
    path = tmp_path / "profile.txt.gz"
    with gzip.open(path, "wt") as out:
        out.write("\n".join(RAW_PROFILE) + "\n")
    assert profile.main([str(path), "--within", "Engine::submit", "-o", str(tmp_path / "shares.json")]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == "samples 25 in steps 20 in Engine::submit 8 40.0%"
    record = json.loads((tmp_path / "shares.json").read_text())
    assert (record["samples"], record["in_steps"], record["inside"]) == (25, 20, 8)
    assert record["below"] == [[["deepum::Engine::work_before", "cuEventRecord"], 6], [["pthread_cond_signal", ""], 2]]
    assert record["leaves"] == [["cuEventRecord", 6], ["pthread_cond_signal", 2]]
    assert profile.main([str(path)]) == 0  # the launch hook by default: 12 of the 20 samples in the steps
    assert capsys.readouterr().out.splitlines()[0] == "samples 25 in steps 20 in Engine::on_launch 12 60.0%"


@pytest.mark.parametrize("lines, argv, message", [
    (["not a profile"], [], "line 1 is not a py-spy raw sample"),
    (RAW_PROFILE[3:], ["--steps-frame", "train_loop"], "no sample passes through 'train_loop'"),
    (RAW_PROFILE[3:], [], "no sample inside the steps passes through 'Engine::on_launch'"),
    (RAW_PROFILE, ["--top", "0"], "--top must be from 1 to 1000"),
])
def test_profile_shares_refuses_bad_input(tmp_path, capsys, lines, argv, message):
    (profile,) = load("profile_shares")
    path = tmp_path / "profile.txt"
    path.write_text("\n".join(lines) + "\n")
    try:
        code = profile.main([str(path), *argv])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and message in capsys.readouterr().err
    assert profile.main([str(tmp_path / "missing.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err


# --- bench/hand_over_runs.py -------------------------------------------------------------------------------

def test_hand_over_runs_orders_moves_as_the_engine_hands_them_over():
    (runs,) = load("hand_over_runs")
    moves = [("prefetch", 9), ("demand", 1), ("discard", 7), ("evict", 3), ("map_host", 5), ("populate", 8),
             ("evict", 2), ("prefetch", 10)]
    order = runs.hand_over_order(moves)
    assert order == [("map_host", 5), ("evict", 2), ("evict", 3), ("discard", 7), ("prefetch", 9), ("populate", 8),
                     ("prefetch", 10)]
    # evictions 2-3 are one run; prefetches 9 and 10 are two (a population between them)
    assert runs.runs(order) == {"map_host": 1, "evict": 1, "discard": 1, "prefetch": 2, "populate": 1}


def test_hand_over_runs_counts_a_replayed_traces_hand_overs(small_trace_path, tmp_path):
    (runs,) = load("hand_over_runs")
    out = tmp_path / "runs.json"
    assert runs.main(["--trace", str(small_trace_path), "--capacity", "8MiB", "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    iterations = record["iterations"]
    assert len(iterations) == 4 and sum(row["launches"] for row in iterations) > 0
    for row in iterations:
        commands, in_runs = sum(row["commands"].values()), sum(row["runs"].values())
        assert row["hand_overs"] <= row["launches"] and in_runs <= commands
        assert set(row["runs"]) == set(row["commands"]) and row["hand_overs"] <= in_runs
    assert sum(sum(row["commands"].values()) for row in iterations) > 0  # the budget presses


def test_hand_over_runs_refuses_bad_arguments(capsys, small_trace_path, tmp_path):
    (runs,) = load("hand_over_runs")
    with pytest.raises(SystemExit) as exc:
        runs.main(["--trace", str(small_trace_path), "--capacity", "1MiB", "-o", str(tmp_path / "x.json")])
    assert exc.value.code == 2 and "--capacity must hold at least one 2 MiB block" in capsys.readouterr().err


# --- bench/lockstep_ab.py ----------------------------------------------------------------------------------

def test_lockstep_ab_takes_turns_a_pair_at_a_time(capsys, tmp_path):
    (ab,) = load("lockstep_ab")
    patch = tmp_path / "change.patch"
    patch.write_text("")
    assert ab.main(["--out", str(tmp_path / "out"), "--tree", f"change={patch}", "--rounds", "2", "--steps", "34",
                    "--dry-run"]) == 0
    runs = [line for line in capsys.readouterr().out.splitlines() if line.startswith("(")]
    expected = [(model, tree, pairs) for pairs in (1, 2) for model in ("gpt2", "bert-large")
                for tree in ("this_tree", "change")]
    assert len(runs) == len(expected)
    for line, (model, tree, pairs) in zip(runs, expected):
        folder, command = line[1:].split(") ", 1)
        args = command.split()
        assert folder == str(ab.ROOT if tree == "this_tree" else ab.Path("/tmp/lockstep_ab") / tree)
        assert args[args.index("--out") + 1] == str(tmp_path / "out" / f"{model}_{tree}")
        assert args[args.index("--repeats") + 1] == str(pairs) and "--resume" in args and "--lockstep" in args
        assert args[args.index("--steps") + 1] == "34" and args[args.index("--warmup") + 1] == "4"
        assert f"--capacity {model}={ab.MODELS[model].capacity}" in command


def test_lockstep_ab_trains_the_fp32_transformers_as_their_workloads(capsys, tmp_path):
    (ab,) = load("lockstep_ab")
    assert ab.main(["--out", str(tmp_path / "out"), "--models", "gpt2-fp32,bert-large", "--steps", "40",
                    "--warmup", "20", "--dry-run"]) == 0
    runs = [line.split(") ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("(")]
    fp32, bf16 = (run.split() for run in runs[:2])
    assert fp32[fp32.index("--out") + 1] == str(tmp_path / "out" / "gpt2-fp32_this_tree")
    assert fp32[fp32.index("--workloads") + 1] == "gpt2" and "--precision" not in runs[0]
    assert fp32[fp32.index("--capacity") + 1] == "gpt2=6002049024"
    assert fp32[fp32.index("--steps") + 1] == "40" and fp32[fp32.index("--warmup") + 1] == "20"
    assert bf16[bf16.index("--workloads") + 1] == "bert-large" and "--precision bf16" in runs[1]
    folder = tmp_path / "gpt2-fp32_this_tree"  # records named after the workload
    folder.mkdir()
    (folder / "no_pressure.json").write_text(json.dumps({"workloads": {"gpt2": {
        "status": "ok", "pair_ratios": [2.9], "pair_median": 2.9, "verdict": "outside",
        "deepum_run_medians": [0.39], "none_run_medians": [0.134]}}}))
    (folder / "gpt2_deepum_c6002049024.json").write_text(json.dumps({"repeated_plan_launches_per_step": 10.0}))
    (row,) = ab.summary(tmp_path, ["gpt2-fp32"], ["this_tree"])
    assert row["model"] == "gpt2-fp32" and row["pairs"] == [2.9] and row["repeated_plan_launches"] == 10.0


def test_lockstep_ab_stops_before_a_round_that_would_end_past_its_time_and_keeps_each_rounds_record(
        monkeypatch, capsys, tmp_path):
    (ab,) = load("lockstep_ab")
    clock = [0.0]
    records = []

    def pair(command, **kwargs):  # each pair takes 10 s; the record so far is on disk before the next round
        records.append((tmp_path / "out" / "lockstep_ab.json").exists())
        clock[0] += 10.0
        return ab.subprocess.CompletedProcess(command, 0, "gpt2: deepum / none = 2.4\n", "")

    monkeypatch.setattr(ab.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(ab.subprocess, "run", pair)
    assert ab.main(["--out", str(tmp_path / "out"), "--models", "gpt2", "--rounds", "5", "--stop-after", "25"]) == 0
    out = capsys.readouterr().out
    assert records == [False, True], "two rounds of 10 s fit in 25 s, a third would end at 30 s"
    assert "stopped before round 3: it would end past 25 s" in out
    record = json.loads((tmp_path / "out" / "lockstep_ab.json").read_text())
    assert record["rows"] == [{"model": "gpt2", "tree": "this_tree", "status": "no record"}]


def test_lockstep_ab_takes_a_config_as_a_tree_of_this_checkout(capsys, tmp_path):
    (ab,) = load("lockstep_ab")
    config = tmp_path / "no_invalidate.json"
    config.write_text('{"invalidate": false}')
    patch = tmp_path / "change.patch"
    patch.write_text("")
    assert ab.main(["--out", str(tmp_path / "out"), "--models", "gpt2", "--tree", f"off={config}",
                    "--tree", f"change={patch}", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("build off") for line in out)  # nothing copied nor built for a config
    runs = {line.split("--out ")[1].split()[0].rsplit("_", 1)[-1]: line for line in out if line.startswith("(")}
    assert set(runs) == {"tree", "off", "change"}  # gpt2_this_tree, gpt2_off, gpt2_change
    assert runs["off"].startswith(f"({ab.ROOT}) ") and f"--deepum-config {config}" in runs["off"]
    assert "--deepum-config" not in runs["tree"] and "--deepum-config" not in runs["change"]


def test_lockstep_ab_builds_a_patch_and_an_archive_in_copies(monkeypatch, tmp_path):
    (ab,) = load("lockstep_ab")
    import tarfile

    checkout = tmp_path / "checkout"
    (checkout / "driver_hooks").mkdir(parents=True)
    (checkout / "driver_hooks" / "engine.hpp").write_text("engine\n")
    (checkout / "README.md").write_text("readme\n")
    monkeypatch.setattr(ab, "ROOT", checkout)
    monkeypatch.setattr(ab, "BUILD", [])
    patch = tmp_path / "change.patch"
    patch.write_text("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-readme\n+patched\n")
    older = tmp_path / "older" / "driver_hooks"
    older.mkdir(parents=True)
    (older / "worker.hpp").write_text("older\n")
    archive = tmp_path / "older.tgz"
    (checkout / "deepum" / "runtime").mkdir(parents=True)
    (checkout / "deepum" / "config.py").write_text("config\n")
    (checkout / "deepum" / "runtime" / "native_build.py").write_text("newer\n")
    older_build = tmp_path / "native_build.py"
    older_build.write_text("older\n")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(older, arcname="driver_hooks")
        tar.add(older_build, arcname="deepum/runtime/native_build.py")
    patched = ab.prepare("change", [patch], tmp_path / "work")
    assert (patched / "README.md").read_text() == "patched\n"
    assert (checkout / "README.md").read_text() == "readme\n"  # the checkout itself untouched
    second = tmp_path / "second.patch"  # applies only over the first
    second.write_text("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-patched\n+patched twice\n")
    both = ab.prepare("both", [patch, second], tmp_path / "work")
    assert (both / "README.md").read_text() == "patched twice\n"
    unpacked = ab.prepare("older", [archive], tmp_path / "work")
    assert sorted(p.name for p in (unpacked / "driver_hooks").iterdir()) == ["engine.hpp", "worker.hpp"]
    assert (unpacked / "deepum" / "runtime" / "native_build.py").read_text() == "older\n"
    assert (unpacked / "deepum" / "config.py").read_text() == "config\n"  # the package around it kept
    assert (unpacked / "README.md").read_text() == "readme\n"
    bad = tmp_path / "bad.patch"
    bad.write_text("--- a/nothing\n+++ b/nothing\n@@ -1 +1 @@\n-x\n+y\n")
    with pytest.raises(subprocess.CalledProcessError):
        ab.prepare("bad", [bad], tmp_path / "work")


def test_lockstep_ab_summary_sets_deepums_steps_beside_the_pairs(tmp_path, capsys):
    (ab,) = load("lockstep_ab")
    import json

    folder = tmp_path / "gpt2_change"
    folder.mkdir()
    (folder / "no_pressure.json").write_text(json.dumps({"workloads": {"gpt2": {
        "status": "ok", "pair_ratios": [2.4, 2.6, 2.5], "pair_median": 2.5, "verdict": "undecided",
        "deepum_run_medians": [0.30, 0.28, 0.33], "none_run_medians": [0.12, 0.11, 0.16]}}}))
    for i, (scan, policy) in enumerate([(0.006, 0.030), (0.011, 0.020), (0.007, 0.070)]):
        (folder / f"gpt2_deepum_c1_r{i}.json").write_text(json.dumps({"hook_split_s_per_step": {
            "scan": scan, "translate": 0.005, "policy": policy, "submit": 0.009, "wait": 0.001},
            "repeated_plan_launches_per_step": 3000.0 + 100 * i}))
    (folder / "gpt2_none_full.json").write_text(json.dumps({"hook_split_s_per_step": None}))
    rows = ab.summary(tmp_path, ["gpt2"], ["change", "missing"])
    assert rows[1] == {"model": "gpt2", "tree": "missing", "status": "no record"}
    row = rows[0]
    assert row["pairs"] == [2.4, 2.6, 2.5] and row["verdict"] == "undecided"
    assert row["deepum_step_s"] == pytest.approx(0.30) and row["none_step_s"] == pytest.approx(0.12)
    assert row["hook_ms"] == pytest.approx({"scan": 7.0, "translate": 5.0, "policy": 30.0, "submit": 9.0})
    assert row["repeated_plan_launches"] == pytest.approx(3100.0)
    ab.print_summary(rows)
    table = capsys.readouterr().out.splitlines()
    assert table[1].split()[:8] == ["gpt2", "change", "3", "2.500", "undecided", "0.3000", "0.1200", "3100"]
    assert table[2].split() == ["gpt2", "missing", "no", "record"]


def test_lockstep_report_details_each_tree_of_a_call(tmp_path, capsys):
    (report,) = load("lockstep_report")
    import json

    for tree, deepum_steps, sha in (("this_tree", [0.30, 0.32], "aa"), ("change", [0.27, 0.29], "bb")):
        folder = tmp_path / f"gpt2-fp32_{tree}"
        folder.mkdir()
        (folder / "no_pressure.json").write_text(json.dumps({"workloads": {"gpt2": {
            "status": "ok", "pair_ratios": [s / 0.12 for s in deepum_steps], "pair_median": 2.5,
            "verdict": "undecided", "deepum_run_medians": deepum_steps, "none_run_medians": [0.12, 0.12]}}}))
        for i in range(2):
            common = {"parameter_sha256": "aa" if i == 0 else sha, "hook_split_s_per_step": None}
            (folder / f"gpt2_none_full_r{i}.json").write_text(json.dumps(common))
            # the report reads the first run's bounds
            bounds = {"min_h2d_bytes": 2e9 if tree == "this_tree" else 1e9,
                      "min_d2h_bytes": 1e9 if tree == "this_tree" else 0.2e9,
                      "uvm_h2d_bytes_per_s": 50e9, "uvm_d2h_bytes_per_s": 10e9} if i == 0 else None
            (folder / f"gpt2_deepum_c1_r{i}.json").write_text(json.dumps({
                **common, "bounds": bounds, "h2d_bytes_per_step": 3e9, "d2h_bytes_per_step": 2e9, "gpu_busy_s_per_step": 0.2,
                "gpu_idle_s_per_step": 0.1, "hook_s_per_step": 0.03, "faults_per_step": 0.5 * i,
                "stats": {"cuda_errors": i}, "step_s": [1.0] * 4 + [0.31, 0.30] * 10}))
    rows = [{"model": "gpt2-fp32", "tree": tree} for tree in ("this_tree", "change")]
    (tmp_path / "lockstep_ab.json").write_text(json.dumps({"command": "lockstep_ab.py", "rows": rows}))
    report.report(tmp_path)
    out = capsys.readouterr().out
    assert "gpt2-fp32 change: pairs 2.250 2.417, median 2.500" in out
    assert "against the first tree, by round: pairs 0.903, lower in 2 of 2; deepum's run medians 0.903" in out
    assert "H2D 3.000 GB, D2H 2.000 GB a step" in out and "even steps minus odd, ms: 10 10" in out
    # 2 GB in at 50 GB/s and 1 GB out at 10 GB/s take turns: 0.14 s, 1.17x none's 0.12 s
    assert ("UVM-path bound 0.1400 s (50.0 GB/s in, 10.0 out): 1.17x none, deepum 2.21x it;"
            " H2D 1.50x (touched - capacity)") in out
    # 1 GB in and 0.2 GB out take 0.04 s: the bound is none's 0.12 s step, the link hidden under it
    assert "UVM-path bound 0.1200 s (50.0 GB/s in, 10.0 out): 1.00x none, deepum 2.33x it; H2D 3.00x" in out
    assert "parameters ['aa'] (2 deepum, 2 none runs); CUDA errors 1; faults a step 0.5" in out
    assert "parameters ['aa', 'bb']" in out, "a run unlike the others shows its own hash"


@pytest.mark.parametrize("script, argument", [("sweep_agreement", "missing"), ("lockstep_report", ".")])
def test_the_report_scripts_name_a_folder_without_their_records_in_one_line(tmp_path, script, argument):
    run = subprocess.run([sys.executable, str(BENCH / f"{script}.py"), str(tmp_path / argument)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith(f"{script}: ")


def test_sweep_agreement_sets_the_replayed_speed_up_against_the_gpus(tmp_path, capsys):
    (sweep,) = load("sweep_agreement")
    import json

    for fraction, (um, deepum) in sweep.sweep_steps(sweep.SWEEP).items():
        # iterations 3-7 replay the GPU's steps, deepum twice as slow; the others are left out
        for policy, step in (("um", um), ("deepum", 2 * deepum), ("oracle", deepum)):
            times = [99.0] * 3 + [step] * 5 + [99.0]
            (tmp_path / f"replay_{policy}_b{fraction}.json").write_text(
                json.dumps({"per_iteration": [{"time_s": t} for t in times]}))
    assert sweep.agreement(tmp_path) == pytest.approx({"0.50": 0.5, "0.75": 0.5})
    assert ": 0.50" in capsys.readouterr().out
    # another sweep whose deepum ran four times faster than um at both fractions
    other = tmp_path / "other"
    other.mkdir()
    for fraction, (um, _) in sweep.sweep_steps(sweep.SWEEP).items():
        for mode, step in (("um", um), ("deepum", um / 4)):
            (other / f"gpt2_{mode}_b{fraction}.json").write_text(json.dumps({"step_s_median": step}))
    expected = {f: um / (2 * deepum) / 4 for f, (um, deepum) in sweep.sweep_steps(sweep.SWEEP).items()}
    sweep.main([str(tmp_path), "--sweep", str(other)])
    out = capsys.readouterr().out
    assert f"against {other}" in out and ": 0.50\n" not in out
    assert all(f": {ratio:.2f}\n" in out for ratio in expected.values())
    assert sweep.agreement(tmp_path, other) == pytest.approx(expected)


def test_lockstep_ab_sets_each_tree_against_the_first_round_by_round(capsys):
    (ab,) = load("lockstep_ab")
    rows = [{"model": "gpt2", "tree": "this_tree", "status": "ok", "pairs": [2.5, 2.8, 2.2],
             "deepum_steps": [0.30, 0.32, 0.28], "none_steps": [0.12, 0.114, 0.127]},
            {"model": "gpt2", "tree": "faster", "status": "ok", "pairs": [2.25, 2.94, 2.0, 2.1],
             "deepum_steps": [0.30, 0.336, 0.28, 0.27], "none_steps": [0.1333, 0.114, 0.14, 0.13]},
            {"model": "gpt2", "tree": "missing", "status": "no record"},
            {"model": "bert-large", "tree": "this_tree", "status": "no record"},
            {"model": "bert-large", "tree": "faster", "status": "ok", "pairs": [2.0]}]
    ab.against_first(rows)
    versus = rows[1]["against_first"]
    assert versus["ratios"] == pytest.approx([0.9, 1.05, 2.0 / 2.2])  # the first tree's rounds only
    assert versus["median"] == pytest.approx(2.0 / 2.2) and versus["lower"] == 2
    assert rows[1]["deepum_against_first"]["ratios"] == pytest.approx([1.0, 1.05, 1.0])
    assert rows[1]["deepum_against_first"]["lower"] == 0  # the lower pairs came from none's steps
    assert rows[1]["none_against_first"]["median"] == pytest.approx(0.14 / 0.127)
    assert not any(key in row for row in rows[:1] + rows[2:] for key in ab.AGAINST_FIRST.values())
    ab.print_summary([{**row, "pair_median": 2.3, "verdict": "within", "deepum_step_s": 0.3, "none_step_s": 0.12,
                       "hook_ms": {}, "repeated_plan_launches": 0} for row in rows[:2]])
    assert ("against the first tree, round by round: pairs 0.909, lower in 2 of 3; deepum's steps 1.000, "
            "lower in 0 of 3; none's 1.102, lower in 0 of 3") in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--tree", "Before=x.patch"], "give NAME=SOURCE"),
    (["--steps", "13"], "--steps 13 --warmup 4: give at most 200 steps of which at least 10 measured"),
    (["--steps", "40", "--warmup", "31"], "--steps 40 --warmup 31: give at most 200"),
    (["--steps", "201", "--warmup", "0"], "--steps 201 --warmup 0: give at most 200"),
    (["--warmup", "-1"], "--steps 14 --warmup -1: give"),
    (["--tree", "this_tree=PATCH"], "the name 'this_tree' is taken"),
    (["--tree", "before=x.txt"], "SOURCE must be .patch files joined by +, one .tgz or one .json"),
    (["--tree", "before=PATCH+x.tgz"], "SOURCE must be .patch files joined by +, one .tgz or one .json"),
    (["--tree", "before=PATCH+CONFIG"], "SOURCE must be .patch files joined by +, one .tgz or one .json"),
    (["--tree", "slow=BAD_CONFIG"], "--tree 'slow="),
    (["--deepum-config", "BAD_CONFIG"], "--deepum-config: "),
    (["--tree", "before=missing.patch"], "no file missing.patch"),
    (["--tree", "before=PATCH+missing.patch"], "no file missing.patch"),
    (["--models", "gpt3"], "--models: unknown gpt3"),
    (["--rounds", "0"], "--rounds must be 1 to 10, not 0"),
    (["--rounds", "11"], "--rounds must be 1 to 10, not 11"),
    (["--stop-after", "0"], "--stop-after must be positive"),
])
def test_lockstep_ab_refuses_bad_arguments(capsys, tmp_path, argv, message):
    (ab,) = load("lockstep_ab")
    patch = tmp_path / "x.patch"
    patch.write_text("")
    config = tmp_path / "c.json"
    config.write_text('{"invalidate": false}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"lookahead": -3}')
    argv = [a.replace("BAD_CONFIG", str(bad)).replace("PATCH", str(patch)).replace("CONFIG", str(config))
            for a in argv]
    with pytest.raises(SystemExit) as exc:
        ab.main(["--out", str(tmp_path / "out"), "--dry-run", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err.splitlines()[-1]
