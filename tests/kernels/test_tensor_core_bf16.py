"""The bfloat16 tensor-core rung (kernels/gemm/tensor_core_bf16.py) and its instructions (kernels/gemm/mma_bf16.py):
the m16n8k16 fragment layout, ldmatrix's lane-to-row mapping (plain and .trans), one emulated mma, the bf16
rounding and tolerance, and the rung against the float64 reference at sizes that are not multiples of its
tiles. In the simulator the instructions are the emulation; on a GPU under numba-cuda-mlir the same tests run
the hardware (scripts/tensor_cores_bench.py --bf16 times it)."""
import numpy as np
import pytest

import kernels
from kernels.compiler import cuda, float32
from kernels.gemm import mma, mma_bf16 as MB
from kernels.spec import dot_tolerance
from tests.conftest import SIMULATOR, skip_unavailable
from tests.kernels.test_tensor_cores import _run

pytestmark = pytest.mark.gpu


def test_m16n8k16_fragments_cover_each_tile_once():
    maps = MB.fragment_maps()
    for name, shape, n in (("A", (16, 16), 8), ("B", (16, 8), 4), ("C", (16, 8), 4)):
        grid = maps[name]
        assert grid.shape == shape and sorted(grid.ravel()) == sorted(10 * ln + i for ln in range(32) for i in range(n))
    # PTX ISA, m16n8k16 .bf16: lane 5 is group 1, thread-in-group 1
    assert MB.a_index(5, 0) == (1, 2) and MB.a_index(5, 3) == (9, 3) and MB.a_index(5, 6) == (9, 10)
    assert MB.b_index(5, 1) == (3, 1) and MB.b_index(5, 2) == (10, 1)
    assert "T31.7" in MB.fragment_picture()


