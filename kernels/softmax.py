"""Row-wise softmax, out[r, j] = exp(x[r, j] - max_r) / sum_k exp(x[r, k] - max_r), from five
launches to one pass.

Sources: the seed notebook ARENA 2.0 chapter 3 ("Apply kernel fusion ... naive softmax": the five-op
chain and its read/write count); M. Milakov and N. Gimelshein, "Online normalizer calculation for
softmax", arXiv:1805.02867 (2018) (the running max and sum, and their merge rule); CUDA C++
Programming Guide, "Warp Shuffle Functions" and "Synchronization Functions" (the block reductions).

x and out are ROWS x COLS, C-contiguous (row-major), float32 or float64. Subtracting the row max
first keeps exp from overflowing (softmax does not change when a constant is subtracted from a
row); an entry of -inf gives exactly 0. A row that is entirely -inf has no softmax (0/0: torch
returns NaN): ``make_inputs`` never produces one and the result for it is undefined here.

Each element is read once and written once at best, with about five FLOPs on the way (compare,
subtract, exp, add, multiply), so softmax is bound by memory bandwidth: the floor is
2 * ROWS * COLS * itemsize bytes, at the device's copy speed. The rungs differ in how many times
the matrix crosses the memory bus:

    naive       5 launches, 5 reads + 3 writes of the matrix (plus a scratch matrix)
    fused       1 launch,   1 read + 1 write   (3 reads + 1 write for rows too long for registers)
    online      1 launch,   1 read + 1 write   (2 reads + 1 write for rows too long for registers)
    group_rows  1 launch,   1 read + 1 write   (short rows: a row per group of lanes)
    split_row   2 launches, 2 reads + 1 write  (a few very long rows: several blocks a row)
    split_tail  2 launches, 2 reads + 1 write, the second read tail-first from L2 (long rows past
                the registers: every SM filled)

"Too long for registers": more than 32,768 float32 (4,096 float64) values a row. Rows of 16,385-
32,768 float32 columns are held at 1,024 threads, one block an SM: a few hundred such
rows ran 0.69-0.79x torch.softmax re-reading them (fused streaming, online, split_tail) and
1.20-1.41x holding them (H200, docs/results/softmax-long-rows.json).

exp: ``math.exp`` on float32 compiles to libdevice's expf, MUFU.EX2 (the hardware 2**x) plus a
few FFMAs of range reduction, within 2 ulp; the kernels are memory-bound, so those FFMAs cost no
time. The kernels do not use ``fastmath=True``: it lets the compiler assume no infinities, and the
-inf entries and the guards against exp(-inf - -inf) rely on them.

What the hardware did (Nsight Compute, H100, ``lab counters softmax``, 8192 x 8192
float32, one call each, DRAM bytes read + written against the minimum of one read and one write):
naive 3.97x (1.34 GB read: its five launches re-read x), fused 0.95x and online 0.96x (x read once;
below 1 because part of out is still in L2 when the call ends), group_rows and split_row 1.47x.
"""
from __future__ import annotations

import math

import numpy as np
from kernels.arrays import empty_like
from kernels.compiler import cuda, float64, uint64

from kernels.device_limits import current
from kernels.spec import KernelSpec, plural, Launch, Variant, auto_variant, blocks_for, sm_count
from kernels.warp import MAX_WARPS, SCRATCH, block_max, block_merge, block_sum, rescale
from kernels.contenders import softmax as C  # its CuPy, torch and Triton contenders

UNROLL = 4  # loads each thread keeps in flight per trip in the long-row loops
# The longest row a block holds in registers, by item size: at most RESIDENT_MAX values a thread
# and RESIDENT_BLOCK values a block. From ptxas's counts for sm_90 (registers a thread of the fused
# kernel by values a thread K, numba-cuda / numba-cuda-mlir 0.6, nvJitLink 13.5,
# scripts/index_registers.py): float32 K=8: 32 / 32, K=32: 56 / 56; float64 K=16: 58 / 58 (numba-cuda,
# float32 K = 17..32: 40-56). A block must get registers * threads <= 65536 or its launch fails; longer
# rows take the streaming path. float32 K = 32 at 1,024 threads: 56 x 1,024 = 57,344 registers, one block
# an SM (rows of 16,385-32,768 columns held so, 1 read + 1 write, against the streaming rungs'
# 2-3 reads: see rung 6, kernels/softmax_rows.py).
RESIDENT_MAX = {4: 32, 8: 16}
RESIDENT_BLOCK = {4: 32768, 8: 4096}


