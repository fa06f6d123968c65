"""Matmul's vector rung: M = 1 or N = 1 run as matrix-vector products, and the column kernels of M = 1.

Source: CUDA C++ Programming Guide, "Device Memory Accesses" (coalescing along a row of B) and
"Memory Fence Functions" (the last block of a column group adds the partials, threadFenceReduction).
"""
from __future__ import annotations

import numpy as np
from kernels.arrays import empty_like, to_device_like
from kernels.compiler import cuda, threadfence, uint64

from kernels.device_limits import current
from kernels.spec import Launch, blocks_for, plural, sm_count
from kernels.warp import MAX_WARPS, WARP
from kernels import matvec as MV


# --- Columns: Y = X @ B for the matmuls with one row (M = 1) ------------------------------------------
# x @ B with B row-major (K x N) is B^T x: the sum runs down each *column* of B. One warp a column
# would read 32 words 4*N bytes apart (uncoalesced, as rung 1); instead the 32 lanes of a warp own 32
# consecutive columns and walk down K together, so at each k a warp reads B[k, n..n+31], one 128-byte
# line (coalesced), and every lane reads the same x[k] (a broadcast). N columns alone give too few
# threads (4096: 128 warps for 132 SMs), so K is split twice: the warps of a block (threadIdx.y) take
# every TY-th k of the block's K range and add their sums in shared memory (no extra launch), and
# grid y gives the blocks K ranges whose partials[z, m, n] the last block of each column group adds
# (columns_split_kernel, below: one launch, a fixed order, no atomics on the data). Matmul's
# ``vector`` rung (at the bottom) runs it; with M > 1 rows, grid z takes one row of X each (every
# row re-reads B: correct at any shape, fast only at M = 1).
VM_UNROLL = 4  # independent loads of B a thread keeps in flight
VM_MIN_K = 256  # shortest K range a block gets when K is split over grid y
VM_MAX_SPLITS = 64  # at most this many K ranges (partials a column for the reduction to add)
VM_BLOCKS_PER_SM = 8  # the split aims for this many blocks on every SM


@cuda.jit(device=True)
def _columns_sum(X, B, m, n, N, k0, k1, TY, ty):
    """This thread's sum of X[m, k] * B[k, n] over k = k0 + ty, k0 + ty + TY, ... < k1 (VM_UNROLL loads
    of B in flight); 0 for a column past N."""
    acc = B.dtype.type(0)
    if n < N:
        step = TY * uint64(VM_UNROLL)
        k = k0 + uint64(ty)
        while k + uint64(3) * TY < k1:
            a0 = X[m, k] * B[k, n]
            a1 = X[m, k + TY] * B[k + TY, n]
            a2 = X[m, k + uint64(2) * TY] * B[k + uint64(2) * TY, n]
            a3 = X[m, k + uint64(3) * TY] * B[k + uint64(3) * TY, n]
            acc += (a0 + a1) + (a2 + a3)
            k += step
        while k < k1:
            acc += X[m, k] * B[k, n]
            k += TY
    return acc


@cuda.jit(device=True)
def _columns_partial(X, B, partials, kchunk, sums):
    """Block (bx, z, m)'s partial sums of columns_partial_kernel, stored in partials[z, m, bx * 32 + tx]
    by warp 0 after the TY warps' sums meet in the shared array ``sums`` (MAX_WARPS x 32). True in the
    threads that stored one (ty == 0, column inside N)."""
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n = uint64(cuda.blockIdx.x * WARP + tx)
    N = uint64(B.shape[1])
    z = cuda.blockIdx.y
    m = uint64(cuda.blockIdx.z)
    k0 = uint64(z) * uint64(kchunk)
    k1 = min(k0 + uint64(kchunk), uint64(B.shape[0]))
    sums[ty, tx] = _columns_sum(X, B, m, n, N, k0, k1, uint64(cuda.blockDim.y), ty)
    cuda.syncthreads()
    if ty == 0 and n < N:
        total = sums[0, tx]
        for j in range(1, cuda.blockDim.y):
            total += sums[j, tx]
        partials[z, m, n] = total
        return True
    return False


