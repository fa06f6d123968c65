"""Wrong kernels an honest student or developer might write, five or more per kernel of the lab.

Each mutant is a :class:`kernels.spec.Variant` (launch math + prepare), so ``tests/kernels/test_mutations.py``
runs it exactly as ``lab run`` runs a rung: ``lab.core.contenders.prepare_numba`` (outputs poisoned, a
canary after each) and ``lab.core.check.check_prepared`` (float64 reference, the spec's tolerances, two
poisons for integer outputs). Every one of them must FAIL that check; every real rung must pass it.
This file is the regression guard for the check: a change to a tolerance or to the check that lets
one of these through is a bug.

Mutants that depend on the data (a min planted in the last element, a code of 171 where the first
poison is 171) come with the inputs that expose them (``QUANTIZE_INPUTS``); the inputs are still
fresh random values.
"""
from __future__ import annotations

import math

import numpy as np

from kernels import matmul as MM
from kernels import matvec as MV
from kernels import quantize as Q
from kernels import softmax as SM
from kernels import vecadd as VA
from kernels.compiler import SIMULATOR, cuda, float32, float64, int32, uint32
from kernels.spec import Launch, Variant, blocks_for, launch_once
from kernels.warp import SCRATCH, warp_sum

# TF32 keeps 10 of float32's 23 mantissa bits, rounded to nearest (cvt.rna.tf32.f32): what the tensor
# cores' TF32 mode does to each float32 input of a product. On the GPU: integer arithmetic on the
# bits (libdevice float_as_int / int_as_float). In the simulator (no libdevice): Veltkamp's split,
# v * (2^13 + 1) - (... - v), exact in NumPy float32. On the H100 the split returned v unchanged (the
# mutants passed): compiled, the product is not rounded to float32 (an FMA contraction or a float64
# constant), so the split must not be used there.
TF32_SPLIT = np.float32(8193.0)

if SIMULATOR:
    @cuda.jit(device=True)
    def tf32(v):
        c = v * TF32_SPLIT
        return c - (c - v)
else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def tf32(v):
        return libdevice.int_as_float(int32((libdevice.float_as_int(v) + 4096) & -8192))


# --- vecadd --------------------------------------------------------------------------------------
@cuda.jit
def vecadd_no_guard(a, b, c):
    i = cuda.grid(1)
    c[i] = a[i] + b[i]  # the last block's extra threads write past the end of c


@cuda.jit
def vecadd_no_block_offset(a, b, c):
    i = cuda.threadIdx.x  # forgot blockIdx.x * blockDim.x: every block writes the first block's elements
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


@cuda.jit
def vecadd_off_by_one(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0] - 1:  # "< n - 1": the last element is never written
        c[i] = a[i] + b[i]


@cuda.jit
def vecadd_block_32(a, b, c):
    i = cuda.blockIdx.x * 32 + cuda.threadIdx.x  # a block size of 32 hard-coded; launched with more
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


@cuda.jit
def vecadd_x4_no_tail(a, b, c):
    t = cuda.blockDim.x
    i = cuda.blockIdx.x * 4 * t + cuda.threadIdx.x
    if i + 3 * t < c.shape[0]:  # only whole chunks of 4: the ragged end is never written
        c[i], c[i + t], c[i + 2 * t], c[i + 3 * t] = a[i] + b[i], a[i + t] + b[i + t], \
            a[i + 2 * t] + b[i + 2 * t], a[i + 3 * t] + b[i + 3 * t]


