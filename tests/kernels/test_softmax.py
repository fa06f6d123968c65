"""softmax: every rung against the float64 NumPy reference on fresh random inputs; rows with -inf
entries and large magnitudes; the register-resident and the streaming (long-row) paths; rows sum
to 1; group_rows (short rows) and split_row (few very long rows) at the shapes they are for."""
import numpy as np
import pytest

import kernels
from kernels import softmax as S, softmax_rows as SR
from kernels.spec import split_columns
from lab.core import contenders as C
from lab.core.check import check_outputs
from tests.conftest import SIMULATOR
from tests.helpers import check_rung, run_variant

pytestmark = pytest.mark.gpu

SPEC = kernels.load("softmax")
VARIANTS = [v for v in SPEC.variants if v not in ("split_row", "split_tail")]  # their own shapes, below
ONE_PASS = ["fused", "online"]

# (size, threads): one element, one row, COLS not a multiple of the block (1, 31, 33, 70), one
# column, several rows, a row held 3 values a thread, several warps a block.
CASES = [((1, 1), 32), ((1, 31), 32), ((3, 33), 32), ((3, 70), 64), ((5, 1), 32), ((2, 100), 32)] + (
    [] if SIMULATOR else [((1000, 4097), 256), ((4099, 1001), 1024), ((300, 8192), 1024),
                          ((513, 1024), 128), ((300, 30000), 1024), ((7, 16411), 1024)])
# Sizes of the performance targets, for the one-pass rungs (1 read + 1 write).
BIG_CASES = [] if SIMULATOR else [((8192, 8192), 1024), ((65536, 1024), 256), ((65536, 1024), 128)]
# Rows longer than a block holds in registers: the streaming path (3 or 2 reads + 1 write).
LONG_CASES = [((2, 1100), 32)] if SIMULATOR else [((4, 100000), 256), ((3, 40000), 1024),
                                                  ((64, 33000), 512)]


def rows_sum_to_one(out, tol):
    """Each row of ``out`` sums to 1 within the summed per-element tolerances."""
    total = out.astype(np.float64).sum(axis=1)
    bound = np.broadcast_to(tol, out.shape).sum(axis=1) + np.finfo(out.dtype).eps
    return bool(np.all(np.abs(total - 1) <= bound))


def run_on(variant, x, threads, simulator):
    """Run ``variant`` on the given input the way the runner does; (ok, err, out, ref, tol)."""
    size = x.shape
    refs = SPEC.reference(x.astype(np.float64))
    tols = SPEC.tolerance((x,), refs, x.dtype)
    v = SPEC.variants[variant]
    prepared = C.prepare_numba(SPEC, size, v, v.launch(size, threads), (x,), simulator)
    prepared.poison()
    outs = prepared.read(prepared.call())
    v = check_outputs(outs, refs, tols)
    return v.ok, v.max_abs_err, outs[0], refs[0], tols[0]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("size,threads", CASES)
def test_softmax(variant, size, threads, rng, simulator):
    x = SPEC.make_inputs(size, np.dtype(np.float32), rng)[0]
    ok, err, out, ref, tol = run_on(variant, x, threads, simulator)
    assert ok, f"{variant} at {size}, {threads} threads: max abs err {err}"
    assert out.min() >= 0 and out.max() <= 1
    assert rows_sum_to_one(out, tol)


@pytest.mark.parametrize("variant", ONE_PASS)
@pytest.mark.parametrize("size,threads", BIG_CASES)
def test_softmax_target_sizes(variant, size, threads, rng, simulator):
    assert S._resident_per_thread(size[1], threads, 4) is not None  # the register-resident path
    ok, err, *_ = run_variant(SPEC, variant, size, threads, rng, simulator=simulator)
    assert ok, f"{variant} at {size}: max abs err {err}"


# naive has no register-resident path to fall out of (each of its five launches streams the row): in the
# simulator, where it alone took ~20 s here, it is left to the GPU sizes
LONG_VARIANTS = [v for v in VARIANTS if v != "naive"] if SIMULATOR else VARIANTS


@pytest.mark.parametrize("variant", LONG_VARIANTS)
@pytest.mark.parametrize("size,threads", LONG_CASES)
def test_softmax_long_rows(variant, size, threads, rng, simulator):
    """Rows longer than a block holds in registers take the streaming path and still match."""
    assert S._resident_per_thread(size[1], threads, 4) is None
    x = SPEC.make_inputs(size, np.dtype(np.float32), rng)[0]
    ok, err, out, ref, tol = run_on(variant, x, threads, simulator)
    assert ok, f"{variant} at {size}: max abs err {err}"
    assert rows_sum_to_one(out, tol)