@cuda.jit
def columns_partial_kernel(X, B, partials, kchunk):
    """partials[z, m, n] = sum over k in [z * kchunk, min(K, (z + 1) * kchunk)) of X[m, k] * B[k, n].

    X: (M, K), B: (K, N) row-major, partials: (splits, M, N), one float dtype. Launch: block
    (32, TY), grid (ceil(N / 32), splits, M): lane tx of warp ty in block (bx, z, m) owns column
    n = bx * 32 + tx and sums k = k0 + ty, k0 + ty + TY, ... (VM_UNROLL loads of B in flight), then
    warp 0 adds the TY warps' sums from shared memory. With one K range, partials is Y as (1, M, N)."""
    sums = cuda.shared.array((MAX_WARPS, WARP), partials.dtype)
    _columns_partial(X, B, partials, kchunk, sums)


# With K split over grid y, the partials were added by a second launch: 3.6 us of a 32 us
# 1 x 4096 x 4096 call on the H100 (ncu), most of it the launch. Instead the last block of each
# column group to finish adds them (the CUDA Programming Guide's "Memory Fence Functions" example,
# as in its threadFenceReduction sample): each block writes its partials, fences them (visible to
# every block before the count says so), and counts itself done with an atomic add on its column
# group's counter; the block that reads splits - 1 from the counter is the last, adds partials z =
# 0 .. splits - 1 in that order (the same bits every call) into Y, and zeroes the counter for the
# next call.
@cuda.jit
def columns_split_kernel(X, B, partials, Y, counters, kchunk):
    """Y[m, n] = X[m, :] @ B[:, n] with K in ranges of kchunk over grid y, one launch.

    X: (M, K), B: (K, N), partials: (splits, M, N) scratch, Y: (M, N), one float dtype; counters:
    int32 (M, ceil(N / 32)), zero before the call and after it. Launch as columns_partial_kernel:
    block (32, TY), grid (ceil(N / 32), splits, M). Block (bx, z, m) writes partials[z, m, bx * 32 ..
    + 31]; the last block of (bx, m) to count itself in adds the splits in order z = 0, 1, ... into Y."""
    sums = cuda.shared.array((MAX_WARPS, WARP), partials.dtype)
    last = cuda.shared.array(1, np.int32)
    if _columns_partial(X, B, partials, kchunk, sums):
        threadfence()  # this partial reaches every SM before the count below says it is done
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n = uint64(cuda.blockIdx.x * WARP + tx)
    N = uint64(B.shape[1])
    m = uint64(cuda.blockIdx.z)
    cuda.syncthreads()
    if tx == 0 and ty == 0:
        splits = cuda.gridDim.y
        last[0] = cuda.atomic.add(counters, (m, cuda.blockIdx.x), 1) == splits - 1
    cuda.syncthreads()
    if last[0]:
        if ty == 0 and n < N:
            total = partials[0, m, n]
            for zz in range(1, cuda.gridDim.y):
                total += partials[zz, m, n]
            Y[m, n] = total
        if tx == 0 and ty == 0:
            counters[m, cuda.blockIdx.x] = 0  # for the next call


