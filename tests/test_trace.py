"""Trace format v1: validation rules, file round trip, corrupt files, TraceWriter, access helpers, summary."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum.offline.trace_format import ARRAY_DTYPES, BLOCK_BYTES, PAGE_BYTES, Trace, TraceError
from deepum.offline.trace_io import read_trace, write_trace
from deepum.offline.trace_summary import format_summary, summarize
from deepum.offline.trace_validation import normalize_trace, validate_trace
from deepum.offline.trace_writer import TraceWriter, blocks_of_extent, merge_accesses
from strategies import valid_traces

MiB = 1 << 20


def base_trace() -> Trace:
    """3 kernels over 2 iterations, every optional group present, one unknown meta key."""
    meta = {"format": "deepum-trace", "version": 1, "block_bytes": BLOCK_BYTES, "page_bytes": PAGE_BYTES,
            "source": "synthetic", "device": None, "capacity_bytes": None, "iterations": 2,
            "notes": "toy", "model": {"name": "toy", "layers": [1, 2]}}
    return Trace(
        meta=meta,
        kernel_exec_id=np.array([11, 22, 11], np.uint64),
        kernel_name_idx=np.array([0, 1, 0], np.int32),
        kernel_names=np.array(["gemm", "relu"]),
        kernel_iteration=np.array([0, 0, 1], np.int32),
        kernel_duration_ns=np.array([100, 50, 100], np.int64),
        kernel_t_start_ns=np.array([0, 200, -1], np.int64),
        kernel_t_end_ns=np.array([150, 260, -1], np.int64),
        access_offsets=np.array([0, 2, 3, 5], np.int64),
        access_block=np.array([10, 11, 10, 10, 12], np.int64),
        access_pages=np.array([512, 3, 1, 512, 7], np.int16),
        access_write=np.array([False, True, True, False, False]),
        iteration_first_kernel=np.array([0, 2], np.int64),
        fault_t_ns=np.array([5, 5, 9], np.int64),
        fault_address=np.array([10 << 21, (11 << 21) + 4096, 12 << 21], np.uint64),
        fault_kernel=np.array([0, 0, 2], np.int64),
        fault_kind=np.array([1, 2, 4], np.int8),
        mem_kernel=np.array([-1, 0, 2], np.int64),
        mem_action=np.array([2, 0, 1], np.int8),
        mem_address=np.array([10 << 21, 10 << 21, 10 << 21], np.uint64),
        mem_bytes=np.array([8 * MiB, 4096, 4096], np.uint64),
        xfer_t_ns=np.array([1, 3], np.int64),
        xfer_address=np.array([10 << 21, 12 << 21], np.uint64),
        xfer_bytes=np.array([2 * MiB, 2 * MiB], np.uint64),
        xfer_dir=np.array([1, 2], np.int8),
        xfer_cause=np.array([2, 4], np.int8),
    )


def assert_same_trace(got: Trace, want: Trace) -> None:
    assert got.meta == want.meta
    for name in ARRAY_DTYPES:
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)


def with_meta(**changes) -> Trace:
    trace = base_trace()
    return dataclasses.replace(trace, meta={**trace.meta, **changes})


def without_meta(key: str) -> Trace:
    trace = base_trace()
    return dataclasses.replace(trace, meta={k: v for k, v in trace.meta.items() if k != key})


def with_arrays(**changes) -> Trace:
    return dataclasses.replace(base_trace(), **changes)


def i64(*values):
    return np.array(values, np.int64)


def i8(*values):
    return np.array(values, np.int8)


# (broken trace, text the TraceError message must contain): each breaks exactly one rule of the format.
BROKEN = {
    "meta not an object": (lambda: with_arrays(meta=["deepum-trace"]), "meta: must be a JSON object"),
    "format name": (lambda: with_meta(format="other-trace"), "meta.format"),
    "version 2": (lambda: with_meta(version=2), "meta.version: unsupported version 2"),
    "version type": (lambda: with_meta(version="1"), "meta.version: must be an int"),
    "missing meta key": (lambda: without_meta("notes"), "meta: missing keys notes"),
    "block_bytes": (lambda: with_meta(block_bytes=4096), "meta.block_bytes"),
    "page_bytes": (lambda: with_meta(page_bytes=65536), "meta.page_bytes"),
    "source": (lambda: with_meta(source="real"), "meta.source"),
    "device type": (lambda: with_meta(device=0), "meta.device"),
    "capacity type": (lambda: with_meta(capacity_bytes="8GiB"), "meta.capacity_bytes"),
    "meta iterations negative": (lambda: with_meta(iterations=-1), "meta.iterations"),
    "iterations bool": (lambda: with_meta(iterations=True), "meta.iterations"),
    "notes type": (lambda: with_meta(notes=None), "meta.notes"),
    "extra key not JSON": (lambda: with_meta(seeds={1, 2}), "meta: must be JSON-encodable"),
    "extra key changes in JSON": (lambda: with_meta(shape=(1, 2)), "meta: must survive JSON"),
    "required array missing": (lambda: with_arrays(access_offsets=None), "access_offsets: required array missing"),
    "group partly present": (lambda: with_arrays(fault_kind=None, fault_kernel=None), "fault_kernel, fault_kind"),
    "float into int64": (lambda: with_arrays(kernel_duration_ns=np.array([100.0, 50.0, 100.0])),
                         "kernel_duration_ns: must hold integers"),
    "uint64 too large for int64": (lambda: with_arrays(kernel_t_start_ns=np.array([2**63, 200, 0], np.uint64)),
                                   "kernel_t_start_ns: values"),
    "int64 too large for int16": (lambda: with_arrays(access_pages=np.array([512, 3, 1, 512, 70000])),
                                  "access_pages: values"),
    "negative into uint64": (lambda: with_arrays(fault_address=i64(-4096, 0, 0)), "fault_address: values"),
    "bool into integer": (lambda: with_arrays(access_pages=np.ones(5, bool)), "access_pages: must hold integers"),
    "integer 2 into bool": (lambda: with_arrays(access_write=i64(0, 1, 2, 0, 0)), "access_write: must be bool"),
    "names not str": (lambda: with_arrays(kernel_names=i64(1, 2)), "kernel_names: must hold str"),
    "not an array": (lambda: with_arrays(access_block=[10, 11, 10, 10, 12]), "access_block: must be a numpy array"),
    "not 1-d": (lambda: with_arrays(access_block=i64(10, 11, 10, 10, 12).reshape(5, 1)), "access_block: must be 1-d"),
    "kernel length": (lambda: with_arrays(kernel_iteration=np.array([0, 0], np.int32)), "kernel_iteration: length"),
    "access length": (lambda: with_arrays(access_pages=np.array([1, 1, 1, 1], np.int16)), "access_pages: length"),
    "fault length": (lambda: with_arrays(fault_kind=i8(1, 1)), "fault_kind: length"),
    "mem length": (lambda: with_arrays(mem_bytes=np.array([1], np.uint64)), "mem_bytes: length"),
    "xfer length": (lambda: with_arrays(xfer_cause=i8(0)), "xfer_cause: length"),
    "name index too large": (lambda: with_arrays(kernel_name_idx=np.array([0, 2, 0], np.int32)), "kernel_name_idx"),
    "name index negative": (lambda: with_arrays(kernel_name_idx=np.array([0, -1, 0], np.int32)), "kernel_name_idx"),
    "iteration below -1": (lambda: with_arrays(kernel_iteration=np.array([0, -2, 1], np.int32)), "kernel_iteration"),
    "iteration past count": (lambda: with_arrays(kernel_iteration=np.array([0, 0, 2], np.int32)),
                             "kernel_iteration: must be in -1..1"),
    "negative duration": (lambda: with_arrays(kernel_duration_ns=i64(100, -1, 100)), "kernel_duration_ns"),
    "start below -1": (lambda: with_arrays(kernel_t_start_ns=i64(0, -2, -1)), "kernel_t_start_ns"),
    "end below -1": (lambda: with_arrays(kernel_t_end_ns=i64(150, -5, -1)), "kernel_t_end_ns"),
    "end before start": (lambda: with_arrays(kernel_t_end_ns=i64(150, 199, -1)),
                         "kernel_t_end_ns: must be >= kernel_t_start_ns"),
    "offsets length": (lambda: with_arrays(access_offsets=i64(0, 2, 5)), "access_offsets: length"),
    "offsets start": (lambda: with_arrays(access_offsets=i64(1, 2, 3, 5)), "access_offsets: must start at 0"),
    "offsets decrease": (lambda: with_arrays(access_offsets=i64(0, 3, 2, 5)),
                         "access_offsets: must be non-decreasing (row 2: 2 < 3)"),
    "offsets end": (lambda: with_arrays(access_offsets=i64(0, 2, 3, 4)), "access_offsets: must end at"),
    "negative block": (lambda: with_arrays(access_block=i64(10, 11, -1, 10, 12)), "access_block: must be >= 0"),
    "zero pages": (lambda: with_arrays(access_pages=np.array([512, 0, 1, 512, 7], np.int16)), "access_pages"),
    "513 pages": (lambda: with_arrays(access_pages=np.array([512, 3, 1, 513, 7], np.int16)),
                  "access_pages: must be in 1..512 (row 3: 513)"),
    "block twice in a kernel": (lambda: with_arrays(access_block=i64(10, 11, 10, 12, 12)),
                                "access_block: a block may appear once per kernel (block 12 twice in kernel 2"),
    "fault time order": (lambda: with_arrays(fault_t_ns=i64(5, 9, 6)), "fault_t_ns: must be non-decreasing"),
    "fault unaligned": (lambda: with_arrays(fault_address=np.array([0, 4097, 0], np.uint64)),
                        "fault_address: must be 4096-byte aligned (row 1: 4097)"),
    "fault kernel too large": (lambda: with_arrays(fault_kernel=i64(0, 3, 2)), "fault_kernel: must be in -1..2"),
    "fault kernel below -1": (lambda: with_arrays(fault_kernel=i64(-2, 0, 2)), "fault_kernel"),
    "fault kind 0": (lambda: with_arrays(fault_kind=i8(1, 0, 4)), "fault_kind: must be in 1..4"),
    "fault kind 5": (lambda: with_arrays(fault_kind=i8(1, 5, 4)), "fault_kind"),
    "mem kernel too large": (lambda: with_arrays(mem_kernel=i64(-1, 0, 3)), "mem_kernel: must be in -1..2"),
    "mem kernel below -1": (lambda: with_arrays(mem_kernel=i64(-2, 0, 2)), "mem_kernel"),
    "mem program order": (lambda: with_arrays(mem_kernel=i64(0, -1, 2)), "mem_kernel: must be non-decreasing"),
    "mem action": (lambda: with_arrays(mem_action=i8(2, 4, 1)), "mem_action: must be in 0..3"),
    "xfer time order": (lambda: with_arrays(xfer_t_ns=i64(3, 1)), "xfer_t_ns: must be non-decreasing"),
    "xfer dir 0": (lambda: with_arrays(xfer_dir=i8(0, 2)), "xfer_dir: must be in 1..2"),
    "xfer dir 3": (lambda: with_arrays(xfer_dir=i8(1, 3)), "xfer_dir"),
    "xfer cause 6": (lambda: with_arrays(xfer_cause=i8(2, 6)), "xfer_cause: must be in 0..5"),
    "xfer cause negative": (lambda: with_arrays(xfer_cause=i8(-1, 2)), "xfer_cause"),
    "iterations rows": (lambda: with_arrays(iteration_first_kernel=i64(0)), "iteration_first_kernel: must have"),
    "iterations repeat": (lambda: with_arrays(iteration_first_kernel=i64(1, 1)),
                          "iteration_first_kernel: must be strictly increasing"),
    "iterations past kernels": (lambda: with_arrays(iteration_first_kernel=i64(0, 3)),
                                "iteration_first_kernel: must be in 0..2"),
    "iteration first kernel negative": (lambda: with_arrays(iteration_first_kernel=i64(-1, 2)),
                                        "iteration_first_kernel"),
}


def test_base_trace_is_valid():
    validate_trace(base_trace())


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_broken_rule_is_refused_with_the_array_named(case):
    make, expected = BROKEN[case]
    with pytest.raises(TraceError) as info:
        validate_trace(make())
    assert expected in str(info.value)


@pytest.mark.parametrize("trace", [
    with_arrays(kernel_duration_ns=np.array([100, 50, 100], np.int32)),
    with_arrays(kernel_t_start_ns=np.array([0, 200, 0], np.uint64), kernel_t_end_ns=i64(150, 260, 0)),
    with_arrays(access_write=np.array([0, 1, 1, 0, 0], np.uint8)),
    with_arrays(access_block=np.array([10, 11, 10, 10, 12], ">i8")),
    with_arrays(kernel_exec_id=np.array([11, 22, 11], np.int16)),
], ids=["int32 into int64", "small uint64 into int64", "0/1 into bool", "big-endian", "int16 into uint64"])
def test_lossless_casts_are_accepted_and_normalised(trace):
    normal = normalize_trace(trace)
    for name, dtype in ARRAY_DTYPES.items():
        if dtype.kind != "U":
            assert getattr(normal, name).dtype == dtype, name
            np.testing.assert_array_equal(getattr(normal, name), getattr(trace, name))


def test_rules_the_format_does_not_state_are_not_imposed():
    # First iteration after kernel 0; one time of a kernel unknown; a block in several kernels.
    validate_trace(with_arrays(iteration_first_kernel=i64(1, 2), kernel_t_start_ns=i64(-1, 200, 5)))
    validate_trace(with_arrays(access_block=i64(10, 11, 11, 10, 11)))


def test_empty_trace_is_valid():
    trace = TraceWriter().finish()
    assert trace.num_kernels == 0 and trace.iterations == 0
    assert trace.access_offsets.tolist() == [0] and trace.fault_t_ns is None


# ------------------------------------------------------------------------------------------ files

@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("traces")


@settings(max_examples=150, deadline=None)
@given(trace=valid_traces(), compressed=st.booleans())
def test_round_trip_preserves_every_array_and_meta(scratch, trace, compressed):
    path = scratch / "round_trip.npz"
    write_trace(trace, path, compressed=compressed)
    assert_same_trace(read_trace(path), trace)


def test_strategy_draws_each_optional_group_present_and_absent():
    seen = set()

    @settings(max_examples=100, deadline=None)
    @given(valid_traces())
    def collect(trace):
        validate_trace(trace)
        seen.update((name, getattr(trace, name) is None) for name in ("fault_t_ns", "mem_kernel", "xfer_t_ns"))

    collect()
    assert seen == {(name, absent) for name in ("fault_t_ns", "mem_kernel", "xfer_t_ns") for absent in (True, False)}


def test_unknown_meta_keys_kept_and_extra_arrays_ignored(tmp_path):
    trace = base_trace()
    path = tmp_path / "t.npz"
    write_trace(trace, path)
    with np.load(path) as archive:
        members = dict(archive)
    np.savez(path, extra_array=np.arange(3), pickled_extra=np.array([{}], dtype=object), **members)
    got = read_trace(path)
    assert got.meta["model"] == {"name": "toy", "layers": [1, 2]}
    assert_same_trace(got, trace)


@pytest.mark.parametrize("cut", [0, 1, 10, 0.25, 0.5, 0.9, -22, -1])
def test_truncated_file_is_an_error(tmp_path, cut):
    path = tmp_path / "t.npz"
    write_trace(base_trace(), path)
    data = path.read_bytes()
    path.write_bytes(data[:cut if isinstance(cut, int) else int(cut * len(data))])
    with pytest.raises(TraceError, match="t.npz"):
        read_trace(path)


@pytest.mark.parametrize("compressed", [True, False])
def test_damaged_file_is_an_error_or_reads_back_unchanged(tmp_path, compressed):
    path = tmp_path / "t.npz"
    write_trace(base_trace(), path, compressed=compressed)
    data = path.read_bytes()
    errors = 0
    for position in range(0, len(data), 17):
        damaged = bytearray(data)
        damaged[position] ^= 0xA5
        path.write_bytes(bytes(damaged))
        try:
            assert_same_trace(read_trace(path), base_trace())
        except TraceError:
            errors += 1
    assert errors > 0


def test_files_that_are_not_traces(tmp_path):
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "missing.npz")
    with pytest.raises(TraceError, match="must end with .npz"):
        read_trace(tmp_path / "trace.npy")
    (tmp_path / "garbage.npz").write_bytes(b"not a zip archive at all")
    with pytest.raises(TraceError, match="garbage.npz"):
        read_trace(tmp_path / "garbage.npz")
    np.save(tmp_path / "array.npy", np.arange(3))
    (tmp_path / "array.npy").rename(tmp_path / "array.npz")
    with pytest.raises(TraceError, match="not an .npz archive"):
        read_trace(tmp_path / "array.npz")


def members_of(trace: Trace) -> dict:
    members = {name: getattr(trace, name) for name in ARRAY_DTYPES if getattr(trace, name) is not None}
    return {"meta": np.array(json.dumps(trace.meta)), **members}


@pytest.mark.parametrize("meta, expected", [
    (None, "meta: required member missing"),
    (np.array([json.dumps(base_trace().meta)]), "meta: must be a 0-d str array"),
    (np.array(b"{}"), "meta: must be a 0-d str array"),
    (np.array("{not json"), "meta: not valid JSON"),
    (np.array("[1, 2]"), "meta: must hold a JSON object"),
    (np.array(json.dumps({**base_trace().meta, "version": 2})), "unsupported version 2"),
    (np.array({"format": "deepum-trace"}, dtype=object), "t.npz: unreadable"),
])
def test_bad_meta_member_is_refused(tmp_path, meta, expected):
    members = members_of(base_trace())
    members.pop("meta")
    if meta is not None:
        members["meta"] = meta
    np.savez(tmp_path / "t.npz", **members)
    with pytest.raises(TraceError, match=expected):
        read_trace(tmp_path / "t.npz")


def test_file_missing_an_array_or_part_of_a_group_is_refused(tmp_path):
    members = members_of(base_trace())
    np.savez(tmp_path / "t.npz", **{k: v for k, v in members.items() if k != "kernel_names"})
    with pytest.raises(TraceError, match="kernel_names: required array missing"):
        read_trace(tmp_path / "t.npz")
    np.savez(tmp_path / "t.npz", **{k: v for k, v in members.items() if k != "xfer_dir"})
    with pytest.raises(TraceError, match="xfer_dir: missing from the partly present transfers group"):
        read_trace(tmp_path / "t.npz")


def test_write_refuses_bad_name_and_invalid_trace(tmp_path):
    with pytest.raises(TraceError, match="must end with .npz"):
        write_trace(base_trace(), tmp_path / "t.trace")
    assert not (tmp_path / "t.trace").exists() and not (tmp_path / "t.trace.npz").exists()
    with pytest.raises(TraceError, match="fault_kind"):
        write_trace(with_arrays(fault_kind=i8(1, 9, 1)), tmp_path / "t.npz")
    assert list(tmp_path.iterdir()) == []


def test_written_meta_is_a_0d_str_json_object(tmp_path):
    write_trace(base_trace(), tmp_path / "t.npz", compressed=False)
    with np.load(tmp_path / "t.npz", allow_pickle=False) as archive:
        meta = archive["meta"]
        assert meta.ndim == 0 and meta.dtype.kind == "U"
        assert json.loads(str(meta)) == base_trace().meta
        assert archive["access_pages"].dtype == np.int16


# ----------------------------------------------------------------------------------------- writer

def write_base(writer: TraceWriter) -> None:
    """The events of base_trace() through the writer API."""
    writer.add_mem_event(2, 10 << 21, 8 * MiB)
    writer.add_transfer(1, 10 << 21, 2 * MiB, 1, 2)
    writer.begin_iteration()
    writer.add_kernel(11, "gemm", 100, [10, 11], [512, 3], [False, True], t_start_ns=0, t_end_ns=150)
    writer.add_mem_event(0, 10 << 21, 4096)
    writer.add_fault(5, 10 << 21, 0, 1)
    writer.add_fault(5, (11 << 21) + 4096, 0, 2)
    writer.add_transfer(3, 12 << 21, 2 * MiB, 2, 4)
    writer.add_kernel(22, "relu", 50, np.array([10], np.int32), [1], [1], t_start_ns=200, t_end_ns=260)
    writer.begin_iteration()
    writer.add_kernel(11, "gemm", 100, (10, 12), (512, 7), (False, False))
    writer.add_mem_event(1, 10 << 21, 4096)
    writer.add_fault(9, 12 << 21, 2, 4)


def test_writer_builds_the_same_trace_as_arrays_by_hand(tmp_path):
    writer = TraceWriter(tmp_path / "w.npz", notes="toy", extra_meta={"model": {"name": "toy", "layers": [1, 2]}})
    write_base(writer)
    trace = writer.finish()
    assert_same_trace(trace, base_trace())
    assert_same_trace(read_trace(tmp_path / "w.npz"), base_trace())


def test_writer_as_context_manager_writes_on_exit(tmp_path):
    with TraceWriter(tmp_path / "w.npz", source="gpu", device="H200", capacity_bytes=8 << 30) as writer:
        writer.begin_iteration()
        writer.add_kernel(1, "k", 10, [], [], [])
    assert writer.trace is not None
    got = read_trace(tmp_path / "w.npz")
    assert got.meta["source"] == "gpu" and got.meta["device"] == "H200" and got.meta["capacity_bytes"] == 8 << 30
    assert got.access_offsets.tolist() == [0, 0]


def test_writer_does_not_write_when_the_block_raises(tmp_path):
    with pytest.raises(KeyError):
        with TraceWriter(tmp_path / "w.npz") as writer:
            writer.add_kernel(1, "k", 10, [1], [1], [True])
            raise KeyError("stop")
    assert not (tmp_path / "w.npz").exists()


def test_writer_iterations_and_kernels_before_the_first():
    writer = TraceWriter()
    assert writer.add_kernel(1, "warmup", 5, [0], [1], [False]) == 0
    for _ in range(3):
        writer.begin_iteration()
        writer.add_kernel(2, "a", 5, [1], [1], [False])
        writer.add_kernel(3, "b", 5, [2], [1], [True])
    trace = writer.finish()
    assert trace.meta["iterations"] == 3
    assert trace.kernel_iteration.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert trace.iteration_first_kernel.tolist() == [1, 3, 5]
    assert trace.kernel_names.tolist() == ["warmup", "a", "b"]
    assert trace.kernel_name_idx.tolist() == [0, 1, 2, 1, 2, 1, 2]


def test_writer_groups_absent_unless_rows_or_recording_flag():
    plain = TraceWriter().finish()
    assert plain.fault_t_ns is None and plain.mem_kernel is None and plain.xfer_t_ns is None
    flagged = TraceWriter(record_faults=True, record_memory_events=True, record_transfers=True).finish()
    for name in ("fault_t_ns", "fault_kind", "mem_kernel", "mem_bytes", "xfer_t_ns", "xfer_cause"):
        assert getattr(flagged, name).shape == (0,) and getattr(flagged, name).dtype == ARRAY_DTYPES[name]
    writer = TraceWriter(record_faults=True)
    writer.add_mem_event(2, 0, 4096)
    partial = writer.finish()
    assert partial.mem_kernel.tolist() == [-1] and partial.fault_t_ns.shape == (0,) and partial.xfer_t_ns is None


def test_writer_grows_its_buffers_without_losing_rows():
    rng = np.random.default_rng(7)
    writer = TraceWriter()
    expected_blocks, expected_offsets = [], [0]
    writer.begin_iteration()
    for k in range(300):
        blocks = rng.choice(10_000, size=int(rng.integers(0, 200)), replace=False)
        writer.add_kernel(k, f"k{k % 7}", 1, blocks, np.ones(blocks.size, np.int16), blocks % 2 == 0)
        writer.add_fault(k, int(blocks[0]) << 21 if blocks.size else 0, k, 1)
        expected_blocks.append(blocks)
        expected_offsets.append(expected_offsets[-1] + blocks.size)
    trace = writer.finish()
    np.testing.assert_array_equal(trace.access_block, np.concatenate(expected_blocks))
    np.testing.assert_array_equal(trace.access_offsets, expected_offsets)
    np.testing.assert_array_equal(trace.access_write, trace.access_block % 2 == 0)
    assert trace.fault_kernel.tolist() == list(range(300))


@pytest.mark.parametrize("misuse, expected", [
    (lambda w: (w.begin_iteration(), w.begin_iteration()), "iteration 0 has no kernels"),
    (lambda w: (w.begin_iteration(), w.finish()), "iteration 0 has no kernels"),
    (lambda w: w.add_kernel(1, "k", 1, [1, 2], [1], [True, True]), "access_block, access_pages, access_write"),
    (lambda w: w.add_kernel(1, "k", 1, [1.5], [1], [True]), "access_block: must hold integers"),
    (lambda w: w.add_kernel(-1, "k", 1, [], [], []), "kernel_exec_id: -1 does not fit"),
    (lambda w: w.add_kernel(1, b"k", 1, [], [], []), "kernel_names: a kernel name must be a str"),
    (lambda w: w.add_fault(1.0, 0, 0, 1), "fault_t_ns: must be an integer"),
    (lambda w: w.add_transfer(0, -1, 1, 1, 1), "xfer_address: -1 does not fit"),
    (lambda w: (w.add_kernel(1, "k", 1, [3, 3], [1, 1], [0, 0]), w.finish()), "access_block: a block may appear"),
    (lambda w: (w.add_fault(0, 0, -1, 9), w.finish()), "fault_kind: must be in 1..4"),
    (lambda w: (w.finish(), w.add_fault(0, 0, -1, 1)), "already finished"),
])
def test_writer_misuse_is_reported(misuse, expected):
    with pytest.raises(TraceError, match=expected):
        misuse(TraceWriter())


@pytest.mark.parametrize("kwargs, expected", [
    ({"path": "trace.bin"}, "must end with .npz"),
    ({"source": "real"}, "meta.source"),
    ({"extra_meta": {"iterations": 3}}, "extra_meta may not set iterations"),
    ({"extra_meta": {"seed": (1, 2)}}, "meta: must survive JSON"),
])
def test_writer_refuses_bad_settings_at_once(kwargs, expected):
    with pytest.raises(TraceError, match=expected):
        TraceWriter(**kwargs)


# --------------------------------------------------------------------------------- access helpers

def brute_force_blocks(address: int, nbytes: int) -> tuple[list[int], list[int]]:
    pages_per_block: dict[int, set[int]] = {}
    for page in range(address // PAGE_BYTES, (address + nbytes - 1) // PAGE_BYTES + 1):
        pages_per_block.setdefault(page * PAGE_BYTES // BLOCK_BYTES, set()).add(page)
    blocks = sorted(pages_per_block)
    return blocks, [len(pages_per_block[b]) for b in blocks]


@settings(max_examples=300, deadline=None)
@given(address=st.integers(0, 2**48), nbytes=st.integers(1, 9 * MiB))
def test_blocks_of_extent_matches_a_page_loop(address, nbytes):
    blocks, pages = blocks_of_extent(address, nbytes)
    assert blocks.dtype == np.int64 and pages.dtype == np.int16
    assert (blocks.tolist(), pages.tolist()) == brute_force_blocks(address, nbytes)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(1, 5 * MiB)), max_size=6))
def test_blocks_of_extent_on_arrays_concatenates_each_extent(extents):
    addresses = np.array([a for a, _ in extents], np.uint64)
    sizes = np.array([n for _, n in extents], np.int64)
    blocks, pages = blocks_of_extent(addresses, sizes)
    expected = [brute_force_blocks(a, n) for a, n in extents]
    assert blocks.tolist() == [b for bs, _ in expected for b in bs]
    assert pages.tolist() == [p for _, ps in expected for p in ps]


def test_blocks_of_extent_edges_and_errors():
    assert [x.tolist() for x in blocks_of_extent(BLOCK_BYTES, BLOCK_BYTES)] == [[1], [512]]
    assert [x.tolist() for x in blocks_of_extent(BLOCK_BYTES - 1, 2)] == [[0, 1], [1, 1]]
    assert [x.tolist() for x in blocks_of_extent(2**64 - 4096, 4096)] == [[2**43 - 1], [1]]
    for address, nbytes in ((0, 0), (-1, 10), (2**64 - 1, 2), (0.5, 10)):
        with pytest.raises(ValueError):
            blocks_of_extent(address, nbytes)


def test_merge_accesses_ors_writes_and_keeps_the_largest_pages():
    blocks, pages, writes = merge_accesses([7, 3, 7, 5, 3], [10, 512, 30, 1, 2], [False, False, True, False, False])
    assert blocks.tolist() == [3, 5, 7] and pages.tolist() == [512, 1, 30] and writes.tolist() == [False, False, True]
    assert (blocks.dtype, pages.dtype, writes.dtype) == (np.int64, np.int16, np.bool_)
    assert [x.size for x in merge_accesses([], [], [])] == [0, 0, 0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**30), st.integers(1, 3 * MiB), st.booleans()), max_size=8))
def test_extents_merged_are_a_valid_kernel_access_set(extents):
    writer = TraceWriter()
    parts = [blocks_of_extent(a, n) for a, n, _ in extents]
    blocks = np.concatenate([b for b, _ in parts] + [np.empty(0, np.int64)])
    pages = np.concatenate([p for _, p in parts] + [np.empty(0, np.int16)])
    writes = np.concatenate([np.full(b.size, w) for (b, _), (_, _, w) in zip(parts, extents)] + [np.empty(0, bool)])
    writer.add_kernel(1, "k", 1, *merge_accesses(blocks, pages, writes))
    trace = writer.finish()
    assert set(trace.access_block.tolist()) == set(blocks.tolist())


# ---------------------------------------------------------------------------------------- summary

def test_summarize_small_trace():
    summary = summarize(base_trace())
    assert summary == {
        "kernels": 3, "exec_ids": 2, "kernel_names": 2, "iterations": 2, "accesses": 5, "blocks": 3,
        "footprint_bytes": 3 * BLOCK_BYTES,
        "accessed_bytes_per_iteration": (512 + 3 + 1 + 512 + 7) * PAGE_BYTES / 2,
        "written_fraction": 2 / 5,
        "optional_groups": {"faults": 3, "memory_events": 3, "transfers": 2},
        "meta": base_trace().meta,
    }
    json.dumps(summary)


def test_summarize_without_iterations_or_accesses():
    summary = summarize(TraceWriter().finish())
    assert summary["accessed_bytes_per_iteration"] is None and summary["written_fraction"] is None
    assert summary["optional_groups"] == {} and summary["footprint_bytes"] == 0


def test_format_summary_reads_well():
    text = format_summary(base_trace())
    assert "source synthetic" in text and "3 launches, 2 exec IDs, 2 names, 2 iterations" in text
    assert "5 rows, 3 blocks, footprint 6.00 MiB" in text
    assert "40.0% of accesses write" in text and "faults 3, memory_events 3, transfers 2" in text
    assert 'model = {"name": "toy", "layers": [1, 2]}' in text and "toy" in text
    assert "recorded    none" in format_summary(TraceWriter().finish())


def test_random_bytes_and_a_folder_named_npz_are_named_for_what_they_are(tmp_path):
    (tmp_path / "x.npz").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(TraceError, match=r"x\.npz: not a readable trace \(not an \.npz archive\)") as info:
        read_trace(tmp_path / "x.npz")
    assert "allow_pickle" not in str(info.value)
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(TraceError, match=r"d\.npz: a directory, not a trace file"):
        read_trace(tmp_path / "d.npz")
