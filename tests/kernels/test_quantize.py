"""quantize: the per-tensor rungs, the per-row and dequantize kernels, against NumPy on fresh random
inputs; the edge cases (one element, constant, all negative, all positive) and the round-trip bound."""
import warnings

import numpy as np
import pytest

import kernels
from kernels import dequantize as D
from kernels import quantize as Q
from lab.core import contenders as C
from lab.core.check import check_outputs
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.gpu

SPEC = kernels.load("quantize")
VARIANTS = list(SPEC.variants)
THREADS = 64 if SIMULATOR else 256
# one element, sizes that are not multiples of the block or of a grid-stride trip, several blocks
SIZES = [1, 37, 1003] + ([] if SIMULATOR else [(1 << 20) + 7, 1 << 26])
EDGE_SIZES = [301] + ([] if SIMULATOR else [(1 << 20) + 7])
EPS32 = float(np.finfo(np.float32).eps)


def make_x(kind, n, rng, dtype=np.float32):
    """Fresh random inputs of one kind: normal (random spread and offset), constant, all positive,
    all negative (the last two a distance from zero comparable to their range or more)."""
    spread = 10 ** rng.uniform(-2, 2)
    if kind == "normal":
        return SPEC.make_inputs((n,), np.dtype(dtype), rng)[0]
    if kind == "constant":
        return np.full(n, rng.standard_normal() * spread, dtype)
    x = spread * (rng.uniform(0.1, 5) + rng.random(n))
    return (x if kind == "positive" else -x).astype(dtype)


def run_quantize(variant, x, threads, simulator):
    """Run one rung the way the runner does (poisoned outputs); (ok, outputs, float64 references)."""
    inputs = (x,)
    refs = SPEC.reference(x.astype(np.float64))
    tols = SPEC.tolerance(inputs, refs, x.dtype)
    v = SPEC.variants[variant]
    prepared = C.prepare_numba(SPEC, x.shape, v, v.launch(x.shape, threads), inputs, simulator)
    prepared.poison()
    outs = prepared.read(prepared.call())
    return check_outputs(outs, refs, tols).ok, outs, refs


def assert_matches(outs, refs, what):
    q, params = outs
    q_ref, params_ref = refs
    dq = np.abs(q.astype(np.int64) - q_ref.astype(np.int64))
    assert dq.max() <= 1, f"{what}: codes off by {dq.max()}"
    # off-by-one only at .5 boundaries: a rare event, not a systematic shift (a count, not a
    # fraction, so that one unlucky element of a small tensor is not a failure)
    assert np.count_nonzero(dq) <= 2 + 1e-3 * dq.size, f"{what}: {np.count_nonzero(dq)} codes off by one"
    # the parameters come from the exact min and max in float64: bitwise the reference's
    np.testing.assert_array_equal(params, params_ref.astype(params.dtype), err_msg=what)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_variant_random(variant, n, rng, simulator):
    x = make_x("normal", n, rng)
    ok, outs, refs = run_quantize(variant, x, THREADS, simulator)
    assert ok, f"{variant} at N={n}"
    assert_matches(outs, refs, f"{variant} at N={n}")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["constant", "positive", "negative"])
@pytest.mark.parametrize("n", EDGE_SIZES)
def test_variant_edges(variant, kind, n, rng, simulator):
    x = make_x(kind, n, rng)
    ok, (q, params), refs = run_quantize(variant, x, THREADS, simulator)
    assert ok and np.isfinite(params).all(), f"{variant}, {kind}: params {params}"
    assert_matches((q, params), refs, f"{variant}, {kind}")
    scale, zero_point = params
    if kind == "constant":
        assert scale == 1.0
    elif kind == "positive":
        assert zero_point == 0  # -lo/scale < 0 clamps to qmin
    else:
        assert zero_point == 255  # -lo/scale > 255 clamps to qmax


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("atomic_per_element", "auto")])
@pytest.mark.parametrize("threads", [32, 96] + ([] if SIMULATOR else [1024]))
def test_grid_stride_trips(variant, threads, rng, simulator):
    """A grid too small for one pass: several full trips of UNROLL loads, a ragged tail, partials of
    several blocks (rung 4 walks the trips backwards). The grid follows the described device: one SM
    holding 4 blocks' threads gives a grid of 2 blocks."""
    from kernels.device_limits import H100, described

    n = 2 * 2 * threads * Q.UNROLL + 3 * threads + 5
    with described(H100.replace(name="1 SM", sm_count=1, max_threads_per_sm=4 * threads)):
        cfg = SPEC.variants[variant].launch((n,), threads)
        assert cfg.grid == (2,)
        ok, outs, refs = run_quantize(variant, make_x("normal", n, rng), threads, simulator)
    assert ok
    assert_matches(outs, refs, f"{variant}, {threads} threads")


