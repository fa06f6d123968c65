"""The tensor-core and cp.async rungs (kernels/gemm/): the fragment layout, the simulator's emulation of
mma.sync and cp.async (same fragments, same waits), the TF32 tolerance, and the rungs against the float64
reference at sizes that are not multiples of their tiles. On a GPU under numba-cuda-mlir the same checks
run on the hardware (scripts/tensor_cores_bench.py times them)."""
import numpy as np
import pytest

import kernels
from kernels.compiler import cuda, float32
from kernels.gemm import mma
from kernels.spec import dot_tolerance
from lab.core import contenders as C
from lab.core.check import check_prepared
from tests.conftest import SIMULATOR, skip_unavailable

pytestmark = pytest.mark.gpu


def test_fragments_cover_each_tile_once():
    maps = mma.fragment_maps()
    for name, shape, regs in (("A", (16, 8), 4), ("B", (8, 8), 2), ("C", (16, 8), 4)):
        grid = maps[name]
        assert grid.shape == shape and (grid >= 0).all()
        assert sorted(grid.ravel()) == sorted(10 * lane + i for lane in range(32) for i in range(regs))
    # PTX ISA's m16n8k8 .tf32 fragments: lane 5 is group 1, thread-in-group 1
    assert mma.a_index(5, 0) == (1, 1) and mma.a_index(5, 3) == (9, 5)
    assert mma.b_index(5, 1) == (5, 1) and mma.c_index(5, 1) == (1, 3) and mma.c_index(5, 2) == (9, 2)
    picture = mma.fragment_picture()
    assert "T5.1" in picture and picture.count("\n") > 40 and max(map(len, picture.splitlines())) <= 80


def test_round_tf32_keeps_ten_mantissa_bits():
    one = np.float32(1.0)
    assert mma.round_tf32(one + np.float32(2.0 ** -11)) == np.float32(1.0 + 2.0 ** -10)  # a tie, away from zero
    assert mma.round_tf32(one + np.float32(2.0 ** -12)) == one
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    r = mma.round_tf32(x)
    assert (r.view(np.uint32) & 0x1FFF == 0).all() and np.all(np.abs(r - x) <= np.abs(x) * 2.0 ** -11)


def test_tolerance_separates_tf32_from_float32_and_bf16(rng):
    A = rng.standard_normal((48, 512)).astype(np.float32)
    B = rng.standard_normal((512, 40)).astype(np.float32)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    tf32 = mma.round_tf32(A).astype(np.float64) @ mma.round_tf32(B).astype(np.float64)
    bf16 = lambda x: (x.view(np.uint32) + np.uint32(0x8000) & np.uint32(0xFFFF0000)).view(np.float32)  # noqa: E731
    b16 = bf16(A).astype(np.float64) @ bf16(B).astype(np.float64)
    tol = mma.rounded_inputs_tolerance(A, B, 10)
    assert (np.abs(tf32 - exact) <= tol).all()  # TF32 passes its own tolerance
    assert not (np.abs(tf32 - exact) <= dot_tolerance(A, B, np.float32)).all()  # and fails float32's
    assert not (np.abs(b16 - exact) <= tol).all()  # bf16's 7 bits fail TF32's


@cuda.jit
def _copy_probe(X, before, after):
    s = cuda.shared.array(8, float32)
    t = cuda.threadIdx.x
    s[t] = float32(-1.0)
    mma.cp_async4(s, t, X, 0, t, 1)
    mma.cp_async_commit()
    before[t] = s[t]  # issued, not waited for: undefined (the emulation's poison)
    mma.cp_async_wait(0)
    after[t] = s[t]


@pytest.mark.skipif(not SIMULATOR, reason="the emulation's semantics (a GPU runs the instructions)")
def test_emulated_copy_lands_only_at_its_wait():
    X = np.arange(1, 9, dtype=np.float32).reshape(1, 8)
    before, after = np.zeros(8, np.float32), np.zeros(8, np.float32)
    _copy_probe[1, 8](X, before, after)
    assert np.isnan(before).all() and np.array_equal(after, X[0])


