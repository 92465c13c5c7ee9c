"""The launch hook's reader of multi_tensor_apply_kernel arguments (driver_hooks/tensor_lists.hpp).

The structs are rebuilt here with ctypes from PyTorch's definitions (ATen/native/cuda/
MultiTensorApply.cuh, PyTorch 2.x), so their layout, padding included, comes from the C ABI rather
than from the reader's arithmetic; and PyTorch's launch loop is modelled to fill them as it does,
one struct reused across the launches of a call, its unused slots left as they were."""
import ctypes
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_native = pytest.importorskip("deepum._native")

MAX_TENSORS = (110, 64, 48, 36, 30)
MAX_TENSORS_SCALAR_LIST = (96, 64, 48, 36, 30)
MAX_TENSORS_COMPLEX_DOUBLE = (72, 60)
MAX_BLOCKS = 320


class ComplexDouble(ctypes.Structure):
    _fields_ = [("real", ctypes.c_double), ("imag", ctypes.c_double)]
    _pack_ = 16


# kind -> the mangled fragment naming the struct in the kernel's name, given depth and scalar type
NAMES = {
    "plain": lambda depth, scalar: f"18TensorListMetadataILi{depth}EEE",
    "scalar_list": lambda depth, scalar: f"28TensorListScalarListMetadataI{scalar}Li{depth}EEE",
    "fused": lambda depth, scalar: f"32FusedOptimizerTensorListMetadataILi{depth}EEE",
}
SCALARS = {"f": ctypes.c_float, "d": ctypes.c_double, "l": ctypes.c_int64, "b": ctypes.c_bool}


def kernel_name(kind: str, depth: int, scalar: str = "f") -> str:
    return ("_ZN2at6native50_GLOBAL__N__b6ca21f8_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelIN"
            f"S1_{NAMES[kind](depth, scalar)}NS1_14UnaryOpFunctorIfLi{depth}ELi1ELi1EEEJNS0_4SqrtIfEEEEEvT_T0_DpT1_")


def metadata_struct(kind: str, depth: int, scalar: str = "f"):
    """PyTorch's struct for the kind, as a ctypes type."""
    if kind == "scalar_list":
        complex_double = scalar == "N3c107complexIdEE"
        slots = (MAX_TENSORS_COMPLEX_DOUBLE[depth - 1] if complex_double and depth <= 2
                 else MAX_TENSORS_SCALAR_LIST[depth - 1])
        scalar_type = ComplexDouble if complex_double else SCALARS[scalar]
        fields = [("addresses", ctypes.c_uint64 * slots * depth), ("numel_for_tensor", ctypes.c_int64 * slots),
                  ("scalar_vals", scalar_type * slots), ("block_to_tensor", ctypes.c_ubyte * MAX_BLOCKS),
                  ("block_to_chunk", ctypes.c_int * MAX_BLOCKS)]
    else:
        slots = MAX_TENSORS[depth - 1]
        fields = [("addresses", ctypes.c_uint64 * slots * depth), ("numel_for_tensor", ctypes.c_int64 * slots)]
        if kind == "fused":
            fields.append(("state_steps_addresses", ctypes.c_uint64 * MAX_TENSORS_SCALAR_LIST[depth - 1]))
        fields += [("block_to_tensor", ctypes.c_ubyte * MAX_BLOCKS), ("block_to_chunk", ctypes.c_int * MAX_BLOCKS),
                   ("start_tensor_this_launch", ctypes.c_int)]
    return type(f"{kind}{depth}", (ctypes.Structure,), {"_fields_": fields}), slots


def address(operand: int, tensor: int) -> int:
    """The address of tensor `tensor` of operand list `operand` (distinct for every pair)."""
    return 0x7F00_0000_0000 + (operand * 100_000 + tensor) * 4096


def step_address(tensor: int) -> int:
    return 0x7E00_0000_0000 + tensor * 4096


def launches(kind: str, depth: int, chunks: list[int], scalar: str = "f", garbage: int = 0):
    """PyTorch's multi_tensor_apply over tensors of the given chunk counts: for each launch, the
    struct's bytes, its grid and the addresses it uses (slot by slot, operands then step counter).
    The struct starts filled with earlier calls' addresses (garbage seeds them)."""
    struct_type, slots = metadata_struct(kind, depth, scalar)
    meta = struct_type()
    rng = random.Random(garbage)
    for d in range(depth):
        for s in range(slots):
            meta.addresses[d][s] = address(d, 10_000 + rng.randrange(10_000))
    if kind == "fused":
        for s in range(len(meta.state_steps_addresses)):
            meta.state_steps_addresses[s] = step_address(10_000 + rng.randrange(10_000))
    for b in range(MAX_BLOCKS):
        meta.block_to_tensor[b] = rng.randrange(256)
    listed: list[int] = []  # the tensor in each filled slot
    block = 0
    out = []

    def launch():
        used = []
        for s, tensor in enumerate(listed):
            used += [address(d, tensor) for d in range(depth)]
            if kind == "fused":
                used.append(step_address(tensor))
        out.append((bytes(meta), block, used))

    for tensor, count in enumerate(chunks):
        s = len(listed)
        listed.append(tensor)
        for d in range(depth):
            meta.addresses[d][s] = address(d, tensor)
        if kind == "fused":
            meta.state_steps_addresses[s] = step_address(tensor)
        for chunk in range(count):
            meta.block_to_tensor[block] = len(listed) - 1
            block += 1
            tensors_full = len(listed) == slots and chunk == count - 1
            if tensors_full or block == MAX_BLOCKS:
                launch()
                block = 0
                if chunk == count - 1:
                    listed = []
                else:  # the tensor's remaining chunks: it moves to slot 0
                    for d in range(depth):
                        meta.addresses[d][0] = meta.addresses[d][len(listed) - 1]
                    if kind == "fused":
                        meta.state_steps_addresses[0] = meta.state_steps_addresses[len(listed) - 1]
                    listed = [tensor]
    if block:
        launch()
    return out


