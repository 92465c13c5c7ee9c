"""Synthetic traces: validity, determinism, repetition across iterations, memory safety and model sizes."""
import hashlib
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from deepum.offline import synth
from deepum.offline.synth_cnn import synth_cnn
from deepum.offline.synth_stream import exec_id, extent_accesses
from deepum.offline.synth_transformer import synth_transformer
from deepum.offline.trace_format import ARRAY_DTYPES
from deepum.offline.trace_io import read_trace, write_trace
from deepum.offline.trace_validation import validate_trace
from deepum.offline.trace_writer import blocks_of_extent

BLOCK = 2 << 20
SMALL_TRANSFORMER = dict(layers=2, hidden=256, heads=4, seq=128, batch=2, vocab=1000, iterations=3)
SMALL_CNN = dict(depth=50, width=16, image=64, batch=4, iterations=3)


@pytest.fixture(scope="module")
def transformer():
    return synth_transformer()


@pytest.fixture(scope="module")
def cnn():
    return synth_cnn()


def iteration_slices(trace):
    ends = list(trace.iteration_first_kernel[1:]) + [trace.num_kernels]
    return [slice(int(a), int(b)) for a, b in zip(trace.iteration_first_kernel, ends)]


def kernel_accesses(trace, k):
    lo, hi = trace.access_offsets[k], trace.access_offsets[k + 1]
    return trace.access_block[lo:hi], trace.access_pages[lo:hi], trace.access_write[lo:hi]


def names(trace):
    return trace.kernel_names[trace.kernel_name_idx]


def arrays(trace):
    return {name: getattr(trace, name) for name in ARRAY_DTYPES if getattr(trace, name) is not None}


def live_blocks_at_end(trace):
    live = {}
    for action, address, nbytes in zip(trace.mem_action, trace.mem_address, trace.mem_bytes):
        if action == 0:
            live[int(address)] = int(nbytes)
        elif action == 1:
            del live[int(address)]
    return live


# ------------------------------------------------------------------------------------------ accesses