# Block-wide reductions (every rung): kernels/warp.py's block_max and block_sum (shuffles inside each
# warp, one shared slot per warp, one barrier). Blocks are whole warps (warp_multiple=True).


# --- Rung 1: naive, five launches ------------------------------------------------------------------
# The five ops of the seed's naive_softmax, each its own kernel, each a full trip through memory:
#   row_max    grid (ROWS,), one block per row      reads x                 writes ROWS
#   subtract   grid (ROWS, ceil(COLS / threads))    reads x, row_max        writes z (scratch)
#   exp        grid (ROWS, ceil(COLS / threads))    reads z                 writes z (in place)
#   row_sum    grid (ROWS,), one block per row      reads z                 writes ROWS
#   divide     grid (ROWS, ceil(COLS / threads))    reads z, row_sum        writes out
# In all: 5 reads + 3 writes of the matrix (plus 2 * ROWS), against 1 read + 1 write fused.
# The element-wise kernels put the row in grid x (up to 2**31 - 1 blocks) and column blocks in grid y
# (at most 65535, so COLS <= 65535 * threads), which needs no division to find the row.

@cuda.jit
def row_max_kernel(x, row_max):
    """row_max[r] = max_j x[r, j]; block r reduces row r, thread t taking j = t, t + threads, ...

    Consecutive threads read consecutive columns (coalesced); block_max combines the threads.
    """
    partial = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's warp_max
    row = cuda.blockIdx.x
    m = x.dtype.type(-math.inf)
    for j in range(cuda.threadIdx.x, x.shape[1], cuda.blockDim.x):
        m = max(m, x[row, j])
    m = block_max(m, partial, scratch)
    if cuda.threadIdx.x == 0:
        row_max[row] = m


@cuda.jit
def subtract_kernel(x, row_max, z):
    """z[r, j] = x[r, j] - row_max[r]; thread (blockIdx.y * threads + threadIdx.x) of block row r."""
    row = cuda.blockIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    if j < z.shape[1]:
        z[row, j] = x[row, j] - row_max[row]


@cuda.jit
def exp_kernel(z):
    """z[r, j] = exp(z[r, j]) in place (exp(-inf) = 0); same grid as subtract_kernel."""
    row = cuda.blockIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    if j < z.shape[1]:
        z[row, j] = math.exp(z[row, j])