LAYOUTS = ([("plain", depth, "f") for depth in range(1, 6)] + [("fused", depth, "f") for depth in range(1, 6)]
           + [("scalar_list", depth, scalar) for depth in range(1, 6) for scalar in ("f", "d", "l", "b")]
           + [("scalar_list", depth, "N3c107complexIdEE") for depth in (1, 2, 3)])


@pytest.mark.parametrize("kind,depth,scalar", LAYOUTS)
def test_each_layout_reads_only_the_slots_its_blocks_use(kind, depth, scalar):
    """Many tensors of many chunks: launches end full of blocks, full of tensors, and part full,
    so stale slots follow every kind of launch."""
    chunks = [1 + (7 * t) % 40 for t in range(3 * MAX_TENSORS[0])]
    name = kernel_name(kind, depth, scalar)
    seen = launches(kind, depth, chunks, scalar)
    assert len(seen) > 3
    for argument, grid, used in seen:
        assert _native.tensor_list_addresses(name, argument, grid) == used


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["plain", "fused", "scalar_list"]), depth=st.integers(1, 5),
       chunks=st.lists(st.integers(1, 700), min_size=1, max_size=150), garbage=st.integers(0, 2**16))
def test_every_launch_of_a_call_names_exactly_its_tensors(kind, depth, chunks, garbage):
    name = kernel_name(kind, depth)
    for argument, grid, used in launches(kind, depth, chunks, garbage=garbage):
        assert _native.tensor_list_addresses(name, argument, grid) == used


def test_an_optimizer_state_tensor_counts_once_per_launch_that_uses_it():
    """The case that misled the scan: the last launch of a call has few tensors and the rest of its
    slots name the earlier launch's, which the whole-argument scan would count again."""
    chunks = [160] * 3  # 320 blocks, then 160: the second launch lists tensor 2 only, in slot 0
    (first, first_grid, _), (second, second_grid, used) = launches("plain", 2, chunks)
    assert second_grid == 160
    assert _native.tensor_list_addresses(kernel_name("plain", 2), second, second_grid) == [address(0, 2), address(1, 2)]
    scanned = {int.from_bytes(second[i:i + 8], "little") for i in range(0, 2 * 64 * 8, 8)}
    assert address(0, 1) in scanned  # tensor 1, in slot 1 since the first launch: what the reader leaves out


@pytest.mark.parametrize("name", [
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
    kernel_name("plain", 2).replace("Li2E", "Li6E"),  # no such depth
    kernel_name("scalar_list", 1, "N3c104HalfE"),     # a scalar type the reader does not know
])
def test_other_kernels_are_scanned_whole(name):
    argument, grid, _ = launches("plain", 2, [3, 4])[0]
    assert _native.tensor_list_addresses(name, argument, grid) is None


@pytest.mark.parametrize("kind,depth", [("plain", 2), ("fused", 4), ("scalar_list", 1)])
def test_a_struct_of_another_size_is_scanned_whole(kind, depth):
    """A PyTorch whose struct differs (other table sizes) must not be read with these offsets."""
    argument, grid, _ = launches(kind, depth, [3, 4])[0]
    name = kernel_name(kind, depth)
    for changed in (argument[:-8], argument + bytes(8), argument + bytes(4096)):
        assert _native.tensor_list_addresses(name, changed, grid) is None


def test_a_launch_that_does_not_read_as_the_layout_says_is_scanned_whole():
    name = kernel_name("plain", 3)
    struct_type, slots = metadata_struct("plain", 3)
    meta = struct_type()
    meta.block_to_tensor[0] = slots  # past the table
    assert _native.tensor_list_addresses(name, bytes(meta), 1) is None
    meta.block_to_tensor[0] = 0
    assert _native.tensor_list_addresses(name, bytes(meta), 0) is None
    assert _native.tensor_list_addresses(name, bytes(meta), MAX_BLOCKS + 1) is None
    assert _native.tensor_list_addresses(name, bytes(meta), 1) == [0, 0, 0]