extents = st.lists(st.tuples(st.integers(0, 3 * BLOCK), st.integers(1, 2 * BLOCK + 5000), st.booleans()),
                   min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(extents)
def test_extent_accesses_are_the_exact_union_of_pages(spans):
    address = np.array([a for a, _, _ in spans], np.int64)
    nbytes = np.array([n for _, n, _ in spans], np.int64)
    writes = np.array([w for _, _, w in spans])
    blocks, pages, written = extent_accesses(address, nbytes, writes)
    expected_pages, expected_write = {}, {}
    for a, n, w in spans:
        for page in range(a >> 12, ((a + n - 1) >> 12) + 1):
            expected_pages.setdefault(page >> 9, set()).add(page)
            expected_write[page >> 9] = expected_write.get(page >> 9, False) or w
    assert blocks.tolist() == sorted(expected_pages)
    assert pages.tolist() == [len(expected_pages[b]) for b in sorted(expected_pages)]
    assert written.tolist() == [expected_write[b] for b in sorted(expected_pages)]
    if len(spans) == 1:
        ref_blocks, ref_pages = blocks_of_extent(int(address[0]), int(nbytes[0]))
        assert blocks.tolist() == ref_blocks.tolist() and pages.tolist() == ref_pages.tolist()


def test_exec_id_is_a_blake2b_of_name_and_arguments():
    args = np.array([[0x7F0000000000, 4096, 0], [0x7F0000200000, 512, 1]], np.int64)
    digest = hashlib.blake2b(b"k" + args.astype("<i8").tobytes(), digest_size=8).digest()
    assert exec_id("k", args) == int.from_bytes(digest, "little")
    other = args.copy()
    other[1, 0] += 512
    assert len({exec_id("k", args), exec_id("j", args), exec_id("k", other)}) == 3


# --------------------------------------------------------------------------------------- whole traces

@pytest.mark.parametrize("make", ["transformer", "cnn"])
def test_default_traces_validate_and_round_trip(make, request, tmp_path):
    trace = request.getfixturevalue(make)
    validate_trace(trace)
    assert trace.iterations == 4 and trace.meta["source"] == "synthetic"
    assert trace.has_memory_events
    assert trace.meta["model"]["generator"] == make and "seed=0" in trace.meta["notes"]
    write_trace(trace, tmp_path / "t.npz")
    again = read_trace(tmp_path / "t.npz")
    assert again.meta == trace.meta
    for name, array in arrays(trace).items():
        assert np.array_equal(getattr(again, name), array), name


def test_default_sizes_replay_quickly(transformer, cnn):
    steady = iteration_slices(transformer)[1]
    per_iteration = steady.stop - steady.start
    assert 4 << 30 <= transformer.footprint_bytes() <= 10 << 30
    assert 500 <= per_iteration <= 2000
    assert 1 << 30 <= cnn.footprint_bytes() <= 10 << 30
    start = time.perf_counter()
    synth_transformer()
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("generate, config", [(synth_transformer, SMALL_TRANSFORMER),
                                              (synth_cnn, SMALL_CNN)])
def test_same_seed_same_trace_other_seed_other_durations(generate, config):
    a, b, c = generate(**config, seed=7), generate(**config, seed=7), generate(**config, seed=8)
    assert a.meta == b.meta
    for name, array in arrays(a).items():
        assert np.array_equal(getattr(b, name), array), name
        if name != "kernel_duration_ns":
            assert np.array_equal(getattr(c, name), array), name
    assert not np.array_equal(a.kernel_duration_ns, c.kernel_duration_ns)
    assert abs(np.log(a.kernel_duration_ns.sum() / c.kernel_duration_ns.sum())) < 0.05


@pytest.mark.parametrize("make", ["transformer", "cnn"])
def test_iterations_repeat_from_iteration_1(make, request):
    trace = request.getfixturevalue(make)
    slices = iteration_slices(trace)
    assert (trace.kernel_iteration[:slices[0].start] == -1).all()
    first = slices[1]
    for later in slices[2:]:
        assert np.array_equal(trace.kernel_exec_id[later], trace.kernel_exec_id[first])
        assert np.array_equal(trace.kernel_name_idx[later], trace.kernel_name_idx[first])
        for k, j in zip(range(first.start, first.stop), range(later.start, later.stop)):
            for x, y in zip(kernel_accesses(trace, k), kernel_accesses(trace, j)):
                assert np.array_equal(x, y)
    # block events repeat from iteration 1 and balance within it; iteration 1 may still make segments
    # (the first optimizer step took cached ones), later iterations make none
    events = np.stack([trace.mem_action.astype(np.int64), trace.mem_address.astype(np.int64),
                       trace.mem_bytes.astype(np.int64)], axis=1)
    per_iteration = [events[(trace.mem_kernel >= s.start) & (trace.mem_kernel < s.stop)] for s in slices]
    block_events = [rows[rows[:, 0] <= 1] for rows in per_iteration]
    for rows in block_events[2:]:
        assert np.array_equal(rows, block_events[1])
    assert not any((rows[:, 0] >= 2).any() for rows in per_iteration[2:]), "a steady iteration changed segments"
    allocs = sorted(map(tuple, block_events[1][block_events[1][:, 0] == 0, 1:]))
    frees = sorted(map(tuple, block_events[1][block_events[1][:, 0] == 1, 1:]))
    assert allocs == frees


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 3), width=st.sampled_from([64, 128, 192]), heads=st.sampled_from([1, 2, 4]),
       seq=st.sampled_from([16, 64, 200]), batch=st.integers(1, 3), vocab=st.integers(50, 3000))
def test_small_transformers_repeat_from_iteration_1(layers, width, heads, seq, batch, vocab):
    trace = synth_transformer(layers, width, heads, seq, batch, vocab, iterations=3)
    slices = iteration_slices(trace)
    assert np.array_equal(trace.kernel_exec_id[slices[1]], trace.kernel_exec_id[slices[2]])


@pytest.mark.parametrize("make, gemm", [("transformer", "gemm"), ("cnn", "implicit_gemm")])
def test_gemms_of_different_layers_have_different_exec_ids(make, gemm, request):
    trace = request.getfixturevalue(make)
    for s in iteration_slices(trace):
        is_gemm = np.char.find(names(trace)[s].astype(str), gemm) >= 0
        ids = trace.kernel_exec_id[s][is_gemm]
        assert is_gemm.sum() > 20 and np.unique(ids).shape[0] == ids.shape[0]