@cuda.jit
def row_sum_kernel(z, row_sum):
    """row_sum[r] = sum_j z[r, j]; one block per row, as row_max_kernel."""
    partial = cuda.shared.array(MAX_WARPS, z.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    row = cuda.blockIdx.x
    s = z.dtype.type(0)
    for j in range(cuda.threadIdx.x, z.shape[1], cuda.blockDim.x):
        s += z[row, j]
    s = block_sum(s, partial, scratch)
    if cuda.threadIdx.x == 0:
        row_sum[row] = s


@cuda.jit
def divide_kernel(z, row_sum, out):
    """out[r, j] = z[r, j] / row_sum[r]; same grid as subtract_kernel."""
    row = cuda.blockIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    if j < out.shape[1]:
        out[row, j] = z[row, j] / row_sum[row]


def row_launch(size, threads):
    """One block of ``threads`` threads per row: grid = (ROWS,). Threads past COLS idle."""
    rows, cols = size
    return Launch(grid=(rows,), block=(threads,), threads_needed=rows * min(cols, threads))


def naive_launch(size, threads):
    """The two reductions' launch, grid = (ROWS,); the three element-wise launches use
    grid = (ROWS, ceil(COLS / threads)), one thread per element."""
    rows, cols = size
    cfg = row_launch(size, threads)
    return Launch(cfg.grid, cfg.block, cfg.threads_needed,
                  note=f"2 row reductions on this grid + 3 element-wise launches of grid "
                       f"({rows}, {blocks_for(cols, threads)})")


def naive_prepare(cfg, inputs, outputs):
    """Rung 1, the baseline: five launches, 5 reads + 3 writes of the matrix = 4x the floor's bytes.

    Predicted: at best a quarter of copy bandwidth in bytes_moved terms (~4x slower than a fused
    kernel), plus four launch gaps that matter for small matrices. Measured on the H100 (float32):
    1.213 ms at 8192x8192 and 1.138 ms at 65536x1024, 6.8x and 6.1x the fused rung.
    """
    (x,), (out,) = inputs, outputs
    rows, cols = x.shape
    # Scratch allocated once here (by x's library), outside the timed call: a ROWS x COLS matrix and two row vectors.
    z = empty_like(x, (rows, cols), x.dtype)
    row_max = empty_like(x, rows, x.dtype)
    row_sum = empty_like(x, rows, x.dtype)
    per_row = (rows,), cfg.block
    per_elem = (rows, blocks_for(cols, cfg.block[0])), cfg.block
    k_max, k_sum = row_max_kernel[per_row], row_sum_kernel[per_row]
    k_sub, k_exp, k_div = subtract_kernel[per_elem], exp_kernel[per_elem], divide_kernel[per_elem]

    def enqueue():
        k_max(x, row_max)
        k_sub(x, row_max, z)
        k_exp(z)
        k_sum(z, row_sum)
        k_div(z, row_sum, out)
    return enqueue


# --- Rung 2: fused, one block per row, the row read once --------------------------------------------
# Saves 4 of the 5 reads, 2 of the 3 writes and 4 launches: the row comes into registers once, the
# block finds its max and sum there, and each element is written once.
#
# Thread t of a block of T threads holds x[r, t], x[r, t + T], ..., x[r, t + (K-1) T] in a local
# array of K values (K = ceil(COLS / T), a compile-time constant of the kernel, so the loops over it
# unroll and the array lives in registers: no local-memory traffic). Every warp load is 32
# consecutive elements (coalesced) and a thread has K independent loads in flight.
# Indices are uint64: Numba lets a signed index count from the end (x[-1]), which costs a compare
# and a select per access and 64-bit address math per load; an unsigned index cannot be negative,
# so each load's address is the previous one plus T * itemsize (fewer instructions and registers,
# which lets more blocks share an SM).
# STORE_ORDER: the stores walk the columns back from the last one (j -= T) instead of recomputing
# t + k * T. The same expression in the load and the store loop is computed once and kept: under
# numba-cuda-mlir 0.6 that is K - 1 64-bit column indices held across both block reductions (sm_90,
# float32 K = 32: 136 registers a thread, one 256-thread block an SM; stepping back: 56, four blocks).
# numba-cuda gives 56 either way (docs/compilers.md, "Registers").

def _resident_per_thread(cols, threads, itemsize):
    """K = ceil(COLS / threads), the values a thread holds when the row fits in registers; None
    when it does not (see RESIDENT_MAX, RESIDENT_BLOCK)."""
    k = blocks_for(cols, threads)
    return k if k <= RESIDENT_MAX[itemsize] and k * threads <= RESIDENT_BLOCK[itemsize] else None


_FUSED = {}


def fused_resident_kernel(per_thread):
    """The fused kernel for rows of at most ``per_thread * threads`` elements (compiled per K).

    Block r computes row r: load the row into registers (-inf past the end of the row), block_max,
    e = exp(x - max) kept in the registers, block_sum, out = e * (1 / sum). Two barriers, one exp
    and 1 read + 1 write per element.

    Over the naive rung: 2 instead of 8 trips of the matrix through memory and 1 launch instead of 5.
    Predicted: ~4x the naive rung, 75-85% of copy bandwidth (the two barriers a row leave the SM's
    loads idle while a block reduces; two 1024-thread blocks per SM at 32 registers overlap that).
    Measured on the H100 (float32): 0.177 ms at 8192x8192 with 1024 threads (3.03 TB/s, 1.67x
    torch.softmax's 0.295 ms) and 0.187 ms at 65536x1024 with 256 threads (2.87 TB/s, 1.02x
    torch.softmax's 0.190 ms): better than predicted, the barriers are well hidden.
    """
    if per_thread in _FUSED:
        return _FUSED[per_thread]
    K = per_thread

    @cuda.jit
    def fused_resident(x, out):
        vals = cuda.local.array(K, x.dtype)
        part_max = cuda.shared.array(MAX_WARPS, x.dtype)
        part_sum = cuda.shared.array(MAX_WARPS, x.dtype)
        scratch = cuda.shared.array(SCRATCH, float64)
        row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
        last = t + uint64(K - 1) * T  # K = ceil(COLS / T): only the last slot can pass the row's end
        in_row = last < uint64(x.shape[1])
        for k in range(K - 1):  # K loads issued back to back, then the compares
            vals[k] = x[row, t + uint64(k) * T]
        vals[K - 1] = x[row, last] if in_row else x.dtype.type(-math.inf)
        m = vals[0]
        for k in range(1, K):
            m = max(m, vals[k])
        m = block_max(m, part_max, scratch)  # finite: the row has a finite entry
        s = x.dtype.type(0)
        for k in range(K):
            vals[k] = math.exp(vals[k] - m)  # -inf entries and padding become 0
            s += vals[k]
        s = block_sum(s, part_sum, scratch)
        inv = x.dtype.type(1) / s  # one division a thread, then multiplies
        if in_row:
            out[row, last] = vals[K - 1] * inv
        j = last  # the columns again, stepping back from the last (see STORE_ORDER)
        for k in range(K - 2, -1, -1):
            j -= T
            out[row, j] = vals[k] * inv

    _FUSED[per_thread] = fused_resident
    return fused_resident


@cuda.jit
def fused_streaming_kernel(x, out):
    """Fused softmax for rows too long to hold: 3 passes over the row in global memory.

    Block r computes row r: pass 1 reads the row for its max, pass 2 reads it again for
    sum exp(x - max), pass 3 reads it a third time and writes exp(x - max) / sum: 3 reads + 1 write
    (the second and third reads hit L2 only if the row is still there). Thread t handles
    j = t, t + T, ..., UNROLL loads in flight per trip (the last trip padded with -inf).
    """
    part_max = cuda.shared.array(MAX_WARPS, x.dtype)
    part_sum = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(UNROLL, x.dtype)
    row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    cols = uint64(x.shape[1])
    step = T * uint64(UNROLL)
    ninf = x.dtype.type(-math.inf)

    m = ninf
    for j in range(t, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            m = max(m, v[u])
    m = block_max(m, part_max, scratch)

    s = x.dtype.type(0)
    for j in range(t, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            s += math.exp(v[u] - m)
    inv = x.dtype.type(1) / block_sum(s, part_sum, scratch)

    for j in range(t, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            if jj < cols:
                out[row, jj] = math.exp(v[u] - m) * inv


def _prepare_one_pass(resident_factory, streaming_kernel):
    def prepare(cfg, inputs, outputs):
        (x,), (out,) = inputs, outputs
        k = _resident_per_thread(x.shape[1], cfg.block[0], x.dtype.itemsize)
        kernel = resident_factory(k) if k else streaming_kernel
        launch = kernel[cfg.grid, cfg.block]
        return lambda: launch(x, out)
    return prepare


def one_pass_launch(size, threads):
    """One block per row, grid = (ROWS,), block = (threads,); the note says which path runs
    (registers hold K = ceil(COLS / threads) values a thread, or the long-row streaming path)."""
    cfg = row_launch(size, threads)

    def path(itemsize):
        k = _resident_per_thread(size[1], threads, itemsize)
        return f"row in registers, {plural(k, 'value')} a thread" if k else "streaming (row too long for registers)"

    p32, p64 = path(4), path(8)
    note = p32 if p32 == p64 else f"float32: {p32}; float64: {p64}"
    return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note)


# --- Rung 3: online normalizer, one block-wide merge -------------------------------------------------
# Milakov & Gimelshein: the pair (m, d) = (running max, sum of exp(x - m)) can be updated one element
# at a time, d <- d * exp(m_old - m_new) + exp(x - m_new), and two pairs merge by the same rule:
# M = max(m1, m2), D = d1 exp(m1 - M) + d2 exp(m2 - M). So a block needs ONE reduction of pairs
# instead of a max and then a sum.
# For rows in registers this saves one barrier and one block reduction a row over the fused rung;
# for rows too long to hold, one full read of the row (2 reads + 1 write instead of 3 + 1).
#
# Guard: a thread (or warp) that saw only -inf has m = -inf, d = 0, and exp(m - M) with M = -inf too
# would be exp(-inf + inf) = NaN. d is 0 exactly when m is -inf (a finite x adds exp(0) = 1), so
# ``rescale`` (d * exp(m - new_m)) skips the exp when d is 0. ``block_merge`` applies the rule to a
# whole block: the max of the m's by warp shuffles, then the sum of the rescaled d's, one barrier;
# both live in kernels/warp.py beside block_max and block_sum (rungs 4-5 use them too).

_ONLINE = {}


def online_resident_kernel(per_thread):
    """The online kernel for rows of at most ``per_thread * threads`` elements (compiled per K).

    Block r computes row r. Thread t loads its K values (as the fused rung) and forms its own pair:
    m = max of its values, e_k = exp(x_k - m), d = sum of e_k — in registers, so two passes over
    them cost no memory traffic and one exp per element (the per-element update would take two).
    block_merge gives the row's (M, D) after one barrier; then out = e_k * (exp(m - M) / D), one
    more exp per thread, not per element. 1 read + 1 write.

    Over the fused rung: one barrier and one block reduction a row instead of two, same bytes.
    Predicted: a few % faster at short rows (1024 columns, where a row's reductions weigh most
    against its 8 KB of traffic), the same at long ones. Measured on the H100 (float32): 0.177 ms at
    8192x8192 (same as fused) but 0.198 ms at 65536x1024, 6% slower than fused: the extra exp per
    thread and the two-value merge cost more than the barrier they save. Prediction missed.
    """
    if per_thread in _ONLINE:
        return _ONLINE[per_thread]
    K = per_thread

    @cuda.jit
    def online_resident(x, out):
        vals = cuda.local.array(K, x.dtype)
        part_m = cuda.shared.array(MAX_WARPS, x.dtype)
        part_d = cuda.shared.array(MAX_WARPS, x.dtype)
        scratch = cuda.shared.array(SCRATCH, float64)
        row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
        last = t + uint64(K - 1) * T  # as in the fused rung: only the last slot is guarded
        in_row = last < uint64(x.shape[1])
        ninf = x.dtype.type(-math.inf)
        for k in range(K - 1):
            vals[k] = x[row, t + uint64(k) * T]
        vals[K - 1] = x[row, last] if in_row else ninf
        m = vals[0]
        for k in range(1, K):
            m = max(m, vals[k])
        # A thread with only -inf (or padding) shifts by 0: exp(-inf - 0) = 0, no NaN.
        shift = m if m != ninf else x.dtype.type(0)
        d = x.dtype.type(0)
        for k in range(K):
            vals[k] = math.exp(vals[k] - shift)
            d += vals[k]
        big_m, big_d = block_merge(m, d, part_m, part_d, scratch)
        scale = math.exp(m - big_m) / big_d  # m = -inf: exp gives 0 (big_m is finite)
        if in_row:
            out[row, last] = vals[K - 1] * scale
        j = last  # as in the fused rung: stepping back from the last column (STORE_ORDER)
        for k in range(K - 2, -1, -1):
            j -= T
            out[row, j] = vals[k] * scale

    _ONLINE[per_thread] = online_resident
    return online_resident


@cuda.jit
def online_streaming_kernel(x, out):
    """Online softmax for rows too long to hold: 2 reads + 1 write of the row.

    Pass 1: each thread updates its (m, d) element by element over j = t, t + T, ... (UNROLL loads
    in flight per trip, the last trip padded with -inf), one exp per element: a new max rescales d,
    any other x adds exp(x - m). block_merge gives the row's (M, D). Pass 2 reads the row again and
    writes exp(x - M) / D.

    Over fused_streaming_kernel: 3 trips of the row instead of 4. Predicted: ~1.3x faster when the
    rows miss L2. On the H100 this path is checked for correctness (rows of 33,000-100,000
    columns) but not yet benchmarked.
    """
    part_m = cuda.shared.array(MAX_WARPS, x.dtype)
    part_d = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(UNROLL, x.dtype)
    row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    cols = uint64(x.shape[1])
    step = T * uint64(UNROLL)
    ninf = x.dtype.type(-math.inf)
    one = x.dtype.type(1)

    m = ninf
    d = x.dtype.type(0)
    for j in range(t, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            if v[u] > m:  # a new max: rescale what was summed so far (d = 0 while m = -inf)
                d = rescale(d, m, v[u]) + one
                m = v[u]
            elif d > 0:  # d = 0 means m = -inf, so this x is -inf too and adds 0
                d += math.exp(v[u] - m)
    big_m, big_d = block_merge(m, d, part_m, part_d, scratch)

    inv = one / big_d
    for j in range(t, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            if jj < cols:
                out[row, jj] = math.exp(v[u] - big_m) * inv


# --- Rungs 4-5: shapes one block a row serves badly (kernels/softmax_rows.py) ------------------------
# group_rows: rows of 32-1024 columns, a row per group of G lanes (shuffles only, no barrier), several
# rows a block; split_row: a few very long rows, several blocks a row in two launches.
# --- Rung 6: split_tail, a few hundred long rows (kernels/softmax_rows.py) ----------------------------
# Rows too long for registers (streaming: 3 reads a row) and fewer rows than the GPU holds 256-thread
# blocks: split_row's two launches with 8 loads in flight a thread, every SM's thread slots filled,
# and the second launch run tail-first so that its re-read of x comes from L2.
from kernels.softmax_rows import (group_rows_launch, group_rows_prepare, group_width,  # noqa: E402
                                  split_row_launch, split_row_prepare, SPLIT_BLOCKS_PER_SM, split_tail_launch,
                                  split_tail_prepare)


# --- auto: the launch heuristic ------------------------------------------------------------------------
def choose(size):
    """(rung, threads, why) for a ROWS x COLS matrix, like torch's softmax dispatch (a warp per row
    up to 1024 columns, a block per row beyond):

    * COLS <= 1024: group_rows at 128 threads (G lanes a row, no barrier);
    * fewer rows than SMs and COLS >= 16384: split_row at 256 threads;
    * otherwise rows too long for a block's registers (COLS > RESIDENT_BLOCK[4] = 32768):
      split_tail at 256 threads (several blocks a row while rows are fewer than the GPU holds);
    * otherwise fused (one block a row) with threads = COLS / 8 rounded to a power of two in
      128..1024, so a thread holds about 8 values (8192 columns: 1024 threads).
    """
    rows, cols = size
    sms = sm_count()
    if cols <= 1024:
        return "group_rows", 128, f"COLS <= 1024: {plural(group_width(cols), 'lane')} a row"
    if rows < sms and cols >= 16384:
        return "split_row", 256, f"ROWS < {plural(sms, 'SM')}, long rows: several blocks a row"
    if cols > RESIDENT_BLOCK[4]:
        return "split_tail", 256, ("rows too long for registers: 2 reads + 1 write, "
                                   f"{SPLIT_BLOCKS_PER_SM} blocks an SM, second launch tail-first")
    t, top = 128, min(1024, current().max_threads_per_block)
    while t < top and t * 8 < cols:
        t *= 2
    return "fused", t, "one block a row, about 8 values a thread"


# --- Reference, inputs, tolerance, accounting -------------------------------------------------------
def reference(x):
    """NumPy: exp(x - row max) / row sum of that, per row (axis 1)."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True),)


def make_inputs(size, dtype, rng):
    """Random normals in four kinds of rows, shuffled, and a few -inf entries (never a whole row).

    Kinds: N(0, 1); 80 * N(0, 1) (most outputs far below 1, many underflow); 1e4 + N(0, 1) and
    -1e4 + N(0, 1) (exp without the max subtracted overflows / underflows the whole row).
    """
    rows, cols = size
    x = rng.standard_normal((rows, cols), dtype=np.dtype(dtype))
    kind = rng.permutation(np.arange(rows) % 4)
    x[kind == 1] *= 80
    x[kind == 2] += 1e4
    x[kind == 3] -= 1e4
    if cols > 1:
        n = min(8, rows * cols // 2)
        x[rng.integers(0, rows, n), rng.integers(0, cols, n)] = -np.inf
        full = np.isneginf(x).all(axis=1)  # possible when COLS is small: give it back one entry
        x[full, rng.integers(0, cols)] = rng.standard_normal()
    return (x,)


def tolerance(inputs, ref, dtype):
    """Relative to each output, plus a floor at a few times the smallest normal number.

    eps * 16 * max(1, log2 COLS): the exp, the sum's rounding (a tree of depth ~log2 COLS) and the
    division. eps * (max - x): x - max is rounded to a relative eps / 2, an absolute error of
    (max - x) eps / 2 in the exponent, i.e. that relative error in exp (a fast exp that scales x by
    log2 e makes as much again; for float64 the reference itself rounds the same way). At -inf
    entries the output is exactly 0 and only the floor applies.
    """
    (x,), (out,) = inputs, ref
    info = np.finfo(dtype)
    x64 = x.astype(np.float64)
    gap = x64.max(axis=1, keepdims=True) - x64
    gap[~np.isfinite(gap)] = 0  # -inf entries
    rel = info.eps * (16 * max(1.0, math.log2(x.shape[1])) + gap)
    return [rel * np.abs(out) + 4 * float(info.tiny)]


RUNGS = {
    "naive": Variant(
        "naive", "5 launches (max, subtract, exp, sum, divide): 5 reads + 3 writes of the matrix",
        naive_launch, naive_prepare, warp_multiple=True),
    "fused": Variant(
        "fused", "one block per row, row held in registers: 1 read + 1 write, 2 block reductions "
        "(long rows: 3 reads + 1 write)",
        one_pass_launch, _prepare_one_pass(fused_resident_kernel, fused_streaming_kernel),
        warp_multiple=True),
    "online": Variant(
        "online", "online max and sum (Milakov & Gimelshein): 1 block reduction of (max, sum) "
        "pairs (long rows: 2 reads + 1 write)",
        one_pass_launch, _prepare_one_pass(online_resident_kernel, online_streaming_kernel),
        warp_multiple=True),
    "group_rows": Variant(
        "group_rows", "a row per group of G lanes (G <= 32), several rows a block: shuffles only, "
        "no barrier (long rows: a warp a row, 2 reads + 1 write)",
        group_rows_launch, group_rows_prepare, warp_multiple=True),
    "split_row": Variant(
        "split_row", "several blocks a row, 2 launches: chunk (max, sum) pairs, then merge and write",
        split_row_launch, split_row_prepare, warp_multiple=True),
    "split_tail": Variant(
        "split_tail", "several blocks a row, 2 launches, every SM filled, 8 loads in flight a thread; the "
        "second launch tail-first, re-reading x from L2",
        split_tail_launch, split_tail_prepare, warp_multiple=True),
}


SPEC = KernelSpec(
    name="softmax",
    summary="row-wise softmax of a ROWS x COLS row-major matrix (numerically stable)",
    size_help="ROWSxCOLS, e.g. 8192x8192",
    default_size=lambda simulator: (6, 70) if simulator else (8192, 8192),
    in_shapes=lambda size: [size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    # The floor: one read of x and one write of out. The naive rung moves ~4x this.
    bytes_moved=lambda size, dtype: 2 * size[0] * size[1] * np.dtype(dtype).itemsize,
    # ~5 per element: compare (max), subtract, exp, add (sum), multiply (by 1 / sum).
    flops=lambda size: 5 * size[0] * size[1],
    variants={**RUNGS, "auto": auto_variant(
        choose, RUNGS, "group_rows for short rows, split_row for a few long rows, else fused (choose())", kernel="softmax")},
    order=40,
    contenders={"cupy": (("cupyx.scipy.special.softmax", C.cupy_softmax),),
                "torch": (("torch.softmax", C.torch_softmax),
                          ("torch.compile(naive softmax)", C.torch_softmax_compiled)),
                "triton": (("fused softmax (a program a row)", C.triton_softmax),)},
    torch_op=dict(rungs=("fused", "fused"), doc="softmax over the rows of a 2-D x; autograd (Numba backward)"),
    bench_sizes=(("8192x8192", 1024), ("65536x1024", 256)),
    targets=(dict(size=(8192, 8192), against="torch.softmax", bound=1.2), dict(size=(65536, 1024), against="torch.softmax", bound=0.95)),
    sweep=dict(shapes=("1x1", "100000x32", "1000000x64", "262144x128", "1000x1000", "4099x3001", "65536x1024",
                       "8192x8192", "32x65536", "4x1000000", "1x1048576"),
               skip=frozenset({"naive"}), against="torch.softmax", memory_bound=True),
    sim_cost={"naive": 0.36, "fused": 0.06, "online": 0.06, "group_rows": 0.05, "split_row": 0.52,
              "split_tail": 0.64, "auto": 0.15},
    counter_size=(8, 256),
    counter_metrics=("dram_bytes_ratio", "sectors_per_request"),
)