def test_float64(rng, simulator):
    for variant in VARIANTS:
        x = make_x("normal", 200, rng, np.float64)
        ok, outs, refs = run_quantize(variant, x, THREADS, simulator)
        assert ok, variant
        assert_matches(outs, refs, f"{variant}, float64")


# --- the reference and the rules --------------------------------------------------------------------
def test_params_rules():
    assert Q.quantize_params(2.5, 2.5) == (1.0, 0)  # constant: scale 1, -2.5 clamps to 0
    assert Q.quantize_params(-3.7, -3.7) == (1.0, 3)  # 3.7 truncates to 3
    assert Q.quantize_params(-1.0, 1.0) == (2 / 255, 127)  # 127.5 truncates (int()), not rounds
    assert Q.quantize_params(1.0, 5.0)[1] == 0
    assert Q.quantize_params(-5.0, -1.0)[1] == 255


def test_clamp_then_round_is_round_then_clamp(rng):
    """The seed clamps before rounding; with integer bounds the order does not matter, ties included."""
    v = np.concatenate([rng.uniform(-300, 600, 10_000), np.arange(-3, 260) + 0.5])
    np.testing.assert_array_equal(np.round(np.clip(v, 0, 255)), np.clip(np.round(v), 0, 255))


@pytest.mark.parametrize("kind", ["normal", "constant", "positive", "negative"])
def test_numpy_float32_contender_within_tolerance(kind, rng):
    x = make_x(kind, 5000, rng)
    refs = SPEC.reference(x.astype(np.float64))
    assert check_outputs(SPEC.reference(x), refs, SPEC.tolerance((x,), refs, x.dtype)).ok


# --- round trip ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["normal", "constant", "positive", "negative"])
def test_roundtrip_bound(kind, rng, simulator):
    """|x - dequantize(quantize(x))| <= max(scale/2, distance to the representable range), the true
    bound of the seed's formula, plus float32 rounding; through the library functions (kernels)."""
    n = 301 if SIMULATOR else (1 << 20) + 7
    x = make_x(kind, n, rng)
    q, params = D.quantize_per_tensor(x, threads=THREADS)
    back = D.dequantize_per_tensor(q, params, threads=THREADS).copy_to_host()
    scale, zero_point = (float(p) for p in params.copy_to_host())
    err = np.abs(x.astype(np.float64) - back)
    slack = 4 * EPS32 * (np.abs(x) + 256 * scale)
    bound = Q.roundtrip_bound(x, scale, zero_point)
    assert np.all(err <= bound + slack), f"worst excess {np.max(err - bound - slack)}"
    expect = Q.dequantize_reference(q.copy_to_host(), params.copy_to_host())
    assert np.all(np.abs(back - expect) <= EPS32 * (np.abs(expect) + scale))
    lo, hi = float(x.min()), float(x.max())
    if kind == "normal" and lo <= 0 <= hi:
        # zero in range: only the bottom frac(-lo/scale) * scale is clamped: < scale, not scale/2
        f = -lo / scale - zero_point
        assert err.max() <= max(0.5, f) * scale + slack.max()
        assert err.max() < scale + slack.max()
    if kind in ("positive", "negative") and n > 1:
        # the range excludes zero: the clamped end comes back far off (up to lo, or |hi|)
        assert err.max() > scale
        assert err.max() <= max(abs(lo), abs(hi)) * (1 + 4 * EPS32)


# --- per row (per channel) and dequantize ---------------------------------------------------------------
PER_ROW_SHAPES = [(1, 1), (1, 37), (5, 1), (7, 70), (9, 45)] + ([] if SIMULATOR else [
    (1000, 4097), (4099, 1001)])


