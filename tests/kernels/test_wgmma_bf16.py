"""kernels/gemm/wgmma_bf16.py off the GPU: the module imports (and says why it is unavailable) in the
simulator, and its host-side pieces -- the matrix descriptor's bit fields, the m64nNk16 accumulator layout,
the shared-memory layouts and the generated PTX -- are what the PTX ISA describes. The wgmma kernels
themselves need an sm_90a GPU under numba-cuda-mlir (scripts/wgmma_probe.py, scripts/wgmma_bench.py)."""
import numpy as np

from kernels.gemm import wgmma_bf16 as W
from tests.conftest import SIMULATOR


def test_unavailable_off_numba_cuda_mlir():
    if SIMULATOR:
        assert "sm_90a" in W.UNAVAILABLE
    assert W.CHIP == "sm_90a"


def test_descriptor_fields():
    d = W.descriptor(0x1_2340, 8192, 1024, W.SWIZZLE_128B)
    assert d & 0x3FFF == 0x1234 and (d >> 16) & 0x3FFF == 512 and (d >> 32) & 0x3FFF == 64 and d >> 62 == 1


def test_accumulator_layout_covers_the_tile_once():
    n = 128
    seen = {W.d_index(t, i) for t in range(128) for i in range(n // 2)}
    assert len(seen) == 64 * n and max(seen) == (63, n - 1)
    assert W.d_index(37, 6) == (16 + 1 + 8, 8 + 2)  # warp 1, lane 5; register 6: second n8 block, rows + 8


def test_layouts_are_permutations_and_swizzled():
    m, k = np.indices((64, 64))
    off = W.k_major_offset(m, k)
    assert sorted(off.ravel() // 2) == list(range(64 * 64))
    assert off[1, 0] == 128 + 16  # row 1: its chunk 0 stored at chunk 1
    kk, n = np.indices((64, 128))
    assert sorted(W.mn_major_offset(kk, n).ravel() // 2) == list(range(64 * 128))
    assert W.mn_major_offset(0, 64) == 8192


def test_generated_ptx():
    ptx = W.wgmma_ptx(128, 4, 1)
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4 and "wacc63}" in ptx
    assert "%8" in ptx and "%9" not in ptx  # 4 + 4 descriptors, then scale-d: 9 operands
    assert W.acc_declare_ptx(64).startswith(".reg .f32 wacc<64>;")


def test_gemm_build_sizes_and_unavailable_launcher():
    assert W.shared_bytes(4, 128) == 4 * 32 * 1024 + 1024 and W.shared_bytes(4, 256) <= W.DYNAMIC_SHARED_MAX
    if W.UNAVAILABLE:
        assert not hasattr(W, "make_wgmma_kernel")
        try:
            W.launcher(130, 136, 64)
        except RuntimeError as e:
            assert "sm_90a" in str(e)
        else:
            raise AssertionError("launcher must refuse where wgmma is unavailable")
