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
from kernels.device_limits import current
from kernels.gemm import config as GC, model as GM, rungs as GR, skinny as SKINNY_M, split_k as SK
from tests.conftest import SIMULATOR
from tests.helpers import check_rung

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


@pytest.mark.skipif(SIMULATOR, reason="GPU-sized problems; the simulator runs each CUDA thread's Python")
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
        monkeypatch.setattr(SK, "SPLIT_MIN_K", 16)  # K ranges of 16: 50 k in 2 ranges, a few blocks
    assert SK.split_k_plan(size)[1] > 1  # really split
    check_rung("matmul", "split_k", size, 256, rng, simulator)
    if not SIMULATOR:
        check_rung("matmul", "split_k", (100, 90, 5001), 256, rng, simulator, np.float64)


# The reduction launch alone: splits dealt out among 8 warps (fewer, one and more than 4 x 8 splits),
# element counts that are not a multiple of the block's 32, poisoned C, the same bits on a second call.
REDUCE = [(1, 3, 5), (2, 1, 1), (9, 7, 33), (37, 5, 13)] + ([] if SIMULATOR else [(64, 4096, 33), (8, 4096, 32),
                                                                   (3, 1025, 1023)])


@pytest.mark.parametrize("splits,m,n", REDUCE)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_k_reduce(splits, m, n, dtype, rng, simulator):
    from kernels.compiler import cuda

    W = rng.standard_normal((splits, m, n)).astype(dtype)
    want = W.astype(np.float64).sum(axis=0)
    dW = cuda.to_device(W.reshape(splits, m * n))
    dC = cuda.to_device(np.full(m * n, np.nan, dtype))
    reduce = SK.split_k_reduce_kernel[SK.reduce_launch(splits, m * n)]
    reduce(dW, dC)
    got = dC.copy_to_host().reshape(m, n)
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(got - want) <= 4 * eps * splits * np.abs(W).sum(axis=0) + 1e-30)
    reduce(dW, dC)
    assert np.array_equal(dC.copy_to_host().reshape(m, n), got)  # a fixed order of additions: the same bits


def test_split_k_reduce_loops_over_chunks(rng, simulator):
    """A grid smaller than the chunks (one block here, on a described device of 1 SM holding 256
    threads): each block loops, barriers and all."""
    from kernels.device_limits import H100, described

    with described(H100.replace(name="1 SM", sm_count=1, max_threads_per_sm=256)):
        grid, block = SK.reduce_launch(11, 7 * 33)
        assert grid == 1 and block == (32, 8)
        test_split_k_reduce(11, 7, 33, np.float32, rng, simulator)


# (3, 70, 41, 4) simulates 3 x 70 output columns' threads: ~6 s on a loaded 2-core machine
VECTOR_SPLITS = [(1, 37, 50, 3), pytest.param(3, 70, 41, 4, marks=pytest.mark.slow)] + (
    [] if SIMULATOR else [(1, 4096, 4096, 4), (2, 1000, 3001, 7)])


@pytest.mark.parametrize("m,n,k,splits", VECTOR_SPLITS)
def test_vector_split_adds_its_partials_in_one_launch(m, n, k, splits, rng, simulator):
    """The column kernel with K split: the last block of each column group adds the partials (its
    counters back at zero after each call), so call after call on new inputs is right, and the same
    inputs give the same bits."""
    from kernels.compiler import cuda
    from kernels.gemm.vector import columns_prepare

    dX, dB = cuda.device_array((m, k), np.float32), cuda.device_array((k, n), np.float32)
    dY = cuda.to_device(np.full((m, n), np.nan, np.float32))
    fn = columns_prepare(dX, dB, dY, 64 if SIMULATOR else 256, MM.blocks_for(k, splits))
    for _ in range(3):
        X, B = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        dX.copy_to_device(X)
        dB.copy_to_device(B)
        fn()
        got = dY.copy_to_host()
        want = X.astype(np.float64) @ B
        assert np.all(np.abs(got - want) <= 8 * np.finfo(np.float32).eps * np.sqrt(k) * (np.abs(X) @ np.abs(B)))
    fn()
    assert np.array_equal(dY.copy_to_host(), got)


SKINNY = [(5, 130, 70), (40, 33, 50)] if SIMULATOR else [(32, 4096, 4096), (1, 5000, 3001), (17, 1030, 2049),
                                                         (33, 300, 1000)]


