"""Fill kernels (driver_hooks/fill_kernels.hpp, bound as deepum._native.fill_kernel) against their
readable specification (deepum.specs.fill_kernels), and the names of PyTorch's own kernels."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum import _native
from deepum.specs.fill_kernels import FILL_KERNEL_MARKS, is_fill

# Names as CUPTI reports them for PyTorch 2.x kernels (mangled), with what each is.
PYTORCH_KERNELS = [
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", True),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN3c108BFloat16EEESt5arrayIPcLm1EEEEviT0_T1_",
     True),
    ("_ZN2at6native52_GLOBAL__N__4671fab5_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_kernelINS0_18Tensor"
     "ListMetadataILi3EEENS1_20TernaryOpListFunctorIfLi3ELi2ELi2EEEJN3c107complexIdEEEEEvT_T0_DpT1_", False),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_", False),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
     "__5x_cublas", False),
]


@pytest.mark.parametrize("name, fill", PYTORCH_KERNELS)
def test_pytorch_kernels_are_classified(name, fill):
    assert is_fill(name) == _native.fill_kernel(name) == fill


def test_no_name_is_not_a_fill():
    assert not is_fill(None) and not is_fill("") and not _native.fill_kernel("")


names = st.lists(st.one_of(st.text(alphabet="_abcdefgxyzEIS0123456789", max_size=12),
                           st.sampled_from(FILL_KERNEL_MARKS),
                           st.sampled_from([m[:-1] for m in FILL_KERNEL_MARKS])),  # a mark cut short
                 max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(names)
def test_native_classifies_as_the_specification(name):
    assert _native.fill_kernel(name) == is_fill(name)
