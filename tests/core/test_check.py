"""The holes of issue 6 in the shared check (lab.core.check), each with the input that slipped through
before: pure NumPy, no kernel runs here (the kernels' side is tests/kernels/test_mutations.py)."""
import numpy as np
import pytest

import kernels
from kernels.spec import Bounds, dot_tolerance, poison_value
from lab.core.check import check_outputs

pytestmark = pytest.mark.gpu  # cheap, and the same verdict must hold on the GPU machine

F32 = np.dtype(np.float32)


def tf32(x):
    """Round float32 to TF32 (10 explicit mantissa bits), to nearest, as cvt.rna.tf32.f32 does."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


# --- quantize: exact codes except near .5 boundaries ------------------------------------------------
def quantize_case(rng, n=4000):
    spec = kernels.load("quantize")
    (x,) = spec.make_inputs((n,), F32, rng)
    refs = spec.reference(x.astype(np.float64))
    return spec, x, refs, spec.tolerance((x,), refs, F32)


def test_quantize_truncating_or_rounding_up_fails(rng):
    spec, x, (q, params), tols = quantize_case(rng)
    scale, zp = float(params[0]), float(params[1])
    v = np.clip(x.astype(np.float64) / scale + zp, 0, 255)
    for wrong in (np.floor(v), np.ceil(v)):  # passed before: the tolerance was 1 on every code
        v = check_outputs([wrong.astype(np.uint8), params.astype(F32)], [q, params], tols)
        assert not v.ok and v.max_abs_err == 1


def test_quantize_float32_contenders_pass(rng):
    """NumPy in float32 (x / scale) and a kernel's x * (1 / scale) + zero_point both pass."""
    spec, x, refs, tols = quantize_case(rng)
    assert check_outputs(spec.reference(x), refs, tols).ok
    scale, zp = refs[1]
    mul = np.clip(x * np.float32(1 / scale) + np.float32(zp), 0, 255)
    assert check_outputs([np.rint(mul).astype(np.uint8), refs[1].astype(F32)], refs, tols).ok


def test_quantize_either_neighbour_only_at_a_boundary(rng):
    spec, x, (q, params), tols = quantize_case(rng)
    codes = tols[0]
    near = codes.lo != codes.hi
    assert near.mean() < 0.01  # a few ulps either side of a .5 boundary: rare
    assert np.all(codes.hi[near] - codes.lo[near] == 1)
    x2 = x.copy()  # put one element exactly on a boundary: both neighbours accepted there, no others
    scale, zp = float(params[0]), float(params[1])
    x2[0] = np.float32((100.5 - zp) * scale)
    refs = spec.reference(x2.astype(np.float64))
    tols = spec.tolerance((x2,), refs, F32)
    for code, ok in ((100, True), (101, True), (99, False), (102, False)):
        q2 = refs[0].copy()
        q2[0] = code
        assert check_outputs([q2, refs[1].astype(F32)], refs, tols).ok == ok, code


def test_quantize_params_to_float32_rounding(rng):
    spec, x, (q, params), tols = quantize_case(rng)
    p = params.astype(F32)
    assert check_outputs([q, p], [q, params], tols).ok
    bad = p.copy()
    bad[0] = np.nextafter(bad[0], np.float32(np.inf)) * np.float32(1 + 1e-6)  # ~9 ulps
    assert not check_outputs([q, bad], [q, params], tols).ok
    bad = p.copy()
    bad[1] += 1  # the zero point is exact
    assert not check_outputs([q, bad], [q, params], tols).ok


# --- integer outputs: two poisons ---------------------------------------------------------------------
def test_unwritten_integer_element_equal_to_the_poison_fails():
    """An element never written holds the poison; when the true code is 171 (uint8's first poison) a
    one-poison check cannot see it (it passed before); the second run's poison shows it."""
    assert poison_value(np.uint8, 0) == 171 and poison_value(np.uint8, 1) != 171
    ref = np.array([3, 171, 9], np.uint8)
    first = ref.copy()  # element 1 never written: it holds the poison 171, which is right by luck
    second = ref.copy()
    second[1] = poison_value(np.uint8, 1)
    tol = [Bounds(ref, ref)]
    assert check_outputs([first], [ref], tol).ok  # one poison: blind
    v = check_outputs([first], [ref], tol, second=[second])
    assert not v.ok and "never written" in v.reason
    written_twice = ref.copy()
    assert check_outputs([first], [ref], tol, second=[written_twice]).ok


# --- number, shape and dtype of outputs ----------------------------------------------------------------
def test_fewer_outputs_fail(rng):
    spec, x, (q, params), tols = quantize_case(rng, 100)
    v = check_outputs([q], [q, params], tols)  # passed before: zip() stopped at the shorter list
    assert not v.ok and "outputs" in v.reason
    specs = spec.out_specs((100,), F32)
    assert not check_outputs([q], [q], tols[:1], out_specs=specs).ok
    assert check_outputs([q, params.astype(F32)], [q, params], tols, out_specs=specs).ok