def check_memory_safety(trace):
    """Every access lies in a live allocation, and the first access to a block after it became wholly
    free (or after its segment was made) writes it. Returns how many blocks were reused that way."""
    live = {}                          # UM block -> live allocated bytes in it
    must_write = set()
    reused = 0
    events = iter(zip(trace.mem_kernel.tolist(), trace.mem_action.tolist(), trace.mem_address.tolist(),
                      trace.mem_bytes.tolist()))
    pending = next(events, None)
    for k in range(trace.num_kernels):
        while pending is not None and pending[0] < k:
            _, action, address, nbytes = pending
            first, last = address // BLOCK, (address + nbytes - 1) // BLOCK
            for block in range(first, last + 1):
                overlap = min(address + nbytes, (block + 1) * BLOCK) - max(address, block * BLOCK)
                if action == 0:
                    live[block] = live.get(block, 0) + overlap
                elif action == 1:
                    live[block] -= overlap
                    if live[block] == 0:
                        must_write.add(block)
                elif action == 2:
                    must_write.add(block)
            pending = next(events, None)
        blocks, _, writes = kernel_accesses(trace, k)
        for block, write in zip(blocks.tolist(), writes.tolist()):
            assert live.get(block, 0) > 0, f"kernel {k} touches block {block:#x} with no live allocation"
            if block in must_write:
                assert write, f"kernel {k} reads freed block {block:#x} before rewriting it"
                must_write.discard(block)
                reused += 1
    return reused