@pytest.mark.parametrize("size", SKINNY)
def test_matmul_skinny_m(size, rng, simulator, monkeypatch):
    if SIMULATOR:
        monkeypatch.setattr(SKINNY_M, "SPLIT_MIN_K", 16)  # several K ranges at a tiny K
    check_rung("matmul", "skinny_m", size, 128, rng, simulator)


def test_launch_model_reads_the_measured_tiles():
    """wave_ms is the measured time at a measured (r, K), between them in between, in proportion past
    r = 8; longer K and more blocks an SM never cost less; refused candidates have no estimate."""
    for tile, rows in GM.RATES.items():
        for r, times in rows.items():
            for k, ms in zip(GM.RATE_KS, times):
                assert GM.wave_ms(tile, r, k) == pytest.approx(ms)
        for r in range(1, 20):
            ks = [1, 32, 100, 256, 1000, 2048, 5000]
            assert all(GM.wave_ms(tile, r, a) <= GM.wave_ms(tile, r, b) for a, b in zip(ks, ks[1:]))
        assert GM.wave_ms(tile, 16, 256) == pytest.approx(2 * rows[8][1])
    assert GM.reduce_ms(8, 1 << 20) > GM.reduce_ms(2, 1 << 20) > GM.REDUCE_MS
    assert GM.model_ms((40, 40, 100), "128x128x16") is None  # a tile over twice the output
    assert GM.model_ms((4096, 4096, 4096), "128x128x16", 4) is None  # the grid fills the SMs unsplit
    assert GM.model_ms((64, 64, 65536), "32x32x32", 64) < GM.model_ms((64, 64, 65536), "32x32x32", 1)


def test_split_k_and_tile64_launch_math():
    kchunk, splits = SK.split_k_plan((64, 64, 65536))
    assert kchunk % 16 == 0 and splits * kchunk >= 65536 and (splits - 1) * kchunk < 65536 and splits > 1
    assert SK.split_k_plan((4096, 4096, 4096))[1] == 1
    cfg = kernels.load("matmul").variants["tile64"].launch((1000, 1030, 517), 256)
    assert cfg.grid == (17, 16, 1) and cfg.block == (256,)


# --- warp_tiled, wide_loads, small: one factory (gemm_kernel) built from GemmConfig --------------------
# Simulator sizes: one partial block with odd K and N (pairs fall back to single loads), even K and N
# (wide_loads reads float32 pairs through float64 views), a block edge at M, and one k.
GEMM_RUNGS = ["warp_tiled", "wide_loads", "small"]
GEMM_SIM = [(19, 21, 45), (37, 42, 46), (5, 6, 1)]
GEMM_GPU = [(1000, 1030, 517), (4099, 4097, 1001), (3000, 3000, 40), (2000, 64, 2000), (300, 300, 300),
            (4096, 4096, 2048), (63, 65, 4097), (1, 4096, 4096)]  # 4096^3: scripts/sgemm_gpu.py checks it


@pytest.mark.parametrize("variant", GEMM_RUNGS)
@pytest.mark.parametrize("size", GEMM_SIM if SIMULATOR else GEMM_GPU)
def test_gemm_rungs(variant, size, rng, simulator):
    check_rung("matmul", variant, size, 256, rng, simulator)


@pytest.mark.parametrize("variant", GEMM_RUNGS)
def test_gemm_rungs_float64(variant, rng, simulator):
    """float64 runs single loads (no pairs) and, for warp_tiled and wide_loads, 64 x 64 tiles."""
    size = (21, 19, 27) if SIMULATOR else (1000, 1030, 517)
    check_rung("matmul", variant, size, 256, rng, simulator, np.float64)


def _config_variant(cfg, splits=1):
    from kernels.spec import Variant

    return Variant("cfg", "", lambda size, threads: GR.gemm_launch_config(cfg, size, splits),
                   lambda launch, inputs, outputs: GR.gemm_prepare_config(cfg, inputs, outputs, splits))


def _check_config(cfg, size, rng, splits=1, dtype=np.float32):
    spec = kernels.load("matmul")
    v = _config_variant(cfg, splits)
    old = spec.variants.get("cfg")
    spec.variants["cfg"] = v
    try:
        check_rung("matmul", "cfg", size, cfg.threads, rng, SIMULATOR, dtype)
    finally:
        del spec.variants["cfg"]
        if old is not None:
            spec.variants["cfg"] = old


