"""kernels/gemm/wgmma_tf32.py: the TF32 wgmma rung. Off the GPU its host-side pieces -- the instruction text (no
transpose operands for TF32), the rung's place, its launch note, its shape chooser and why it is unavailable --
are checked; the tests marked gpu run the rung (pre-pass and kernel) and every build against the float64
reference at ragged shapes on an sm_90a GPU under numba-cuda-mlir (elsewhere they skip with the rung's reason;
scripts/wgmma_tf32_bench.py times them)."""
from types import SimpleNamespace

import numpy as np
import pytest

import kernels
from kernels.gemm import mma, wgmma_bf16 as W, wgmma_tf32 as T
from tests.conftest import SIMULATOR, skip_unavailable
from tests.kernels.test_tensor_cores import _run


def test_generated_tf32_ptx_has_no_transpose_operands():
    ptx = W.wgmma_ptx(128, 4, 1, tf32=True)
    lines = [line for line in ptx.splitlines() if "mma_async" in line]
    assert len(lines) == 4 and all("m64n128k8.f32.tf32.tf32" in line for line in lines)
    assert all(line.endswith("p, 1, 1;") for line in lines)  # scale-d, imm-scale-a, imm-scale-b: nothing after


def test_rung_declared_after_the_bf16_wgmma_rung():
    spec = kernels.load("matmul")
    names = list(spec.variants)
    assert names.index("tensor_core_wgmma_tf32") == names.index("tensor_core_wgmma") + 1
    v = spec.variants["tensor_core_wgmma_tf32"]
    assert v.precision == "tf32" and v.tolerance is not None and v.suits((4096,) * 3) is False
    if SIMULATOR:
        assert v.unavailable(np.float32) == ("tensor_core_wgmma_tf32: wgmma has no emulation in the simulator; "
                                             "the tensor_core_tf32 rung is the emulated lesson")
    launch = v.launch((1000, 1030, 517), 32)
    assert "ignored" in launch.note and "K padded to 520" in launch.note and "pre-pass" in launch.note


def test_choose_takes_smaller_tiles_where_the_grid_leaves_sms_idle(monkeypatch):
    monkeypatch.setattr(T, "sm_count", lambda: 132)
    assert T.choose_tile((4096, 4096, 4096))[0] == T.DEFAULT  # 16 x 32 = 512 blocks
    name, why = T.choose_tile((1024, 1024, 1024))  # 32 blocks of 256 x 128 (or 128 x 256) for 132 SMs
    assert name == T.SMALL and "132 SMs" in why
    bm, bn, _ = W.block_shape(T.BUILDS[T.DEFAULT])  # 256 x 128 (cp.async) or 128 x 256 (the TMA build)
    assert bm * bn == 256 * 128 and W.block_shape(T.BUILDS[T.SMALL])[:2] == (128, 128)


def test_padded_and_unavailable_launcher():
    assert [T.padded(k) for k in (1, 4, 517, 520)] == [4, 4, 520, 520]
    if T.UNAVAILABLE:
        with pytest.raises(RuntimeError, match="sm_90a"):
            T.launcher(130, 136, 64, T.BUILDS[T.DEFAULT])


def test_unavailable_names_the_rung_and_its_inputs(monkeypatch):
    from kernels import device_limits as D

    monkeypatch.setattr(W, "SIMULATOR", False)
    monkeypatch.setattr(W, "UNAVAILABLE", "")
    with D.described(D.H100.replace(cc=(8, 0))):
        assert T.unavailable(np.float32).startswith("tensor_core_wgmma_tf32 needs a compute-capability 9.0 GPU")
    with D.described(D.H100.replace(cc=(9, 0))):
        assert T.unavailable(np.float32) == ""
        assert T.unavailable(np.float64) == "tensor_core_wgmma_tf32 takes float32 inputs, rounded to TF32 (--dtype float64)"