@cuda.jit
def vecadd_tf32(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = tf32(a[i]) + tf32(b[i])  # inputs at reduced precision: off by up to 2^-11 relative


VECADD = [
    Variant("no_bounds_guard", "", VA.launch, launch_once(vecadd_no_guard)),
    Variant("no_block_offset", "", VA.launch, launch_once(vecadd_no_block_offset)),
    Variant("guard_off_by_one", "", VA.launch, launch_once(vecadd_off_by_one)),
    Variant("hard_coded_block_32", "", VA.launch, launch_once(vecadd_block_32)),
    Variant("four_per_thread_no_tail", "", VA.launch_x4, launch_once(vecadd_x4_no_tail)),
    Variant("tf32_inputs", "", VA.launch, launch_once(vecadd_tf32)),
]


# --- matvec --------------------------------------------------------------------------------------
@cuda.jit
def matvec_no_guard(A, x, y):
    i = cuda.grid(1)
    acc = A.dtype.type(0)
    for j in range(A.shape[1]):
        acc += A[i, j] * x[j]  # threads past the last row read and write out of bounds
    y[i] = acc


@cuda.jit
def matvec_swapped(A, x, y):
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = A.dtype.type(0)
        for j in range(A.shape[1]):
            acc += A[j, i] * x[j]  # rows and columns swapped (A^T x, out of bounds unless square)
        y[i] = acc


@cuda.jit
def matvec_tf32(A, x, y):
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = A.dtype.type(0)
        for j in range(A.shape[1]):
            acc += tf32(A[i, j]) * tf32(x[j])  # what a TF32 tensor-core product does to the inputs
        y[i] = acc


@cuda.jit
def matvec_warp_no_ragged_end(A, x, y):
    scratch = cuda.shared.array(SCRATCH, float64)
    lane = cuda.threadIdx.x % 32
    row = cuda.grid(1) // 32
    acc = A.dtype.type(0)
    if row < y.shape[0]:
        cols = A.shape[1]
        main = cols - cols % 128
        for j in range(lane, main, 128):  # unrolled by 4 ... and the last cols % 128 columns forgotten
            acc += A[row, j] * x[j] + A[row, j + 32] * x[j + 32] + A[row, j + 64] * x[j + 64] \
                + A[row, j + 96] * x[j + 96]
    total = warp_sum(acc, scratch)
    if lane == 0 and row < y.shape[0]:
        y[row] = total


@cuda.jit
def matvec_warp_no_reduction(A, x, y):
    lane = cuda.threadIdx.x % 32
    row = cuda.grid(1) // 32
    if row < y.shape[0]:
        acc = A.dtype.type(0)
        for j in range(lane, A.shape[1], 32):
            acc += A[row, j] * x[j]
        if lane == 0:
            y[row] = acc  # lane 0's partial sum: the other 31 lanes' partials never added


@cuda.jit
def matvec_warp_no_block_offset(A, x, y):
    scratch = cuda.shared.array(SCRATCH, float64)
    lane = cuda.threadIdx.x % 32
    row = cuda.threadIdx.x // 32  # forgot the block's first row: only the first block's rows are written
    acc = A.dtype.type(0)
    if row < y.shape[0]:
        for j in range(lane, A.shape[1], 32):
            acc += A[row, j] * x[j]
    total = warp_sum(acc, scratch)
    if lane == 0 and row < y.shape[0]:
        y[row] = total


MATVEC = [
    Variant("no_bounds_guard", "", MV.row_per_thread_launch, launch_once(matvec_no_guard)),
    Variant("rows_columns_swapped", "", MV.row_per_thread_launch, launch_once(matvec_swapped)),
    Variant("tf32_inputs", "", MV.row_per_thread_launch, launch_once(matvec_tf32)),
    Variant("warp_no_ragged_end", "", MV.warp_per_row_launch, launch_once(matvec_warp_no_ragged_end),
            warp_multiple=True),
    Variant("warp_missing_reduction", "", MV.warp_per_row_launch, launch_once(matvec_warp_no_reduction),
            warp_multiple=True),
    Variant("warp_no_block_offset", "", MV.warp_per_row_launch, launch_once(matvec_warp_no_block_offset),
            warp_multiple=True),
]


# --- matmul --------------------------------------------------------------------------------------
@cuda.jit
def matmul_no_guard(A, B, C):
    j, i = cuda.grid(2)
    if i < C.shape[0]:  # the column guard forgotten: j >= N reads past B's rows and writes into the next row of C
        acc = C.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


@cuda.jit
def matmul_swapped(A, B, C):
    i, j = cuda.grid(2)  # (x, y) read as (row, column): rows and columns swapped
    if i < C.shape[0] and j < C.shape[1]:
        acc = C.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


@cuda.jit
def matmul_tf32(A, B, C):
    j, i = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = C.dtype.type(0)
        for k in range(A.shape[1]):
            acc += tf32(A[i, k]) * tf32(B[k, j])  # TF32-rounded inputs, float32 accumulation
        C[i, j] = acc


TPB = MM.TPB


@cuda.jit
def matmul_shared_tile_count(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TPB + tx
    row = cuda.blockIdx.y * TPB + ty
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0)
    for t in range(K // TPB):  # off by one: the last, partial tile along K is dropped
        k0 = t * TPB
        sA[ty, tx] = A[row, k0 + tx] if row < M else 0
        sB[ty, tx] = B[k0 + ty, col] if col < N else 0
        cuda.syncthreads()
        for kk in range(TPB):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


@cuda.jit
def matmul_shared_no_padding(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TPB + tx
    row = cuda.blockIdx.y * TPB + ty
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0)
    for k0 in range(0, K, TPB):
        if row < M and k0 + tx < K:  # guarded loads, but no zero in the padding: the previous
            sA[ty, tx] = A[row, k0 + tx]  # tile's stale values stay in the last tile's edge
        if k0 + ty < K and col < N:
            sB[ty, tx] = B[k0 + ty, col]
        cuda.syncthreads()
        for kk in range(TPB):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


@cuda.jit
def matmul_no_block_offset(A, B, C):
    j = cuda.threadIdx.x  # forgot the block offsets: only the first block's tile of C is written
    i = cuda.threadIdx.y
    if i < C.shape[0] and j < C.shape[1]:
        acc = C.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


MATMUL = [
    Variant("naive_no_column_guard", "", MM.naive_launch, launch_once(matmul_no_guard)),
    Variant("naive_rows_columns_swapped", "", MM.naive_launch, launch_once(matmul_swapped)),
    Variant("naive_tf32_inputs", "", MM.naive_launch, launch_once(matmul_tf32)),
    Variant("shared_tile_count_off_by_one", "", MM.shared_launch, launch_once(matmul_shared_tile_count)),
    Variant("shared_no_zero_padding", "", MM.shared_launch, launch_once(matmul_shared_no_padding)),
    Variant("naive_no_block_offset", "", MM.naive_launch, launch_once(matmul_no_block_offset)),
]


# --- softmax (one thread per row unless said otherwise) -------------------------------------------
@cuda.jit
def softmax_no_max_shift(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        s = x.dtype.type(0)
        for j in range(x.shape[1]):
            s += math.exp(x[r, j])  # no max subtracted: exp(1e4) overflows, exp(-1e4) underflows
        for j in range(x.shape[1]):
            out[r, j] = math.exp(x[r, j]) / s


@cuda.jit
def softmax_max_from_zero(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        m = x.dtype.type(0)  # the max starts at 0, not -inf: a row below 0 is not shifted (0 / 0)
        for j in range(x.shape[1]):
            m = max(m, x[r, j])
        s = x.dtype.type(0)
        for j in range(x.shape[1]):
            s += math.exp(x[r, j] - m)
        for j in range(x.shape[1]):
            out[r, j] = math.exp(x[r, j] - m) / s


@cuda.jit
def softmax_sum_off_by_one(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        m = x.dtype.type(-math.inf)
        for j in range(x.shape[1]):
            m = max(m, x[r, j])
        s = x.dtype.type(0)
        for j in range(x.shape[1] - 1):  # the sum misses the last column
            s += math.exp(x[r, j] - m)
        for j in range(x.shape[1]):
            out[r, j] = math.exp(x[r, j] - m) / s


@cuda.jit
def softmax_last_row_unwritten(x, out):
    r = cuda.grid(1)
    if r < x.shape[0] - 1:  # "< rows - 1"
        m = x.dtype.type(-math.inf)
        for j in range(x.shape[1]):
            m = max(m, x[r, j])
        s = x.dtype.type(0)
        for j in range(x.shape[1]):
            s += math.exp(x[r, j] - m)
        for j in range(x.shape[1]):
            out[r, j] = math.exp(x[r, j] - m) / s


@cuda.jit
def softmax_block_no_stride(x, out):
    """One block per row, one column per thread, no loop: columns past blockDim are never written."""
    part = cuda.shared.array(SM.MAX_WARPS, x.dtype)
    part2 = cuda.shared.array(SM.MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    r = cuda.blockIdx.x
    j = cuda.threadIdx.x
    v = x[r, j] if j < x.shape[1] else x.dtype.type(-math.inf)
    m = SM.block_max(v, part, scratch)
    e = math.exp(v - m)
    s = SM.block_sum(e, part2, scratch)
    if j < x.shape[1]:
        out[r, j] = e / s


@cuda.jit
def softmax_block_own_max(x, out):
    """One block per row; each thread shifts by its own max, but the block sums those exps as if
    they shared one: the max reduction across the block is missing."""
    part = cuda.shared.array(SM.MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    r = cuda.blockIdx.x
    m = x.dtype.type(-math.inf)
    for j in range(cuda.threadIdx.x, x.shape[1], cuda.blockDim.x):
        m = max(m, x[r, j])
    s = x.dtype.type(0)
    for j in range(cuda.threadIdx.x, x.shape[1], cuda.blockDim.x):
        s += math.exp(x[r, j] - m)
    s = SM.block_sum(s, part, scratch)
    for j in range(cuda.threadIdx.x, x.shape[1], cuda.blockDim.x):
        out[r, j] = math.exp(x[r, j] - m) / s


def _rows_launch(size, threads):
    rows, _ = size
    return Launch((blocks_for(rows, threads),), (threads,), rows)


SOFTMAX = [
    Variant("no_max_shift", "", _rows_launch, launch_once(softmax_no_max_shift)),
    Variant("max_starts_at_zero", "", _rows_launch, launch_once(softmax_max_from_zero)),
    Variant("sum_misses_last_column", "", _rows_launch, launch_once(softmax_sum_off_by_one)),
    Variant("last_row_unwritten", "", _rows_launch, launch_once(softmax_last_row_unwritten)),
    Variant("block_no_stride_loop", "", SM.row_launch, launch_once(softmax_block_no_stride), warp_multiple=True),
    Variant("block_missing_max_reduction", "", SM.row_launch, launch_once(softmax_block_own_max),
            warp_multiple=True),
]


# --- quantize (rung 1's pipeline: init, atomic min/max, then a quantize kernel) -------------------
@cuda.jit
def quantize_truncating(x, mm, q, params):
    i = cuda.grid(1)
    scale, zero_point = Q.quant_params(mm[0], mm[1])
    Q.write_params(params, scale, zero_point)
    if i < x.shape[0]:
        v = x[i] * x.dtype.type(1.0 / scale) + x.dtype.type(zero_point)
        q[i] = uint32(min(max(v, Q.QMIN32), Q.QMAX32))  # the int conversion truncates: no rounding


@cuda.jit
def quantize_round_up(x, mm, q, params):
    i = cuda.grid(1)
    scale, zero_point = Q.quant_params(mm[0], mm[1])
    Q.write_params(params, scale, zero_point)
    if i < x.shape[0]:
        v = x[i] * x.dtype.type(1.0 / scale) + x.dtype.type(zero_point)
        q[i] = uint32(math.ceil(min(max(v, Q.QMIN32), Q.QMAX32)))  # always rounds up


@cuda.jit
def quantize_tail_unwritten(x, mm, q, params):
    i = cuda.grid(1)
    scale, zero_point = Q.quant_params(mm[0], mm[1])
    Q.write_params(params, scale, zero_point)
    if i < x.shape[0] - 1:  # the last code is never written
        q[i] = Q.quant_code(x[i], x.dtype.type(1.0 / scale), x.dtype.type(zero_point))


@cuda.jit
def quantize_zero_point_rounded(x, mm, q, params):
    i = cuda.grid(1)
    lo, hi = float64(mm[0]), float64(mm[1])
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zero_point = float64(round(min(max(0.0 - lo / scale, 0.0), 255.0)))  # rounds where the rule truncates
    Q.write_params(params, scale, zero_point)
    if i < x.shape[0]:
        q[i] = Q.quant_code(x[i], x.dtype.type(1.0 / scale), x.dtype.type(zero_point))


@cuda.jit
def quantize_params_unwritten(x, mm, q, params):
    i = cuda.grid(1)
    scale, zero_point = Q.quant_params(mm[0], mm[1])  # computed, used, never stored in params
    if i < x.shape[0]:
        q[i] = Q.quant_code(x[i], x.dtype.type(1.0 / scale), x.dtype.type(zero_point))


@cuda.jit
def minmax_misses_last(x, mm):
    i = cuda.grid(1)
    if i < x.shape[0] - 1:  # the reduction misses its last element
        cuda.atomic.min(mm, 0, x[i])
        cuda.atomic.max(mm, 1, x[i])


def _pipeline(minmax, quantize):
    def prepare(cfg, inputs, outputs):
        return Q._init_minmax_quantize(minmax, quantize, cfg, inputs, outputs)
    return prepare


QUANTIZE = [
    Variant("truncating", "", Q.atomic_per_element_launch, _pipeline(Q.minmax_atomic_kernel, quantize_truncating)),
    Variant("always_rounds_up", "", Q.atomic_per_element_launch, _pipeline(Q.minmax_atomic_kernel, quantize_round_up)),
    Variant("last_code_unwritten", "", Q.atomic_per_element_launch,
            _pipeline(Q.minmax_atomic_kernel, quantize_tail_unwritten)),
    Variant("zero_point_rounded", "", Q.atomic_per_element_launch,
            _pipeline(Q.minmax_atomic_kernel, quantize_zero_point_rounded)),
    Variant("params_unwritten", "", Q.atomic_per_element_launch,
            _pipeline(Q.minmax_atomic_kernel, quantize_params_unwritten)),
    Variant("minmax_misses_last_element", "", Q.atomic_per_element_launch,
            _pipeline(minmax_misses_last, Q.quantize_element_kernel)),
]


def quantize_inputs(n, rng, last="min", dtype=np.float32):
    """Fresh random x with lo = -100.75 s and hi = 154.25 s for a random s, so -lo / scale = 100.75:
    a zero point rounded instead of truncated is off by one. ``last="min"``: the minimum is the last
    element (a reduction that misses it gets other parameters); ``last="171"``: the last element's
    code is 171, the first integer poison (an unwritten last code passes a one-poison check)."""
    s = 10 ** rng.uniform(-2, 1)
    lo, hi = -100.75 * s, 154.25 * s
    x = rng.uniform(lo * 0.99, hi * 0.99, n)
    x[rng.integers(0, n - 2)] = hi
    x[rng.integers(0, n - 2) if last == "171" else n - 1] = lo
    if last == "171":
        x[n - 1] = (171 - 100) * (hi - lo) / 255.0  # v = 71 + zero_point 100 = 171
    return (x.astype(dtype),)


QUANTIZE_INPUTS = {"last_code_unwritten": lambda n, rng: quantize_inputs(n, rng, last="171")}


MUTANTS = {"vecadd": VECADD, "matvec": MATVEC, "matmul": MATMUL, "softmax": SOFTMAX, "quantize": QUANTIZE}