def test_wrong_dtype_or_shape_fails(rng):
    spec, x, (q, params), tols = quantize_case(rng, 100)
    specs = spec.out_specs((100,), F32)
    v = check_outputs([q.astype(np.int16), params.astype(F32)], [q, params], tols, out_specs=specs)
    assert not v.ok and "dtype" in v.reason
    v = check_outputs([q, params], [q, params], tols, out_specs=specs)  # params float64, spec float32
    assert not v.ok and "dtype" in v.reason
    v = check_outputs([q[:, None], params.astype(F32)], [q, params], tols, out_specs=specs)
    assert not v.ok and "shape" in v.reason


# --- vecadd: exact -------------------------------------------------------------------------------------
def test_vecadd_is_exact(rng):
    spec = kernels.load("vecadd")
    a, b = spec.make_inputs((5000,), F32, rng)
    refs = spec.reference(a.astype(np.float64), b.astype(np.float64))
    tols = spec.tolerance((a, b), refs, F32)
    assert check_outputs([a + b], refs, tols).ok
    one_ulp = a + b
    i = rng.integers(0, one_ulp.size)
    one_ulp[i] = np.nextafter(one_ulp[i], np.float32(np.inf))  # passed before (half an ulp of |a|+|b|)
    assert not check_outputs([one_ulp], refs, tols).ok
    fused = (a.astype(np.float64) * np.float64(1 + 2**-22) + b).astype(F32)  # a sloppy intermediate
    assert not check_outputs([fused], refs, tols).ok


# --- matmul / matvec: calibrated bound -------------------------------------------------------------------
def sequential_f32(A, B):
    """One float32 accumulator along K, the order of every Numba rung (the worst common order)."""
    acc = np.zeros((A.shape[0],) + B.shape[1:], np.float32)
    for k in range(A.shape[1]):
        acc = acc + A[:, k:k + 1].reshape(-1, *([1] * (B.ndim - 1))) * B[k]
    return acc


# (M, N, K) with K >= 64; N = 0 means matvec (B is a vector). At least 8 outputs each, so that a
# TF32 product has elements far outside the bound (the issue: TF32 passed at most shapes with K >= 256).
DOT_SHAPES = [(8, 8, 64), (4, 0, 64), (16, 16, 256), (8, 4, 1024), (4, 8, 4096), (16, 0, 4096), (3, 3, 8192)]


@pytest.mark.parametrize("m,n,k", DOT_SHAPES)
def test_dot_bound_passes_float32_and_fails_tf32(m, n, k, rng):
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n) if n else k).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    tol = dot_tolerance(A, B, F32)
    for out in (A @ B, sequential_f32(A, B)):  # blocked BLAS sgemm and one sequential accumulator
        assert check_outputs([out], [ref], [tol]).ok
    product = tf32(A).astype(np.float64) @ tf32(B).astype(np.float64)
    v = check_outputs([product.astype(np.float32)], [ref], [tol])
    assert not v.ok, f"TF32 product passed at {(m, n, k)}"


def test_dot_bound_float64(rng):
    A = rng.standard_normal((6, 300))
    B = rng.standard_normal((300, 5))
    ref = A @ B
    tol = dot_tolerance(A, B, np.dtype(np.float64))
    assert check_outputs([sequential_f32(A.astype(np.float64), B)], [ref], [tol]).ok
    assert not check_outputs([(A.astype(np.float32) @ B.astype(np.float32))], [ref], [tol]).ok


def test_matvec_float64_reference_in_row_blocks(rng):
    """A vector B is taken a block of rows at a time (no float64 copy of all of A): the reference and
    the bound are those of the whole float64 matrix, to float64 rounding, blocks ending mid-matrix."""
    from kernels import spec as S

    spec = kernels.load("matvec")
    rows = 3 * (S.DOT_BLOCK // 300) + 7  # three full blocks of 300-column rows and a partial one
    for dtype in (F32, np.dtype(np.float64)):
        A, x = spec.make_inputs((rows, 300), dtype, rng)
        (ref,) = spec.float64_reference((A, x))
        whole = A.astype(np.float64) @ x.astype(np.float64)
        # to float64 rounding of the sum's magnitude, not of the sum: a row whose terms cancel to near 0
        # differs in its last bits relative to itself when the blocks add in another order
        scale = np.abs(A.astype(np.float64)) @ np.abs(x.astype(np.float64))
        assert ref.dtype == np.float64 and np.all(np.abs(ref - whole) <= 1e-13 * scale)
        old = S.dot_tolerance(A, x[:, None], dtype)[:, 0]  # a matrix B: all of A at once, as before
        assert np.allclose(S.dot_tolerance(A, x, dtype), old, rtol=1e-13, atol=0)
