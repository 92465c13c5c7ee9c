"""Indexed kernels (driver_hooks/indexed_kernels.hpp, bound as deepum._native.indexed_kernel) against
their readable specification (deepum.specs.indexed_kernels), and the names of PyTorch's own kernels."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepum import _native
from deepum.specs.indexed_kernels import INDEXED_KERNEL_MARKS, is_indexed

# Names as CUPTI reports them for PyTorch 2.x kernels (mangled), with what each is.
PYTORCH_KERNELS = [
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


@pytest.mark.parametrize("name, indexed", PYTORCH_KERNELS)
def test_pytorch_kernels_are_classified(name, indexed):
    assert is_indexed(name) == _native.indexed_kernel(name) == indexed


def test_no_name_is_not_indexed():
    assert not is_indexed(None) and not is_indexed("") and not _native.indexed_kernel("")


names = st.lists(st.one_of(st.text(alphabet="_abcdefgxyzEIS0123456789", max_size=12),
                           st.sampled_from(INDEXED_KERNEL_MARKS),
                           st.sampled_from([m[:-1] for m in INDEXED_KERNEL_MARKS])),  # a mark cut short
                 max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(names)
def test_native_classifies_as_the_specification(name):
    assert _native.indexed_kernel(name) == is_indexed(name)
