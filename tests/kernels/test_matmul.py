"""matmul variants against the float64 reference on fresh random inputs, at awkward sizes.

Sizes are (M, N, K): A is M x K, B is K x N. The simulator runs every thread in Python, so its
cases stay tiny; register_tiled (256-thread blocks, a barrier a slab) gets a few chosen cases there:
one block with an odd size, several blocks, and one full 128 x 128 block whose slabs take the
unguarded interior path. tile64, split_k (long K) and skinny_m at the shapes they are for.
"""
import numpy as np
import pytest

import kernels
from kernels import matmul as MM
from tests.conftest import SIMULATOR
from tests.helpers import check_rung, run_variant

pytestmark = pytest.mark.gpu

# (size, threads per block): one element, 1 x N x K, M x 1 x K, M x N x 1, sizes that are not
# multiples of any block or tile, several blocks in x and y. shared and register_tiled fix their own
# block, so ``threads`` only matters to naive (96 -> a 32 x 3 block, 8 -> 8 x 1).
SMALL_CASES = [((1, 1, 1), 32), ((1, 37, 9), 64), ((29, 1, 13), 32), ((18, 21, 1), 96),
               ((17, 33, 19), 8), ((40, 35, 20), 256)]
GPU_CASES = [((1000, 1030, 517), 256), ((257, 4099, 130), 128), ((4096, 4096, 4096), 256),
             ((4099, 4097, 1001), 1024)]
REGISTER_TILED_SIM_CASES = [(19, 21, 45), (130, 9, 20), pytest.param((128, 128, 40), marks=pytest.mark.slow)]  # slow: > 5 s


@pytest.mark.parametrize("variant", ["naive", "shared"])
@pytest.mark.parametrize("size,threads", SMALL_CASES)
def test_small_sizes(variant, size, threads, rng, simulator):
    check_rung("matmul", variant, size, threads, rng, simulator)


# register_tiled: one 256-thread block per 128 x 128 tile, slabs of 16 (float32) along K.
# (19, 21, 45): one block, 3 slabs, the last one ragged; (130, 9, 20): two blocks down M, a 1-row
# block; (128, 128, 40): a full tile, so the second slab loads through the unguarded interior path.
@pytest.mark.parametrize("size", [(1, 1, 1), (1, 37, 9), (29, 1, 13), (18, 21, 1)] + REGISTER_TILED_SIM_CASES)
def test_register_tiled_small(size, rng, simulator):
    check_rung("matmul", "register_tiled", size, 256, rng, simulator)


@pytest.mark.skipif(SIMULATOR, reason="GPU-sized problems; the simulator runs one Python thread per CUDA thread")
@pytest.mark.parametrize("variant", ["naive", "shared", "register_tiled"])
@pytest.mark.parametrize("size,threads", GPU_CASES)
def test_large_sizes(variant, size, threads, rng, simulator):
    check_rung("matmul", variant, size, threads, rng, simulator)


@pytest.mark.parametrize("variant", ["naive", "shared", "register_tiled"])
def test_float64(variant, rng, simulator):
    """float64 inputs run the float64 build (register_tiled: slabs of 8) against a float64 bound."""
    size = (21, 19, 27) if SIMULATOR else (1000, 1030, 517)
    check_rung("matmul", variant, size, 64, rng, simulator, np.float64)


def test_tolerance_is_float32_tight(rng):
    """The bound is a few float32 ulps of |A| @ |B| * sqrt(K): far looser than float32 rounding, far
    tighter than TF32 (10-bit mantissa) rounding, which this check must catch."""
    spec = kernels.load("matmul")
    A, B = spec.make_inputs((64, 48, 256), np.dtype(np.float32), rng)
    (ref,) = spec.reference(A.astype(np.float64), B.astype(np.float64))
    (tol,) = spec.tolerance((A, B), (ref,), np.dtype(np.float32))
    assert np.all(np.abs((A @ B) - ref) <= tol)

    def tf32(x):  # keep 10 mantissa bits, as the tensor cores' TF32 inputs do
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)

    assert not np.all(np.abs(tf32(A).astype(np.float64) @ tf32(B).astype(np.float64) - ref) <= tol)


