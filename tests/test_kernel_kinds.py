"""The kinds of kernel known by name (driver_hooks/kernel_marks.hpp and the kinds' headers, bound as
deepum._native.indexed_kernel and fill_kernel) against their readable specifications
(deepum.specs.indexed_kernels, deepum.specs.fill_kernels), on the names of PyTorch's own kernels and on
random names built from the marks."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum import _native
from deepum.specs.fill_kernels import FILL_KERNEL_MARKS, is_fill
from deepum.specs.indexed_kernels import INDEXED_KERNEL_MARKS, is_indexed

KINDS = {  # kind: (specification, native, marks)
    "indexed": (is_indexed, _native.indexed_kernel, INDEXED_KERNEL_MARKS),
    "fill": (is_fill, _native.fill_kernel, FILL_KERNEL_MARKS),
}

# Names as CUPTI reports them for PyTorch 2.x kernels (mangled), with whether each is indexed.
INDEXED = [
    ("_ZN2at6native12_GLOBAL__N_137EmbeddingBag_updateOutputKernel_sum_meanIflEEvPKT0_PKT_S4_S4_lllPS5_S7_"
     "S4_lS4_l", True),
    ("_ZN2at6native12_GLOBAL__N_121indexSelectLargeIndexIfljLi2ELi2ELin2ELb1EEEvNS_4cuda6detail10TensorInfoIT_"
     "T1_EES8_NS5_IKT0_S7_EEiiS7_S7_l", True),
    ("_ZN2at6native24indexing_backward_kernelIflEEvPKlS3_PKT_PS4_llllb", True),
    ("_ZN2at6native23sparseElementwiseKernelINS0_13TensorCAddOpIfEEmfEEvT_NS_4cuda6detail10TensorInfoIT1_T0_EE"
     "NS6_IlS8_EES9_S8_", True),
    ("_ZN2at6native24index_elementwise_kernelILi128ELi4EZNS0_16gpu_index_kernelIZNS0_17index_kernel_implINS0_"
     "10OpaqueTypeILi4EEEEEvRNS_18TensorIteratorBaseEN3c108ArrayRefIlEESA_EUlPcPKclE_EEvSB_SA_SA_RKT_bEUliE_EEvlT1_",
     True),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", False),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
     "__5x_cublas", False),
    ("_ZN2at6native44_GLOBAL__N__fused_adam_kernel_impl_cu_multi_tensor_apply_kernelINS0_28FusedOptimizer"
     "TensorListMetadataILi4EEENS1_19FusedAdamMathFunctorIfLi4ELNS0_8ADAM_MODEE1ELb0EEEJddddddbPKfS9_EEEvT_T0_"
     "DpT1_", False),
]

# The same for fills.
FILLS = [
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", True),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN3c108BFloat16EEESt5arrayIPcLm1EEEEviT0_T1_",
     True),
    ("_ZN2at6native52_GLOBAL__N__4671fab5_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_kernelINS0_18Tensor"
     "ListMetadataILi3EEENS1_20TernaryOpListFunctorIfLi3ELi2ELi2EEEJN3c107complexIdEEEEEvT_T0_DpT1_", False),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_", False),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
     "__5x_cublas", False),
]


@pytest.mark.parametrize("kind, name, expected",
                         [("indexed", n, e) for n, e in INDEXED] + [("fill", n, e) for n, e in FILLS])
def test_pytorch_kernels_are_classified(kind, name, expected):
    spec, native, _ = KINDS[kind]
    assert spec(name) == native(name) == expected


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_name_is_of_a_kind(kind):
    spec, native, _ = KINDS[kind]
    assert not spec(None) and not spec("") and not native("")


@st.composite
def kinds_and_names(draw):
    kind = draw(st.sampled_from(sorted(KINDS)))
    marks = KINDS[kind][2]
    parts = st.one_of(st.text(alphabet="_abcdefgxyzEIS0123456789", max_size=12), st.sampled_from(marks),
                      st.sampled_from([m[:-1] for m in marks]))  # a mark cut short
    return kind, "".join(draw(st.lists(parts, max_size=5)))


@settings(max_examples=400, deadline=None)
@given(kinds_and_names())
def test_native_classifies_as_the_specification(kind_and_name):
    kind, name = kind_and_name
    spec, native, _ = KINDS[kind]
    assert native(name) == spec(name)