def _run(variant, size, rng):
    skip_unavailable("matmul", variant)
    spec = kernels.load("matmul")
    v = spec.variants[variant]
    inputs = spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = v.tolerance(inputs, refs, np.float32) if v.tolerance else spec.tolerance(inputs, refs, np.float32)
    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), inputs, SIMULATOR)
    checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(np.float32)))
    return checked.verdict


SIM_SIZES = [(33, 17, 13), (20, 12, 20)]  # ragged: 4-byte copies (K % 4 != 0); 16-byte copies
GPU_SIZES = [(1000, 1030, 517), (257, 4099, 130), (777, 1333, 904)]


@pytest.mark.parametrize("size", SIM_SIZES if SIMULATOR else GPU_SIZES)
def test_async_copy_rung(size, rng):
    verdict = _run("async_copy", size, rng)
    assert verdict.ok, verdict.reason


# builds of async_copy (the rung test above runs choose()'s pick at its sizes: the 64 x 64 build): the default at
# a size whose 6 slabs wrap its 4-stage ring (16-byte copies), the 8 x 8 lanes of 8 warps at 3 slabs, the
# 64 x 64 build with K split into 3 ranges (the last 4 k, 4-byte copies) and the reduction launch
ACOPY_SIZES = {"b128x128_w64x64_t8x16_k16_s4": ((20, 12, 88), 1), "b128x128_w64x32_t8x8_k16_s3": ((9, 8, 36), 1),
               "b64x64_w32x32_t4x8_k16_s4": ((9, 13, 100), 3)}


# builds that are neither a rung's default nor its small-grid pick: on the GPU only (the simulator's time)
GPU_ONLY_BUILDS = {"b128x128_w64x32_t8x8_k16_s3", "b128x256_w64x64_k16_s2", "b128x128_w64x32_k16_s3"}
_GPU_ONLY = pytest.mark.skipif(SIMULATOR, reason="a build no rung picks: checked on the GPU (the simulator's time)")


@pytest.mark.parametrize("name", [pytest.param(n, marks=[_GPU_ONLY] if n in GPU_ONLY_BUILDS else [])
                                  for n in sorted(ACOPY_SIZES)])
def test_async_copy_builds(name, rng):
    from kernels.gemm import async_copy as AC

    if AC.UNAVAILABLE:
        pytest.skip(AC.UNAVAILABLE)
    (m, n, k), splits = ACOPY_SIZES[name] if SIMULATOR else ((1001, 1036, 516), ACOPY_SIZES[name][1])
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = np.full((m, n), np.nan, np.float32)
    args = (A, B, C) if SIMULATOR else tuple(cuda.to_device(x) for x in (A, B, C))
    AC.enqueue(AC.BUILDS[name], *args, splits=splits)()
    got = C if SIMULATOR else args[2].copy_to_host()
    err = np.abs(got - A.astype(np.float64) @ B.astype(np.float64))
    assert np.all(err <= dot_tolerance(A, B, np.float32)), np.nanmax(err)