@pytest.mark.parametrize("make", ["transformer", "cnn"])
def test_freed_blocks_are_written_before_they_are_read(make, request):
    trace = request.getfixturevalue(make)
    segment_blocks = sum(int(n) // BLOCK for a, n in zip(trace.mem_action, trace.mem_bytes) if a == 2)
    assert check_memory_safety(trace) > segment_blocks      # freed memory is reused, not only new segments


def test_small_configurations_are_memory_safe():
    for trace in (synth_transformer(**SMALL_TRANSFORMER), synth_cnn(**SMALL_CNN),
                  synth_transformer(**{**SMALL_TRANSFORMER, "heads": 1, "dtype_bytes": 4}),
                  synth_cnn(**{**SMALL_CNN, "depth": 101, "dtype_bytes": 4})):
        check_memory_safety(trace)


def test_sizes_scale_with_the_model():
    small = synth_transformer(**SMALL_TRANSFORMER)
    deeper = synth_transformer(**{**SMALL_TRANSFORMER, "layers": 4})
    assert deeper.num_kernels > small.num_kernels
    assert deeper.footprint_bytes() > small.footprint_bytes()
    wider = synth_transformer(**{**SMALL_TRANSFORMER, "batch": 8})
    assert wider.footprint_bytes() > small.footprint_bytes()
    cnn = synth_cnn(**SMALL_CNN)
    deeper_cnn = synth_cnn(**{**SMALL_CNN, "depth": 101})
    assert deeper_cnn.num_kernels > cnn.num_kernels and deeper_cnn.footprint_bytes() > cnn.footprint_bytes()


def gpt_parameters(layers, hidden, seq, vocab):
    per_layer = (2 * hidden + 3 * hidden * hidden + 3 * hidden + hidden * hidden + hidden + 2 * hidden
                 + 4 * hidden * hidden + 4 * hidden + 4 * hidden * hidden + hidden)
    return vocab * hidden + seq * hidden + layers * per_layer + 2 * hidden


def check_persistent_bytes(trace, expected_bytes, tensors):
    """Blocks live at the end (parameters, grads, optimizer state, buffers) hold the expected bytes up
    to the allocator's rounding: at most 1 MiB of unsplit remainder per tensor."""
    live = live_blocks_at_end(trace)
    assert len(live) == tensors
    held = sum(live.values())
    assert expected_bytes <= held <= expected_bytes + tensors * (1 << 20)


def test_transformer_parameter_grad_and_adam_bytes():
    for config in (SMALL_TRANSFORMER, dict(layers=12, hidden=1024, heads=16, seq=1024, vocab=50304)):
        parameters = gpt_parameters(config["layers"], config["hidden"], config["seq"], config["vocab"])
        if config is SMALL_TRANSFORMER:
            trace = synth_transformer(**config)
        else:
            trace = synth_transformer(iterations=1)
            assert parameters == 203_716_608
        assert trace.meta["model"]["parameters"] == parameters
        param_tensors = 2 + 12 * config["layers"] + 2
        # parameters, grads, exp_avg, exp_avg_sq; plus the causal mask (seq x seq bool)
        check_persistent_bytes(trace, 4 * parameters * 2 + config["seq"] ** 2, 4 * param_tensors + 1)


def test_resnet_parameter_counts_and_sgd_bytes():
    assert synth_cnn(iterations=1, batch=1, image=32).meta["model"]["parameters"] == 25_557_032
    assert synth_cnn(depth=101, iterations=1, batch=1, image=32).meta["model"]["parameters"] == 44_549_160
    assert synth_cnn(depth=152, iterations=1, batch=1, image=32).meta["model"]["parameters"] == 60_192_808
    trace = synth_cnn(**SMALL_CNN)
    parameters = trace.meta["model"]["parameters"]
    convs = 1 + 3 * 16 + 4
    # parameters, grads, momentum; per batch norm running mean, var (fp32) and a step counter (int64)
    running = sum(2 * 4 * c + 8 for c in [16] + [c for stage in range(4) for c in
                  ([16 << stage, 16 << stage, 64 << stage] * [3, 4, 6, 3][stage] + [64 << stage])])
    param_tensors = 3 * convs + 2
    check_persistent_bytes(trace, 3 * parameters * 2 + running, 3 * param_tensors + 3 * convs)


@pytest.mark.parametrize("make, forward, backward", [
    ("transformer", ["_tn_"], ["_nn_", "_nt_"]), ("cnn", ["fprop"], ["dgrad", "wgrad"])])
def test_backward_follows_the_whole_forward(make, forward, backward, request):
    trace = request.getfixturevalue(make)
    for s in iteration_slices(trace):
        kernel_names = names(trace)[s].astype(str)
        is_forward = np.any([np.char.find(kernel_names, f) >= 0 for f in forward], axis=0)
        is_backward = np.any([np.char.find(kernel_names, b) >= 0 for b in backward], axis=0)
        assert is_forward.any() and is_backward.any()
        assert np.flatnonzero(is_forward).max() < np.flatnonzero(is_backward).min()


def test_backward_visits_layers_in_reverse(transformer):
    s = iteration_slices(transformer)[1]
    rows = np.arange(s.start, s.stop)
    kernel_names = names(transformer)[s].astype(str)
    forward = rows[kernel_names == "vectorized_layer_norm_kernel"]
    backward = rows[kernel_names == "layer_norm_grad_input_kernel"]
    assert len(forward) == len(backward) == 2 * 12 + 1
    # each backward layer norm reads the saved input its forward read: match them by shared blocks
    blocks = {k: set(kernel_accesses(transformer, k)[0].tolist()) for k in (*forward, *backward)}
    matched = [max(range(len(forward)), key=lambda i: len(blocks[b] & blocks[forward[i]])) for b in backward]
    assert matched == list(range(len(forward)))[::-1]


# ------------------------------------------------------------------------------------------- options

def test_generator_options_follow_the_signatures():
    options = synth.generator_options("transformer")
    assert [o[0] for o in options] == ["layers", "hidden", "heads", "seq", "batch", "vocab", "iterations",
                                       "seed", "dtype_bytes"]
    assert options[0] == ("layers", int, 12, options[0][3]) and all(o[3] for o in options)
    assert [o[0] for o in synth.generator_options("cnn")][:4] == ["depth", "width", "image", "batch"]
    assert set(synth.GENERATORS) == {"transformer", "cnn", "bucketed", "unet", "moe"}
    with pytest.raises(ValueError, match="unknown generator"):
        synth.generator_options("rnn")


@pytest.mark.parametrize("call, message", [
    (lambda: synth_transformer(hidden=1000, heads=16), r"hidden \(1000\).*heads \(16\)"),
    (lambda: synth_transformer(layers=0), "layers must be a positive integer"),
    (lambda: synth_transformer(batch=2.5), "batch must be a positive integer"),
    (lambda: synth_transformer(dtype_bytes=3), "dtype_bytes must be one of"),
    (lambda: synth_cnn(depth=34), "depth must be one of"),
    (lambda: synth_cnn(image=100), "image must be a multiple of 32"),
    (lambda: synth_cnn(iterations=0), "iterations must be a positive integer"),
])
def test_bad_sizes_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("model, options", [
    ("transformer", dict(layers=3, hidden=256, heads=4, seq=128, batch=2, vocab=512, iterations=3)),
    ("transformer", dict(layers=1, hidden=128, heads=2, seq=64, batch=1, vocab=256, iterations=1)),
    ("cnn", dict(depth=50, width=8, image=64, batch=2, iterations=3)),
    ("bucketed", dict(layers=3, hidden=256, heads=4, seq=128, buckets=3, batch=2, vocab=512, iterations=7)),
    ("unet", dict(levels=3, width=8, image=64, batch=2, iterations=3)),
    ("moe", dict(layers=3, hidden=128, heads=2, seq=64, batch=2, vocab=256, iterations=4)),
])
def test_estimate_counts_what_the_generator_writes(model, options):
    from deepum.offline.synth import GENERATORS
    from deepum.offline.synth_estimate import estimate

    trace = GENERATORS[model](**options)
    guess = estimate(model, **options)
    assert guess.kernels == pytest.approx(trace.num_kernels, rel=0.1)
    assert guess.accesses == pytest.approx(trace.num_accesses, rel=0.1)
    assert guess.memory_bytes > 0


def test_sizes_that_cannot_fit_are_refused_before_any_work():
    import time

    from deepum.offline.synth_estimate import check_fits

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"--layers 100000.*|needing about .* of memory, and 1.00 GiB is available"):
        check_fits("transformer", {"layers": 100000}, available=2**30)
    with pytest.raises(ValueError, match="more than .* block accesses"):
        check_fits("transformer", {"layers": 10**9}, available=2**40)
    with pytest.raises(ValueError, match="give smaller sizes than --iterations 1000000000000"):
        check_fits("cnn", {"iterations": 10**12}, available=2**40)
    assert time.perf_counter() - start < 5
    assert check_fits("transformer", {"layers": 2}, available=2**40).kernels > 0


