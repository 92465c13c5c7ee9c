"""The GPU recording turned into a trace: kernel times joined by correlation ID, faults attributed
by time, iterations from the marks, and the result valid per the trace format."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from deepum import _native

from deepum.runtime.recorder import trace_from_recording
from deepum.offline.trace_format import TraceError
from deepum.offline.trace_io import read_trace, write_trace

B = 1 << 21


def raw_recording(marks=(2, 4), kernel_records=((11, 100, 200), (10, 0, 50), (12, 300, 320), (13, 400, 450))):
    """Four launches (correlation 10..13, launch 3 without a GPU record when asked) with accesses,
    two memory events, three faults and two transfers, as the engine hands them over."""
    corr, start, end = (np.array(c, dtype=t) for c, t in zip(zip(*kernel_records), (np.uint32, np.uint64, np.uint64)))
    return {
        "launch_correlation": np.array([10, 11, 12, 13], np.uint32),
        "kernel_exec_id": np.array([7, 8, 7, 8], np.uint64),
        "kernel_name_idx": np.array([0, 1, 0, 1], np.uint32),
        "kernel_names": ["gemm", "relu"],
        "access_offsets": np.array([0, 2, 3, 5, 6], np.int64),
        "access_block": np.array([5, 6, 6, 5, 6, 9], np.int64),
        "access_pages": np.array([512, 3, 3, 512, 3, 1], np.int16),
        "access_write": np.array([0, 1, 0, 0, 1, 1], np.uint8),
        "iteration_end_launch": np.array(marks, np.int64),
        "mem_kernel": np.array([-1, 1], np.int64),
        "mem_action": np.array([0, 1], np.int8),
        "mem_address": np.array([6 * B, 6 * B], np.uint64),
        "mem_bytes": np.array([12288, 12288], np.uint64),
        "activity_correlation": corr, "activity_start_ns": start, "activity_end_ns": end,
        "fault_t_ns": np.array([310, 20, 250], np.uint64),
        "fault_address": np.array([6 * B, 5 * B, 5 * B + 4096], np.uint64),
        "fault_kind": np.array([2, 1, 1], np.int8),
        "xfer_t_ns": np.array([30, 10], np.uint64),
        "xfer_address": np.array([5 * B, 6 * B], np.uint64),
        "xfer_bytes": np.array([B, 4096], np.uint64),
        "xfer_dir": np.array([1, 2], np.int8),
        "xfer_cause": np.array([2, 4], np.int8),
    }


def test_recording_becomes_a_valid_trace(tmp_path):
    trace = trace_from_recording(raw_recording(), "NVIDIA H200", 8 * B, notes="test")
    path = tmp_path / "run.npz"
    write_trace(trace, path)
    back = read_trace(path)
    assert back.meta["source"] == "gpu" and back.meta["device"] == "NVIDIA H200" and back.iterations == 2
    assert back.kernel_duration_ns.tolist() == [50, 100, 20, 50]
    assert back.kernel_t_start_ns.tolist() == [0, 100, 300, 400]
    assert back.iteration_first_kernel.tolist() == [0, 2]
    assert back.kernel_iteration.tolist() == [0, 0, 1, 1]
    assert back.fault_t_ns.tolist() == [20, 250, 310]            # time order
    assert back.fault_kernel.tolist() == [0, -1, 2]              # 250 falls between kernels
    assert back.xfer_t_ns.tolist() == [10, 30] and back.xfer_dir.tolist() == [2, 1]
    assert back.access_write.tolist() == [False, True, False, False, True, True]


def test_launch_without_gpu_record_and_trailing_kernels():
    trace = trace_from_recording(raw_recording(marks=(2,), kernel_records=((10, 0, 50), (11, 60, 70))), None, None)
    assert trace.kernel_t_start_ns.tolist() == [0, 60, -1, -1]
    assert trace.kernel_duration_ns.tolist() == [50, 10, 0, 0]
    assert trace.kernel_iteration.tolist() == [0, 0, -1, -1] and trace.iterations == 1


def test_repeated_marks_without_kernels_add_no_empty_iteration():
    trace = trace_from_recording(raw_recording(marks=(2, 2, 4)), None, None)
    assert trace.iterations == 2 and trace.iteration_first_kernel.tolist() == [0, 2]


def test_inconsistent_recording_is_refused_with_the_rule():
    raw = raw_recording()
    raw["access_pages"][0] = 600
    with pytest.raises(TraceError, match="access_pages"):
        trace_from_recording(raw, None, None)


def test_timeline_of_a_recording_holds_kernels_migrations_and_faults(tmp_path):
    import json

    from deepum.cli import main

    trace_path, out = tmp_path / "run.npz", tmp_path / "timeline.json"
    write_trace(trace_from_recording(raw_recording(), "NVIDIA H200", None), trace_path)
    assert main(["timeline", str(trace_path), "-o", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X"]
    assert [e["name"] for e in kernels] == ["gemm", "relu", "gemm", "relu"]
    assert [e["ts"] for e in kernels] == [0.0, 0.1, 0.3, 0.4] and kernels[1]["dur"] == 0.1
    instants = [(e["tid"], e["name"]) for e in events if e["ph"] == "i"]
    assert sorted(instants) == [(2, "demand fault"), (3, "eviction"), (4, "fault"), (4, "fault"), (4, "fault")]


def test_timeline_and_record_refuse_what_they_cannot_use(tmp_path, capsys):
    from deepum.cli import main
    from deepum.offline.synth_transformer import synth_transformer

    synthetic = tmp_path / "synthetic.npz"
    write_trace(synth_transformer(layers=1, hidden=64, heads=2, seq=16, batch=1, vocab=64, iterations=1), synthetic)
    assert main(["timeline", str(synthetic), "-o", str(tmp_path / "t.json")]) == 2
    assert "recorded on a GPU" in capsys.readouterr().err
    assert main(["record", "-o", str(tmp_path / "r.npz"), str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    assert main(["record", "-o", str(tmp_path / "r.json"), str(script)]) == 2
    assert "must be a .npz file" in capsys.readouterr().err


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(1, 512), st.booleans()), max_size=40))
def test_a_launchs_accesses_merge_into_one_row_per_block(rows):
    """The launch hook's rows of a launch (one per allocation and block, in argument order) become one
    per block, ascending, pages summed and writes or-ed, before the recorder and the engine see them."""
    merged = {}
    for block, pages, write in rows:
        summed, written = merged.get(block, (0, False))
        merged[block] = (summed + pages, written or write)
    assert _native.merge_accesses(rows) == [(block, *merged[block]) for block in sorted(merged)]
