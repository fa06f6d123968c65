"""kernels/gemm/wgmma_tma.py and kernels/gemm/tensor_map.py off the GPU: the TMA's 128-byte swizzle is the
layout the wgmma descriptors read, the boxes of a slab fill a stage exactly once, the full/empty barrier
parities keep every interleaving of producer and consumers safe (and a wrong parity is caught), the build
and tensor-map limits are refused in one line. The kernels need an sm_90a GPU under numba-cuda-mlir: the
tests marked gpu check every build against float64 there (poisoned C, sizes not multiples of the tile)."""
import numpy as np
import pytest

from kernels.gemm import tensor_map as TM
from kernels.gemm import wgmma_bf16 as W
from kernels.gemm import wgmma_tma as T
from tests.conftest import skip_unavailable


def test_tma_swizzle_is_the_wgmma_layouts():
    r, k = np.indices((256, 64))  # A: a 256-row box of one bf16 slab == the K-major 128-byte-swizzled layout
    assert (TM.swizzled_offset(r, k, 2) == W.k_major_offset(r, k)).all()
    kk, n = np.indices((64, 128))  # bf16 B: boxes of 64 columns, 8 KB apart == the MN-major layout
    tma = (n // T.BOX_N) * W.B_LBO + TM.swizzled_offset(kk, n % T.BOX_N, 2)
    assert (tma == W.mn_major_offset(kk, n)).all()
    r4, k4 = np.indices((128, 32))  # TF32: 32 four-byte elements a 128-byte row, the same chunks as bf16's
    assert (TM.swizzled_offset(r4, k4, 4) == W.k_major_offset(r4, 2 * k4)).all()


@pytest.mark.parametrize("wgs,bn,tf32", [(2, 128, False), (4, 128, False), (2, 256, False), (4, 128, True),
                                         (2, 256, True)])
def test_boxes_fill_a_stage_once(wgs, bn, tf32):
    covered = np.zeros(T.stage_bytes(wgs, bn), np.int32)
    for operand, off, _, _ in T.boxes(wgs, bn, tf32):
        rows = 64 * wgs if operand == "A" else (bn if tf32 else T.slab_k(False))
        covered[off: off + rows * T.SLAB_BYTES] += 1
    assert (covered == 1).all()
    assert T.shared_bytes(4, wgs, bn) <= W.DYNAMIC_SHARED_MAX


@pytest.mark.parametrize("nk,stages,wgs", [(1, 4, 2), (3, 4, 4), (13, 4, 2), (17, 3, 4), (9, 2, 2)])
def test_barrier_parities_are_safe_in_any_interleaving(nk, stages, wgs):
    rng = np.random.default_rng()
    for _ in range(20):
        events = T.schedule(nk, stages, wgs, rng)
        assert sum(e[0] == "mma" for e in events) == nk * wgs and sum(e[0] == "load" for e in events) == nk


def test_a_wrong_parity_is_caught():
    rng = np.random.default_rng()
    caught = 0
    for _ in range(20):  # the producer waiting for the phase one too early: overwrites a stage being read
        try:
            T.schedule(12, 3, 2, rng, empty=lambda j, s: (j // s) & 1)
        except AssertionError:
            caught += 1
    assert caught > 0
    with pytest.raises(AssertionError):  # consumers waiting for the wrong phase of the full barrier
        T.schedule(8, 4, 2, rng, full=lambda kt, s: (kt // s + 1) & 1)


def test_limits_are_one_line_errors():
    with pytest.raises(ValueError, match="multiple of 16"):
        TM.check_2d(100, 517, 1034, 2, 64, 64)
    with pytest.raises(ValueError, match="at most 128"):
        TM.check_2d(100, 512, 2048, 4, 64, 64)
    with pytest.raises(ValueError, match="1 .. 256"):
        TM.check_2d(1000, 512, 1024, 2, 512, 64)
    TM.check_2d(1000, 512, 1024, 2, 256, 64)
    with pytest.raises(ValueError, match="over"):
        T.check_build(5, 4, 128, True, None)
    with pytest.raises(ValueError, match="65,536"):
        T.check_build(4, 2, 256, True, (40, 240))
    assert T.register_cap(384) == 168 and T.consumer_registers(2, 40) == 232 and T.consumer_registers(2, 24) == 240
    assert T.register_cap(640) == 96 and T.consumer_registers(4, 24) == 112  # (96 - 24) 128 = (112 - 96) 512 + 1,024
    with pytest.raises(ValueError, match="ws"):
        T.check_build(4, 2, 256, False, (40, 232))
    for b in T.BUILDS.values():
        T.check_build(b["stages"], b["wgs"], b["bn"], b.get("ws", False), b.get("maxnreg"))
        assert T.block_shape(b)[2] in (256, 384, 512, 640)


def test_unavailable_launcher():
    if T.UNAVAILABLE:
        with pytest.raises(RuntimeError, match="sm_90a"):
            T.launcher(128, 128, 64)


# (777, 1336, 904): M and N not multiples of the tiles, K 14 slabs + 8; (130, 4104, 72): two slabs, the second
# 8 deep, 8 columns into the last block; (1000, 1032, 520): K 8 slabs + 8.
GPU_SIZES = [(777, 1336, 904), (130, 4104, 72), (1000, 1032, 520)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(T.BUILDS))
@pytest.mark.parametrize("size", GPU_SIZES)
def test_every_tma_build(name, size, rng):
    skip_unavailable("matmul", "tensor_core_wgmma")
    from kernels.compiler import cuda
    from kernels.gemm import mma_bf16 as MB

    m, n, k = size
    A = MB.to_bf16_bits(rng.standard_normal((m, k)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((k, n)).astype(np.float32))
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    T.launcher(m, n, k, **T.BUILDS[name])(cuda.to_device(A), cuda.to_device(B), dC)
    Af, Bf = (MB.bf16_bits_to_float32(x).astype(np.float64) for x in (A, B))
    err = np.abs(dC.copy_to_host() - Af @ Bf) / (2e-6 * np.sqrt(k) * (np.abs(Af) @ np.abs(Bf)) + 1e-30)
    assert np.isfinite(err).all() and err.max() <= 1, f"{name}: max err/tol {err.max():.3g}"


def test_the_rung_pads_to_whole_lines_and_launches_the_tma_build(monkeypatch, rng):
    # the rung tensor_core_wgmma runs wgmma_tma.prepare: A and B rounded to bf16 once, K and N zero-padded to
    # multiples of 64 (the slab count unchanged), then the TMA launcher with the rung's build on the launch's grid
    from types import SimpleNamespace

    from kernels.gemm import mma_bf16 as MB

    calls = []

    def fake_launcher(m, n, k, grid=None, **build):
        calls.append((m, n, k, grid, build))
        return lambda A16, B16, C: calls.append((A16, B16, C))

    monkeypatch.setattr(T, "launcher", fake_launcher)
    m, n, k = 130, 1030, 517
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = np.zeros((m, n), np.float32)
    cfg = T.launch((m, n, k), 384)
    assert cfg.block == (384,) and cfg.grid == (-(-n // 256), -(-m // 128)) and "TMA" in cfg.note
    T.prepare(SimpleNamespace(grid=cfg.grid), (A, B), (C,))()
    (m_, n_, k_, grid, build), (A16, B16, C_) = calls
    assert (m_, n_, k_) == (130, 1088, 576) and grid == cfg.grid and build == T.BUILD and C_ is C
    A16, B16 = (np.asarray(x.copy_to_host() if hasattr(x, "copy_to_host") else x) for x in (A16, B16))
    assert A16.shape == (130, 576) and B16.shape == (576, 1088)
    assert (A16[:, :k] == MB.to_bf16_bits(A)).all() and not A16[:, k:].any() and not B16[k:].any() and not B16[:, n:].any()


# --- Split-K: K ranges over grid z (kernels.gemm.wgmma_tma.k_splits, k_ranges_call) ---------------------------
def test_k_splits_fills_idle_sms_only_where_k_is_long():
    bm, bn, _ = T.block_shape(T.BUILD)
    for tf32 in (True, False):
        bk = T.slab_k(tf32)
        assert T.k_splits(4096, 4096, 4096, bm, bn, tf32, 132)[0] == 1  # 512 tiles: the grid is full
        assert T.k_splits(600, 700, 64, bm, bn, tf32, 132)[0] == 1  # K of one or two slabs: nothing to split
        s, per, _ = T.k_splits(600, 700, 20000, bm, bn, tf32, 132)  # 15 tiles for 132 SMs, long K
        assert 4 <= s <= 132 // 15 and per >= T.SPLIT_MIN_SLABS and (s - 1) * per < -(-20000 // bk) <= s * per
        assert T.k_splits(600, 700, 20000, bm, bn, tf32, 16)[0] < s  # fewer SMs: fewer ranges fill them
    with pytest.raises(ValueError, match="SMs"):
        T.k_splits(1, 1, 1, bm, bn, True, 0)


def test_k_splits_keeps_the_workspace_bounded_and_the_ranges_long():
    bm, bn, _ = T.block_shape(T.BUILD)
    rng = np.random.default_rng()
    for _ in range(200):
        m, n, k = (int(x) for x in rng.integers(1, 20000, 3))
        sms = int(rng.integers(1, 200))
        s, per, est = T.k_splits(m, n, k, bm, bn, bool(rng.integers(2)), sms, int(rng.integers(3)))
        assert 1 <= s <= T.SPLIT_MAX and est > 0
        if s > 1:  # long enough ranges, a bounded workspace, one wave of blocks
            assert per >= T.SPLIT_MIN_SLABS and s * m * n * 4 <= T.SPLIT_MAX_BYTES and s * -(-m // bm) * -(-n // bn) <= sms


def test_bf16_rung_launch_puts_the_k_ranges_on_grid_z(monkeypatch):
    from kernels.spec import sm_count

    bm, bn, threads = T.block_shape(T.BUILD)
    cfg = T.launch((600, 700, 20000), 384)
    s = T.k_splits(600, 700, 20032, bm, bn, False, sm_count())[0]
    assert cfg.grid == (3, 5, s) and s > 1 and f"{s} K ranges" in cfg.note
    assert ("red.global.add" if T.ATOMIC else "reduction") in cfg.note
    assert len(T.launch((4096, 4096, 4096), 384).grid) == 2  # one range: the 2-D grid, as before