def test_ldmatrix_delivers_the_mma_fragments():
    # lane l pointing at row l % 16, column (l // 16) * 8: registers 0..3 are a0..a3 of the 16 x 16 tile,
    # and with .trans on a k x n tile b0, b1 of its left 16 x 8 half and b0, b1 of its right half
    for lane in range(32):
        for j in range(4):
            for h in range(2):
                (src, e) = MB.ldmatrix_source(lane, j, False)[h]
                assert (src % 16, 8 * (src // 16) + e) == MB.a_index(lane, 2 * j + h)
                (src, e) = MB.ldmatrix_source(lane, j, True)[h]
                k, n = MB.b_index(lane, 2 * (j % 2) + h)
                assert (src % 16, 8 * (src // 16) + e) == (k, n + 8 * (j // 2))


def test_bf16_rounding_is_nearest_even():
    one = np.float32(1.0)
    tie = np.float32(1.0 + 2.0 ** -8)  # halfway between 1 and 1 + 2^-7: to even (1)
    assert MB.round_bf16(tie) == one and MB.round_bf16(np.float32(1.0 + 3 * 2.0 ** -8)) == np.float32(1 + 2.0 ** -6)
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    r = MB.round_bf16(x)
    assert (r.view(np.uint32) & 0xFFFF == 0).all() and np.all(np.abs(r - x) <= np.abs(x) * 2.0 ** -8)
    assert np.isnan(MB.round_bf16(np.float32(np.nan))) and MB.round_bf16(np.float32(np.inf)) == np.inf


def test_bf16_tolerance_passes_bf16_and_fails_coarser(rng):
    A = rng.standard_normal((40, 700)).astype(np.float32)
    B = rng.standard_normal((700, 24)).astype(np.float32)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    tol = mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA)
    b16 = MB.round_bf16(A).astype(np.float64) @ MB.round_bf16(B).astype(np.float64)
    assert (np.abs(b16 - exact) <= tol).all()
    assert not (np.abs(b16 - exact) <= mma.rounded_inputs_tolerance(A, B, 10)).all()  # TF32's is too tight
    coarse = lambda x: (x.view(np.uint32) & np.uint32(0xFFF80000)).view(np.float32)  # noqa: E731  (4 bits, truncated)
    c4 = coarse(A).astype(np.float64) @ coarse(B).astype(np.float64)
    assert not (np.abs(c4 - exact) <= tol).all()


def test_ldmatrix_reads_the_rows_the_lanes_point_at():
    # the probe (kernels.gemm.mma_bf16.ldmatrix_probe; scripts/bf16_bench.py runs it on a GPU): element (r, c)
    # of the 16 x 16 tile holds 16 r + c, so each register's two halves name the elements it got
    assert MB.ldmatrix_probe_wrong() == (0, 0)


@cuda.jit
def _mma_probe(A, B, C):
    lane = cuda.threadIdx.x
    g = lane // 4
    q = lane % 4
    a = cuda.local.array(4, np.int32)
    for r in range(4):  # a_r: A[g (+8 for r odd)][2q (+8 for r >= 2) ..+1]
        row = g + 8 * (r % 2)
        col = 2 * q + 8 * (r // 2)
        a[r] = np.int32(A[row, col]) | (np.int32(A[row, col + 1]) << 16)
    b0 = np.int32(B[2 * q, g]) | (np.int32(B[2 * q + 1, g]) << 16)
    b1 = np.int32(B[2 * q + 8, g]) | (np.int32(B[2 * q + 9, g]) << 16)
    z = float32(0.0)
    d0, d1, d2, d3 = MB.mma_bf16(a[0], a[1], a[2], a[3], b0, b1, z, z, z, z)
    C[g, 2 * q] = d0
    C[g, 2 * q + 1] = d1
    C[g + 8, 2 * q] = d2
    C[g + 8, 2 * q + 1] = d3


@pytest.mark.skipif(not SIMULATOR, reason="the emulation's fragments (a GPU runs the instruction: the bench probes it)")
def test_one_mma_is_the_tile_product(rng):
    A = MB.to_bf16_bits(rng.standard_normal((16, 16)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((16, 8)).astype(np.float32))
    C = np.full((16, 8), np.nan, np.float32)
    _mma_probe[1, 32](A.astype(np.int32), B.astype(np.int32), C)
    ref = MB.bf16_bits_to_float32(A).astype(np.float64) @ MB.bf16_bits_to_float32(B)
    assert np.allclose(C, ref, rtol=1e-6, atol=1e-6)


SIM_SIZES = [(33, 17, 13), (20, 24, 40)]  # K, N odd: plain loads; multiples of 8: cp.async, two K-slabs
GPU_SIZES = [(1000, 1030, 517), (257, 4099, 136), (777, 1333, 904)]


@pytest.mark.parametrize("size", SIM_SIZES if SIMULATOR else GPU_SIZES)
def test_tensor_core_bf16_rung(size, rng):
    verdict = _run("tensor_core_bf16", size, rng)
    assert verdict.ok, verdict.reason


@pytest.mark.slow  # ~6 s in the simulator
def test_bf16_wide_warp_tiles_and_dynamic_shared_memory(rng):
    # a candidate build of scripts/bf16_bench.py: 4 warps of 64 x 64 (literal-index epilogue), BK 32 over
    # 3 stages in dynamic shared memory (both declarations alias it, B after A); edges (the rung test: two blocks)
    skip_unavailable("matmul", "tensor_core_bf16")
    from kernels.gemm import tensor_core_bf16 as TC

    build = dict(warps_m=2, warps_n=2, nt=8, stages=3, dynamic=True)
    m, n, k = (40, 72, 40) if SIMULATOR else (300, 1000, 1000)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    bm, bn, threads = TC.tile_shape(2, 2, 4, 8)
    assert (bm, bn, threads) == (128, 128, 128) and TC.shared_bytes(**build) == 2 * 3 * (128 * 40 + 32 * 136)
    C = cuda.to_device(np.full((m, n), np.nan, np.float32))
    grid = ((n + bn - 1) // bn, (m + bm - 1) // bm)
    TC.configured(TC.kernel_for(k, n, **build), grid, (threads,), build)(
        cuda.to_device(MB.to_bf16_bits(A)), cuda.to_device(MB.to_bf16_bits(B)), C)
    err = np.abs(C.copy_to_host().astype(np.float64) - A.astype(np.float64) @ B.astype(np.float64))
    assert np.all(err <= mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA))


def test_bf16_small_grid_build_with_the_general_loads(rng):
    # the rung pads K and N to multiples of 8 (its test above); the kernel's own ragged path (plain loads
    # and stores past the edges) stays for direct callers: the small-grid build over two blocks, K odd
    from kernels.gemm import tensor_core_bf16 as TC

    m, n, k = (40, 70, 37) if SIMULATOR else (1000, 1030, 517)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    bm, bn, threads = TC.build_tile(TC.SMALL_BUILD)
    assert (bm, bn, threads) == (64, 64, 128)
    C = cuda.to_device(np.full((m, n), np.nan, np.float32))
    grid = ((n + bn - 1) // bn, (m + bm - 1) // bm)
    TC.configured(TC.kernel_for(k, n, **TC.SMALL_BUILD), grid, (threads,), TC.SMALL_BUILD)(
        cuda.to_device(MB.to_bf16_bits(A)), cuda.to_device(MB.to_bf16_bits(B)), C)
    err = np.abs(C.copy_to_host().astype(np.float64) - A.astype(np.float64) @ B.astype(np.float64))
    assert np.all(err <= mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA))


def test_bf16_rung_pads_k_and_n_in_its_rounding():
    from kernels.gemm import tensor_core_bf16 as TC

    X = np.arange(1, 1 + 3 * 5, dtype=np.float32).reshape(3, 5)
    got = TC.device_bf16(X, 3, TC.padded(5)).copy_to_host()
    assert got.shape == (3, 8) and (got[:, 5:] == 0).all() and np.array_equal(got[:, :5], MB.to_bf16_bits(X))
    assert "padded with zeros to 520, 1032" in TC.launch((1000, 1030, 517), 128).note
    assert "padded" not in TC.launch((1024, 1024, 1024), 128).note


def test_bf16_rung_stays_out_of_auto():
    spec = kernels.load("matmul")
    from kernels import matmul

    tc = spec.variants["tensor_core_bf16"]
    assert "tensor_core_bf16" not in matmul.RUNGS and tc.precision == "bf16" and tc.suits((4096,) * 3) is False
    if mma.UNAVAILABLE:
        assert tc.unavailable(np.float32) == f"tensor_core_bf16 {mma.UNAVAILABLE}"
    else:
        assert tc.unavailable(np.float32) == "" and "float32" in tc.unavailable(np.float64)
    A = np.ones((4, 300), np.float32)
    assert np.all(tc.tolerance([A, A.T.copy()], None, np.float32)[0] > dot_tolerance(A, A.T.copy(), np.float32))