# The 32 x 32 tile (64 threads, slabs of 32) is cheap in the simulator: full tiles whose slabs load
# through the unguarded interior path, ragged edges, split K (a workspace and the reduction launch),
# single loads, one buffer (prefetch off) and unpadded rows: each knob's code path once.
SMALL32 = GC.SMALL_CONFIGS[-1]


@pytest.mark.parametrize("cfg,size,splits", [
    (SMALL32, (64, 34, 70), 1),  # full tiles down M and one in N, 3 slabs (the second interior), pairs
    (SMALL32, (33, 33, 37), 1),  # odd K and N: single loads
    (SMALL32, (20, 34, 70), 3),  # split K: ranges of 32, 32 and 6 k, then the reduction launch
    (SMALL32.replace(prefetch=False, pad=0), (40, 34, 70), 1),
    (SMALL32.replace(prefetch=False, pairs=False), (20, 31, 40), 2),
])
def test_gemm_configs(cfg, size, splits, rng):
    _check_config(cfg, size, rng, splits)


@pytest.mark.skipif(SIMULATOR, reason="GPU-sized problems")
@pytest.mark.parametrize("cfg", [GC.WIDE_LOADS.replace(bk=8), GC.WIDE_LOADS.replace(pad=0),
                                 GC.WIDE_LOADS.replace(prefetch=False), GC.WIDE_LOADS.replace(wm=64, wn=32, wniter=2, threads=256),
                                 GC.WIDE_LOADS.replace(bn=64, wn=32, wniter=2, min_blocks=3),
                                 GC.WIDE_LOADS.replace(bm=256, bk=8, threads=256, min_blocks=1)] + list(GC.SMALL_CONFIGS),
                         ids=lambda c: c.label)
def test_gemm_configs_gpu(cfg, rng):
    for size, splits in [((1000, 1030, 518), 1), ((999, 1031, 517), 1), ((64, 64, 65536), 8), ((129, 257, 4096), 3)]:
        _check_config(cfg, size, rng, splits)


def test_gemm_config_rules():
    cfg = GC.GemmConfig()
    assert GC.GemmConfig.parse(cfg.key) == cfg and GC.GemmConfig.parse(GC.WIDE_LOADS.key).pairs
    d = cfg.derived()
    assert (d["wmiter"], d["wsubm"], d["wsubn"], d["tcols"], d["rows"], d["cols"]) == (1, 64, 16, 4, 8, 16)
    assert d["smem"] == 2 * 16 * (132 + 128) * 4 and d["a_loads"] == 16 and GC.WIDE_LOADS.derived()["a_loads"] == 8
    for bad, why in [(dict(threads=96), "power of 2"), (dict(wm=32), "warp tiles"), (dict(tm=6), "multiples of 4"),
                     (dict(bk=12), "multiple of 8"), (dict(bk=32), "shared memory"), (dict(tn=8), "whole number"),
                     (dict(pad=2), "multiple of 8, pad")]:
        with pytest.raises(ValueError, match=why):
            cfg.replace(**bad).derived()
    with pytest.raises(ValueError, match="not a GemmConfig key"):
        GC.GemmConfig.parse("bm=64,colour=3")
    odd = GC.GemmConfig(bm=64, bn=32, bk=8, wm=32, wn=16, wniter=1, tm=4, tn=4, threads=128, pad=0, prefetch=False,
                        pairs=True, min_blocks=3)
    assert GC.GemmConfig.parse(odd.key) == odd
    direct = GC.GEMM_TILES["128x128x16-direct"]
    assert GC.GemmConfig.parse(direct.key) == direct and direct.key.endswith("_direct") and direct.key != cfg.key
    assert d["staged"] and not direct.derived()["staged"]  # staged: the C tile goes out through shared memory
    # a sub-tile a warp must fit: the 256 x 128 tile's A buffer grows to hold 8 warps' 64 x 16 stages
    big = GC.GEMM_TILES["256x128x8"].derived()
    assert big["staged"] and big["a_words"] == 8 * 64 * 16 > 2 * 8 * (256 + 4)
    assert GC.WARP_TILED_F64.derived(8)["smem"] <= current().shared_per_block
    for c in GC.SMALL_CONFIGS:
        c.derived(8)  # the small tiles fit in float64 too