def hard_rows(cols, rng):
    """Rows that break a softmax without the max subtracted or without the -inf guards.

    0: 1e4 + N(0, 1)   exp overflows float32 without subtracting the max
    1: -1e4 + N(0, 1)  exp underflows the whole row to 0 without it (0/0)
    2: 80 * N(0, 1)    most outputs tiny, many underflow
    3: -inf at the first, the last and every 32nd column from 5 (with 32 or 64 threads and 70
       columns, thread 5 sees only -inf) and at columns 32..63 (with 64 threads, warp 1 sees only
       -inf: its second slots lie past the row's end)
    4: all -inf but one column: the output there is exactly 1, elsewhere exactly 0
    5: N(0, 1) scaled by 88.8 with the max at 88.8 (exp(88.8) overflows float32)
    """
    x = rng.standard_normal((6, cols)).astype(np.float32)
    x[0] += 1e4
    x[1] -= 1e4
    x[2] *= 80
    x[3, [0, cols - 1]] = -np.inf
    x[3, 5::32] = -np.inf
    if cols >= 64:
        x[3, 32:64] = -np.inf
    keep = rng.integers(0, cols)
    x[4] = -np.inf
    x[4, keep] = rng.standard_normal()
    x[5] = np.abs(x[5]) / np.abs(x[5]).max() * np.float32(88.8)
    return x, keep


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("cols,threads", [(70, 64)] + ([] if SIMULATOR else [(70, 32), (8192, 1024),
                                                                            (1024, 256)]))
def test_large_magnitudes_and_neg_inf(variant, cols, threads, rng, simulator):
    x, keep = hard_rows(cols, rng)
    ok, err, out, ref, tol = run_on(variant, x, threads, simulator)
    assert ok, f"{variant}: max abs err {err}"
    assert np.isfinite(out).all()
    assert (out[np.isneginf(x)] == 0).all()  # exp(-inf - max) is exactly 0
    assert out[4, keep] == 1
    assert rows_sum_to_one(out, tol)


@pytest.mark.parametrize("variant", ONE_PASS)
def test_neg_inf_long_rows(variant, rng, simulator):
    """The streaming path's guards: one thread, and a whole trip of a warp, see only -inf."""
    cols, threads = (1100, 32) if SIMULATOR else (100000, 256)
    x, keep = hard_rows(cols, rng)
    x[3, : 4 * threads] = -np.inf  # every thread's whole first trip
    ok, err, out, ref, tol = run_on(variant, x, threads, simulator)
    assert ok, f"{variant}: max abs err {err}"
    assert (out[np.isneginf(x)] == 0).all() and out[4, keep] == 1
    assert rows_sum_to_one(out, tol)


@pytest.mark.parametrize("variant", VARIANTS)
def test_softmax_float64(variant, rng, simulator):
    # float64 rows in registers (K = 3, K = 8) and streaming ones (K = 17 > 16, 8 * 1024 > 4096)
    cases = [((5, 70), 32)] + ([] if SIMULATOR else [((100, 2000), 256), ((1000, 4097), 256),
                                                     ((64, 8192), 1024)])
    for size, threads in cases:
        ok, err, *_ = run_variant(SPEC, variant, size, threads, rng, dtype=np.float64, simulator=simulator)
        assert ok, f"{variant} at {size}: max abs err {err}"


def test_make_inputs(rng):
    """Fresh values, the four kinds of rows, a few -inf entries and never a whole row of them."""
    x = SPEC.make_inputs((40, 50), np.dtype(np.float32), rng)[0]
    y = SPEC.make_inputs((40, 50), np.dtype(np.float32), rng)[0]
    assert x.dtype == np.float32 and not np.array_equal(x, y)
    assert 1 <= np.isneginf(x).sum() <= 8 and not np.isneginf(x).all(axis=1).any()
    finite_max = np.where(np.isfinite(x), x, -np.inf).max(axis=1)
    assert (finite_max > 5e3).any() and (finite_max < -5e3).any()
    for cols in (1, 2):  # tiny rows: no row left entirely -inf
        z = SPEC.make_inputs((30, cols), np.dtype(np.float32), rng)[0]
        assert not np.isneginf(z).all(axis=1).any()


