"""kernels/gemm/tensor_core_3xtf32.py: 3xTF32, FP32 accuracy on tensor cores, and ``--precision``.

Off the GPU: the split (its bits, its edges near FLT_MAX, infinities, NaNs), the error model against float64
(TF32 alone fails the FP32 tolerance where 3xTF32 passes), the rung's mma.sync build in the simulator's
emulation (same fragments as tensor_core_tf32) at ragged shapes and on adversarial inputs, at the **FP32**
tolerance, the wgmma build's plan, auto's choice rules and the precision option. Marked gpu: the rung and
float32 auto on the hardware (the wgmma build on an sm_90a GPU under numba-cuda-mlir, the mma.sync build
elsewhere) at ragged shapes, long K and near FLT_MAX (scripts/tf32x3_bench.py times them)."""
import numpy as np
import pytest

import kernels
from kernels.gemm import mma
from kernels.gemm import precision as P
from kernels.gemm import tensor_core_3xtf32 as X
from kernels.gemm import wgmma_bf16 as W
from kernels.spec import dot_tolerance
from lab.core import contenders as C
from lab.core.check import check_prepared
from lab.core.errors import LabError
from tests.conftest import SIMULATOR, skip_unavailable

FLT_MAX = float(np.finfo(np.float32).max)
gpu = pytest.mark.gpu


def _err(C64, A, B):
    """max |C - A @ B| / the FP32 tolerance (kernels.spec.dot_tolerance)."""
    ref = A.astype(np.float64) @ B.astype(np.float64)
    return float(np.max(np.abs(C64 - ref) / dot_tolerance(A, B, np.float32)))


def test_split_is_two_tf32_values_that_sum_to_x(rng):
    x = np.concatenate([rng.standard_normal(10000), rng.uniform(0.5, 1, 5000) * 2.0 ** rng.integers(-114, 127, 5000)])
    x = (x * rng.choice([-1, 1], x.size)).astype(np.float32)
    big, small = mma.split_tf32(x)
    for part in (big, small):
        assert not (part.view(np.uint32) & 0x1FFF).any()  # TF32: the low 13 bits zero
    assert np.array_equal(big, mma.round_tf32(x))  # big is cvt.rna's value
    x64 = x.astype(np.float64)
    assert np.all(np.abs(x64 - big - small) <= 2.0 ** -22 * np.abs(x64))  # the split's own error
    assert np.all(np.abs(x64 - big) <= 2.0 ** -11 * np.abs(x64))  # what TF32 alone keeps
    # under 2^-115 the small part is subnormal: TF32's spacing there is 2^-136, the split's error at most half
    tiny = (rng.uniform(0, 1, 5000) * 2.0 ** rng.integers(-149, -114, 5000)).astype(np.float32)
    tb, ts = mma.split_tf32(tiny)
    assert np.all(np.abs(tiny.astype(np.float64) - tb - ts) <= 2.0 ** -137)


def test_split_at_the_edges_of_float32():
    x = np.float32([FLT_MAX, -FLT_MAX, np.inf, -np.inf, np.nan, 0.0, -0.0, 2.0 ** -149, 2.0 ** -126])
    big, small = mma.split_tf32(x)
    # FLT_MAX would round up to infinity: truncated instead, the rest in the small part, both finite
    assert np.isfinite(big[:2]).all() and np.isfinite(small[:2]).all()
    assert big[0] + np.float64(small[0]) == pytest.approx(FLT_MAX, rel=2.0 ** -21)
    assert big[2] == np.inf and big[3] == -np.inf and small[2] == 0 and small[3] == 0
    assert np.isnan(big[4]) and small[4] == 0
    assert (big[5], small[5]) == (0, 0) and np.signbit(big[6])
    assert big[8] == np.float32(2.0 ** -126) and small[8] == 0


@pytest.mark.skipif(not SIMULATOR, reason="the emulation's function (a GPU runs the PTX)")
def test_emulated_split_word_is_split_tf32(rng):
    for v in rng.standard_normal(50).astype(np.float32).tolist() + [FLT_MAX, 1e-40]:
        b, s = mma.split_word(np.float32(v))
        eb, es = mma.split_tf32(np.float32(v))
        assert (b, s) == (eb, es)


def test_three_products_keep_fp32_accuracy_where_tf32_alone_fails(rng):
    """The error model on the host: products of the parts exact (float64), the lab's standard-normal check inputs
    at K = 4096: TF32-rounded inputs miss the FP32 tolerance by far, big x big + big x small + small x big
    stays well inside it (the dropped small x small is 2^-22 of a product)."""
    A, B = rng.standard_normal((24, 4096)).astype(np.float32), rng.standard_normal((4096, 16)).astype(np.float32)
    (Ab, As), (Bb, Bs) = mma.split_tf32(A), mma.split_tf32(B)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    tf32 = f(Ab) @ f(Bb)
    three = f(Ab) @ f(Bb) + f(Ab) @ f(Bs) + f(As) @ f(Bb)
    assert _err(tf32, A, B) > 10
    assert _err(three, A, B) < 0.1