def _brute_force_threads_with_work(m, n):
    """Threads of the register-tiled grid that own at least one element of an m x n C."""
    from kernels.matmul import BM, BN, HALF_M, HALF_N, RT_THREADS
    from kernels.spec import blocks_for

    count = 0
    for by in range(blocks_for(m, BM)):
        for bx in range(blocks_for(n, BN)):
            for t in range(RT_THREADS):
                w, lane = t // 32, t % 32
                tx4 = ((w % 2) * 8 + lane % 8) * 4
                ty4 = ((w // 2) * 4 + lane // 8) * 4
                rows = [by * BM + ty4 + i % 4 + (i // 4) * HALF_M for i in range(8)]
                cols = [bx * BN + tx4 + j % 4 + (j // 4) * HALF_N for j in range(8)]
                count += any(r < m for r in rows) and any(c < n for c in cols)
    return count


def test_launch_math():
    spec = kernels.load("matmul")
    naive, shared, tiled = (spec.variants[v].launch for v in ("naive", "shared", "register_tiled"))

    cfg = naive((1000, 1030, 517), 256)  # block 32 x 8: x walks N, y walks M
    assert cfg.block == (32, 8) and cfg.grid == (33, 125)
    assert cfg.grid[0] * cfg.block[0] >= 1030 and cfg.grid[1] * cfg.block[1] >= 1000
    assert cfg.threads_needed == 1000 * 1030 and cfg.note == ""
    cfg = naive((5, 7, 3), 96)
    assert cfg.block == (32, 3) and cfg.grid == (1, 2) and cfg.threads_idle == 192 - 35
    cfg = naive((5, 7, 3), 100)  # 100 threads do not split into whole rows of 32: 96 used, said so
    assert cfg.block == (32, 3) and "96" in cfg.note
    assert naive((3, 2, 9), 8).block == (8, 1)

    cfg = shared((17, 33, 19), 256)
    assert cfg.block == (16, 16) and cfg.grid == (3, 2) and cfg.note == ""
    cfg = shared((17, 33, 19), 64)  # the tile is compile-time: the block stays 16 x 16, and says so
    assert cfg.block == (16, 16) and "ignored" in cfg.note

    cfg = tiled((4096, 4096, 4096), 256)
    assert cfg.grid == (32, 32) and cfg.block == (256,) and cfg.threads_idle == 0
    cfg = tiled((1000, 1030, 517), 1024)
    assert cfg.grid == (9, 8) and cfg.grid[0] * 128 >= 1030 and cfg.grid[1] * 128 >= 1000
    assert "ignored" in cfg.note
    for m, n in [(1, 1), (1000, 1030), (130, 9), (64, 65), (61, 200)]:
        assert tiled((m, n, 5), 256).threads_needed == _brute_force_threads_with_work(m, n), (m, n)


def test_sizes_and_accounting():
    spec = kernels.load("matmul")
    assert spec.parse_size("4096") == (4096, 4096, 4096)
    assert spec.parse_size("1000x1030x517") == (1000, 1030, 517)
    assert spec.in_shapes((2, 3, 4)) == [(2, 4), (4, 3)]
    assert spec.out_specs((2, 3, 4), np.float32) == [((2, 3), np.dtype(np.float32))]
    assert spec.flops((2, 3, 4)) == 48
    assert spec.bytes_moved((2, 3, 4), np.float32) == (8 + 12 + 6) * 4
    with pytest.raises(ValueError):
        spec.parse_size("4096x4096")


def test_slab_depth_must_be_a_multiple_of_8():
    from kernels.matmul import make_register_tiled_kernel

    with pytest.raises(ValueError, match="multiple of 8"):
        make_register_tiled_kernel(12, {})


# --- tile64, split_k (long K) and skinny_m ------------------------------------------------------------
MATMUL_TILE = [(1, 1, 1), (19, 21, 45), (70, 9, 20)] + ([] if SIMULATOR else [
    (1000, 1030, 517), (257, 4099, 130), (1024, 1024, 1024), (4099, 4097, 1001)])


@pytest.mark.parametrize("size", MATMUL_TILE)
def test_matmul_tile64(size, rng, simulator):
    check_rung("matmul", "tile64", size, 256, rng, simulator)


MATMUL_SPLIT = [(5, 7, 50)] if SIMULATOR else [(64, 64, 65536), (32, 4096, 4096), (4096, 32, 4096),
                                              (128, 128, 32768), (65, 33, 9999)]


@pytest.mark.parametrize("size", MATMUL_SPLIT)
def test_matmul_split_k(size, rng, simulator, monkeypatch):
    if SIMULATOR:
        monkeypatch.setattr(MM, "SPLIT_MIN_K", 16)  # K ranges of 16: 50 k in 2 ranges, a few blocks
    assert MM.split_k_plan(size)[1] > 1  # really split
    check_rung("matmul", "split_k", size, 256, rng, simulator)
    if not SIMULATOR:
        check_rung("matmul", "split_k", (100, 90, 5001), 256, rng, simulator, np.float64)


SKINNY = [(5, 130, 70), (40, 33, 50)] if SIMULATOR else [(32, 4096, 4096), (1, 5000, 3001), (17, 1030, 2049),
                                                         (33, 300, 1000)]


@pytest.mark.parametrize("size", SKINNY)
def test_matmul_skinny_m(size, rng, simulator, monkeypatch):
    if SIMULATOR:
        monkeypatch.setattr(MM, "SPLIT_MIN_K", 16)  # several K ranges at a tiny K
    check_rung("matmul", "skinny_m", size, 128, rng, simulator)


def test_split_k_and_tile64_launch_math():
    kchunk, splits = MM.split_k_plan((64, 64, 65536))
    assert kchunk % 16 == 0 and splits * kchunk >= 65536 and (splits - 1) * kchunk < 65536 and splits > 1
    assert MM.split_k_plan((4096, 4096, 4096))[1] == 1
    cfg = kernels.load("matmul").variants["tile64"].launch((1000, 1030, 517), 256)
    assert cfg.grid == (17, 16, 1) and cfg.block == (256,)
