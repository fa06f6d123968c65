"""kernels/gemm/wgmma_bf16.py off the GPU: the module imports (and says why it is unavailable) in the
simulator, and its host-side pieces -- the matrix descriptor's bit fields, the m64nNk16 accumulator layout,
the shared-memory layouts and the generated PTX -- are what the PTX ISA describes. The wgmma kernels
themselves need an sm_90a GPU under numba-cuda-mlir: the tests marked gpu run the matmul rung
tensor_core_wgmma there against the float64 reference (elsewhere they skip with the rung's one-line reason;
scripts/wgmma_bench.py times the builds)."""
import numpy as np
import pytest

import kernels
from kernels.gemm import wgmma_bf16 as W
from tests.conftest import SIMULATOR, skip_unavailable
from tests.kernels.test_tensor_cores import _run


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


def test_grouped_tile_order_is_a_permutation():
    for gx, gy, group in [(32, 32, 8), (40, 24, 8), (3, 5, 8), (7, 13, 4)]:
        tiles = [W.grouped_tile(b, gx, gy, group) for b in range(gx * gy)]
        assert sorted(tiles) == [(x, y) for x in range(gx) for y in range(gy)]
    assert [W.grouped_tile(b, 4, 16, 8) for b in range(3)] == [(0, 0), (0, 1), (0, 2)]  # down the group first


def test_build_names():
    assert all(W.build_name(b) == name for name, b in W.BUILDS.items()) and W.build_name() in W.BUILDS


def test_rung_declared_after_the_bf16_rung():
    from kernels import matmul

    spec = kernels.load("matmul")
    names = list(spec.variants)
    assert names.index("tensor_core_wgmma") == names.index("tensor_core_bf16") + 1
    v = spec.variants["tensor_core_wgmma"]
    assert "tensor_core_wgmma" not in matmul.RUNGS and v.precision == "bf16" and v.suits((4096,) * 3) is False
    assert v.tolerance is not None  # bf16 inputs: the 7-bit-mantissa tolerance, as the bf16 rung's
    if SIMULATOR:
        assert v.unavailable(np.float32) == ("tensor_core_wgmma: wgmma has no emulation in the simulator; "
                                             "the tensor_core_bf16 rung is the emulated lesson")
    elif not v.unavailable(np.float32):
        assert "float32" in v.unavailable(np.float64)
    launch = v.launch((1000, 1030, 517), 32)
    from kernels.gemm import wgmma_tma

    bm, bn, threads = W.block_shape(wgmma_tma.BUILD)  # the rung runs the TMA build
    assert launch.grid == (-(-1030 // bn), -(-1000 // bm)) and launch.block == (threads,)
    assert "ignored" in launch.note and "float32 sums" in launch.note and "wgmma" in launch.note


# Ragged sizes: (1000, 1030, 517) K and N not multiples of 8 (plain loads, a partial last K slab of 5);
# (777, 1336, 904) K, N multiples of 8 (cp.async), M and N not multiples of the 128 x 128 tile;
# (130, 4104, 72) cp.async, two K slabs the second of 8, 8 columns into the last block.
GPU_SIZES = [(1000, 1030, 517), (777, 1336, 904), (130, 4104, 72)]


@pytest.mark.gpu
@pytest.mark.parametrize("size", GPU_SIZES)
def test_tensor_core_wgmma_rung(size, rng):
    verdict = _run("tensor_core_wgmma", size, rng)  # skips with the rung's reason off an sm_90a GPU
    assert verdict.ok, verdict.reason


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(W.BUILDS))
def test_every_build(name, rng):
    # each build scripts/wgmma_bench.py times, at a ragged aligned size (cp.async): M 2 blocks + 1 row, N 10 blocks
    # + 8 columns, K 3 slabs + 8; against float64 of the same bf16 values, float32 sums' error allowed
    skip_unavailable("matmul", "tensor_core_wgmma")
    from kernels.compiler import cuda
    from kernels.gemm import mma_bf16 as MB

    m, n, k = 257, 1288, 200
    A = MB.to_bf16_bits(rng.standard_normal((m, k)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((k, n)).astype(np.float32))
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    W.launcher(m, n, k, **W.BUILDS[name])(cuda.to_device(A), cuda.to_device(B), dC)
    Af, Bf = (MB.bf16_bits_to_float32(x).astype(np.float64) for x in (A, B))
    err = np.abs(dC.copy_to_host() - Af @ Bf) / (2e-6 * np.sqrt(k) * (np.abs(Af) @ np.abs(Bf)) + 1e-30)
    assert np.isfinite(err).all() and err.max() <= 1, f"{name}: max err/tol {err.max():.3g}"


def test_unavailable_names_the_gpu_it_needs(monkeypatch):
    # as on a GPU under numba-cuda-mlir: an sm_80 GPU cannot load sm_90a code; the H100 takes float32 only
    from kernels import device_limits as D

    monkeypatch.setattr(W, "SIMULATOR", False)
    monkeypatch.setattr(W, "UNAVAILABLE", "")
    with D.described(D.H100.replace(cc=(8, 0))):
        assert W.unavailable(np.float32).startswith("tensor_core_wgmma needs a compute-capability 9.0 GPU")
        assert "this one is 8.0" in W.unavailable(np.float32)
    with D.described(D.H100.replace(cc=(9, 0))):
        assert W.unavailable(np.float32) == ""
        assert "float32" in W.unavailable(np.float64)


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="torch's contenders need a CUDA GPU")
def test_torch_bf16_row_is_checked_at_the_bf16_tolerance():
    """torch.matmul on bf16 copies (the bf16 rungs' comparison) passes at the bf16 rungs' tolerance on an
    odd shape, and its row says so; the FP32 row beside it is held to float32's."""
    import lab.library as L

    doc = L.run("matmul", size="1000x1030x517", variant="naive", contenders="torch", repeats=3, sim=False).to_dict()
    rows = {r["variant"]: r for r in doc["results"] if r["contender"] == "torch"}
    bf16 = rows["torch.matmul (cuBLAS, bf16)"]
    assert bf16["status"] == "ok" and "bf16" in bf16["reason"], bf16
    assert rows["torch.matmul (cuBLAS, TF32 off)"]["status"] == "ok"


@pytest.mark.gpu
@pytest.mark.parametrize("atomic", [0, 2])
def test_k_ranges(atomic, rng):
    # the TMA rung on 5 K ranges (K padded to 2,944: 46 slabs, ranges of 10, the last of 6), M and N ragged
    skip_unavailable("matmul", "tensor_core_wgmma")
    from types import SimpleNamespace

    from kernels.compiler import cuda
    from kernels.gemm import mma, mma_bf16 as MB, wgmma_tma as T

    m, n, k = 333, 517, 2900
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    T.prepare(SimpleNamespace(grid=(3, 3, 5)), (cuda.to_device(A), cuda.to_device(B)), (dC,), atomic=atomic)()
    err = (np.abs(dC.copy_to_host() - A.astype(np.float64) @ B.astype(np.float64))
           / mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA))
    assert np.isfinite(err).all() and err.max() <= 1, f"err/tol {err.max():.3g}"