def test_gemm_config_choice():
    assert GC.gemm_config("wide_loads", (4096, 4096, 4096)).pairs
    assert not GC.gemm_config("wide_loads", (4096, 4096, 4095)).pairs  # odd K: single loads
    assert not GC.gemm_config("wide_loads", (4096, 4095, 4096)).pairs  # odd N
    assert GC.gemm_config("wide_loads", (64, 64, 64), np.float64) == GC.WARP_TILED_F64
    assert GC.gemm_config("small", (4096, 4096, 64)) == GC.SMALL_CONFIGS[0]  # 4096 tiles of 64 x 64
    assert GC.gemm_config("small", (300, 300, 300)).bm == 32  # 25 tiles of 64 x 64 < 132 SMs
    cfg = kernels.load("matmul").variants["small"].launch((300, 300, 300), 256)
    assert cfg.grid == (10, 10, 1) and cfg.block == (64,) and "ignored" in cfg.note
    cfg = kernels.load("matmul").variants["warp_tiled"].launch((4096, 4096, 4096), 128)
    assert cfg.grid == (32, 32, 1) and cfg.block == (128,) and cfg.threads_idle == 0 and "ignored" not in cfg.note
    assert set(MM.TUNABLE) == set(GEMM_RUNGS)


def _brute_force_gemm_threads(cfg, m, n):
    """Threads of a gemm_kernel grid that own at least one element of an m x n C."""
    from kernels.spec import blocks_for

    d = cfg.derived()
    wcols = cfg.bn // cfg.wn
    count = 0
    for by in range(blocks_for(m, cfg.bm)):
        for bx in range(blocks_for(n, cfg.bn)):
            for t in range(cfg.threads):
                warp, lane = divmod(t, 32)
                r0 = by * cfg.bm + (warp // wcols) * cfg.wm + (lane // d["tcols"]) * cfg.tm
                c0 = bx * cfg.bn + (warp % wcols) * cfg.wn + (lane % d["tcols"]) * cfg.tn
                rows = [r0 + wi * d["wsubm"] + i for wi in range(d["wmiter"]) for i in range(cfg.tm)]
                cols = [c0 + wj * d["wsubn"] + j for wj in range(cfg.wniter) for j in range(cfg.tn)]
                count += any(r < m for r in rows) and any(c < n for c in cols)
    return count


@pytest.mark.parametrize("cfg", [MM.WARP_TILED, GC.WARP_TILED_F64] + list(GC.SMALL_CONFIGS), ids=lambda c: c.label)
def test_gemm_launch_math(cfg):
    for m, n in [(1, 1), (130, 9), (64, 65), (300, 200), (129, 257)]:
        launch = GR.gemm_launch_config(cfg, (m, n, 7))
        assert launch.threads_needed == _brute_force_gemm_threads(cfg, m, n), (cfg.label, m, n)
        assert launch.grid[0] * cfg.bn >= n and launch.grid[1] * cfg.bm >= m


def test_pairs_need_contiguous_even_rows():
    assert GR._pairs_ok(np.zeros((3, 4), np.float32))
    assert not GR._pairs_ok(np.zeros((3, 5), np.float32))
    assert not GR._pairs_ok(np.zeros((4, 8), np.float32)[:, :4])  # rows 32 bytes apart: not C-contiguous


def test_launch_model_rates_come_from_the_data_file(tmp_path):
    """kernels/gemm/rates.json holds the measured tile times with the device, date and versions they
    were measured with; the model reads it at import; a row without a time a K is refused by name."""
    import json

    from kernels.gemm import model

    info = json.loads(model.RATES_FILE.read_text())
    assert info["device"].startswith("NVIDIA H100") and info["sms"] == 132 and info["date"]
    assert {"numba-cuda", "numpy", "python"} <= set(info["versions"])
    assert model.RATES == GM.RATES and tuple(info["ks"]) == GM.RATE_KS
    assert set(GM.RATES) <= set(GC.GEMM_TILES)
    bad = dict(info, tiles={"64x64x16": {"1": [0.1, 0.2]}})
    path = tmp_path / "rates.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="64x64x16 r=1: not one time per K"):
        model.load_rates(path)