def test_monitored_generation_reports_progress(monkeypatch):
    from deepum.offline import synth_stream
    from deepum.offline.synth import GENERATORS
    from deepum.offline.synth_stream import monitored

    MONITOR_EVERY = 16
    monkeypatch.setattr(synth_stream, "MONITOR_EVERY", MONITOR_EVERY)
    heard = []
    with monitored(heard.append):
        trace = GENERATORS["transformer"](layers=2, hidden=128, heads=2, seq=64, batch=1, vocab=256, iterations=3)
    assert sum(heard) == trace.num_kernels // MONITOR_EVERY * MONITOR_EVERY > 0


# ------------------------------------------------------------------------------ irregular training
SMALL_BUCKETED = dict(layers=2, hidden=256, heads=4, seq=128, buckets=3, batch=2, vocab=1000, iterations=8)
SMALL_UNET = dict(levels=3, width=8, image=64, batch=2, classes=3, iterations=3)
SMALL_MOE = dict(layers=2, hidden=128, heads=2, seq=64, batch=2, vocab=256, experts=6, active=3, top_k=2,
                 iterations=4)
IRREGULAR = [(synth.synth_bucketed, SMALL_BUCKETED), (synth.synth_unet, SMALL_UNET), (synth.synth_moe, SMALL_MOE)]


def iteration_exec_ids(trace):
    return [trace.kernel_exec_id[s] for s in iteration_slices(trace)]


def same_launches(a, b) -> bool:
    return a.shape == b.shape and bool((a == b).all())


@pytest.mark.parametrize("generate, config", IRREGULAR)
def test_irregular_traces_validate_and_are_memory_safe(generate, config):
    trace = generate(**config)
    validate_trace(trace)
    assert trace.iterations == config["iterations"]
    assert check_memory_safety(trace) > 0


@pytest.mark.parametrize("buckets", [2, 3, 4])
def test_bucketed_steps_repeat_one_cycle_of_buckets_back(buckets):
    """From iteration 1 on (after the optimizer state is allocated), a step launches what the step
    `buckets` back launched, and differs from the steps in between."""
    ids = iteration_exec_ids(synth.synth_bucketed(**{**SMALL_BUCKETED, "buckets": buckets, "iterations": 1 + 2 * buckets}))
    for i in range(1, 1 + buckets):
        assert same_launches(ids[i], ids[i + buckets])
        assert not any(same_launches(ids[i], ids[j]) for j in range(i + 1, i + buckets))