def _run(size, A=None, B=None, rng=None, variant="tensor_core_3xtf32"):
    """The rung's verdict at ``size`` on A, B (default: the spec's standard-normal inputs), FP32's tolerance."""
    skip_unavailable("matmul", variant)
    spec = kernels.load("matmul")
    v = spec.variants[variant]
    inputs = (A, B) if A is not None else spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = v.tolerance(inputs, refs, np.float32) if getattr(v, "tolerance", None) else spec.tolerance(inputs, refs, np.float32)
    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), inputs, SIMULATOR)
    return check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(np.float32))).verdict


SIM_SIZES = [(33, 17, 13)]  # ragged: 4-byte copies (K % 4 != 0), M and N past one tile edge
GPU_SIZES = [(1000, 1030, 517), (257, 4099, 130), (777, 1333, 904), (130, 136, 20000)]  # the last: K ranges


@gpu
@pytest.mark.parametrize("size", SIM_SIZES if SIMULATOR else GPU_SIZES)
def test_rung_at_ragged_shapes(size, rng):
    verdict = _run(size, rng=rng)
    assert verdict.ok, verdict.reason


def _tf32_verdict(size, A, B):
    """tensor_core_tf32's verdict on A, B at the FP32 tolerance (the SIMT rungs'), not its own TF32 one."""
    skip_unavailable("matmul", "tensor_core_tf32")
    spec = kernels.load("matmul")
    v = spec.variants["tensor_core_tf32"]
    refs = (A.astype(np.float64) @ B.astype(np.float64),)
    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), (A, B), SIMULATOR)
    return check_prepared(prepared, refs, spec.tolerance((A, B), refs, np.float32), spec.out_specs(size, np.dtype(np.float32))).verdict


@gpu
def test_fp32_tolerance_where_tf32_fails(rng):
    """Inputs whose mantissa bits TF32 drops (a = 1 + 2^-11 + 2^-12 rounds to 1 + 2^-10, +-, times +-1: 2^-12 of
    every product, deterministically): the TF32 rung fails the FP32 check, the 3xTF32 rung passes the same
    one (big + small hold a exactly). On a GPU also the lab's standard-normal inputs at K = 8,192, and uniform
    [0, 1) ones (no cancelling: the partial sums grow) at K = 65,536."""
    size = (8, 8, 16) if SIMULATOR else (520, 512, 4096)
    m, n, k = size
    A = (np.float32(1 + 2.0 ** -11 + 2.0 ** -12) * rng.choice(np.float32([-1, 1]), (m, k))).astype(np.float32)
    B = rng.choice(np.float32([-1, 1]), (k, n))
    assert _run(size, A, B).ok
    assert not _tf32_verdict(size, A, B).ok
    if not SIMULATOR:
        normal = (520, 512, 8192)
        A, B = rng.standard_normal((520, 8192)).astype(np.float32), rng.standard_normal((8192, 512)).astype(np.float32)
        assert _run(normal, A, B).ok and not _tf32_verdict(normal, A, B).ok
        long_k = (136, 130, 65536)
        assert _run(long_k, rng.random((136, 65536), np.float32), rng.random((65536, 130), np.float32)).ok


@gpu
@pytest.mark.slow
def test_adversarial_exponents(rng):
    """Wide exponent ranges (2^+-30 an element) and values up to FLT_MAX (a tenth of A exactly FLT_MAX, whose
    rounding to TF32 would overflow) against B of 2^-110: FP32's tolerance, no infinities."""
    size = (16, 9, 24) if SIMULATOR else (300, 260, 700)
    m, n, k = size
    A = (rng.standard_normal((m, k)) * np.exp2(rng.integers(-30, 31, (m, k)))).astype(np.float32)
    B = (rng.standard_normal((k, n)) * np.exp2(rng.integers(-30, 31, (k, n)))).astype(np.float32)
    assert _run(size, A, B).ok
    A = (rng.uniform(0.5, 1.0, (m, k)) * 2.0 ** 127).astype(np.float32)
    A[rng.random((m, k)) < 0.1] = FLT_MAX
    A *= rng.choice(np.float32([-1, 1]), (m, k))
    B = (rng.standard_normal((k, n)) * 2.0 ** -110).astype(np.float32)
    assert _run(size, A, B).ok