def make_rows(shape, rng):
    """Each row its own spread and offset; row 0 constant, row 1 all negative (when there are rows)."""
    rows, cols = shape
    x = np.stack([make_x("normal", cols, rng) for _ in range(rows)])
    if rows > 2:
        x[0] = make_x("constant", cols, rng)
        x[1] = make_x("negative", cols, rng)
    return x


@pytest.mark.parametrize("shape", PER_ROW_SHAPES)
def test_per_channel(shape, rng, simulator):
    x = make_rows(shape, rng)
    q, params = D.quantize_per_channel(x, threads=32 if SIMULATOR else 256)
    q, params = q.copy_to_host(), params.copy_to_host()
    q_ref, params_ref = D.quantize_per_channel_reference(x.astype(np.float64))
    assert_matches((q, params), (q_ref, params_ref), f"per row {shape}")
    if shape[0] > 2 and shape[1] > 1:
        assert params[0, 0] == 1.0 and params[1, 1] == 255
    back = D.dequantize_per_channel(q, params, threads=THREADS).copy_to_host()
    expect = D.dequantize_per_channel_reference(q, params)
    assert np.all(np.abs(back - expect) <= EPS32 * (np.abs(expect) + params[:, :1]))
    err = np.abs(x.astype(np.float64) - back)
    bound = np.stack([Q.roundtrip_bound(row, s, z) for row, (s, z) in zip(x, params.astype(np.float64))])
    assert np.all(err <= bound + 4 * EPS32 * (np.abs(x) + 256 * params[:, :1]))


@pytest.mark.parametrize("n", [1, 37, 1003] + ([] if SIMULATOR else [(1 << 20) + 7]))
def test_dequantize_per_tensor(n, rng, simulator):
    q = rng.integers(0, 256, n, dtype=np.uint8)
    params = np.array([10 ** rng.uniform(-3, 2), rng.integers(0, 256)], np.float32)
    back = D.dequantize_per_tensor(q, params, threads=THREADS).copy_to_host()
    assert back.dtype == np.float32
    expect = Q.dequantize_reference(q, params)
    assert np.all(np.abs(back - expect) <= EPS32 * (np.abs(expect) + params[0]))


def test_library_errors(rng):
    with pytest.raises(ValueError, match="multiple of 32"):
        D.quantize_per_tensor(make_x("normal", 10, rng), threads=48)
    with pytest.raises(ValueError, match="1-D"):
        D.quantize_per_tensor(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        D.quantize_per_channel(np.zeros(4, np.float32))


def test_launch_math():
    cfg = SPEC.variants["block_partials"].launch((1 << 26,), 256)
    assert cfg.grid == (528,) and cfg.block == (256,) and cfg.threads_idle == 0  # 132 SMs x 4 blocks
    cfg = SPEC.variants["l2_tail_first"].launch((1000,), 64)
    assert cfg.grid == (2,) and cfg.threads_needed == 128  # one trip of 8 loads covers 1000
    cfg = SPEC.variants["atomic_per_element"].launch((1000,), 256)
    assert cfg.grid == (4,) and cfg.threads_idle == 24
    assert SPEC.bytes_moved((1 << 26,), np.float32) == 9 << 26


# --- torch contenders, on CPU tensors (same code as on the GPU) -------------------------------------------
@pytest.mark.parametrize("kind", ["normal", "constant", "positive", "negative"])
def test_torch_contenders_cpu(kind, rng):
    torch = pytest.importorskip("torch")
    from lab.core import registry

    x = make_x(kind, 3001, rng)
    refs = SPEC.reference(x.astype(np.float64))
    tols = SPEC.tolerance((x,), refs, x.dtype)
    for label in registry.labels("torch", "quantize"):
        if label.startswith("numba via"):  # the torch op of the lab's kernel: tests/test_torch_ops.py
            continue
        fn = registry.function("torch", "quantize", label)
        out = [torch.empty(x.shape, dtype=torch.uint8), torch.empty(2)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # quint8 creation is deprecated in torch 2.13
            res = [r.numpy() for r in fn(torch, torch.from_numpy(x), out=out)]
        v = check_outputs(res, refs, tols)
        assert v.ok, f"{label}: max abs err {v.max_abs_err}"
