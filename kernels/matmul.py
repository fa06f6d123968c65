"""Matrix multiply, C = A @ B, from one thread per output to register-tiled blocks.

Sources: CUDA C++ Programming Guide, sections "Thread Hierarchy" and "Shared Memory" (the tiled
MatMul example); the numba-cuda documentation, "Examples: Matrix multiplication" (``fast_matmul``,
TPB = 16); V. Volkov and J. Demmel, "Benchmarking GPUs to tune dense linear algebra" (SC08:
register blocking, one thread computing many outputs); S. Boehm, "How to Optimize a CUDA Matmul
Kernel for cuBLAS-like Performance" (2022: block and thread tiles, transposed A tile, vector shared
loads); the seed notebook on tensors and MFU (004: a matmul costs 2 * M * N * K FLOPs, MFU =
achieved FLOP/s / peak FLOP/s).

A is M x K, B is K x N, C is M x N, all C-contiguous (row-major), float32 or float64. One call does
2 * M * N * K FLOPs and must at least read A and B and write C once: at 4096^3 float32 that is
137 GFLOP against 201 MB, ~680 FLOPs a byte, far above the ~20 FLOPs a byte an H100 can feed from
DRAM. So matmul is compute-bound *if* the kernel reuses what it loads; the rungs differ in how many
FMAs each load feeds (per thread, float32):

  rung            global loads per FMA   shared-memory words per FMA   C elements per thread
  naive           2                      -                             1
  shared          2 / 16                 2                             1
  register_tiled  2 / 128                1 / 4 (in 128-bit loads)      64
  warp_tiled      2 / 128                3 / 16 (6 LDS.128, 128 FMAs)  128
  wide_loads      2 / 128 in 8-byte      3 / 16                        128
                  loads: 1 / 128 instr.
  small           2 / 32 - 2 / 64        1 / 2 - 3 / 8                 16 - 32

warp_tiled, wide_loads and small are built by one factory (:func:`gemm_kernel`) from a
:class:`GemmConfig` whose fields (tiles, slab depth, padding, double buffering, pairs, launch bound)
a tuner may vary (:data:`TUNABLE`). Beside the ladder, rungs for shapes the 128 x 128 tile serves
badly (tile64: mid sizes, split_k: long K, skinny_m: M <= 32) and ``vector`` for M = 1 or N = 1,
which are matrix-vector products (bound by reading B or A once, not by FMAs). The compile-time
sizes that ``lab tune`` searches are each rung's ``tunables`` (tile bm x bn, K-slab, launch bounds,
split-K factor); ``auto`` runs the tuned configuration of the shape's class when one is cached for
this GPU (kernels/tuning.py), else :func:`choose`: a launch model, like cuBLAS's heuristics, that
estimates each block tile and split-K factor from the tiles' measured times (:data:`RATES`) and the
waves of blocks the SMs run, so 1024^3 gets 128 x 64 tiles (one block an SM) and 777 x 1333 x 901
gets 32 x 64 (525 blocks; 128 x 64 would leave 15 SMs two blocks and the rest one).

What the hardware did (Nsight Compute, H100, 2026-11-23, ``lab counters matmul --size 4096``, float32,
one call each; A and B are 64 MB each, past the 50 MB L2): global load requests naive 4.29e9, shared
2.68e8 (16x fewer), register_tiled 3.36e7 (128x fewer); DRAM read naive 33.0 GB, shared 17.0 GB,
register_tiled 0.58 GB, cuBLAS 0.34 GB against a minimum of 0.20 GB. Naive's re-reads mostly hit
L1 and L2, so shared cuts DRAM bytes only 1.9x; register_tiled's 8x larger tile cuts them 29x.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from kernels.compiler import cuda, uint64

from kernels.compiler import SIMULATOR
from kernels.spec import (KernelSpec, plural, Launch, Variant, auto_variant, blocks_for, dot_tolerances,
                          launch_once, sm_count)
from kernels.warp import WARP


# --- Rung 1: one thread per output element (the textbook kernel) ------------------------------
@cuda.jit
def naive_kernel(A, B, C):
    """C[i, j] = sum_k A[i, k] * B[k, j]; the thread at grid position (x=j, y=i) computes C[i, j].

    A: (M, K), B: (K, N), C: (M, N), one float dtype, C-contiguous. ``cuda.grid(2)`` returns
    (x, y) = (column j, row i), so threadIdx.x walks along a row of C: at each step k the 32
    threads of a warp read B[k, j..j+31] (one coalesced 128-byte line) and all read the same
    A[i, k] (one broadcast), and their stores to C are one line too. Threads outside C (the ragged
    last blocks) do nothing.

    Cost: two global loads per FMA. The caches catch most of them (the block's warps read the same
    B line at each k, a warp's 32 threads the same A word), but an SM issues one warp-wide load a
    clock (32 load/store lanes) against four warp-wide FMAs (128 FP32 lanes): two loads per FMA
    cap the kernel at 1/8 of FP32 peak (~8 TFLOP/s on an H100) even if every load hits L1.
    Predicted on an H100 at 4096^3: ~3-5 TFLOP/s (5-8% of FP32 peak), L1 misses and load
    latency taking the rest.
    Measured on the H100 at 4096^3 float32 (docs/benchmarks.md): 100.5 ms, 1.37 TFLOP/s (2.0% of
    FP32 peak): below the prediction, L1 misses on B dominate.
    """
    j, i = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = C.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def naive_block(threads: int) -> tuple[int, int]:
    """Split ``threads`` per block into a 2-D block (x, y): x = min(threads, 32) columns, so a warp
    spans one row segment of C, and y = threads // x rows (at least 1)."""
    x = min(threads, WARP)
    return x, max(1, threads // x)


def naive_launch(size, threads):
    """One thread per C element: block (bx, by) from :func:`naive_block`, grid (ceil(N / bx),
    ceil(M / by)); grid x walks the columns of C, grid y its rows."""
    m, n, _ = size
    bx, by = naive_block(threads)
    note = "" if bx * by == threads else f"block {bx}x{by} = {bx * by} of the {plural(threads, 'thread')} asked"
    return Launch(grid=(blocks_for(n, bx), blocks_for(m, by)), block=(bx, by), threads_needed=m * n,
                  note=note)


# --- Rung 2: shared-memory tiles (CUDA Programming Guide, "Shared Memory") --------------------
TPB = 16  # tile edge: a TPB x TPB block of threads computes a TPB x TPB tile of C


@cuda.jit
def shared_kernel(A, B, C):
    """C = A @ B by TPB x TPB tiles staged in shared memory; the block is fixed at (TPB, TPB).

    A, B, C as in :func:`naive_kernel`. Launch: block (TPB, TPB), grid (ceil(N / TPB),
    ceil(M / TPB)); thread (tx, ty) of block (bx, by) computes C[by * TPB + ty, bx * TPB + tx].
    For each K-slab of width TPB the block copies one TPB x TPB tile of A and one of B into shared
    memory (each thread one element of each, coalesced along rows), waits (``syncthreads``), then
    every thread takes its TPB products from shared memory.

    Saves over ``naive``: each element fetched from global memory feeds TPB FMAs instead of one, so
    global loads per FMA drop from 2 to 2 / TPB (16x less L1/L2 traffic, no cache misses in the
    inner loop). The FMAs now wait on shared memory instead: 2 shared reads per FMA in the source;
    the compiler merges the 16 reads of a row of sA into four 128-bit loads, leaving ~1.25 load
    instructions per FMA, and shared memory serves one warp-wide load a clock against four FMAs:
    at most ~1/5 of FP32 peak. Bank conflicts: sA[ty, kk] is one word per half warp (a broadcast),
    sB[kk, tx] 16 consecutive words: none. Tiles that stick out past M, N or K are padded with
    zeros (a zero adds nothing to a sum), so any size works; the store is guarded.
    Predicted on an H100 at 4096^3: ~7 TFLOP/s, 1.5-2x naive (the numba-docs TPB = 16 kernel
    measured 6.95 TFLOP/s), bound by shared-load issue and the two barriers per 16 FMAs.
    Measured on the H100 at 4096^3 float32: 17.3 ms, 7.9 TFLOP/s (11.9% of peak), 5.8x naive.
    """
    sA = cuda.shared.array((TPB, TPB), C.dtype)
    sB = cuda.shared.array((TPB, TPB), C.dtype)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TPB + tx
    row = cuda.blockIdx.y * TPB + ty
    M, K = A.shape
    N = B.shape[1]
    zero = C.dtype.type(0)
    acc = zero
    for k0 in range(0, K, TPB):
        # Zero-padded loads: a tile past the edge contributes 0 to every sum.
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else zero
        sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else zero
        cuda.syncthreads()  # the whole tile is in shared memory before anyone reads it
        for kk in range(TPB):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()  # everyone is done reading before the next tile overwrites it
    if row < M and col < N:
        C[row, col] = acc


def shared_launch(size, threads):
    """Block fixed at (TPB, TPB) = 256 threads whatever ``threads`` is; grid (ceil(N / TPB),
    ceil(M / TPB))."""
    m, n, _ = size
    note = "" if threads == TPB * TPB else (
        f"block fixed at {TPB}x{TPB} = {TPB * TPB} threads (compile-time tile); --threads {threads} ignored")
    return Launch(grid=(blocks_for(n, TPB), blocks_for(m, TPB)), block=(TPB, TPB), threads_needed=m * n,
                  note=note)


# --- Rung 3: register tiles (each thread computes an 8 x 8 block of C) ------------------------
BM = 128  # rows of C per block
BN = 128  # columns of C per block
BK32 = 16  # K-slab staged in shared memory per step, float32 (A and B, 2 buffers: 8320 words, 33 KB)
BK64 = 8  # float64: a 16-deep slab would need 66 KB, over the 48 KB of static shared memory
TM = 8  # rows of C per thread: two groups of 4, HALF_M apart
TN = 8  # columns of C per thread: two groups of 4, HALF_N apart
HALF_M = BM // 2
HALF_N = BN // 2
TMN = TM * TN  # accumulators per thread
RT_THREADS = (BM // TM) * (BN // TN)  # 256
A_PAD = 4  # words of padding per As row: conflict-free transposed stores, rows still 16-byte aligned
LDA_S = BM + A_PAD  # row length of the transposed A slab in shared memory
A_KW = 8  # k-columns of A one warp-wide load covers: 4 rows x 8 words, four full 32-byte sectors
A_ROW_STEP = RT_THREADS // A_KW  # rows of A between a thread's slab elements (32)
A_ROW_GROUPS = BM // A_ROW_STEP  # steps down the slab's rows (4) before moving 8 columns right
B_ROW_STEP = RT_THREADS // BN  # rows of B between a thread's slab elements (2)
# GPU-only compile options (the simulator's cuda.jit and shared.array reject them):
ALIGN = None if SIMULATOR else 16  # 16-byte aligned shared tiles, so 4 words can load as one LDS.128
FORCEINLINE = {} if SIMULATOR else {"forceinline": True}  # inline the helpers into the kernel (NVVM)
# float32: 256 threads and at least 2 blocks an SM, so ptxas fits a thread in 65536 / 512 = 128
# registers. float64: the 64 accumulators alone take 128 registers; 1 block an SM (<= 255 each).
LAUNCH_BOUNDS32 = {} if SIMULATOR else {"launch_bounds": (RT_THREADS, 2)}
LAUNCH_BOUNDS64 = {} if SIMULATOR else {"launch_bounds": (RT_THREADS, 1)}


@cuda.jit(device=True, **FORCEINLINE)
def _a_slab_offset(i):
    """Offset in the transposed A slab (As[k, m], rows of LDA_S words) of a thread's slab element
    i, relative to its element 0: 32 rows of A further per step of i % 4, 8 k further per i // 4."""
    return (i % A_ROW_GROUPS) * A_ROW_STEP + (i // A_ROW_GROUPS) * A_KW * LDA_S


@cuda.jit(device=True, **FORCEINLINE)
def _mac_k(As, Bs, a_rd, b_rd, a_frag, b_frag, acc):
    """One k of a thread's 8 x 8 micro-tile: acc[i, j] += A[m_i, k] * B[k, n_j].

    Reads the thread's 8 A values (rows ty4 + {0..3} and 64 + ty4 + {0..3}, from flat offset a_rd
    of the transposed A slab) and 8 B values (from b_rd) out of shared memory, then does 64 FMAs.
    The offsets index as uint64: Numba skips its negative-index wraparound for unsigned indices,
    and without that compare-and-select per load the compiler merges each 4 consecutive words
    into one LDS.128 (As and Bs are 16-byte aligned, and a_rd, b_rd are multiples of 4).
    """
    for i in range(4):
        a_frag[i] = As[uint64(a_rd + i)]
        a_frag[4 + i] = As[uint64(a_rd + HALF_M + i)]
        b_frag[i] = Bs[uint64(b_rd + i)]
        b_frag[4 + i] = Bs[uint64(b_rd + HALF_N + i)]
    for i in range(TM):
        for j in range(TN):
            acc[i * TN + j] += a_frag[i] * b_frag[j]


def make_register_tiled_kernel(bk: int, launch_bounds: dict):
    """Compile-time build of the register-tiled kernel for a K-slab of ``bk`` (a multiple of 8).

    The slab depth sets shared-array sizes, which Numba needs as constants: ``bk`` and the sizes
    below are frozen into the kernel as closure constants. Module level holds the two builds,
    :data:`register_tiled_kernel` (float32, bk = 16) and :data:`register_tiled_kernel_f64` (bk = 8).
    """
    if bk % 8:
        raise ValueError(f"bk={bk}: the slab depth must be a multiple of 8 (_mac_k runs in groups of 8)")
    a_slab = bk * LDA_S  # words of one A slab buffer
    b_slab = bk * BN  # words of one B slab buffer
    a_bufs = 2 * a_slab  # two buffers of each: double buffering
    b_bufs = 2 * b_slab
    a_loads = BM * bk // RT_THREADS  # A elements each thread copies per slab (8 at bk = 16)
    b_loads = bk * BN // RT_THREADS  # B elements each thread copies per slab (8 at bk = 16)
    groups = bk // 8  # groups of 8 k per slab

    @cuda.jit(**launch_bounds)
    def register_tiled(A, B, C):
        """C = A @ B: a block of 256 threads computes a BM x BN = 128 x 128 tile of C, each thread
        an 8 x 8 micro-tile held in registers. The block is fixed at 256 threads (compile-time tiles).

        A, B, C as in :func:`naive_kernel`. Launch: block (256,), grid (ceil(N / 128),
        ceil(M / 128)). Thread t (warp w = t // 32, lane l = t % 32) has micro-tile coordinates
        tx = (w % 2) * 8 + l % 8 and ty = (w // 2) * 4 + l // 8, each 0..15 (a warp covers 8 x 4 of
        them); it owns the tile's rows ty*4 + {0..3} and 64 + ty*4 + {0..3} and columns
        tx*4 + {0..3} and 64 + tx*4 + {0..3}. Splitting each thread's 8 rows (columns) into two
        groups of 4, 64 apart, makes a quarter warp's 16-byte shared reads contiguous: no bank
        conflict.

        Per K-slab of bk (16 in float32): the block copies the 128 x bk slab of A and the bk x 128
        slab of B into shared memory, bk / 2 + bk / 2 elements a thread (a warp reads 4 rows x 32
        bytes of A, or one 128-byte row of B: every 32-byte sector fully used). A is stored
        transposed, As[k, m], so a thread's 4 rows at one k are 4 consecutive words. Then for each
        k: four 128-bit shared loads (A rows lo/hi, B columns lo/hi) and 64 FMAs into the register
        accumulators (:func:`_mac_k`).

        Saves over ``shared``: shared-memory words read per FMA drop from 2 to 1/4 (each of a
        thread's 16 words at one k feeds 8 FMAs; one LDS.128 instruction per 16 FMAs), and each
        element fetched from global memory feeds 128 FMAs instead of 16 (global loads per FMA 2/128
        instead of 2/16), so the FMA pipe, not the load/store pipe, sets the pace. The slabs are
        double-buffered: the next slab's global loads go into registers before the current slab's
        FMAs, so their latency hides behind 1024 FMAs, and one ``syncthreads`` a slab suffices.
        Slabs wholly inside A and B (all but the edges) load without bounds tests.

        Bank conflicts: with rows of 128 words, a warp's transposed A stores would hit only 4
        banks (8-way conflict); rows of 132 words (A_PAD = 4) spread them over all 32 banks and
        keep each row 16-byte aligned for the LDS.128 reads. Any M, N, K: loads past an edge read
        0, the stores are guarded. Global loads stay 32-bit: Numba cannot tell the compiler that a
        row of A or B is 16-byte aligned, so it cannot merge them as it does in shared memory.

        Resources (sm_90, float32, as numba-cuda links it: LTO-IR through nvJitLink; the H100's
        driver reports the same): 128 registers (64 accumulators, 2 x 16 fragment values, 16
        prefetched slab values, addresses), a 16-byte stack frame with 12 bytes of spills (a PTX-only
        ptxas -v showed none), 33 KB shared memory: 2 blocks (16 warps) an SM. float64 (bk = 8): ~236 registers, 0 spills, 33 KB, 1 block an SM.
        Predicted on an H100 SXM (~67 TFLOP/s FP32 peak at 1.98 GHz) at 4096^3: 32-40 TFLOP/s,
        0.6-0.8x cuBLAS (51.2 TFLOP/s), 48-60% of peak. Why: in the compiled slab loop 1024 of
        ~1265 instructions (81%) are FFMAs, which caps the kernel near 81% of peak; 4 warps per
        scheduler with 64 independent FMAs each hide most of the shared-load latency, while the
        barrier each slab, the partial last wave (1024 blocks over 264 block slots: 3.9 waves)
        and clocks below 1.98 GHz under full FMA load cost the rest.
        Measured on the H100 at 4096^3 float32: 3.43 ms, 40.1 TFLOP/s (59.9% of peak), 5.1x the
        shared rung and 0.78x cuBLAS (2.66 ms, 51.7 TFLOP/s, TF32 off): the top of the prediction.
        """
        As = cuda.shared.array(a_bufs, C.dtype, alignment=ALIGN)  # [buffer][k][m], flat
        Bs = cuda.shared.array(b_bufs, C.dtype, alignment=ALIGN)  # [buffer][k][n], flat
        acc = cuda.local.array(TMN, C.dtype)  # indexed only by unrolled loops: lives in registers
        a_frag = cuda.local.array(TM, C.dtype)
        b_frag = cuda.local.array(TN, C.dtype)
        a_next = cuda.local.array(a_loads, C.dtype)
        b_next = cuda.local.array(b_loads, C.dtype)

        M, K = A.shape
        N = B.shape[1]
        zero = C.dtype.type(0)
        # Bit operations, not % and //: Python's floor semantics for negative ints cost extra
        # instructions, and the mask tells the compiler t < 256. Indices into A, B, As and Bs in
        # the slab loop are cast to uint64: Numba wraps negative (signed) indices around with a
        # compare and select per access, which also keeps the compiler from merging loads.
        t = cuda.threadIdx.x & (RT_THREADS - 1)
        w = t >> 5
        lane = t & 31
        tx4 = (((w & 1) << 3) | (lane & 7)) << 2  # first C column of the thread (0, 4, ..., 60)
        ty4 = (((w >> 1) << 2) | (lane >> 3)) << 2  # first C row of the thread (0, 4, ..., 60)
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        # Slab copy, element i of a thread: A (m, k) = (t // 8 + 32 (i % 4), t % 8 + 8 (i // 4)),
        # B (k, n) = (t // 128 + 2 i, t % 128).
        a_m = t >> 3
        a_k = t & (A_KW - 1)
        b_k = t >> 7
        b_n = t & (BN - 1)
        a_st = a_k * LDA_S + a_m  # where the thread's element 0 goes in an A slab buffer
        b_st = b_k * BN + b_n

        for i in range(TMN):
            acc[i] = zero

        # Slab 0 straight into buffer 0.
        for i in range(a_loads):
            r = m0 + a_m + (i % A_ROW_GROUPS) * A_ROW_STEP
            kc = a_k + (i // A_ROW_GROUPS) * A_KW
            As[a_st + _a_slab_offset(i)] = A[r, kc] if r < M and kc < K else zero
        for i in range(b_loads):
            c = n0 + b_n
            kr = b_k + i * B_ROW_STEP
            Bs[b_st + i * B_ROW_STEP * BN] = B[kr, c] if kr < K and c < N else zero
        cuda.syncthreads()

        n_slabs = (K + bk - 1) // bk
        interior = m0 + BM <= M and n0 + BN <= N
        for s in range(n_slabs):
            a_cur = (s & 1) * a_slab
            b_cur = (s & 1) * b_slab
            k_next = (s + 1) * bk
            more = s + 1 < n_slabs
            if more:  # issue the next slab's global loads now; they land while we compute
                if interior and k_next + bk <= K:  # the slab lies wholly inside A and B: no tests
                    for i in range(a_loads):
                        a_next[i] = A[uint64(m0 + a_m + (i % A_ROW_GROUPS) * A_ROW_STEP),
                                      uint64(k_next + a_k + (i // A_ROW_GROUPS) * A_KW)]
                    for i in range(b_loads):
                        b_next[i] = B[uint64(k_next + b_k + i * B_ROW_STEP), uint64(n0 + b_n)]
                else:  # an edge slab: what lies outside A or B reads as 0
                    for i in range(a_loads):
                        r = m0 + a_m + (i % A_ROW_GROUPS) * A_ROW_STEP
                        kc = k_next + a_k + (i // A_ROW_GROUPS) * A_KW
                        a_next[i] = A[uint64(r), uint64(kc)] if r < M and kc < K else zero
                    for i in range(b_loads):
                        c = n0 + b_n
                        kr = k_next + b_k + i * B_ROW_STEP
                        b_next[i] = B[uint64(kr), uint64(c)] if kr < K and c < N else zero
            # The slab's k in groups of 8, unrolled by hand (Numba has no #pragma unroll): every
            # shared address in a group is a base register plus a constant, no loop counter.
            for h in range(groups):
                a_rd = a_cur + ty4 + h * 8 * LDA_S
                b_rd = b_cur + tx4 + h * 8 * BN
                _mac_k(As, Bs, a_rd, b_rd, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + LDA_S, b_rd + BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 2 * LDA_S, b_rd + 2 * BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 3 * LDA_S, b_rd + 3 * BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 4 * LDA_S, b_rd + 4 * BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 5 * LDA_S, b_rd + 5 * BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 6 * LDA_S, b_rd + 6 * BN, a_frag, b_frag, acc)
                _mac_k(As, Bs, a_rd + 7 * LDA_S, b_rd + 7 * BN, a_frag, b_frag, acc)
            if more:  # the other buffer was last read before the previous barrier: safe to fill
                a_nxt = a_slab - a_cur
                b_nxt = b_slab - b_cur
                for i in range(a_loads):
                    As[uint64(a_nxt + a_st + _a_slab_offset(i))] = a_next[i]
                for i in range(b_loads):
                    Bs[uint64(b_nxt + b_st + i * B_ROW_STEP * BN)] = b_next[i]
            cuda.syncthreads()

        # Guarded stores of the 8 x 8 micro-tile (two row groups x two column groups of 4).
        for i in range(TM):
            r = m0 + ty4 + (i & 3) + (i >> 2) * HALF_M
            if r < M:
                for j in range(TN):
                    c = n0 + tx4 + (j & 3) + (j >> 2) * HALF_N
                    if c < N:
                        C[r, c] = acc[i * TN + j]

    return register_tiled


register_tiled_kernel = make_register_tiled_kernel(BK32, LAUNCH_BOUNDS32)
register_tiled_kernel_f64 = make_register_tiled_kernel(BK64, LAUNCH_BOUNDS64)
_RT_BUILDS = {(BK32, 2): register_tiled_kernel}  # (bk, min blocks an SM) -> float32 build (lab tune's axes)


def register_tiled_build(bk: int = BK32, min_blocks: int = 2):
    """The float32 register-tiled kernel with a K-slab of ``bk`` and launch bounds of
    (256 threads, ``min_blocks`` blocks an SM), built once per pair. bk = 32 needs 66 KB of shared
    memory, over the 48 KB a static array may have: it fails to compile (``lab tune`` records it)."""
    if (bk, min_blocks) not in _RT_BUILDS:
        bounds = {} if SIMULATOR else {"launch_bounds": (RT_THREADS, min_blocks)}
        _RT_BUILDS[bk, min_blocks] = make_register_tiled_kernel(bk, bounds)
    return _RT_BUILDS[bk, min_blocks]


def _threads_with_work(extent, block_edge):
    """Threads along one axis of the register-tiled grid whose micro-tile holds at least one row
    (column) inside ``extent``: 16 a full block, ceil(rest / 4) in the last, partial block (a
    thread's first group of 4 starts at ty*4; its second, 64 further, is inside only if the first is)."""
    full, rest = divmod(extent, block_edge)
    per_block = block_edge // TM
    return full * per_block + min(per_block, blocks_for(rest, 4))


def register_tiled_launch(size, threads, params=None):
    """Block fixed at 256 threads (a 16 x 16 grid of 8 x 8 micro-tiles, whatever ``threads`` is);
    grid (ceil(N / 128), ceil(M / 128)). Tunable (``lab tune``, float32 only: float64 keeps its
    build): ``bk``, the K-slab (a multiple of 8), and ``min_blocks``, the launch bounds' blocks an SM
    (1 lets ptxas use up to 255 registers a thread)."""
    params = params or {}
    bk, mb = params.get("bk", BK32), params.get("min_blocks", 2)
    if not isinstance(bk, int) or bk <= 0 or bk % 8 or not isinstance(mb, int) or not 1 <= mb <= 8:
        raise ValueError(f"bk={bk!r}, min_blocks={mb!r}: bk a positive multiple of 8, min_blocks 1..8")
    m, n, _ = size
    note = "" if threads == RT_THREADS else (
        f"block fixed at {RT_THREADS} threads (compile-time 128x128 tile, 8x8 per thread); "
        f"--threads {threads} ignored")
    return Launch(grid=(blocks_for(n, BN), blocks_for(m, BM)), block=(RT_THREADS,),
                  threads_needed=_threads_with_work(m, BM) * _threads_with_work(n, BN), note=note,
                  params=tuple(sorted({k: v for k, v in (("bk", bk), ("min_blocks", mb))
                                       if v != {"bk": BK32, "min_blocks": 2}[k]}.items())))  # non-defaults


def register_tiled_prepare(cfg, inputs, outputs):
    """Launch the build of ``cfg.params`` (float32) or the float64 build."""
    A, B = inputs
    (C,) = outputs
    if A.dtype == np.float64:
        kernel = register_tiled_kernel_f64
    else:
        kernel = register_tiled_build(cfg.param.get("bk", BK32), cfg.param.get("min_blocks", 2))
    launch = kernel[cfg.grid, cfg.block]
    return lambda: launch(A, B, C)


# --- Rung 4: a smaller tile (64 x 64, 4 x 4 a thread), and split-K ---------------------------------
# The 128 x 128 tile pays off only when there are enough tiles: 1024^3 has 64 of them for 132 SMs
# (2 blocks an SM: 264 slots), so three quarters of the GPU idles. A 64 x 64 tile gives 4x the blocks
# (256 at 1024^3) at half the reuse (each loaded element feeds 64 FMAs instead of 128; a thread's 16
# shared words a k feed 16 FMAs, one LDS.128 per 8 FMAs). And when M and N are small but K is long
# (64 x 64 x 65536: one tile), no tiling fills the GPU: split-K gives each block a range of K
# (grid z), writes its partial C tile to a workspace (splits x M x N), and a second launch adds them.
T_BM = 64  # rows of C per block
T_BN = 64  # columns of C per block
T_BK = 16  # K-slab in shared memory (float32 and float64: 2 x (16 x 68 + 16 x 64) words, 17 / 34 KB)
T_TM = 4  # rows of C per thread
T_TN = 4  # columns of C per thread
T_THREADS = (T_BM // T_TM) * (T_BN // T_TN)  # 256
T_LDA = T_BM + A_PAD  # row length of the transposed A slab
T_A_LOADS = T_BM * T_BK // T_THREADS  # A elements a thread copies a slab (4)
T_B_LOADS = T_BK * T_BN // T_THREADS  # B elements a thread copies a slab (4)
T_A_STEP = T_THREADS // T_BK  # rows of A between a thread's slab elements (16)
T_B_STEP = T_THREADS // T_BN  # rows of B between a thread's slab elements (4)
T_ACC = T_TM * T_TN  # accumulators a thread
T_A_BUFS = 2 * T_BK * T_LDA  # words of the two A slab buffers (shared-array sizes must be constants)
T_B_BUFS = 2 * T_BK * T_BN


def make_tile_kernel(bm: int = 64, bn: int = 64, bk: int = 16):
    """Compile-time build of the tile kernel for a ``bm`` x ``bn`` tile of C (4 x 4 a thread, so
    bm * bn / 16 threads a block) and a K-slab of ``bk``: the sizes are closure constants, as Numba
    needs for shared and local arrays. Module level holds the lesson's build, :data:`tile64_kernel`
    (64 x 64, bk = 16); ``lab tune`` builds others (:func:`tile_build`). ValueError for tiles whose
    slab copy does not divide among the threads (bm, bn in 16 .. 128, powers of two; bk 8 or 16)."""
    threads = (bm // T_TM) * (bn // T_TN)
    ok = all(v in (16, 32, 64, 128) for v in (bm, bn)) and bk in (8, 16) and threads >= max(bk, bn, 32)
    if not ok or (bm * bk) % threads or (bk * bn) % threads:
        raise ValueError(f"tile {bm}x{bn}, bk {bk}: bm, bn powers of two in 16..128, bk 8 or 16, "
                         f"at least 32 threads (bm * bn / 16)")
    cols = bn // T_TN
    cols_shift, bk_shift, bn_shift = (v.bit_length() - 1 for v in (cols, bk, bn))  # all powers of two
    lda = bm + A_PAD
    a_loads = bm * bk // threads
    b_loads = bk * bn // threads
    a_step = threads // bk
    b_step = threads // bn
    n_acc = T_TM * T_TN
    a_bufs = 2 * bk * lda
    b_bufs = 2 * bk * bn

    @cuda.jit
    def tile_kernel(A, B, W, kchunk):
        """W[z] = A[:, Kz] @ B[Kz, :] for the K range Kz = [z * kchunk, min(K, (z + 1) * kchunk)) of
        grid z; with one split (z = 0, kchunk >= K) W is C itself, viewed as (1, M, N).

        A: (M, K), B: (K, N), W: (splits, M, N), one float dtype. Launch: block (bm * bn / 16,),
        grid (ceil(N / bn), ceil(M / bm), splits); the lesson's build is 64 x 64 (256 threads, bk 16).
        Thread t: (ty, tx) = (t // (bn / 4), t % (bn / 4)) owns rows ty*4 + {0..3} and columns
        tx*4 + {0..3} of the block's tile, 16 accumulators in registers. Per slab of bk k: the block
        copies the bm x bk slab of A (transposed, rows padded by 4 words: conflict-free 16-byte reads)
        and the bk x bn slab of B into shared memory (4 + 4 elements a thread at 64 x 64: a half warp
        reads 16 consecutive k of a row of A; a warp one 64-word row segment of B), double-buffered
        through registers as in register_tiled; then for each k two LDS.128 and 16 FMAs. Rows and
        columns past an edge of A or B load the last one (clamped; never stored), so an edge block
        runs the interior's loads; only a slab crossing the end of the K range tests (0 past it).
        Stores are guarded.
        """
        As = cuda.shared.array(a_bufs, W.dtype, alignment=ALIGN)
        Bs = cuda.shared.array(b_bufs, W.dtype, alignment=ALIGN)
        acc = cuda.local.array(n_acc, W.dtype)
        a_frag = cuda.local.array(T_TM, W.dtype)
        b_frag = cuda.local.array(T_TN, W.dtype)
        a_next = cuda.local.array(a_loads, W.dtype)
        b_next = cuda.local.array(b_loads, W.dtype)
        M, K = A.shape
        N = B.shape[1]
        zero = W.dtype.type(0)
        t = cuda.threadIdx.x & (threads - 1)  # tells the compiler t < threads
        tx4 = (t & (cols - 1)) << 2  # cols = bn // 4 micro-tiles a tile row; shifts, not // and %
        ty4 = (t >> cols_shift) << 2
        m0 = cuda.blockIdx.y * bm
        n0 = cuda.blockIdx.x * bn
        k_begin = cuda.blockIdx.z * kchunk
        k_end = min(K, k_begin + kchunk)
        a_k = t & (bk - 1)
        a_m = t >> bk_shift
        b_n = t & (bn - 1)
        b_k = t >> bn_shift
        for i in range(T_TM * T_TN):
            acc[i] = zero
        for i in range(a_loads):
            r = m0 + a_m + i * a_step
            kc = k_begin + a_k
            As[a_k * lda + a_m + i * a_step] = A[r, kc] if r < M and kc < k_end else zero
        for i in range(b_loads):
            kr = k_begin + b_k + i * b_step
            c = n0 + b_n
            Bs[(b_k + i * b_step) * bn + b_n] = B[kr, c] if kr < k_end and c < N else zero
        cuda.syncthreads()
        n_slabs = (k_end - k_begin + bk - 1) // bk
        # Rows and columns past an edge load the last one (clamped: the sums they feed are never
        # stored), so an edge block runs the interior's loads; only the K range's end is tested.
        c_in = min(n0 + b_n, N - 1)
        for s in range(n_slabs):
            a_cur = (s & 1) * (bk * lda)
            b_cur = (s & 1) * (bk * bn)
            k_next = k_begin + (s + 1) * bk
            more = s + 1 < n_slabs
            if more:
                if k_next + bk <= k_end:  # the next slab lies inside the K range: no tests
                    for i in range(a_loads):
                        a_next[i] = A[uint64(min(m0 + a_m + i * a_step, M - 1)), uint64(k_next + a_k)]
                    for i in range(b_loads):
                        b_next[i] = B[uint64(k_next + b_k + i * b_step), uint64(c_in)]
                else:
                    for i in range(a_loads):
                        kc = k_next + a_k
                        r = min(m0 + a_m + i * a_step, M - 1)
                        a_next[i] = A[uint64(r), uint64(kc)] if kc < k_end else zero
                    for i in range(b_loads):
                        kr = k_next + b_k + i * b_step
                        b_next[i] = B[uint64(kr), uint64(c_in)] if kr < k_end else zero
            for kk in range(bk):  # constant trip count: unrolled, shared addresses base + constant
                a_rd = a_cur + kk * lda + ty4
                b_rd = b_cur + kk * bn + tx4
                for i in range(T_TM):
                    a_frag[i] = As[uint64(a_rd + i)]
                    b_frag[i] = Bs[uint64(b_rd + i)]
                for i in range(T_TM):
                    for j in range(T_TN):
                        acc[i * T_TN + j] += a_frag[i] * b_frag[j]
            if more:
                a_nxt = bk * lda - a_cur
                b_nxt = bk * bn - b_cur
                for i in range(a_loads):
                    As[uint64(a_nxt + a_k * lda + a_m + i * a_step)] = a_next[i]
                for i in range(b_loads):
                    Bs[uint64(b_nxt + (b_k + i * b_step) * bn + b_n)] = b_next[i]
            cuda.syncthreads()
        z = cuda.blockIdx.z
        for i in range(T_TM):
            r = m0 + ty4 + i
            if r < M:
                for j in range(T_TN):
                    c = n0 + tx4 + j
                    if c < N:
                        W[z, r, c] = acc[i * T_TN + j]

    return tile_kernel


tile64_kernel = make_tile_kernel(T_BM, T_BN, T_BK)
_TILE_BUILDS = {(T_BM, T_BN, T_BK): tile64_kernel}
SHARED_STATIC_LIMIT = 48 * 1024  # bytes of static shared memory a kernel may declare


def tile_build(bm: int, bn: int, itemsize: int):
    """The tile kernel for a bm x bn tile in a dtype of ``itemsize`` bytes: K-slab 16, or 8 when the
    two double-buffered slabs of 16 would pass the 48 KB of static shared memory (float64 at 128-wide
    tiles), built once."""
    bk = T_BK if 2 * T_BK * (bm + A_PAD + bn) * itemsize <= SHARED_STATIC_LIMIT else 8
    if (bm, bn, bk) not in _TILE_BUILDS:
        _TILE_BUILDS[bm, bn, bk] = make_tile_kernel(bm, bn, bk)
    return _TILE_BUILDS[bm, bn, bk]


# The reduction launch. One thread an element, looping over the splits, measured on the H100 (ncu,
# 2026-11-23): 23.5 us for 64 x 64 x 65536 (64 partials of 4096 words: 16 blocks, each thread 64
# loads one after another, each waiting ~0.5 us for DRAM/L2) and 24.6 us at 128 x 128 x 32768, a third
# of the call, for 1-4 MB read. So the splits are spread too: a chunk is 32 consecutive elements (a
# warp's coalesced 128 bytes), warp g of a block's G = min(8, splits) warps adds splits g, g + G, ...
# (four loads in flight), and warp 0 adds the G group sums, always in the same order (the result is
# the same bits every call). Blocks loop over chunks (one wave of blocks: a block per 32 elements
# made 32768 tiny blocks at 2^20 elements, and block launches, not bytes, set the time).
RED_GROUPS = 8  # most warps a reduction block: the splits are dealt out among them
RED_THREADS_PER_SM = 2048  # resident threads an SM (H100, CC 9.0): the grid is one wave of blocks


def reduce_launch(splits: int, elements: int) -> tuple[int, tuple[int, int]]:
    """(grid, block) of :func:`split_k_reduce_kernel` for ``splits`` partials of ``elements`` words:
    block (32, G) with G = min(8, splits) warps, grid min(chunks of 32, one wave of such blocks)."""
    g = max(1, min(RED_GROUPS, splits))
    return min(blocks_for(elements, WARP), RED_THREADS_PER_SM // (WARP * g) * sm_count()), (WARP, g)


@cuda.jit
def split_k_reduce_kernel(W, C):
    """C[i] = sum_z W[z, i], for W (splits, E) and C (E,), one float dtype (the (splits, M, N)
    workspace and C flattened). Launch: :func:`reduce_launch`, block (32, G). Lane l of warp g
    (threadIdx (l, g)) adds, for element i = chunk * 32 + l, splits z = g, g + G, ... (four loads in
    flight); after a barrier warp 0 adds the G group sums in order g = 0 .. G - 1 and stores C[i].
    Blocks take chunks blockIdx.x, blockIdx.x + gridDim.x, ..."""
    part = cuda.shared.array((RED_GROUPS, WARP), W.dtype)
    lane = cuda.threadIdx.x
    g = cuda.threadIdx.y
    G = cuda.blockDim.y
    S = W.shape[0]
    E = C.shape[0]
    zero = W.dtype.type(0)
    for chunk in range(cuda.blockIdx.x, (E + WARP - 1) // WARP, cuda.gridDim.x):
        i = min(chunk * WARP + lane, E - 1)  # past the end: a copy of the last (not stored)
        a0 = zero
        a1 = zero
        a2 = zero
        a3 = zero
        z = g
        while z + 3 * G < S:
            a0 += W[z, i]
            a1 += W[z + G, i]
            a2 += W[z + 2 * G, i]
            a3 += W[z + 3 * G, i]
            z += 4 * G
        while z < S:
            a0 += W[z, i]
            z += G
        part[g, lane] = (a0 + a1) + (a2 + a3)
        cuda.syncthreads()
        if g == 0 and chunk * WARP + lane < E:
            total = part[0, lane]
            for h in range(1, G):
                total += part[h, lane]
            C[i] = total
        cuda.syncthreads()  # part is written again by the next chunk


# Split-K tuning, measured on the H100 (blocks an SM aimed for, shortest K range -> ms):
# 64 x 64 x 65536: (2, 256) 0.077, (4, 512) 0.062, (8, 512) 0.061; 32 x 4096 x 4096: (2, 256) 0.132,
# (4, 256) 0.121, (4, 512) 0.114; 128 x 128 x 32768: 0.071 for all but (4, 256) 0.082;
# 512^3: (2, 256) 0.027, (2, 128) 0.026, any 512: no split, 0.036. Long K wants longer ranges.
SPLIT_MIN_K = 256  # shortest K range a split-K block gets when K < SPLIT_LONG_K
SPLIT_LONG_K = 4096  # from this K on, ranges of at least 2 * SPLIT_MIN_K
SPLIT_BLOCKS_PER_SM = 4  # split-K aims for tiles x splits >= this many blocks an SM


def split_k_enqueue(part, A, B, C, splits: int, kchunk: int):
    """The enqueue function of a K-split product: the configured launch ``part(A, B, W, kchunk)``
    writes ``splits`` partial C's into a workspace W (splits, M, N), then split_k_reduce_kernel adds
    them into C; with one range W is C itself, viewed as (1, M, N), and there is no second launch."""
    m, n = C.shape
    if splits == 1:
        W1 = C.reshape(1, m, n)
        return lambda: part(A, B, W1, kchunk)
    W = cuda.device_array((splits, m, n), C.dtype)
    W2, C1 = W.reshape(splits, m * n), C.reshape(m * n)
    grid, block = reduce_launch(splits, m * n)
    reduce = split_k_reduce_kernel[grid, block]

    def enqueue():
        part(A, B, W, kchunk)
        reduce(W2, C1)
    return enqueue


def k_ranges(k: int, splits: int, bk: int) -> tuple[int, int]:
    """(kchunk, splits): K cut into at most ``splits`` ranges of a whole number of bk-slabs each
    (the last may be shorter); fewer ranges where rounding to slabs leaves some empty."""
    kchunk = blocks_for(blocks_for(k, splits), bk) * bk
    return kchunk, (blocks_for(k, kchunk) if k else 1)


def split_k_plan(size, splits_wanted=None, bm=T_BM, bn=T_BN):
    """(kchunk, splits) for split-K: enough K ranges that the 64 x 64 tiles times the splits give
    about SPLIT_BLOCKS_PER_SM blocks an SM, but no range shorter than SPLIT_MIN_K k (twice that
    from K = SPLIT_LONG_K on: fewer partials to add); kchunk a multiple of 16."""
    m, n, k = size
    tiles = blocks_for(m, bm) * blocks_for(n, bn)
    if splits_wanted:  # asked for (lab tune): as many as K allows in slabs of T_BK
        splits = max(1, min(splits_wanted, blocks_for(k, T_BK)))
    else:
        want = max(1, blocks_for(SPLIT_BLOCKS_PER_SM * sm_count(), tiles))
        min_k = 2 * SPLIT_MIN_K if k >= SPLIT_LONG_K else SPLIT_MIN_K
        splits = max(1, min(want, k // min_k))
    return k_ranges(k, splits, T_BK)


def _tile(params) -> tuple[int, int]:
    """(bm, bn) of ``params`` (tunables of tile64 and split_k; default 64 x 64), checked."""
    bm, bn = (params or {}).get("bm", T_BM), (params or {}).get("bn", T_BN)
    if bm not in (16, 32, 64, 128) or bn not in (16, 32, 64, 128) or bm * bn < 512:
        raise ValueError(f"tile {bm}x{bn}: bm and bn from 16, 32, 64, 128, at least 32 threads (bm * bn / 16)")
    return bm, bn


def _tile_params(bm, bn, **more) -> tuple:
    """Launch.params of a tile launch: the tile when not 64 x 64, and ``more``."""
    p = {k: v for k, v in (("bm", bm), ("bn", bn)) if v != 64}
    return tuple(sorted({**p, **more}.items()))


def _tile_launch(size, splits, bm=T_BM, bn=T_BN):
    m, n, _ = size
    return Launch(grid=(blocks_for(n, bn), blocks_for(m, bm), splits), block=((bm // T_TM) * (bn // T_TN),),
                  threads_needed=min(m * n, blocks_for(m, T_TM) * blocks_for(n, T_TN)) * splits)


def tile64_launch(size, threads, params=None):
    """Block fixed at 256 threads; grid (ceil(N / 64), ceil(M / 64), 1). Tunable (``lab tune``):
    the tile, ``bm`` x ``bn`` (16 .. 128 each; bm * bn / 16 threads)."""
    bm, bn = _tile(params)
    cfg = _tile_launch(size, 1, bm, bn)
    t = cfg.block[0]
    note = "" if threads == t else (
        f"block fixed at {t} threads (compile-time {bm}x{bn} tile, 4x4 per thread); --threads {threads} ignored")
    return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note, params=_tile_params(bm, bn))


def _tile_kernel(cfg, dtype):
    bm, bn = cfg.param.get("bm", T_BM), cfg.param.get("bn", T_BN)
    return tile_build(bm, bn, np.dtype(dtype).itemsize)


def tile64_prepare(cfg, inputs, outputs):
    """Rung 4. Saves over register_tiled at mid sizes: idle SMs (4x the blocks). Costs: half the
    reuse a loaded element. Predicted on the H100: 1024^3 from ~0.4x cuBLAS (64 blocks) to ~0.6x;
    at 4096^3 slower than register_tiled (~25-30 TFLOP/s: 1 LDS.128 per 8 FMAs instead of 16).
    Measured on the H100: 1024^3 0.107 ms (register_tiled 0.129, cuBLAS 0.062: 0.58x); 4096^3
    5.78 ms, 23.8 TFLOP/s (register_tiled 3.43). ptxas: 64 registers, 16.9 KB shared, 0 spills."""
    A, B = inputs
    (C,) = outputs
    W = C.reshape(1, C.shape[0], C.shape[1])
    launch = _tile_kernel(cfg, C.dtype)[cfg.grid, cfg.block]
    kchunk = A.shape[1]
    return lambda: launch(A, B, W, kchunk)


def split_k_launch(size, threads, params=None):
    """grid (ceil(N / 64), ceil(M / 64), splits) of 256 threads, then the reduction launch.
    Tunable (``lab tune``): ``splits``, the K ranges asked for (0: :func:`split_k_plan`'s choice),
    and the tile ``bm`` x ``bn`` as tile64's."""
    want = (params or {}).get("splits", 0)
    if not isinstance(want, int) or want < 0:
        raise ValueError(f"splits={want!r}: a count of K ranges (0: the plan's)")
    bm, bn = _tile(params)
    kchunk, splits = split_k_plan(size, want or None, bm, bn)
    cfg = _tile_launch(size, splits, bm, bn)
    t = cfg.block[0]
    note = (f"{splits} K ranges of {kchunk}, then a reduction launch over {splits} partial C's" if splits > 1
            else "1 K range (too few k to split): tile64 alone, no reduction launch")
    if threads != t:
        note += f"; block fixed at {t} threads, --threads {threads} ignored"
    tuned = want or (bm, bn) != (T_BM, T_BN)  # what it gets, not what was asked; prepare reads it
    return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note,
                  params=_tile_params(bm, bn, kchunk=kchunk, splits=splits) if tuned else ())


def split_k_prepare(cfg, inputs, outputs):
    """Rung 5: tile64 over K ranges, then a reduction. Saves: idle SMs when M x N has few tiles and
    K is long (64 x 64 x 65536: 1 block -> 256). Costs: the workspace (splits x M x N, written once
    and read once) and a second launch. Predicted on the H100: 64 x 64 x 65536 from ~1% of cuBLAS
    (one block) to its order (cuBLAS splits K too); 32 x 4096 x 4096 from 64 to 256 blocks.
    Measured on the H100: 64 x 64 x 65536 0.077 ms (tile64 3.87 ms, cuBLAS 0.033: 0.43x);
    128 x 128 x 32768 0.071 ms (0.58x); 512^3 0.027 ms (tile64 0.037, cuBLAS 0.017); 32 x 4096 x 4096
    0.132 ms (tile64 0.271, cuBLAS 0.044). Prediction missed by 2-3x: each block's K range is only
    256 k (16 slabs, each a barrier and a 64 x 64 x 16 step), the partials (splits x M x N: 4 MB
    at 64 x 64 x 65536) cross memory twice, and the global loads are 4-byte scalars."""
    A, B = inputs
    (C,) = outputs
    m, n = C.shape
    kchunk, splits = split_k_plan((m, n, A.shape[1]))
    if "kchunk" in cfg.param:  # a tuned split: the launch math's plan
        kchunk, splits = cfg.param["kchunk"], cfg.param["splits"]
    if splits == 1:
        return tile64_prepare(cfg, inputs, outputs)
    return split_k_enqueue(_tile_kernel(cfg, C.dtype)[cfg.grid, cfg.block], A, B, C, splits, kchunk)


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


# --- Beside the ladder: vector-shaped products (M = 1 or N = 1) are matrix-vector products -----------------------
# 1 x 4096 x 4096 is one row times a matrix: 33 MFLOP against 64 MB of B, ~0.5 FLOP a byte. A tile
# rung wastes 127 of each tile's 128 rows and still reads all of B; the floor is reading B once at
# copy speed (~22 us on an H100). So N = 1 (A @ x, A row-major) runs matvec's own ``auto`` on
# (M, K); M = 1 (x @ B) runs kernels/matvec.py's column kernel: a warp across 32 columns of B
# (coalesced along rows of B), K split among the block's warps and over grid y, and the last block
# of each column group adds the K ranges' partials (no second launch). Any other shape runs the column
# kernel one row of A a grid z slice (correct, each row re-reading B: only meant for small M).
def vector_launch(size, threads, params=None):
    """N = 1: matvec auto's launch for (M, K) (its own threads); else the column kernel: grid
    (ceil(N / 32), splits, M), block (32, threads // 32); split, the last block of each column group
    adds the partials (kernels.matvec.columns_split_kernel).
    Tunable (``lab tune``): ``splits``, K ranges (0: kernels.matvec.columns_plan's choice), and
    threads (the warps a block splits its K range among)."""
    from kernels import matvec as MV

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
    if m > MV.VM_MAX_ROWS:
        raise ValueError(f"M = {m}: the vector rung takes at most {MV.VM_MAX_ROWS} rows (grid z)")
    kchunk, splits = MV.columns_plan(k, n, threads, want, m)
    ty = MV.columns_block(threads)[1]
    what = (f"matvec rung: M = 1, x @ B: a warp across 32 columns of B, {plural(ty, 'warp')} down K" if m == 1 else
            f"M = {m}, N = {n}: not vector-shaped; the column kernel once a row of A (B re-read {m}x)")
    note = what + (f", {plural(splits, 'K range')} of {kchunk}, added by each column group's last block"
                   if splits > 1 else "")
    return Launch(grid=(blocks_for(n, WARP), splits, m), block=MV.columns_block(threads),
                  threads_needed=m * n * splits * MV.columns_block(threads)[1],
                  note=note, params=(("kchunk", kchunk), ("splits", splits)))  # what it gets (prepare reads it)


def vector_prepare(cfg, inputs, outputs):
    """N = 1: matvec auto on (A, B as a K-vector, C as an M-vector); else the column kernel."""
    from kernels import matvec as MV

    A, B = inputs
    (C,) = outputs
    (m, k), n = A.shape, B.shape[1]
    if n == 1:
        mv = MV.SPEC.variants["auto"]
        sub = mv.launch((m, k), cfg.block[0])
        return mv.prepare(sub, [A, B.reshape(k)], [C.reshape(m)])
    return MV.columns_prepare(A, B, C, cfg.threads_per_block, cfg.param["kchunk"])  # the launch math's plan


# --- Rungs 7-9: warp tiles, paired global loads, small tiles (one factory, tunable) ---------------
# S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance", kernels 6-10
# (vectorized shared loads, autotuned block tiles, bank-conflict-free layouts, warp tiling); the
# shape of cuBLAS's own FP32 kernel on sm_80/sm_90 (its name reads "tilesize128x128x8",
# "warpsize2x2x1", "ffma": 4 warps of 128 threads, 2 x 2 warps, each warp a 64 x 64 sub-tile,
# so 128 accumulators a thread). One compile-time factory, :func:`gemm_kernel`, builds every
# rung below from a :class:`GemmConfig`, so a tuner varies the tile without new code.
#
# The levels of the tiling (float32, the warp_tiled defaults):
#   block tile  BM x BN = 128 x 128, K in slabs of BK = 16 staged in shared memory;
#   warp tile   WM x WN = 64 x 64: the block's 4 warps as 2 x 2, each warp one quarter of C's tile;
#   warp sub-tiles: the warp tile as WMITER x WNITER = 1 x 4 sub-tiles of WSUBM x WSUBN = 64 x 16;
#   thread tile TM x TN = 8 x 4 in each sub-tile (the warp's 32 lanes as 8 rows x 4 columns),
#               so a thread holds (WMITER * TM) x (WNITER * TN) = 8 x 16 = 128 sums in registers.
#
# What the levels save, per k of a slab and per thread (register_tiled: 8 x 8 a thread, 4 LDS.128
# for 64 FMAs): 8 A words (2 LDS.128) and 16 B words (4 LDS.128) feed 128 FMAs, 21 FMAs per
# shared load instruction instead of 16, and 24 words per 128 FMAs (0.19 a FMA, register_tiled
# 0.25). Inside a warp the 32 lanes read only 8 distinct A addresses and 4 distinct B
# addresses of 16 bytes: the fragments are shared (broadcast) by the lanes of a row or a column,
# so each LDS.128 is one shared-memory wavefront per quarter warp (no bank conflict). Each block
# reuses a loaded element 128 times (BM = BN = 128) like register_tiled, but with 4 warps instead of
# 8 a block, so the barrier at each slab stops fewer warps and 2 blocks an SM keep 8 warps busy
# between one block's barriers.
# Knobs a tuner can turn (GemmConfig fields; TUNABLE lists the values worth trying):
#   bm, bn, bk      block tile and slab depth (shared memory: (1 or 2) x bk x (bm + pad + bn) words,
#                   at most 48 KB of static shared memory a block);
#   wm, wn, wniter  warp tile and its sub-tiles along N;
#   tm, tn          thread tile in a sub-tile (multiples of 4: LDS.128 fragments);
#   threads         threads a block (32 x warps; warps = (bm / wm) x (bn / wn));
#   pad             words after each row of the transposed A slab (0: 8-way-conflicting transposed
#                   stores; 4: conflict-free stores, rows still 16-byte aligned for LDS.128);
#   prefetch        double buffering: the next slab's global loads go to registers before this
#                   slab's FMAs, and into the second shared buffer after them (1 barrier a slab);
#                   off: one buffer, load, barrier, FMAs, barrier (2 barriers, no latency hidden);
#   pairs           float32 only: read A and B as float64 views (two float32 per 8-byte load),
#                   halving the global load instructions (needs K and N even, 8-byte aligned rows);
#   min_blocks      the launch bound (threads, min_blocks): registers a thread <= 65536 /
#                   (threads x min_blocks), at most 255.
GEMM_SMEM_LIMIT = 48 * 1024  # static shared memory a block (bytes); more needs dynamic shared memory


@dataclass(frozen=True)
class GemmConfig:
    """A compile-time configuration of :func:`gemm_kernel` (field meanings above). ``key`` writes all
    its fields in one string and :meth:`parse` reads it back: the key names the build in caches."""

    bm: int = 128
    bn: int = 128
    bk: int = 16
    wm: int = 64
    wn: int = 64
    wniter: int = 4
    tm: int = 8
    tn: int = 4
    threads: int = 128
    pad: int = 4
    prefetch: bool = True
    pairs: bool = False
    min_blocks: int = 2
    staged: bool = True  # the epilogue through shared memory where it fits (derived()["staged"])

    @property
    def key(self) -> str:
        """All fields, compactly: ``128x128x16_w64x64n4_t8x4_128t_pad4_db_x2_lb2`` (block tile and slab;
        warp tile, sub-tiles along N; thread tile; threads; pad; db/sb: double or single buffer;
        x2/x1: pairs or single loads; launch bound; ``_direct`` when the staged epilogue is off)."""
        return (f"{self.bm}x{self.bn}x{self.bk}_w{self.wm}x{self.wn}n{self.wniter}_t{self.tm}x{self.tn}_"
                f"{self.threads}t_pad{self.pad}_{'db' if self.prefetch else 'sb'}_{'x2' if self.pairs else 'x1'}_"
                f"lb{self.min_blocks}{'' if self.staged else '_direct'}")

    @property
    def label(self) -> str:
        """Short name for tables: ``128x128x16 w64x64/4 t8x4 128t pad4 db x2``."""
        return (f"{self.bm}x{self.bn}x{self.bk} w{self.wm}x{self.wn}/{self.wniter} t{self.tm}x{self.tn} "
                f"{self.threads}t pad{self.pad} {'db' if self.prefetch else 'sb'} {'x2' if self.pairs else 'x1'}"
                + ("" if self.staged else " direct"))

    def describe(self) -> str:
        """For Launch notes: ``128x128 tile (K slabs of 16), 64x64 a warp, 8x16 a thread, 2 buffers,
        8-byte loads``."""
        d = self.derived()
        return (f"{self.bm}x{self.bn} tile (K slabs of {self.bk}), {self.wm}x{self.wn} a warp, {d['rows']}x{d['cols']} "
                f"a thread, {d['bufs']} buffer{'s' if d['bufs'] > 1 else ''}, {4 * d['vec']}-byte loads")

    @classmethod
    def parse(cls, key: str) -> "GemmConfig":
        """The config whose :attr:`key` is ``key``; ValueError if it is not one."""
        import re

        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)_w(\d+)x(\d+)n(\d+)_t(\d+)x(\d+)_(\d+)t_pad(\d+)_(db|sb)_(x1|x2)_lb(\d+)(_direct)?",
                             key)
        if not match:
            raise ValueError(f"not a GemmConfig key: {key!r} (e.g. {cls().key})")
        g = match.groups()
        return cls(*map(int, g[:10]), prefetch=g[10] == "db", pairs=g[11] == "x2", min_blocks=int(g[12]),
                   staged=g[13] is None)

    def replace(self, **changes) -> "GemmConfig":
        return dataclasses.replace(self, **changes)

    def derived(self, itemsize: int = 4) -> dict:
        """The sizes the kernel is built from; ValueError naming the broken rule if the tile does not
        fit together (or its shared memory exceeds GEMM_SMEM_LIMIT for ``itemsize``-byte elements)."""
        def need(ok, why):
            if not ok:
                raise ValueError(f"GemmConfig {self.label}: {why}")
        def pow2(x):
            return x > 0 and x & (x - 1) == 0
        need(pow2(self.threads // WARP) and self.threads >= WARP, "threads must be 32 times a power of 2")
        need(pow2(self.bn // self.wn) and pow2(self.wn // self.wniter // self.tn), "bn / wn and the thread "
             "columns of a sub-tile (wn / wniter / tn) must be powers of 2")
        need(self.bm % self.wm == 0 and self.bn % self.wn == 0, "the warp tile must divide the block tile")
        warps = self.threads // WARP
        need((self.bm // self.wm) * (self.bn // self.wn) == warps,
             f"(bm / wm) x (bn / wn) = {(self.bm // self.wm) * (self.bn // self.wn)} warp tiles for {warps} warps")
        need(self.tm % 4 == 0 and self.tn % 4 == 0, "tm and tn must be multiples of 4 (LDS.128 fragments)")
        need(self.bk % 8 == 0 and self.pad % 4 == 0 and self.bn % 4 == 0, "bk must be a multiple of 8, pad and bn of 4")
        per_warp = WARP * self.tm * self.tn * self.wniter
        need(self.wn % self.wniter == 0 and (self.wm * self.wn) % per_warp == 0,
             "wm x wn must be a whole number of 32 x tm x tn x wniter")
        wmiter = self.wm * self.wn // per_warp
        need(wmiter >= 1 and self.wm % wmiter == 0, "the warp tile has no whole sub-tiles along M")
        wsubm, wsubn = self.wm // wmiter, self.wn // self.wniter
        need(wsubm % self.tm == 0 and wsubn % self.tn == 0, "sub-tiles must be whole thread tiles")
        tcols = wsubn // self.tn
        need(tcols * (wsubm // self.tm) == WARP, "a sub-tile must hold exactly 32 thread tiles")
        vec = 2 if self.pairs else 1
        need(self.bm * self.bk % (self.threads * vec) == 0 and self.bk * self.bn % (self.threads * vec) == 0,
             "each thread must copy a whole number of slab elements")
        need(self.bn % vec == 0 and self.threads % (8 // vec) == 0, "pairs need an even bn")
        bufs = 2 if self.prefetch else 1
        lda = self.bm + self.pad
        a_words, b_words = bufs * self.bk * lda, bufs * self.bk * self.bn
        smem = (a_words + b_words) * itemsize
        need(smem <= GEMM_SMEM_LIMIT, f"{smem} bytes of shared memory, over {GEMM_SMEM_LIMIT}")
        # The staged epilogue (see gemm_kernel) writes a warp sub-tile a warp into the A buffer, grown to
        # hold them where it is smaller, unless that passes the shared-memory limit or the registers
        # are short: 64 sums a thread under a 128-register launch bound (64x128x16) ran 0.74-0.88x
        # staged at K = 2048 on the H100 (scripts/gemm_rates.py); other tiles 0.97-1.12x there.
        rows, cols = wmiter * self.tm, self.wniter * self.tn
        stage = warps * wsubm * wsubn
        staged = (self.staged and stage % WARP == 0 and pow2(wsubn) and (max(a_words, stage) + b_words) * itemsize <= GEMM_SMEM_LIMIT
                  and not (rows * cols >= 64 and 65536 // (self.threads * self.min_blocks) <= 128))
        if staged:
            a_words = max(a_words, stage)
            smem = (a_words + b_words) * itemsize
        return dict(warps=warps, wmiter=wmiter, wsubm=wsubm, wsubn=wsubn, tcols=tcols, vec=vec, bufs=bufs, lda=lda,
                    smem=smem, staged=staged, a_words=a_words, a_loads=self.bm * self.bk // (self.threads * vec),
                    b_loads=self.bk * self.bn // (self.threads * vec), rows=rows, cols=cols)


if SIMULATOR:
    @cuda.jit(device=True)
    def _unpack_pair(v):
        """(low, high) float32 halves of the 8 bytes of float64 ``v`` (element k, then k + 1)."""
        w = np.array([v], np.float64).view(np.float32)
        return w[0], w[1]
else:
    from kernels.compiler import libdevice

    @cuda.jit(device=True, **FORCEINLINE)
    def _unpack_pair(v):
        """(low, high) float32 halves of the 8 bytes of float64 ``v``: two register moves
        (``mov.b64 {lo, hi}``), no arithmetic, so any bit pattern passes through unchanged."""
        return (libdevice.int_as_float(libdevice.double2loint(v)),
                libdevice.int_as_float(libdevice.double2hiint(v)))


_GEMM_BUILDS: dict = {}


def gemm_kernel(key: str):
    """The kernel built for the :class:`GemmConfig` whose ``key`` is given (compiled on first launch,
    cached here): ``kernel(A, B, W, kchunk)``, W[z] = A[:, Kz] @ B[Kz, :] for the K range
    Kz = [z * kchunk, min(K, (z + 1) * kchunk)) of grid z (one range: W is C viewed as (1, M, N)).

    A: (M, K), B: (K, N), W: (splits, M, N), one float dtype; with ``pairs`` A and B are float64
    views of float32 matrices, (M, K / 2) and (K, N / 2). kchunk: a multiple of bk.
    Launch: block (threads,), grid (ceil(N / bn), ceil(M / bm), splits). Thread t is lane l of warp
    w: the warp owns rows (w // (bn / wn)) * wm and columns (w % (bn / wn)) * wn of the block tile;
    in each of its WMITER x WNITER sub-tiles, lane l owns tm rows from (l // tcols) * tm and tn
    columns from (l % tcols) * tn. Rows and columns past an edge of A or B load the last one (clamped:
    the sums they feed are never stored), so edge blocks run the interior's loads; only a slab that
    crosses the end of the K range tests, reading 0 past it. Stores are guarded; where
    ``GemmConfig.derived()["staged"]``, they go through shared memory (each warp's sub-tile, then 32
    consecutive words of a row a store instruction: whole 32-byte sectors). ValueError (from
    GemmConfig.derived) for a config that does not fit together.
    """
    built = _GEMM_BUILDS.get(key)
    if built is not None:
        return built
    cfg = GemmConfig.parse(key)
    d = cfg.derived()
    BM, BN, BK, WM, WN, TM, TN = cfg.bm, cfg.bn, cfg.bk, cfg.wm, cfg.wn, cfg.tm, cfg.tn
    THREADS, PREFETCH, PAIRS = cfg.threads, cfg.prefetch, cfg.pairs
    WMITER, WNITER, WSUBM, WSUBN, TCOLS = d["wmiter"], cfg.wniter, d["wsubm"], d["wsubn"], d["tcols"]
    WCOLS = BN // WN  # warps along N
    WCOLS_SHIFT, TCOLS_SHIFT = WCOLS.bit_length() - 1, TCOLS.bit_length() - 1
    VEC, LDA, ROWS, COLS = d["vec"], d["lda"], d["rows"], d["cols"]
    A_LOADS, B_LOADS = d["a_loads"], d["b_loads"]
    A_SLAB, B_SLAB = BK * LDA, BK * BN  # words of one slab buffer
    A_BUFS, B_BUFS = d["a_words"], d["bufs"] * B_SLAB  # the A buffer may be larger: the staged epilogue
    A_KW = 8 // VEC  # loads along k that cover 8 k (a 32-byte sector of a row of A)
    A_RSTEP = THREADS // A_KW  # rows of A between a thread's consecutive slab loads
    BNV = BN // VEC  # loads along a row of the B slab
    ACC = ROWS * COLS
    A_HELD, B_HELD = A_LOADS * VEC, B_LOADS * VEC  # words a thread fetches a slab (local-array sizes)
    SUB = WSUBM * WSUBN  # words of one warp sub-tile of C
    STAGED = d["staged"]  # the epilogue through the A buffer (GemmConfig.derived says when)
    SUB_COLS_SHIFT = WSUBN.bit_length() - 1
    bounds = {} if SIMULATOR else {"launch_bounds": (THREADS, cfg.min_blocks)}

    @cuda.jit(device=True, **FORCEINLINE)
    def load_a(A, M, k_end, r, kc, zero, guard):
        """A's element at row r, column kc (with pairs: kc and kc + 1, kc even), as (lo, hi). A row
        past M reads row M - 1 (clamped: the sums it feeds are never stored), so an edge block runs
        the interior's code; 0 past the K range when ``guard`` (a literal at each call: no test
        when False)."""
        r = min(r, M - 1)
        if PAIRS:
            v = A[uint64(r), uint64(kc >> 1)] if not guard or kc < k_end else A.dtype.type(0)
            return _unpack_pair(v)
        v = A[uint64(r), uint64(kc)] if not guard or kc < k_end else zero
        return v, zero

    @cuda.jit(device=True, **FORCEINLINE)
    def load_b(B, N, k_end, kr, c, zero, guard):
        """B's element at row kr, column c (with pairs: c and c + 1), as :func:`load_a`: a column
        past N reads the last one (or pair)."""
        c = min(c, N - VEC)
        if PAIRS:
            v = B[uint64(kr), uint64(c >> 1)] if not guard or kr < k_end else B.dtype.type(0)
            return _unpack_pair(v)
        v = B[uint64(kr), uint64(c)] if not guard or kr < k_end else zero
        return v, zero

    # Slab copy, load i of thread t: A (m, k) = (row % BM, (row // BM) * 8 + (t % A_KW) * VEC) with
    # row = t // A_KW + i * A_RSTEP: a warp reads 8 k (32 bytes, one sector) of each of 32 / A_KW rows,
    # and its transposed stores As[k][m] fall in 32 different banks (pad = 4). B (k, n) from element
    # e = i * THREADS + t: (e // BNV, (e % BNV) * VEC), a warp along one row (128 or 256 bytes).
    @cuda.jit(device=True, **FORCEINLINE)
    def fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k0, t, zero, guard):
        """Slab k0's elements of this thread into registers (a_next, b_next)."""
        for i in range(A_LOADS):
            row = t // A_KW + i * A_RSTEP
            lo, hi = load_a(A, M, k_end, m0 + row % BM, k0 + (row // BM) * 8 + (t % A_KW) * VEC, zero, guard)
            a_next[i * VEC] = lo
            if PAIRS:
                a_next[i * VEC + 1] = hi
        for i in range(B_LOADS):
            e = i * THREADS + t
            lo, hi = load_b(B, N, k_end, k0 + e // BNV, n0 + (e % BNV) * VEC, zero, guard)
            b_next[i * VEC] = lo
            if PAIRS:
                b_next[i * VEC + 1] = hi

    @cuda.jit(device=True, **FORCEINLINE)
    def store(As, Bs, a_next, b_next, a_off, b_off, t):
        """This thread's fetched elements into the slab buffers at a_off (As) and b_off (Bs)."""
        for i in range(A_LOADS):
            row = t // A_KW + i * A_RSTEP
            at = a_off + ((row // BM) * 8 + (t % A_KW) * VEC) * LDA + row % BM
            As[uint64(at)] = a_next[i * VEC]
            if PAIRS:
                As[uint64(at + LDA)] = a_next[i * VEC + 1]
        for i in range(B_LOADS):
            e = i * THREADS + t
            bt = b_off + (e // BNV) * BN + (e % BNV) * VEC
            Bs[uint64(bt)] = b_next[i * VEC]
            if PAIRS:
                Bs[uint64(bt + 1)] = b_next[i * VEC + 1]

    @cuda.jit(device=True, **FORCEINLINE)
    def mac_k(As, Bs, a_rd, b_rd, a_frag, b_frag, acc):
        """One k: the thread's ROWS A values (TM contiguous words in each of WMITER sub-tiles, from
        a_rd in the transposed A slab) and COLS B values (from b_rd), then ROWS x COLS FMAs."""
        for wi in range(WMITER):
            for i in range(TM):
                a_frag[wi * TM + i] = As[uint64(a_rd + wi * WSUBM + i)]
        for wj in range(WNITER):
            for j in range(TN):
                b_frag[wj * TN + j] = Bs[uint64(b_rd + wj * WSUBN + j)]
        for x in range(ROWS):
            for y in range(COLS):
                acc[x * COLS + y] += a_frag[x] * b_frag[y]

    @cuda.jit(**bounds)
    def kernel(A, B, W, kchunk):
        As = cuda.shared.array(A_BUFS, W.dtype, alignment=ALIGN)  # As[k][m]: A's slab, transposed
        Bs = cuda.shared.array(B_BUFS, W.dtype, alignment=ALIGN)  # Bs[k][n]
        acc = cuda.local.array(ACC, W.dtype)  # indexed only by unrolled loops: registers
        a_frag = cuda.local.array(ROWS, W.dtype)
        b_frag = cuda.local.array(COLS, W.dtype)
        a_next = cuda.local.array(A_HELD, W.dtype)
        b_next = cuda.local.array(B_HELD, W.dtype)
        M = A.shape[0]
        K = A.shape[1] * VEC
        N = B.shape[1] * VEC
        zero = W.dtype.type(0)
        # Shifts and masks, not // and %: Python's floor semantics for signed ints cost instructions
        # and hide from the compiler that a_rd0 and b_rd0 are multiples of 4 (no LDS.128 then).
        t = cuda.threadIdx.x & (THREADS - 1)
        warp = t >> 5
        lane = t & 31
        a_rd0 = (warp >> WCOLS_SHIFT) * WM + (lane >> TCOLS_SHIFT) * TM  # the thread's first row in the tile
        b_rd0 = (warp & (WCOLS - 1)) * WN + (lane & (TCOLS - 1)) * TN  # its first column
        m0 = cuda.blockIdx.y * BM
        n0 = cuda.blockIdx.x * BN
        k_begin = cuda.blockIdx.z * kchunk
        k_end = min(K, k_begin + kchunk)
        for i in range(ACC):
            acc[i] = zero
        n_slabs = (k_end - k_begin + BK - 1) // BK
        if PREFETCH:  # slab 0 into buffer 0
            fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k_begin, t, zero, True)
            store(As, Bs, a_next, b_next, 0, 0, t)
            cuda.syncthreads()
        for s in range(n_slabs):
            k0 = k_begin + s * BK
            a_cur = (s & 1) * A_SLAB if PREFETCH else 0
            b_cur = (s & 1) * B_SLAB if PREFETCH else 0
            more = PREFETCH and s + 1 < n_slabs
            if more:  # the next slab's global loads, in flight during this slab's FMAs
                if k0 + 2 * BK <= k_end:  # the next slab lies inside the K range: no tests
                    fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k0 + BK, t, zero, False)
                else:
                    fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k0 + BK, t, zero, True)
            if not PREFETCH:  # one buffer: load this slab, wait, compute, wait
                if k0 + BK <= k_end:
                    fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k0, t, zero, False)
                else:
                    fetch(A, B, a_next, b_next, M, N, k_end, m0, n0, k0, t, zero, True)
                store(As, Bs, a_next, b_next, 0, 0, t)
                cuda.syncthreads()
            # The slab's k eight at a time, unrolled by hand (Numba has no #pragma unroll): in each
            # group every shared address is one base register plus a constant.
            for kk in range(0, BK, 8):
                a_rd = a_cur + kk * LDA + a_rd0
                b_rd = b_cur + kk * BN + b_rd0
                mac_k(As, Bs, a_rd, b_rd, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + LDA, b_rd + BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 2 * LDA, b_rd + 2 * BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 3 * LDA, b_rd + 3 * BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 4 * LDA, b_rd + 4 * BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 5 * LDA, b_rd + 5 * BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 6 * LDA, b_rd + 6 * BN, a_frag, b_frag, acc)
                mac_k(As, Bs, a_rd + 7 * LDA, b_rd + 7 * BN, a_frag, b_frag, acc)
            if more:  # the other buffer was last read before the previous barrier: free to fill
                store(As, Bs, a_next, b_next, A_SLAB - a_cur, B_SLAB - b_cur, t)
            cuda.syncthreads()
        z = cuda.blockIdx.z
        if not STAGED:  # each thread stores its own sums: 4-byte stores tn words apart
            for x in range(ROWS):
                r = m0 + a_rd0 + (x // TM) * WSUBM + x % TM
                if r < M:
                    for y in range(COLS):
                        c = n0 + b_rd0 + (y // TN) * WSUBN + y % TN
                        if c < N:
                            W[z, r, c] = acc[x * COLS + y]
            return
        # The epilogue through shared memory, a warp sub-tile at a time: the threads of a warp write
        # their TM x TN sums of the sub-tile into the warp's own WSUBM x WSUBN stage (in the A slab
        # buffers, free after the last barrier), then the warp stores the stage row by row, 32
        # consecutive words of C a store instruction (whole 32-byte sectors). Stored directly, a
        # warp's store instruction wrote 4 bytes of each of 16 sectors (lanes tn words apart), and
        # at short K the stores set the time: 0.135 ms for a 4096 x 4224 x 32 product (128 x 128
        # tiles, H100), 0.5 TB/s of C.
        stage = warp * SUB
        lrow = (lane >> TCOLS_SHIFT) * TM
        lcol = (lane & (TCOLS - 1)) * TN
        for wi in range(WMITER):
            for wj in range(WNITER):
                for i in range(TM):
                    for j in range(TN):
                        As[uint64(stage + (lrow + i) * WSUBN + lcol + j)] = acc[(wi * TM + i) * COLS + wj * TN + j]
                if SIMULATOR:  # the simulator has no syncwarp; every warp runs this loop alike
                    cuda.syncthreads()
                else:
                    cuda.syncwarp()
                r0 = m0 + a_rd0 - lrow + wi * WSUBM
                c0 = n0 + b_rd0 - lcol + wj * WSUBN
                for q in range(SUB // WARP):
                    e = q * WARP + lane
                    r = r0 + (e >> SUB_COLS_SHIFT)
                    c = c0 + (e & (WSUBN - 1))
                    if r < M and c < N:
                        W[z, r, c] = As[uint64(stage + e)]
                if SIMULATOR:  # the simulator has no syncwarp; every warp runs this loop alike
                    cuda.syncthreads()
                else:
                    cuda.syncwarp()

    _GEMM_BUILDS[key] = kernel
    return kernel


# The rungs' configurations (module level, so a tuner or a test can swap them). float64 builds keep
# the tile where the registers allow (small) and use 64 x 64 tiles where 128 float64 sums a thread
# would not fit in 255 registers (warp_tiled, wide_loads): their Launch describes the float32 build.
WARP_TILED = GemmConfig()  # 128 x 128 x 16, 4 warps of 64 x 64, 8 x 16 sums a thread (cuBLAS's shape)
WARP_TILED_F64 = GemmConfig(bm=64, bn=64, bk=8, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=128)
WIDE_LOADS = WARP_TILED.replace(pairs=True)
# small: the first tile (largest) that gives at least SMALL_MIN_BLOCKS_PER_SM blocks an SM, else the last
SMALL_CONFIGS = (
    GemmConfig(bm=64, bn=64, bk=16, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=128, pairs=True, min_blocks=4),
    GemmConfig(bm=32, bn=64, bk=16, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=64, pairs=True, min_blocks=8),
    GemmConfig(bm=32, bn=32, bk=32, wm=32, wn=16, wniter=1, tm=4, tn=4, threads=64, pairs=True, min_blocks=8),
)
SMALL_MIN_BLOCKS_PER_SM = 1
SMALL_MAX_FLOPS = 1 << 27  # the shapes the small rung is for (the issue's "under 2^27 FLOPs")

# What a tuner may vary (``lab tune``; Variant.tunables of warp_tiled and wide_loads): the block
# tile, from GEMM_TILES (tile, slab depth, warp and thread tiles, threads, shared-memory stages:
# 2 buffers or 1), and the split-K factor (grid z, then the reduction launch). Each entry passes
# GemmConfig.derived; launch math that could not pay (a tile twice the matrix, a split of a grid
# that already fills the SMs, K ranges under two slabs) raises ValueError: not a candidate.
GEMM_TILES = {
    "128x128x16": WARP_TILED,  # 4 warps of 64 x 64, 8 x 16 sums a thread
    "128x128x8": WARP_TILED.replace(bk=8),
    "128x128x16-sb": WARP_TILED.replace(prefetch=False),  # one shared buffer: 2 barriers a slab
    # each thread stores its own 128 sums (no staged epilogue): 4096^3 3.133 ms against 3.213 staged
    # (H100, 3 alternating rounds: docs/benchmarks.md); staged wins at short K (gemm_rates.py)
    "128x128x16-direct": WARP_TILED.replace(staged=False),
    "256x128x8": WARP_TILED.replace(bm=256, bk=8, threads=256, min_blocks=1),  # 8 warps
    "128x64x16": WARP_TILED.replace(bn=64, wn=32, wniter=2, min_blocks=3),  # 8 x 8 a thread
    "64x128x16": GemmConfig(bm=64, bn=128, bk=16, wm=32, wn=64, wniter=4, tm=4, tn=4, threads=128, min_blocks=4),
    "64x64x16": SMALL_CONFIGS[0].replace(pairs=False),  # 4 x 8 a thread
    "64x64x32": SMALL_CONFIGS[0].replace(bk=32, pairs=False),
    "128x32x16": GemmConfig(bm=128, bn=32, bk=16, wm=64, wn=32, wniter=2, tm=8, tn=4, threads=64, min_blocks=4),
    "32x64x16": SMALL_CONFIGS[1].replace(pairs=False),
    "32x32x32": SMALL_CONFIGS[2].replace(pairs=False),
}
GEMM_SPLITS = (1, 2, 4, 8, 16, 32, 64, 128)
TUNABLE = {
    "warp_tiled": {"tile": tuple(GEMM_TILES), "splits": GEMM_SPLITS},
    "wide_loads": {"tile": tuple(GEMM_TILES), "splits": GEMM_SPLITS},  # pairs where K and N are even
    "small": {"configs": "SMALL_CONFIGS (the largest tile that gives every SM a block)"},
}


def gemm_config(rung: str, size, dtype=np.float32) -> GemmConfig:
    """The configuration ``rung`` (warp_tiled, wide_loads, small) runs at M x N x K in ``dtype``;
    float64 and odd K or N read single elements (pairs off)."""
    m, n, k = size
    f64 = np.dtype(dtype) == np.float64
    if rung == "small":
        sms = sm_count()
        cfg = next((c for c in SMALL_CONFIGS if blocks_for(m, c.bm) * blocks_for(n, c.bn) >= SMALL_MIN_BLOCKS_PER_SM * sms),
                   SMALL_CONFIGS[-1])
    elif f64:
        cfg = WARP_TILED_F64
    else:
        cfg = {"warp_tiled": WARP_TILED, "wide_loads": WIDE_LOADS}[rung]
    if cfg.pairs and (f64 or k % 2 or n % 2):
        cfg = cfg.replace(pairs=False)
    if f64 and rung == "small":  # float64 values take two registers: a looser launch bound, no spills
        cfg = cfg.replace(min_blocks=max(1, cfg.min_blocks // 2))
    return cfg


def _axis_threads_with_work(extent, tile, warp_tile, sub, iters, per_thread, lanes):
    """Threads along one axis (rows or columns) of a gemm grid whose tile holds at least one element
    inside ``extent``: a thread's first element is the smallest it owns, so it has work when that
    first element is inside."""
    full, rest = divmod(extent, tile)
    count = full * (tile // per_thread // iters)
    for w0 in range(0, tile, warp_tile):  # the partial last block
        for lane in range(lanes):
            count += w0 + lane * per_thread < rest
    return count


def gemm_launch_config(cfg: GemmConfig, size, splits: int = 1, note: str = "") -> Launch:
    """grid (ceil(N / bn), ceil(M / bm), splits), block (threads,) for one gemm_kernel build."""
    m, n, _ = size
    d = cfg.derived()
    rows = _axis_threads_with_work(m, cfg.bm, cfg.wm, d["wsubm"], d["wmiter"], cfg.tm, WARP // d["tcols"])
    cols = _axis_threads_with_work(n, cfg.bn, cfg.wn, d["wsubn"], cfg.wniter, cfg.tn, d["tcols"])
    return Launch(grid=(blocks_for(n, cfg.bn), blocks_for(m, cfg.bm), splits), block=(cfg.threads,),
                  threads_needed=rows * cols * splits, note=note)


def _pairs_ok(a) -> bool:
    """A float32 matrix can be read as a float64 view: C-contiguous, even row length, 8-byte aligned."""
    if a.shape[len(a.shape) - 1] % 2:
        return False
    flags = getattr(a, "flags", None)
    if flags is not None and not flags["C_CONTIGUOUS"]:
        return False
    ptr = getattr(getattr(a, "device_ctypes_pointer", None), "value", None)
    return SIMULATOR or ptr is None or ptr % 8 == 0


def gemm_prepare_config(cfg: GemmConfig, inputs, outputs, splits: int = 1):
    """The enqueue function of one gemm_kernel build on device arrays (A, B) -> (C,): with
    ``splits`` > 1 it writes splits partial C's into a workspace and adds them in a second launch.
    Pairs fall back to single loads when an input cannot be viewed as float64."""
    A, B = inputs
    (C,) = outputs
    m, n = C.shape
    k = A.shape[1]
    if cfg.pairs and not (A.dtype == np.float32 and _pairs_ok(A) and _pairs_ok(B)):
        cfg = cfg.replace(pairs=False)
    if cfg.pairs:
        A, B = A.view(np.float64), B.view(np.float64)
    kchunk, splits = k_ranges(k, splits, cfg.bk)
    launch = gemm_launch_config(cfg, (m, n, k), splits)
    return split_k_enqueue(gemm_kernel(cfg.key)[launch.grid, launch.block], A, B, C, splits, kchunk)


def _gemm_launch(rung):
    """The launch math of a gemm rung: its float32 configuration for the size
    (:func:`gemm_config`), block (threads,) fixed by the configuration whatever ``threads`` is; the
    note names the configuration (and the float64 one, where it differs)."""
    def launch(size, threads):
        cfg = gemm_config(rung, size)
        note = cfg.describe()
        if rung == "wide_loads" and not cfg.pairs:
            note += " (K or N odd)"
        if rung != "small":
            note += f"; float64: {WARP_TILED_F64.bm}x{WARP_TILED_F64.bn} tiles"
        if threads != cfg.threads:
            note += f"; block fixed at {cfg.threads} threads, --threads {threads} ignored"
        return gemm_launch_config(cfg, size, note=note)
    return launch


def tuned_gemm_config(rung: str, size, params: dict, dtype=np.float32) -> tuple[GemmConfig, int]:
    """(config, splits) of a gemm rung with tunable ``params`` ({"tile": a GEMM_TILES name,
    "splits": K ranges}; missing ones: :func:`gemm_config`'s tile, 1 range). Pairs as the rung
    (wide_loads: where K and N are even); float64 keeps the tile where its sums fit in registers
    (at most 64 a thread), else WARP_TILED_F64. ValueError for a value it cannot run or that cannot
    pay at this size (see GEMM_TILES)."""
    m, n, k = size
    name = params.get("tile")
    if name is None:
        cfg = gemm_config(rung, size, dtype)
    elif name not in GEMM_TILES:
        raise ValueError(f"tile={name!r}: one of {', '.join(GEMM_TILES)}")
    else:
        cfg = GEMM_TILES[name].replace(pairs=rung == "wide_loads" and np.dtype(dtype) == np.float32
                                       and k % 2 == 0 and n % 2 == 0)
        if cfg.bm > max(32, 2 * m) or cfg.bn > max(32, 2 * n):
            raise ValueError(f"tile {name} is more than twice the {m} x {n} output")
        if np.dtype(dtype) == np.float64:
            d = cfg.derived()
            if d["rows"] * d["cols"] > 64:
                cfg = WARP_TILED_F64
    splits = params.get("splits", 1)
    if not isinstance(splits, int) or splits < 1:
        raise ValueError(f"splits={splits!r}: a count of K ranges (1: no split)")
    if splits > 1:
        tiles = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn)
        if tiles >= 2 * sm_count():
            raise ValueError(f"{tiles} tiles fill the SMs without splitting K")
        if blocks_for(k, splits) < 2 * cfg.bk:
            raise ValueError(f"K = {k} in {splits} ranges: under two slabs of {cfg.bk} a range")
    return cfg, splits


def _gemm_launch_with(rung):
    """Launch math with tunables (``lab tune``): the tile and the split-K factor of
    :func:`tuned_gemm_config`; Launch.params carries them to the prepare."""
    def launch_with(size, threads, params):
        cfg, splits = tuned_gemm_config(rung, size, params)
        kchunk, splits = k_ranges(size[2], splits, cfg.bk)
        note = cfg.describe() + (f"; {splits} K ranges of {kchunk}, then a reduction launch" if splits > 1 else "")
        if threads != cfg.threads:
            note += f"; block fixed at {cfg.threads} threads, --threads {threads} ignored"
        chosen = {"tile": params.get("tile"), "splits": splits if splits > 1 else None}
        launch = gemm_launch_config(cfg, size, splits, note)
        return dataclasses.replace(launch, params=tuple(sorted((k, v) for k, v in chosen.items() if v is not None)))
    return launch_with


def _gemm_prepare(rung, size, inputs, outputs, params=None):
    A, B = inputs
    if params:
        cfg, splits = tuned_gemm_config(rung, size, params, A.dtype)
        return gemm_prepare_config(cfg, inputs, outputs, splits)
    return gemm_prepare_config(gemm_config(rung, size, A.dtype), inputs, outputs)


def _size_of(inputs):
    A, B = inputs
    return A.shape[0], B.shape[1], A.shape[1]


def warp_tiled_prepare(cfg, inputs, outputs):
    """Rung 7: warp tiles (:data:`WARP_TILED`: a 128 x 128 block tile of 4 warps, each warp 64 x 64,
    8 x 16 sums a thread; float64: :data:`WARP_TILED_F64`). Saves over register_tiled: shared-memory
    load instructions per FMA, 1/16 -> 1/21 (6 LDS.128 feed 128 FMAs; the sub-tile layout keeps each
    fragment load one wavefront per quarter warp); half the threads a block, so a barrier stalls 4
    warps instead of 8. Costs: 128 sums need ~247 registers (offline compile for sm_90, numba-cuda
    LTO-IR + nvJitLink: 247 registers, 0 spills, 33 KB shared), so 2 blocks (8 warps) an SM against
    register_tiled's 16 warps: each warp must hide more latency with its own 128 independent FMAs.
    PTX per group of 8 k: 1024 FMAs, 46 ld.shared.v4 and 4 scalar ld.shared (NVVM splits the first
    k's first 16 bytes of A and of B; register_tiled: none split).
    Predicted on the H100 at 4096^3: 38-46 TFLOP/s (register_tiled 40, cuBLAS 51: the same
    per-thread shape as cuBLAS's FFMA kernel). Not yet measured: scripts/sgemm_gpu.py."""
    return _gemm_prepare("warp_tiled", _size_of(inputs), inputs, outputs, cfg.param)


def wide_loads_prepare(cfg, inputs, outputs):
    """Rung 8: warp_tiled whose global loads read two float32 at once, through float64 views of A
    (M x K/2) and B (K x N/2): ``double2loint``/``double2hiint`` split each 8-byte value into its two
    words in registers (no arithmetic). Numba's 4-byte loads were a named limit: a float32 array's
    rows cannot be promised 8- or 16-byte aligned, but a float64 view's elements are. Saves: half
    the global load instructions (16 -> 8 LDG a slab a thread, as many bytes) and half the address
    arithmetic; the B slab's shared stores pair up too (STS.64). Needs even K and N and 8-byte aligned
    matrices (else: warp_tiled's single loads, said in the Launch note); float64: warp_tiled.
    Offline compile for sm_90: 255 registers, 0 spills. Predicted on the H100: 0-5% over warp_tiled at
    4096^3 (global loads are 1/64 of the instructions there), more where loads weigh more (short K:
    3000 x 3000 x 40 runs 3 slabs a tile). Not yet measured."""
    return _gemm_prepare("wide_loads", _size_of(inputs), inputs, outputs, cfg.param)


def small_prepare(cfg, inputs, outputs):
    """Rung 9: small matrices (under 2^27 FLOPs: 300^3 is 0.4 x 2^27). One launch, one block per
    output tile, each block running the whole K itself (no split-K workspace, no reduction launch),
    and the tile is the largest of :data:`SMALL_CONFIGS` (64 x 64, 32 x 64, 32 x 32) that gives every
    SM a block: at 300^3 a 128 x 128 tile gives 9 blocks for 132 SMs, 64 x 64 gives 25, 32 x 32 gives
    100. Saves over register_tiled / tile64 there: idle SMs (the work is spread over 4-11x the
    blocks); costs: reuse (an element loaded feeds 32-64 FMAs, not 128), which small shapes can
    afford as their operands sit in L2. Pairs as wide_loads. Offline compile for sm_90: 119-127
    registers, 0 spills, 13-17 KB shared. Predicted on the H100: 300^3 and 512^3 from 0.50x and
    0.65x of cuBLAS to ~0.7-0.9x (launch latency, ~3-5 us, is most of a 300^3 call). Not yet measured."""
    return _gemm_prepare("small", _size_of(inputs), inputs, outputs)


# --- auto: a launch model (wave quantization, measured tiles) -------------------------------------------
# cuBLAS picks a kernel per shape from a model of its kernels (the tile, the split-K factor, how many
# waves of blocks the SMs run); a fixed tile for a class of shapes cannot: 1024^3 wants 128 x 64 tiles
# (128 blocks: one an SM), 777 x 1333 x 901 then runs 147 blocks, 15 SMs doing two, and wants 32 x 64.
# So auto estimates each candidate (block tile, K ranges) from what the tiles measured on the H100:
# RATES[tile][r] = (ms at K = 32, 256, 2048) of a grid of exactly r blocks an SM (r x SMs tiles,
# wide_loads' build, the staged epilogue; ``python scripts/gemm_rates.py``, 2026-11-23).
# A shape's estimate: r = ceil(blocks / SMs) (the busiest SM's blocks), the K range's time
# interpolated between the measured K's (and r's; past r = 8 in proportion), plus the reduction
# launch when K is split. On another GPU the same per-SM times are assumed (only the SM count
# changes): a ranking of the candidates, not a prediction of its ms.
RATE_KS = (32, 256, 2048)
RATES = {
    "128x128x16": {1: (0.0170, 0.0430, 0.2505), 2: (0.0224, 0.0669, 0.4166), 3: (0.0334, 0.1032, 0.8291),
                   4: (0.0396, 0.1275, 0.8304), 6: (0.0570, 0.1884, 1.2387), 8: (0.0745, 0.2493, 1.6481)},
    "128x64x16": {1: (0.0104, 0.0252, 0.1410), 2: (0.0139, 0.0388, 0.2337), 3: (0.0172, 0.0525, 0.3330),
                  4: (0.0219, 0.0713, 0.5532), 6: (0.0292, 0.0997, 0.6572), 8: (0.0376, 0.1314, 0.8763)},
    "128x128x8": {1: (0.0164, 0.0429, 0.2506), 2: (0.0220, 0.0678, 0.4284), 3: (0.0329, 0.1038, 0.6701),
                4: (0.0391, 0.1304, 0.8506), 6: (0.0568, 0.1926, 1.6644), 8: (0.0743, 0.2564, 1.7001)},
    "256x128x8": {1: (0.0212, 0.0654, 0.4175), 2: (0.0387, 0.1271, 0.8322), 3: (0.0560, 0.1884, 1.2424),
                4: (0.0732, 0.2507, 1.6550), 6: (0.1077, 0.3737, 2.4808), 8: (0.1419, 0.4949, 3.3061)},
    "128x32x16": {1: (0.0107, 0.0261, 0.1503), 2: (0.0109, 0.0294, 0.1684), 3: (0.0139, 0.0418, 0.2581),
                4: (0.0145, 0.0443, 0.2707), 6: (0.0225, 0.0809, 0.5267), 8: (0.0244, 0.0831, 0.5395)},
    "64x64x16": {1: (0.0082, 0.0187, 0.1007), 2: (0.0097, 0.0275, 0.1673), 3: (0.0111, 0.0338, 0.2142),
                 4: (0.0126, 0.0411, 0.2693), 6: (0.0183, 0.0679, 0.4227), 8: (0.0207, 0.0776, 0.5310)},
    "32x64x16": {1: (0.0085, 0.0178, 0.0965), 2: (0.0082, 0.0193, 0.1049), 3: (0.0099, 0.0262, 0.1537),
                 4: (0.0100, 0.0276, 0.1657), 6: (0.0116, 0.0356, 0.2265), 8: (0.0129, 0.0444, 0.2902)},
    "32x32x32": {1: (0.0064, 0.0118, 0.0553), 2: (0.0066, 0.0130, 0.0643), 3: (0.0071, 0.0162, 0.0877),
                 4: (0.0074, 0.0184, 0.0991), 6: (0.0083, 0.0232, 0.1363), 8: (0.0092, 0.0285, 0.1786)},
}
MODEL_SPLITS = (1, 2, 4, 8, 16, 32, 64)
REDUCE_MS = 0.005  # the reduction launch: a fixed cost ... (scripts/gemm_rates.py: 5.1 us for 2 x 4096
REDUCE_BYTES_PER_MS = 1.2e9  # words, 57 us for 16 x 2^20) ... and its bytes (splits + 1 arrays) at 1.2 TB/s


def _interp(x, xs, ys) -> float:
    """ys at x, linear between the points xs (increasing), and past the last two in their slope."""
    for i in range(1, len(xs)):
        if x <= xs[i] or i == len(xs) - 1:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def wave_ms(tile: str, per_sm: int, k: int) -> float:
    """Estimated ms of a grid of ``tile`` blocks, ``per_sm`` on the busiest SM, each running K = k:
    RATES interpolated in K (at least the K = 32 time) and in r (past the last r, in proportion)."""
    rows = RATES[tile]
    rs = sorted(rows)
    at = {r: max(rows[r][0], _interp(k, RATE_KS, rows[r])) for r in rs}
    if per_sm >= rs[-1]:
        return at[rs[-1]] * per_sm / rs[-1]
    return _interp(per_sm, rs, [at[r] for r in rs])


def reduce_ms(splits: int, elements: int, itemsize: int = 4) -> float:
    """Estimated ms of the reduction launch over ``splits`` partials of ``elements`` words."""
    return REDUCE_MS + (splits + 1) * elements * itemsize / REDUCE_BYTES_PER_MS


def model_ms(size, tile: str, splits: int = 1) -> float | None:
    """Estimated ms of wide_loads with ``tile`` and ``splits`` K ranges at M x N x K (float32), or None
    where :func:`tuned_gemm_config` refuses the pair (a tile twice the output, a split of a grid that
    fills the SMs, K ranges under two slabs)."""
    m, n, k = size
    try:
        cfg, splits = tuned_gemm_config("wide_loads", size, {"tile": tile, "splits": splits})
    except ValueError:
        return None
    kchunk, splits = k_ranges(k, splits, cfg.bk)
    blocks = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn) * splits
    est = wave_ms(tile, blocks_for(blocks, sm_count()), kchunk)
    return est + (reduce_ms(splits, m * n) if splits > 1 else 0.0)


@functools.lru_cache(maxsize=4096)
def _model_pick(size, sms: int) -> tuple:
    """(estimated ms, tile, splits) of the fastest candidate :func:`model_ms` estimates at ``size`` on
    ``sms`` SMs. Remembered per (size, SMs): the 56 estimates take ~0.5 ms, and a torch op runs
    auto's launch math on every call."""
    return min((est, tile, s) for tile in RATES for s in MODEL_SPLITS if (est := model_ms(size, tile, s)) is not None)


def choose(size):
    """(rung, threads, why, params) for M x N x K, like cuBLAS's choice among its kernels:

    * N = 1 or M = 1: vector (a matrix-vector product: matvec's auto, or the column kernel);
    * else wide_loads with the block tile (of RATES) and K ranges (MODEL_SPLITS) that
      :func:`model_ms` estimates fastest: the busiest SM's blocks, the K range's time, the reduction.
    Measured on the H100 (2026-11-23, torch.matmul ms / auto ms, TF32 off), the fixed rules this
    replaced: 1024^3 0.70x (small: 64 x 64 tiles, 2 an SM at 12% occupancy; cuBLAS ran 128 x 64 tiles,
    one an SM), 777 x 1333 x 901 0.59x (64 x 64: 273 blocks, 3 on some SMs; cuBLAS 32 x 64, 525
    blocks), 2500 x 17 x 3000 0.43x (64 x 64 split_k: 47 of each tile's 64 columns idle).
    ``lab tune`` measures instead, for each shape class (kernels/tuned/).
    """
    m, n, k = size
    if n == 1:  # the threads are matvec auto's own choice (the launch note names them)
        return "vector", 256, "N = 1: a matrix-vector product, A @ x"
    sms = sm_count()
    if m == 1:  # few column blocks (N < 16 x SMs): 32 warps a block down K keep more loads in flight
        t = 256 if 2 * blocks_for(n, WARP) >= sms else 1024
        return "vector", t, "M = 1: a vector-matrix product, x @ B"
    est, tile, splits = _model_pick(tuple(size), sms)
    cfg = GEMM_TILES[tile]
    blocks = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn) * splits
    why = (f"launch model: {tile} tiles" + (f", {splits} K ranges" if splits > 1 else "")
           + f", {plural(blocks, 'block')} for {sms} SMs, ~{est * 1e3:.0f} us estimated")
    return "wide_loads", cfg.threads, why, {"tile": tile, "splits": splits}


# --- Reference, sizes, accounting -------------------------------------------------------------
def reference(A, B):
    """NumPy: (A @ B,)."""
    return (A @ B,)


def make_inputs(size, dtype, rng):
    m, n, k = size
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


RUNGS = {
    "naive": Variant(
        "naive", "one thread per C element; 2 global loads per FMA (coalesced along rows of B and C)",
        naive_launch, launch_once(naive_kernel)),
    "shared": Variant(
        "shared", f"{TPB}x{TPB} shared-memory tiles (block fixed at {TPB * TPB} threads); "
        f"global loads per FMA / {TPB}", shared_launch, launch_once(shared_kernel)),
    "register_tiled": Variant(
        "register_tiled", f"{BM}x{BN} block tile, 8x8 register micro-tile per thread, double-buffered "
        f"shared slabs (block fixed at {RT_THREADS} threads)", register_tiled_launch, register_tiled_prepare,
        tunables={"bk": (8, 16, 32), "min_blocks": (1, 2)}, launch_with=register_tiled_launch),
    "tile64": Variant(
        "tile64", f"{T_BM}x{T_BN} block tile, 4x4 register micro-tile, double-buffered (block fixed at "
        f"{T_THREADS} threads): 4x the blocks of register_tiled", tile64_launch, tile64_prepare,
        tunables={"bm": (32, 64, 128), "bn": (32, 64, 128)}, launch_with=tile64_launch),
    "split_k": Variant(
        "split_k", "tile64 over K ranges (grid z), then a reduction launch: for small M x N with long K",
        split_k_launch, split_k_prepare,
        tunables={"splits": (0, 2, 4, 8, 16, 32, 64), "bm": (32, 64), "bn": (32, 64)},
        launch_with=split_k_launch),
    "skinny_m": Variant(
        "skinny_m", "M <= 32: a column of C per thread, 32 sums in registers, B streamed once; split K",
        skinny_m_launch, skinny_m_prepare, suits=lambda s: 1 < s[0] <= SK_M and s[1] > 1),
    "vector": Variant(
        "vector", "M = 1 or N = 1 as a matrix-vector product: N = 1 matvec's auto, M = 1 a warp across "
        "32 columns of B, K split among warps and blocks", vector_launch, vector_prepare, warp_multiple=True,
        tunables={"splits": (0, 2, 4, 8, 16, 32, 64)}, launch_with=vector_launch, suits=lambda s: 1 in s[:2]),
    "warp_tiled": Variant(
        "warp_tiled", f"{WARP_TILED.bm}x{WARP_TILED.bn} block tile of 4 warps, each warp a "
        f"{WARP_TILED.wm}x{WARP_TILED.wn} tile, 8x16 sums a thread; 21 FMAs per shared load",
        _gemm_launch("warp_tiled"), warp_tiled_prepare,
        tunables=dict(TUNABLE["warp_tiled"]), launch_with=_gemm_launch_with("warp_tiled"),
        suits=lambda s: 1 not in s[:2]),
    "wide_loads": Variant(
        "wide_loads", "warp_tiled reading A and B as float64 views: two float32 a global load, half "
        "the load instructions (even K and N)", _gemm_launch("wide_loads"), wide_loads_prepare,
        tunables=dict(TUNABLE["wide_loads"]),
        launch_with=_gemm_launch_with("wide_loads"), suits=lambda s: 1 not in s[:2]),
    "small": Variant(
        "small", "one launch, one block per 64x64, 32x64 or 32x32 tile (enough blocks for the SMs), "
        "K in one pass: for shapes under 2^27 FLOPs", _gemm_launch("small"), small_prepare),
}


from kernels.gemm.tensor_core_tf32 import PIPELINE_RUNGS  # noqa: E402  (async_copy, tensor_core_tf32: not auto's)

SPEC = KernelSpec(
    name="matmul",
    summary="C = A @ B for M x K and K x N row-major matrices",
    size_help="MxNxK (A is MxK, B is KxN), or N for N x N x N, e.g. 4096",
    default_size=lambda simulator: (24, 20, 18) if simulator else (4096, 4096, 4096),
    in_shapes=lambda size: [(size[0], size[2]), (size[2], size[1])],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [((size[0], size[1]), np.dtype(dtype))],
    reference=reference,
    tolerance=dot_tolerances,
    bytes_moved=lambda size, dtype: (size[0] * size[2] + size[2] * size[1] + size[0] * size[1])
    * np.dtype(dtype).itemsize,
    flops=lambda size: 2 * size[0] * size[1] * size[2],
    square_ok=True,
    variants={**RUNGS, **PIPELINE_RUNGS, "auto": auto_variant(
        choose, RUNGS, "the tuned configuration of the shape's class (lab tune), else: vector for M = 1 or "
        "N = 1, and wide_loads with the tile and K ranges a launch model of measured tiles picks (choose())",
        kernel="matmul")},
)