def test_async_copy_choose_by_grid():
    from kernels.gemm import async_copy as AC

    for size in [(4096, 4096, 4096), (2048, 2048, 2048), (4097, 4097, 4097), (4096, 4096, 64)]:
        assert AC.choose(size, 132)[:2] == (AC.DEFAULT, 1)  # >= 132 blocks of 128 x 128
    small = AC.choose((1000, 1030, 517), 132)  # 72 blocks of 128 x 128 for 132 SMs; 272 of 64 x 64, K not split
    assert (small.name, small.splits) == (AC.SMALL, 1) and "72 blocks" in small.why and "272 blocks" in small.why
    assert AC.choose((1000, 1030, 517), 64).name == AC.DEFAULT  # a GPU of 64 SMs: the default fills it
    skinny = AC.choose((64, 4096, 4096), 132)  # 64 blocks of 64 x 64: K in ranges of at least 512
    kchunk = -(-4096 // skinny.splits)
    assert skinny.name == AC.SMALL and 2 <= skinny.splits <= 8 and 64 * skinny.splits >= 132 and kchunk >= 512
    assert AC.choose((33, 17, 13), 132)[:2] == (AC.SMALL, 1)  # too few k to split
    plan = AC.launch((64, 4096, 4096), 256)
    assert plan.grid[2] == skinny.splits and AC.SMALL in plan.note and "K ranges" in plan.note


def test_async_copy_grouped_order_is_a_permutation():
    from kernels.gemm.async_copy import grouped_order

    for gx, gy, group in [(5, 7, 2), (3, 8, 8), (4, 3, 8), (33, 33, 8), (1, 1, 8)]:
        tiles = [grouped_order(x, y, gx, gy, group) for y in range(gy) for x in range(gx)]
        assert sorted(tiles) == [(r, c) for r in range(gy) for c in range(gx)]
    # launch order: the group's 2 tile rows, column by column
    assert [grouped_order(x, 0, 4, 3, 2) for x in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]


@pytest.mark.parametrize("size", SIM_SIZES[:1] if SIMULATOR else GPU_SIZES)  # about 1 s in the simulator
def test_tensor_core_tf32_rung(size, rng):
    verdict = _run("tensor_core_tf32", size, rng)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("size", SIM_SIZES[:1] if SIMULATOR else GPU_SIZES[:1])
def test_tensor_core_tf32_pads_ragged_rows(size, rng, monkeypatch):
    # K, N not multiples of 4: the copy into zero-padded buffers inside the call (large products take it)
    from kernels.gemm import tensor_core_tf32 as TC

    monkeypatch.setattr(TC, "PAD_MIN_MNK", 0)
    assert "zero-padded" in TC.launch(size, 256).note
    verdict = _run("tensor_core_tf32", size, rng)
    assert verdict.ok, verdict.reason


# builds of tensor_core_tf32 (block and warp tiles, slab depth, stages; its swizzles; the pipelined loop with
# one and two 16-deep groups a slab; static and dynamic shared memory) at a size that wraps its stage ring,
# 16-byte copies unless the size says 4-byte (the rung test above runs the default build); the builds left
# out differ from one here only in sizes (kept out for the simulator's time)
# one each way: the default (the rung test runs the small-grid build at its size) at a 4-byte size, the
# small-grid build at a 16-byte one over two blocks, both ragged
TILE_SIZES = {"b128x256_w64x64_k16_s2": (9, 8, 16),
              "b128x128_w64x32_k16_s3": (12, 40, 36),
              "b128x128_w64x64_k16_s3_p": (20, 12, 56), "b128x128_w64x64_k32_s3_p": (9, 22, 101),
              "b64x64_w32x32_k32_s3_p": (40, 92, 40)}


@pytest.mark.parametrize("name", [pytest.param(n, marks=([pytest.mark.slow] if n.endswith("_p") else [])
                                                 + ([_GPU_ONLY] if n in GPU_ONLY_BUILDS else []))
                                  for n in sorted(TILE_SIZES)])
def test_tensor_core_tf32_builds(name, rng):
    from kernels.gemm import tensor_core_tf32 as TC

    if mma.UNAVAILABLE:
        pytest.skip(mma.UNAVAILABLE)
    m, n, k = TILE_SIZES[name] if SIMULATOR else (1001, 1036, 516)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = np.full((m, n), np.nan, np.float32)
    plan = TC.launch_for(TC.TILES[name], (m, n, k))
    args = (A, B, C) if SIMULATOR else tuple(cuda.to_device(x) for x in (A, B, C))
    mma.with_shared(TC.kernel_for(k, n, TC.TILES[name]), plan.grid, plan.block, TC.TILES[name].dynamic_bytes)(*args)
    got = C if SIMULATOR else args[2].copy_to_host()
    err = np.abs(got - A.astype(np.float64) @ B.astype(np.float64))
    assert np.all(err <= mma.rounded_inputs_tolerance(A, B, mma.TF32_MANTISSA)), np.nanmax(err)


@pytest.mark.parametrize("rung", ["tensor_core_tf32", "tensor_core_bf16"])
def test_the_rungs_pick_small_block_tiles_where_the_default_grid_leaves_sms_idle(rung):
    # the simulator describes an H100 SXM: 132 SMs (kernels.spec.sm_count)
    import importlib

    mod = importlib.import_module(f"kernels.gemm.{rung}")
    default, small = (mod.DEFAULT, mod.SMALL) if rung.endswith("tf32") else ("default", "small")
    v = kernels.load("matmul").variants[rung]
    for size, want, grid in (((1000, 1030, 517), small, (17, 16)), ((64, 4096, 4096), small, (64, 1)),
                             ((129, 129, 129), small, (3, 3)), ((4096, 4096, 4096), default, (32, 32)),
                             ((2048, 2048, 2047), default, (16, 16)), ((4096, 4096, 32), default, (32, 32))):
        name, why = mod.choose(size)
        plan = v.launch(size, 128)
        assert name == want and plan.grid == grid and plan.block == (128,), (size, name, plan)
        assert f"build {name}: " in plan.note and why in plan.note and "132 SMs" in why
    assert "72 blocks" in mod.choose((1000, 1030, 517))[1]


def test_tile_shapes_are_checked():
    from kernels.gemm import tensor_core_tf32 as TC

    assert set(TILE_SIZES) <= set(TC.TILES) and TC.DEFAULT in TILE_SIZES
    assert any(TC.TILES[name].dynamic_bytes for name in TILE_SIZES)  # a build past 48 KB: dynamic shared memory
    assert all(t.shared_bytes <= TC.MAX_SHARED and (t.dynamic_bytes > 0) == (t.shared_bytes > 48 * 1024)
               for t in TC.TILES.values())
    with pytest.raises(ValueError, match="unsupported tile"):
        TC.make_tf32_kernel(TC.Tile(128, 128, 64, 48, 16, 2))  # 6 n tiles a warp: no 16-byte B loads


def test_pipeline_rungs_stay_out_of_auto_and_float64():
    spec = kernels.load("matmul")
    from kernels import matmul

    assert "async_copy" not in matmul.RUNGS and "tensor_core_tf32" not in matmul.RUNGS  # auto picks from RUNGS
    tc = spec.variants["tensor_core_tf32"]
    assert tc.precision == "tf32" and tc.suits((4096, 4096, 4096)) is False  # lab tune leaves it out
    if mma.UNAVAILABLE:  # numba-cuda on a GPU: no mma.sync; the one line says why, at any dtype
        assert tc.unavailable(np.float32) == tc.unavailable(np.float64) == f"tensor_core_tf32 {mma.UNAVAILABLE}"
    else:
        assert "float32" in tc.unavailable(np.float64) and tc.unavailable(np.float32) == ""
    assert spec.variants["async_copy"].tolerance is None  # FP32: the spec's float32 tolerance


def test_a_student_kernel_gets_the_numba_cuda_twins_where_the_lab_runs_mlir(monkeypatch, tmp_path):
    """A student's kernel is numba-cuda's (``from numba import cuda``), which cannot call numba-cuda-mlir's
    device functions (on the H100: "AssertionError: <class '...MLIRDispatcherType'>"): where the lab's
    kernels are MLIR's, the checker swaps the mma helpers it imported for their plain-CUDA twins."""
    import types

    from kernels.gemm import mma, mma_numba_cuda
    from lab.teach.contained import executor

    if mma.COMPILER != "numba-cuda-mlir":
        assert mma.for_numba_cuda(mma.mma_tf32) is None  # the simulator's (or numba-cuda's) helpers: kept
    monkeypatch.setattr(mma, "COMPILER", "numba-cuda-mlir")
    monkeypatch.setattr(mma, "SIMULATOR", False)
    student = types.ModuleType("student_x")
    student.mma_tf32, student.to_tf32, student.cp_async4, student.other = (
        mma.mma_tf32, mma.to_tf32, mma.cp_async4, mma.a_index)
    executor._numba_cuda_helpers(student)
    assert student.mma_tf32 is mma_numba_cuda.mma_tf32 and student.to_tf32 is mma_numba_cuda.to_tf32
    assert student.cp_async4 is mma_numba_cuda.cp_async4 and student.other is mma.a_index
    assert set(mma.HELPERS) <= set(vars(mma_numba_cuda))