def test_tolerance_is_relative_and_finite(rng):
    x = SPEC.make_inputs((8, 70), np.dtype(np.float32), rng)[0]
    ref = SPEC.reference(x.astype(np.float64))
    (tol,) = SPEC.tolerance((x,), ref, np.dtype(np.float32))
    assert np.isfinite(tol).all() and (tol > 0).all()
    assert (tol <= 2e-4 * ref[0] + 1e-37).all()  # at most ~1000 ulps (80 N(0, 1) rows: gap ~500)


def test_launch_math():
    cfg = SPEC.variants["fused"].launch((8192, 8192), 1024)
    assert cfg.grid == (8192,) and cfg.block == (1024,) and cfg.threads_idle == 0
    cfg = SPEC.variants["online"].launch((6, 70), 256)
    assert cfg.grid == (6,) and cfg.threads_needed == 6 * 70
    assert "3 element-wise" in SPEC.variants["naive"].launch((65536, 1024), 256).note
    assert S._resident_per_thread(8192, 1024, 4) == 8
    assert S._resident_per_thread(1024, 256, 4) == 4
    assert S._resident_per_thread(8192, 256, 4) == 32
    assert S._resident_per_thread(8192, 128, 4) is None  # 64 values a thread: streaming
    assert S._resident_per_thread(8192, 1024, 8) is None  # float64: registers run out sooner
    assert S._resident_per_thread(30000, 1024, 4) == 30  # 56 registers x 1024 threads: one block an SM
    assert S._resident_per_thread(32769, 1024, 4) is None
    assert S._resident_per_thread(4096, 1024, 8) == 4
    assert SPEC.bytes_moved((8192, 8192), np.dtype(np.float32)) == 2 * 8192 * 8192 * 4


def test_torch_softmax_entry(rng):
    """The torch contender's ops on CPU tensors (their CUDA run is the lead's GPU session)."""
    torch = pytest.importorskip("torch")
    from lab.core import registry

    x = SPEC.make_inputs((6, 70), np.dtype(np.float32), rng)[0]
    refs = SPEC.reference(x.astype(np.float64))
    tols = SPEC.tolerance((x,), refs, np.dtype(np.float32))
    for label in registry.labels("torch", "softmax"):
        # torch.compile needs a compiler toolchain (the GPU machine); the lab's own op: test_torch_ops.py
        if "compile" in label or label.startswith("numba via"):
            continue
        fn = registry.function("torch", "softmax", label)
        out = torch.empty(x.shape, dtype=torch.float32)
        res = fn(torch, torch.from_numpy(x), out=[out])
        v = check_outputs([r.numpy() for r in res], refs, tols)
        assert v.ok, f"{label}: max abs err {v.max_abs_err}"


# --- group_rows (short rows) and split_row (few very long rows) ------------------------------------
SOFTMAX_GROUP = [((9, 5), 32), ((3, 33), 32), ((4, 130), 64)] + ([] if SIMULATOR else [
    ((100000, 32), 128), ((262144, 128), 256), ((1000, 1000), 128), ((1001, 2000), 128), ((4099, 5), 1024),
    ((77, 1), 32)])


@pytest.mark.parametrize("size,threads", SOFTMAX_GROUP)
def test_softmax_group_rows(size, threads, rng, simulator):
    check_rung("softmax", "group_rows", size, threads, rng, simulator)


@pytest.mark.parametrize("size,threads", [((2, 300), 32)] + ([] if SIMULATOR else [
    ((4, 1000000), 256), ((1, 1048576), 256), ((32, 65536), 512), ((3, 40001), 1024)]))
def test_softmax_split_row(size, threads, rng, simulator):
    assert split_columns(size[0], size[1], threads, S.UNROLL)[1] > 1  # really split
    check_rung("softmax", "split_row", size, threads, rng, simulator)


@pytest.mark.skipif(SIMULATOR, reason="GPU sizes")
@pytest.mark.parametrize("variant", ["group_rows", "split_row"])
def test_softmax_new_rungs_float64_and_hard_rows(variant, rng, simulator):
    check_rung("softmax", variant, (300, 700), 128, rng, simulator, np.float64)  # group_rows: warp streaming
    x, keep = hard_rows(100000, rng)
    ok, err, out, ref, tol = run_on(variant, x, 256, simulator)
    assert ok and out[4, keep] == 1 and (out[np.isneginf(x)] == 0).all(), f"{variant}: max abs err {err}"