def test_bucket_lengths_run_longest_first():
    from deepum.offline.synth_bucketed import bucket_lengths

    assert bucket_lengths(1024, 3) == [1024, 682, 341]
    assert bucket_lengths(128, 2) == [128, 64]
    with pytest.raises(ValueError, match="buckets"):
        synth.synth_bucketed(seq=2, buckets=3)


def test_unet_skip_activation_lives_across_the_whole_decoder():
    """The top level's skip activation, written by the encoder's second convolution, is read by the
    last concatenation, after every other convolution of the forward pass (images large enough that
    each level's activations have blocks of their own)."""
    trace = synth.synth_unet(**{**SMALL_UNET, "image": 256})
    s = iteration_slices(trace)[1]
    rows = np.arange(s.start, s.stop)
    kernel_names = names(trace)[s].astype(str)
    convs = rows[np.char.find(kernel_names, "fprop") >= 0]
    cats = rows[kernel_names == "CatArrayBatchedCopy"]
    assert len(cats) == SMALL_UNET["levels"]
    skip = set(kernel_accesses(trace, convs[1])[0].tolist())
    assert skip & set(kernel_accesses(trace, cats[-1])[0].tolist())
    assert not skip & set(kernel_accesses(trace, cats[0])[0].tolist())
    forward_convs = convs[convs < cats[-1]]
    assert len(forward_convs) >= 2 * (SMALL_UNET["levels"] + 1) + SMALL_UNET["levels"]


def test_moe_routing_changes_per_step_and_follows_its_seed():
    """Each step launches as many kernels, but touches another set of expert weights; the routing seed
    alone decides which (experts wide enough to have blocks of their own)."""
    config = {**SMALL_MOE, "hidden": 512, "heads": 4}
    trace = synth.synth_moe(**config)
    ids = iteration_exec_ids(trace)
    assert len({len(i) for i in ids[1:]}) == 1
    assert not any(same_launches(ids[i], ids[j]) for i in range(1, len(ids)) for j in range(i + 1, len(ids)))

    def expert_blocks(trace, iteration):
        s = iteration_slices(trace)[iteration]
        rows = np.arange(s.start, s.stop)[np.char.find(names(trace)[s].astype(str), "_tn_") >= 0]
        return frozenset(b for k in rows for b in kernel_accesses(trace, k)[0].tolist())

    assert len({expert_blocks(trace, i) for i in range(1, len(ids))}) > 1
    again = synth.synth_moe(**config)
    other = synth.synth_moe(**{**config, "routing_seed": 1})
    assert np.array_equal(again.kernel_exec_id, trace.kernel_exec_id)
    assert not np.array_equal(other.kernel_exec_id, trace.kernel_exec_id)


def test_irregular_parameter_counts_match_the_bytes_held():
    """Parameters, grads and Adam's two states are all that stays allocated (and the causal mask)."""
    unet = synth.synth_unet(**SMALL_UNET)
    convs = 2 * (SMALL_UNET["levels"] + 1) + 3 * SMALL_UNET["levels"] + 1
    check_persistent_bytes(unet, 4 * unet.meta["model"]["parameters"] * 2, 4 * 2 * convs)
    moe = synth.synth_moe(**SMALL_MOE)
    tensors = 2 + SMALL_MOE["layers"] * (8 + 1 + 4 * SMALL_MOE["experts"]) + 2
    check_persistent_bytes(moe, 4 * moe.meta["model"]["parameters"] * 2 + SMALL_MOE["seq"] ** 2, 4 * tensors + 1)


@pytest.mark.parametrize("call, message", [
    (lambda: synth.synth_moe(active=9), r"top_k \(2\) <= active \(9\) <= experts \(8\)"),
    (lambda: synth.synth_moe(routing_seed=-1), "routing_seed must be a non-negative integer"),
    (lambda: synth.synth_unet(image=100), r"image \(100\) must be a multiple of 2\*\*levels \(16\)"),
    (lambda: synth.synth_bucketed(buckets=0), "buckets must be a positive integer"),
])
def test_irregular_bad_sizes_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
