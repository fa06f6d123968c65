"""Matmul rung 6, skinny M (M <= 32): a column of C a thread, all of A's rows in registers, B streamed once.

Source: CUDA C++ Programming Guide, "Shared Memory" (the broadcast of one word to a warp).
"""
from __future__ import annotations

from kernels.compiler import cuda, uint64

from kernels.gemm.build_options import ALIGN
from kernels.gemm.split_k import SPLIT_MIN_K, k_ranges, split_k_enqueue
from kernels.spec import Launch, blocks_for, plural, sm_count


# --- Rung 6: skinny M (M <= 32): a column of C per thread, all of A's rows in registers ------------
# With M = 32 (a batch of 32 vectors times a 4096 x 4096 weight), C = A @ B is a batch of mat-vecs:
# B (64 MB) must stream from DRAM once, and every tile rung wastes most of its tile (tile64: half of
# each 64-row tile, and B is re-read per K range only once, but through 4-byte loads of a few
# warps). Here thread t of a block owns column n = blockIdx.x * 128 + t of C and its 32 sums; per
# K-slab of 32 the block stages A's 32 x 32 slab in shared memory (every thread reads the same
# word: a broadcast) and each thread streams its B column, one coalesced load per k feeding 32 FMAs.
# K is split over grid y (as split_k) so that 32 column blocks become ~4 blocks an SM.
SK_M = 32  # rows of A the rung handles (at most)
SK_N = 128  # columns of C a block (threads a block)
SK_BK = 32  # k a slab
SK_SLAB = SK_BK * SK_M  # words of the A slab


@cuda.jit
def skinny_m_kernel(A, B, W, kchunk):
    """W[z, m, n] = sum over k in range z of A[m, k] * B[k, n]; thread t of block (bx, z, g)
    computes column n = bx * 128 + t for rows m = 32 g .. 32 g + 31 (32 accumulators in registers).
    Launch: block (128,), grid (ceil(N / 128), splits, ceil(M / 32)); meant for M <= 32 (g = 0),
    correct for any M (each row group re-reads B)."""
    As = cuda.shared.array(SK_SLAB, W.dtype, alignment=ALIGN)  # [k][m], 32 x 32
    acc = cuda.local.array(SK_M, W.dtype)
    M, K = A.shape
    N = B.shape[1]
    zero = W.dtype.type(0)
    t = cuda.threadIdx.x
    n = cuda.blockIdx.x * SK_N + t
    live = n < N
    k_begin = cuda.blockIdx.y * kchunk
    k_end = min(K, k_begin + kchunk)
    m0 = cuda.blockIdx.z * SK_M
    for m in range(SK_M):
        acc[m] = zero
    for k0 in range(k_begin, k_end, SK_BK):
        cuda.syncthreads()  # everyone is done with the previous slab
        for i in range(SK_SLAB // SK_N):  # 8 words a thread: A[m, k0 + kk], kk fastest (coalesced)
            e = i * SK_N + t
            m = e // SK_BK
            kk = e - m * SK_BK
            As[kk * SK_M + m] = A[m0 + m, k0 + kk] if m0 + m < M and k0 + kk < k_end else zero
        cuda.syncthreads()
        if live:
            kmax = min(SK_BK, k_end - k0)
            for kk in range(kmax):
                b = B[uint64(k0 + kk), uint64(n)]
                base = uint64(kk * SK_M)
                for m in range(SK_M):
                    acc[m] += As[base + uint64(m)] * b
    if live:
        for m in range(SK_M):
            if m0 + m < M:
                W[cuda.blockIdx.y, m0 + m, n] = acc[m]


def skinny_m_plan(size):
    """(kchunk, splits): K ranges so that the column blocks times the splits give about 4 blocks an
    SM, no range shorter than 256 k; kchunk a multiple of 32."""
    m, n, k = size
    cols = blocks_for(n, SK_N)
    splits = max(1, min(blocks_for(4 * sm_count(), cols), k // SPLIT_MIN_K))
    return k_ranges(k, splits, SK_BK)


def skinny_m_launch(size, threads):
    """grid (ceil(N / 128), splits), block (128,); a reduction launch when split. M <= 32 only."""
    m, n, k = size
    kchunk, splits = skinny_m_plan(size)
    note = f"{plural(splits, 'K range')} of {kchunk}" + (", then a reduction launch" if splits > 1 else "")
    if m > SK_M:
        note += f"; M = {m} > {SK_M}: {plural(blocks_for(m, SK_M), 'row group')}, each re-reading B"
    if threads != SK_N:
        note += f"; block fixed at {SK_N} threads, --threads {threads} ignored"
    return Launch(grid=(blocks_for(n, SK_N), splits, blocks_for(m, SK_M)), block=(SK_N,),
                  threads_needed=n * splits * blocks_for(m, SK_M), note=note)


def skinny_m_prepare(cfg, inputs, outputs):
    """Rung 6. Saves over split_k at M <= 32: the idle half of each 64-row tile and B's traffic through
    shared memory; B streams straight from DRAM into registers, once. Predicted on the H100 at
    32 x 4096 x 4096 float32 (B 64 MB, ~22 us at copy speed): ~35-45 us (split_k: 132 us; cuBLAS 44 us).
    Measured on the H100: 0.142 ms, slower than split_k (0.133): prediction missed, auto does not
    pick this rung. ptxas: 126 registers (32 accumulators, addresses), so 4 warps a block and few
    blocks an SM; the k loop has a run-time trip count, so Numba/NVVM do not unroll it and each
    thread keeps one 4-byte B load in flight, waiting ~600 ns on DRAM per 32 FMAs: latency-bound at
    0.45 TB/s. Next: a constant-trip k loop with the loads of 8 k issued first."""
    A, B = inputs
    (C,) = outputs
    m, n = C.shape
    kchunk, splits = skinny_m_plan((m, n, A.shape[1]))
    return split_k_enqueue(skinny_m_kernel[cfg.grid, cfg.block], A, B, C, splits, kchunk)