def test_plan_splits_k_where_the_tiles_leave_sms_idle():
    name, s, per, why = X.plan((4096, 4096, 4096), 132)
    assert (name, s) == (X.WG_DEFAULT, 1) and per == 128 and "1,024 blocks" in why
    name, s, per, why = X.plan((1000, 1000, 16384), 132)  # 64 tiles of 128 x 128
    assert s > 1 and s * per >= 16384 // 32 and per >= X.MIN_SLABS and "K ranges" in why
    assert X.plan((64, 64, 64), 132)[1] == 1  # two slabs: nothing to split


@pytest.mark.parametrize("build", list(X.WG_BUILDS))
def test_stage_layout_puts_each_word_once_where_the_descriptors_read_it(build):
    """Every word of a stage's rows of A2 (2 bk columns: groups of 16 big, 16 small) lands once, in its part (big
    or small) at the swizzled K-major place of its k: 128-byte rows (chunk ^ row % 8) or 64-byte ones
    (chunk ^ (row // 2) % 4), as the hardware reads a 128- or 64-byte-swizzled tile."""
    sh = X.wg_shape(build)
    bk, rb = sh["bk"], sh["rb"]
    seen = set()
    for row in range(128):
        for j in range(2 * bk):
            part, k = (j % 32) // 16, (j // 32) * 16 + j % 16
            got = X.chunk_place(j // 4, row, bk) + 4 * (j % 4)
            swz = row % 8 if bk == 32 else (row // 2) % 4
            assert got == part * sh["part"] + row * rb + (((k // 4) ^ swz) * 16) + 4 * (k % 4)
            seen.add(got)
    assert len(seen) == 128 * 2 * bk and max(seen) < 2 * sh["part"]


def test_tma_stage_rows_hold_big_then_small_where_the_descriptors_read_them():
    """A TMA build's stage: A2's (and BT2's) 128 rows of one [16 big, 16 small] group, a 128-byte row each, placed by
    the copy engine's 128-byte swizzle (kernels.gemm.tensor_map.swizzled_offset). The big part's descriptor starts
    at the tile, the small part's 64 bytes in; the tensor cores read k-step j at + 32 j bytes, 16-byte chunk
    (start + 4 k) // 16 of row r at that chunk ^ (r % 8) (wgmma's K-major 128-byte swizzle): every word lands
    where its part's k-step reads it."""
    from kernels.gemm import tensor_map as TM

    r, k, part = np.meshgrid(np.arange(128), np.arange(16), np.arange(2), indexing="ij")
    tma = TM.swizzled_offset(r, 16 * part + k, 4)
    chunk = (64 * part + 4 * k) // 16
    read = r * 128 + ((chunk ^ (r % 8)) * 16) + 4 * (k % 4)
    assert np.array_equal(tma, read) and len(np.unique(tma)) == tma.size


def test_tma_builds_fit_the_block():
    """Each TMA build passes the pipeline's own limits (kernels.gemm.wgmma_tma.check_build: shared memory within
    227 KB, setmaxnreg within the register pool), and its block and shared memory are what the launch gets."""
    from kernels.gemm import tf32x3_tma as XT
    from kernels.gemm import wgmma_tma as T

    for name, b in XT.TMA_BUILDS.items():
        T.check_build(b["stages"], 2, X.BN, b["ws"], b.get("maxnreg"))
        assert XT.build_threads(name) == (384 if b["ws"] else 256)
        assert XT.build_shared(name) == b["stages"] * 32768 + 16 * b["stages"] + 1024 <= W.DYNAMIC_SHARED_MAX
    assert X.wg_shape(X.WG_DEFAULT)["shared"] <= W.DYNAMIC_SHARED_MAX


@pytest.fixture
def hopper(monkeypatch):
    """The route's view of a GPU under numba-cuda-mlir (no GPU here): the simulator and wgmma gates lifted."""
    from kernels import device_limits as D

    monkeypatch.setattr(X, "SIMULATOR", False)
    monkeypatch.setattr(W, "UNAVAILABLE", "")
    monkeypatch.setattr(mma, "UNAVAILABLE", "")

    def on(cc):
        return D.described(D.H100.replace(cc=cc))
    return on


def test_auto_route_rules(hopper):
    size = (2048, 2048, 2048)
    with hopper((9, 0)):
        assert X.auto_route(size)[0] == "tensor_core_3xtf32"  # the default precision: high
        with P.using("highest"):
            assert X.auto_route(size) is None
        with P.using("medium"):
            assert X.auto_route(size)[0] == "tensor_core_wgmma_tf32"
        with P.using("high", np.float64):
            assert X.auto_route(size) is None  # float64: FP64 SIMT
        assert X.auto_route((512, 512, 512)) is None  # 2^28 FLOPs: the pre-pass and launches dominate (measured)
        assert X.auto_route((6000, 300, 6000)) is None  # M N / (M + N) = 286: the pre-pass's bytes (measured)
        assert X.auto_route((32, 4096, 4096)) is None  # skinny: skinny_m streams B once
        assert X.auto_route((800, 900, 1100)) is None  # 2^30.6: the SIMT auto was faster (measured)
        assert X.auto_route((1300, 1700, 900))[0] == "tensor_core_3xtf32"  # 2^31.9, 736: faster (measured)
        note = X.launch(size, 256).note
        assert note.startswith(X.WORDS) and "wgmma" in note
    with hopper((8, 0)):
        route = X.auto_route(size)
        assert route[0] == "tensor_core_3xtf32" and "8.0" in route[2]
        assert "mma.sync" in X.launch(size, route[1]).note
        with P.using("medium"):
            assert X.auto_route(size)[0] == "tensor_core_tf32"
    for cc in ((8, 6), (8, 9), (7, 5)):  # TF32 tensor rate 1-2x the FP32 rate (or none): three products lose
        with hopper(cc):
            assert X.auto_route(size) is None


def test_auto_row_says_3xtf32_in_words(hopper):
    auto = kernels.load("matmul").variants["auto"]
    with hopper((9, 0)):
        cfg = auto.launch((2048, 2048, 2048), 256)
        assert cfg.rung == "tensor_core_3xtf32" and "3xTF32 on tensor cores, FP32-accurate" in cfg.note
        with P.using("highest"):
            assert auto.launch((2048, 2048, 2048), 256).rung != "tensor_core_3xtf32"


def test_auto_stays_simt_in_the_simulator():
    if not SIMULATOR:
        pytest.skip("the simulator's rule")
    assert X.auto_route((2048, 2048, 2048)) is None


def test_precision_names_and_scope():
    assert P.PRECISIONS == ("highest", "high", "medium") and P.DEFAULT == "high"
    with pytest.raises(ValueError, match="highest, high, medium"):
        P.check("fast")
    with P.using("medium", np.float32):
        assert P.get() == "medium" and P.dtype() == np.float32
        assert P.allows("tf32") and P.allows("3xtf32")
    assert P.get() == P.DEFAULT and P.dtype() is None
    assert not P.allows("3xtf32", "highest")


def test_run_precision_option_and_json_key():
    import lab.library as L

    with pytest.raises(LabError, match="--precision"):
        L.run("matmul", size="8x8x8", precision="fast", sim=True)
    doc = L.run("matmul", size="8x8x8", variant="naive", contenders="numba", precision="highest", sim=True).to_dict()
    assert doc["precision"] == "highest"
    assert L.run("matmul", size="8x8x8", variant="naive", contenders="numba", sim=True).to_dict()["precision"] == P.DEFAULT


def test_cli_rejects_an_unknown_precision(capsys):
    from lab.cli import main

    with pytest.raises(SystemExit) as e:
        main(["run", "matmul", "--precision", "fast", "--sim"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "fast" in err and err.count("\n") == 1


@gpu
def test_float32_auto_on_the_gpu_passes_fp32_tolerance(rng):
    """auto at the default precision: where the route takes tensor_core_3xtf32, the FP32 check still holds."""
    if SIMULATOR:
        pytest.skip("auto stays SIMT in the simulator (test_auto_stays_simt_in_the_simulator)")
    size = (1200, 1100, 1500)
    verdict = _run(size, rng=rng, variant="auto")
    assert verdict.ok, verdict.reason


@gpu
def test_tma_build_passes_fp32_tolerance(rng):
    """The comparable TMA build (kernels.gemm.tf32x3_tma.TMA_DEFAULT: TMA boxes on mbarriers) at a ragged shape and with K ranges
    (grid z: A2's and BT2's rows z M and z N through one tensor map each), at FP32's tolerance, C poisoned first."""
    if SIMULATOR or not X.wgmma_here():
        pytest.skip("the TMA build needs numba-cuda-mlir on an sm_90a GPU")
    from kernels.compiler import cuda
    from kernels.gemm import tf32x3_tma as XT

    for (m, n, k), splits in (((1000, 1030, 517), 1), ((130, 136, 20000), 4)):
        A, B = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        slabs = -(-k // X.SLAB)
        per = -(-slabs // splits)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        XT.wgmma_prepare(cuda.to_device(A), cuda.to_device(B), dC, -(-slabs // per), per, XT.TMA_DEFAULT)()
        C = dC.copy_to_host()
        assert np.isfinite(C).all() and _err(C.astype(np.float64), A, B) <= 1