def test_group_rows_launch_math():
    assert [S.group_width(c) for c in (1, 4, 5, 32, 33, 128, 129, 5000)] == [1, 1, 2, 8, 16, 32, 32, 32]
    # K = 32 values a lane at 1024 threads would need 96 x 1024 registers: the warp streaming path
    assert "warp streaming" in kernels.load("softmax").variants["group_rows"].launch((5, 1000), 1024).note
    assert "32 values a lane" in kernels.load("softmax").variants["group_rows"].launch((5, 1000), 128).note
    cfg = kernels.load("softmax").variants["group_rows"].launch((100000, 32), 128)
    assert cfg.grid == (100000 // 16,) and cfg.threads_needed == 100000 * 8


def test_group_rows_keeps_the_fused_register_budget():
    """group_rows (kernels/softmax_rows.py) holds rows in registers under the fused rung's limits."""
    from kernels import softmax, softmax_rows

    assert softmax_rows.GROUP_RESIDENT_MAX == softmax.RESIDENT_MAX
    # at most the fused rung's block limit: a lane's K = 32 values take more registers than a thread's
    assert all(softmax_rows.GROUP_RESIDENT_BLOCK[i] <= softmax.RESIDENT_BLOCK[i] for i in (4, 8))
    assert softmax_rows.GROUP_RESIDENT_BLOCK == {4: 16384, 8: 4096}


# --- split_tail (a few hundred long rows): odd sizes, every chunk boundary, poisoned outputs ----------
# The simulator runs ~3,000 elements a second here: 7 x 20,011 and 1 x 65,537 took 110 s and 134 s
# (they passed), so they are GPU cases; the simulator's odd sizes still cut rows into 4-17 chunks.
SPLIT_TAIL = [((3, 1001), 32), ((1, 4099), 32), ((5, 1), 32)] + ([] if SIMULATOR else [
    ((7, 20011), 64), ((1, 65537), 128), ((500, 20000), 256), ((300, 30000), 256), ((64, 100000), 256),
    ((1000, 16411), 512), ((1, 1048577), 256), ((2, 300), 1024)])


@pytest.mark.parametrize("size,threads", SPLIT_TAIL)
def test_softmax_split_tail(size, threads, rng, simulator):
    """split_tail against the float64 reference (outputs poisoned first), the rows summing to 1."""
    chunk, splits = SR.split_tail_plan(size[0], size[1], threads)
    assert size[1] <= threads * SR.SPLIT_UNROLL or splits > 1  # really split, past one trip of the block
    assert (splits - 1) * chunk < size[1] <= splits * chunk and chunk % 32 == 0
    x = SPEC.make_inputs(size, np.dtype(np.float32), rng)[0]
    ok, err, out, ref, tol = run_on("split_tail", x, threads, simulator)
    assert ok, f"split_tail at {size}, {threads} threads: max abs err {err}"
    assert rows_sum_to_one(out, tol)


def test_softmax_split_tail_hard_rows_and_float64(rng, simulator):
    """-inf guards (a whole chunk of -inf, a row of -inf but one), huge magnitudes, and float64."""
    cols, threads = (330, 32) if SIMULATOR else (100000, 256)
    x, keep = hard_rows(cols, rng)
    chunk, _ = SR.split_tail_plan(6, cols, threads)
    x[3, : chunk + 5] = -np.inf  # the first chunk of row 3 only -inf, and a bit of the next
    ok, err, out, ref, tol = run_on("split_tail", x, threads, simulator)
    assert ok, f"split_tail: max abs err {err}"
    assert (out[np.isneginf(x)] == 0).all() and out[4, keep] == 1
    assert rows_sum_to_one(out, tol)
    check_rung("softmax", "split_tail", (2, 333) if SIMULATOR else (300, 30001), threads, rng, simulator,
               np.float64)


def test_auto_long_rows_choice():
    """auto holds rows of up to 32,768 columns in registers (fused, 1024 threads, K <= 32) and takes
    split_tail past that; a few rows (fewer than SMs) stay with split_row; short rows with group_rows."""
    sms = S.sm_count()
    for size in [(500, 20000), (300, 30000), (2000, 20000), (sms, 32768)]:
        rung, threads, _ = S.choose(size)
        assert (rung, threads) == ("fused", 1024)
        assert S._resident_per_thread(size[1], threads, 4) == -(-size[1] // 1024)  # in registers
    assert S.choose((200, 50000))[0] == "split_tail" and S.choose((5000, 32769))[0] == "split_tail"
    assert S.choose((sms - 1, 20000))[0] == "split_row" and S.choose((4, 10 ** 6))[0] == "split_row"
    assert S.choose((8192, 8192))[:2] == ("fused", 1024) and S.choose((1000, 1000))[0] == "group_rows"