def columns_block(threads: int) -> tuple[int, int]:
    """(32, threads // 32): a warp across 32 columns, threads // 32 warps down K (at least 1)."""
    return WARP, max(1, threads // WARP)


def columns_plan(k: int, n: int, threads: int, splits: int = 0, rows: int = 1) -> tuple[int, int]:
    """(kchunk, splits) for X @ B with B K x N: ``splits`` K ranges when given (at most K), else
    enough for about VM_BLOCKS_PER_SM blocks an SM over the ceil(N / 32) x ``rows`` column blocks,
    at most VM_MAX_SPLITS, no range shorter than VM_MIN_K (K < 2 * VM_MIN_K: no split)."""
    if splits <= 0:
        blocks = blocks_for(n, WARP) * rows
        splits = min(blocks_for(VM_BLOCKS_PER_SM * sm_count(), blocks), k // VM_MIN_K, VM_MAX_SPLITS)
    splits = max(1, min(splits, k))
    kchunk = blocks_for(k, splits)
    return kchunk, blocks_for(k, kchunk)


def columns_prepare(X, B, Y, threads: int, kchunk: int):
    """Enqueue function for Y = X @ B (device arrays X (M, K), B (K, N), Y (M, N), M <= the device's grid z limit) in
    K ranges of ``kchunk`` (:func:`columns_plan`), blocks of :func:`columns_block`, one launch:
    columns_partial_kernel for one range, else columns_split_kernel (the last block of a column
    group adds its partials)."""
    (m, k), n = X.shape, B.shape[1]
    splits = blocks_for(k, kchunk)
    part = columns_partial_kernel[(blocks_for(n, WARP), splits, m), columns_block(threads)]
    if splits == 1:
        Y1 = Y.reshape(1, m, n)
        return lambda: part(X, B, Y1, kchunk)
    partials = empty_like(Y, (splits, m, n), Y.dtype)  # scratch, allocated once, by Y's library
    counters = to_device_like(np.zeros((m, blocks_for(n, WARP)), np.int32), Y)  # zero again after each call
    fused = columns_split_kernel[(blocks_for(n, WARP), splits, m), columns_block(threads)]
    return lambda: fused(X, B, partials, Y, counters, kchunk)


# --- Beside the ladder: vector-shaped products (M = 1 or N = 1) are matrix-vector products -----------------------
# 1 x 4096 x 4096 is one row times a matrix: 33 MFLOP against 64 MB of B, ~0.5 FLOP a byte. A tile
# rung wastes 127 of each tile's 128 rows and still reads all of B; the floor is reading B once at
# copy speed (~22 us on an H100). So N = 1 (A @ x, A row-major) runs matvec's own ``auto`` on
# (M, K); M = 1 (x @ B) runs the column kernel below: a warp across 32 columns of B
# (coalesced along rows of B), K split among the block's warps and over grid y, and the last block
# of each column group adds the K ranges' partials (no second launch). Any other shape runs the column
# kernel one row of A a grid z slice (correct, each row re-reading B: only meant for small M).
def vector_launch(size, threads, params=None):
    """N = 1: matvec auto's launch for (M, K) (its own threads); else the column kernel: grid
    (ceil(N / 32), splits, M), block (32, threads // 32); split, the last block of each column group
    adds the partials (columns_split_kernel).
    Tunable (``lab tune``): ``splits``, K ranges (0: columns_plan's choice), and
    threads (the warps a block splits its K range among)."""
    m, n, k = size
    params = dict(params or {})
    want = params.get("splits", 0)
    if not isinstance(want, int) or want < 0:
        raise ValueError(f"splits={want!r}: a count of K ranges (0: the plan's)")
    if n == 1:
        cfg = MV.SPEC.variants["auto"].launch((m, k), threads)
        params.pop("splits", None)  # matvec's auto plans its own split
        how = cfg.note.removeprefix("auto: ")
        return Launch(cfg.grid, cfg.block, cfg.threads_needed, params=tuple(sorted(params.items())),
                      note=f"matvec rung: N = 1, A @ x by matvec {how}")
    max_rows = current().max_grid_yz
    if m > max_rows:
        raise ValueError(f"M = {m}: the vector rung takes at most {max_rows} rows (grid z)")
    kchunk, splits = columns_plan(k, n, threads, want, m)
    ty = columns_block(threads)[1]
    what = (f"matvec rung: M = 1, x @ B: a warp across 32 columns of B, {plural(ty, 'warp')} down K" if m == 1 else
            f"M = {m}, N = {n}: not vector-shaped; the column kernel once a row of A (B re-read {m}x)")
    note = what + (f", {plural(splits, 'K range')} of {kchunk}, added by each column group's last block"
                   if splits > 1 else "")
    return Launch(grid=(blocks_for(n, WARP), splits, m), block=columns_block(threads),
                  threads_needed=m * n * splits * columns_block(threads)[1],
                  note=note, params=(("kchunk", kchunk), ("splits", splits)))  # what it gets (prepare reads it)


def vector_prepare(cfg, inputs, outputs):
    """N = 1: matvec auto on (A, B as a K-vector, C as an M-vector); else the column kernel."""
    A, B = inputs
    (C,) = outputs
    (m, k), n = A.shape, B.shape[1]
    if n == 1:
        mv = MV.SPEC.variants["auto"]
        sub = mv.launch((m, k), cfg.block[0])
        return mv.prepare(sub, [A, B.reshape(k)], [C.reshape(m)])
    return columns_prepare(A, B, C, cfg.threads_per_block, cfg.param["kchunk"])  # the launch math's plan