# (1000, 1030, 517): K ragged (padded to 520 in the pre-pass), a partial last slab, N not a multiple of 8 (odd
# rows: single stores); (777, 1336, 904): M, N not multiples of the tile; (130, 4104, 36): two slabs, the second
# of 4; (33, 65, 3): one slab, K under one 16-byte chunk.
GPU_SIZES = [(1000, 1030, 517), (777, 1336, 904), (130, 4104, 36), (33, 65, 3)]


@pytest.mark.gpu
@pytest.mark.parametrize("size", GPU_SIZES)
def test_tensor_core_wgmma_tf32_rung(size, rng):
    verdict = _run("tensor_core_wgmma_tf32", size, rng)  # skips with the rung's reason off an sm_90a GPU
    assert verdict.ok, verdict.reason


def _check(A, B, build=None, rounding=T.ROUNDING):
    from kernels.compiler import cuda

    m, k = A.shape
    n = B.shape[1]
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    cfg = T.launch((m, n, k), 0) if build is None else SimpleNamespace(grid=None)
    T.prepare(cfg, (cuda.to_device(A), cuda.to_device(B)), (dC,), build=build, rounding=rounding)()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    err = np.abs(dC.copy_to_host() - ref) / mma.rounded_inputs_tolerance(A, B, 10)
    return float(err.max()) if np.isfinite(err).all() else float("inf")


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(T.BUILDS))
def test_every_build(name, rng):
    skip_unavailable("matmul", "tensor_core_wgmma_tf32")
    m, n, k = 257, 1290, 203  # M 2 blocks + 1 row, N ragged and even, K ragged: 7 slabs, the last of 11
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    assert _check(A, B, name) <= 1


@pytest.mark.gpu
def test_rounding_holds_on_positive_inputs(rng):
    # every product positive: a truncation bias adds up with K instead of cancelling; the rounded rung passes
    skip_unavailable("matmul", "tensor_core_wgmma_tf32")
    A = rng.random((256, 4096), np.float32)
    B = rng.random((4096, 264), np.float32)
    assert _check(A, B) <= 1


def test_plan_splits_k_on_the_tma_build_where_the_grid_leaves_sms_idle(monkeypatch):
    monkeypatch.setattr(T, "sm_count", lambda: 132)
    name, splits, why = T.plan((600, 700, 20000))  # 15 tiles of 128 x 256, 625 slabs of 32 k
    assert name == T.DEFAULT and splits > 1 and f"{splits} K ranges" in why
    cfg = T.launch((600, 700, 20000), 384)
    assert cfg.grid == (3, 5, splits) and "K ranges" in cfg.note
    assert T.plan((4096, 4096, 4096))[:2] == (T.DEFAULT, 1) and len(T.launch((4096,) * 3, 384).grid) == 2
    assert T.plan((1024, 1024, 1024))[1] > 1  # 32 tiles, 32 slabs: ranges of 8 slabs or more
    assert T.plan((1024, 1024, 200))[:2] == (T.SMALL, 1)  # 7 slabs: too few to split, so the small tiles


@pytest.mark.gpu
@pytest.mark.parametrize("atomic", [0, 1, 2])
def test_k_ranges(atomic, rng):
    # 7 ranges of 16 slabs (the last of 8, K ragged: padded 1,810 -> 1,812), M and N ragged; C poisoned first
    skip_unavailable("matmul", "tensor_core_wgmma_tf32")
    from kernels.compiler import cuda

    m, n, k = 333, 517, 3610
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    T.prepare(SimpleNamespace(grid=None), (cuda.to_device(A), cuda.to_device(B)), (dC,), build=T.DEFAULT, splits=7,
              atomic=atomic)()
    err = np.abs(dC.copy_to_host() - A.astype(np.float64) @ B.astype(np.float64)) / mma.rounded_inputs_tolerance(A, B, 10)
    assert np.isfinite(err).all() and err.max() <= 1, f"err/tol {err.max():.3g}"
