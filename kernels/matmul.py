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

This module is the lesson: naive, shared and register_tiled. The rungs past it live in the GEMM
library, kernels/gemm/ (one idea a module; their names are re-exported here). warp_tiled,
wide_loads and small are built by one factory (:func:`gemm_kernel`) from a :class:`GemmConfig`
whose fields (tiles, slab depth, padding, double buffering, pairs, launch bound) a tuner may vary
(:data:`TUNABLE`). Beside the ladder, rungs for shapes the 128 x 128 tile serves badly (tile64: mid
sizes, split_k: long K, skinny_m: M <= 32) and ``vector`` for M = 1 or N = 1, which are
matrix-vector products (bound by reading B or A once, not by FMAs). The compile-time sizes that
``lab tune`` searches are each rung's ``tunables`` (tile bm x bn, K-slab, launch bounds, split-K
factor); ``auto`` runs the tuned configuration of the shape's class when one is cached for this GPU
(kernels/tuning.py), else :func:`choose`: a launch model, like cuBLAS's heuristics, that estimates
each block tile and split-K factor from the tiles' measured times (:data:`RATES`, from
kernels/gemm/rates.json) and the waves of blocks the device's SMs run (kernels/device_limits.py),
so on an H100 1024^3 gets 128 x 64 tiles (one block an SM) and 777 x 1333 x 901
gets 32 x 64 (525 blocks; 128 x 64 would leave 15 SMs two blocks and the rest one).

What the hardware did (Nsight Compute, H100, ``lab counters matmul --size 4096``, float32,
one call each; A and B are 64 MB each, past the 50 MB L2): global load requests naive 4.29e9, shared
2.68e8 (16x fewer), register_tiled 3.36e7 (128x fewer); DRAM read naive 33.0 GB, shared 17.0 GB,
register_tiled 0.58 GB, cuBLAS 0.34 GB against a minimum of 0.20 GB. Naive's re-reads mostly hit
L1 and L2, so shared cuts DRAM bytes only 1.9x; register_tiled's 8x larger tile cuts them 29x.
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda, uint64

from kernels.compiler import SIMULATOR
from kernels.spec import KernelSpec, Launch, Variant, auto_variant, blocks_for, dot_tolerances, launch_once
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
# GPU-only compile options (the simulator's cuda.jit and shared.array reject them): ALIGN = 16-byte
# aligned shared tiles, so 4 words can load as one LDS.128; FORCEINLINE: the helpers inlined (NVVM).
from kernels.gemm.build_options import ALIGN, FORCEINLINE  # noqa: E402  (shared with kernels/gemm/)
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


# --- Rungs 4-9 and auto: the GEMM library (kernels/gemm/) ---------------------------------------
# Past register_tiled the rungs serve shapes, not the lesson, and live in a package of one idea a module:
#   tile.py       rung 4, tile64: a 64 x 64 tile (any of 16..128), 4x the blocks of register_tiled;
#   split_k.py    rung 5, split_k: K ranges over grid z, then one reduction launch;
#   skinny.py     rung 6, skinny_m: M <= 32, a column of C a thread, B streamed once;
#   vector.py     vector: M = 1 or N = 1 as matrix-vector products (the M = 1 column kernels);
#   config.py, generator.py, rungs.py   rungs 7-9 (warp_tiled, wide_loads, small): one kernel factory
#                 built from a GemmConfig, so a tuner varies the tile without new code;
#   model.py      auto's launch model, from the tiles' measured times (rates.json).
# matmul's rungs read what they need of them below; other code imports them from kernels.gemm.
from kernels.gemm.tile import T_BM, T_BN, T_THREADS, tile64_launch, tile64_prepare  # noqa: E402
from kernels.gemm.split_k import split_k_launch, split_k_prepare  # noqa: E402
from kernels.gemm.skinny import SK_M, skinny_m_launch, skinny_m_prepare  # noqa: E402
from kernels.gemm.vector import vector_launch, vector_prepare  # noqa: E402
from kernels.gemm.config import TUNABLE, WARP_TILED  # noqa: E402
from kernels.gemm.rungs import (gemm_launch, gemm_launch_with, small_prepare, warp_tiled_prepare,  # noqa: E402
                                wide_loads_prepare)
from kernels.gemm.model import choose  # noqa: E402
from kernels.spec import plural  # noqa: E402


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
        gemm_launch("warp_tiled"), warp_tiled_prepare,
        tunables=dict(TUNABLE["warp_tiled"]), launch_with=gemm_launch_with("warp_tiled"),
        suits=lambda s: 1 not in s[:2]),
    "wide_loads": Variant(
        "wide_loads", "warp_tiled reading A and B as float64 views: two float32 a global load, half "
        "the load instructions (even K and N)", gemm_launch("wide_loads"), wide_loads_prepare,
        tunables=dict(TUNABLE["wide_loads"]),
        launch_with=gemm_launch_with("wide_loads"), suits=lambda s: 1 not in s[:2]),
    "small": Variant(
        "small", "one launch, one block per 64x64, 32x64 or 32x32 tile (enough blocks for the SMs), "
        "K in one pass: for shapes under 2^27 FLOPs", gemm_launch("small"), small_prepare),
}


from kernels.gemm.tensor_core_tf32 import PIPELINE_RUNGS  # noqa: E402  (async_copy, tensor_core_tf32/bf16 ...)
from kernels.gemm.mma import precision_tolerances  # noqa: E402  (torch's bf16 row: checked as the bf16 rungs are)
from kernels.gemm.tensor_core_3xtf32 import RUNG as TF32X3, auto_route  # noqa: E402  (3xTF32, auto's tensor-core route)
from kernels.contenders import matmul as C  # noqa: E402  (its CuPy, torch and Triton contenders)
PIPELINE_RUNGS = {**PIPELINE_RUNGS, TF32X3.name: TF32X3}

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
        choose, {**RUNGS, **PIPELINE_RUNGS}, "float32 on a GPU with the tensor cores for it (compute capability "
        "9.0 or 8.0, numba-cuda-mlir): tensor_core_3xtf32 (3xTF32 on tensor cores, FP32-accurate; --precision "
        "high, the default; medium: TF32, highest: SIMT only) from 2^31 FLOPs where M N / (M + N) >= 320; else the "
        "tuned configuration of the "
        "shape's class (lab tune), else: vector for M = 1 or N = 1, and wide_loads with the tile and K ranges a "
        "launch model of measured tiles picks (choose())",
        kernel="matmul", first=auto_route)},
    order=30,
    contenders={"cupy": ((C.cupy_matmul_label, C.cupy_matmul),),
                "torch": (("torch.matmul (cuBLAS, TF32 off)", C.torch_matmul),
                          ("torch.matmul (cuBLAS, TF32)", C.torch_matmul_tf32, {"tf32": True}),
                          ("torch.matmul (cuBLAS, bf16)", C.torch_matmul_bf16,
                           {"tolerance": precision_tolerances("bf16"),
                            "why": "bf16: inputs rounded to 7 mantissa bits on tensor cores, float32 sums, checked at the "
                                   "bf16 rungs' tolerance"})),
                "triton": (("tiled matmul (tl.dot FP32)", C.triton_matmul_fp32),
                           ("tiled matmul (tl.dot TF32)", C.triton_matmul_tf32, {"tf32": True}))},
    torch_op=dict(rungs=("register_tiled", "naive"), doc="A @ B, A (M, K), B (K, N); autograd"),
    bench_sizes=(("4096", 256),),
    targets=(dict(size=(4096, 4096, 4096), against="torch.matmul (cuBLAS, TF32 off)", bound=0.5),),
    sweep=dict(shapes=("64", "512", "1000x1030x517", "1024", "2048", "4096", "4096x4096x256", "32x4096x4096",
                       "4096x32x4096", "64x64x65536", "128x128x32768"),
               skip=frozenset({"naive", "shared"}), against="torch.matmul (cuBLAS, TF32 off)",
               floors=(dict(text="matmul >= 0.6x cuBLAS at every shape >= 2^27 FLOPs (auto)", bound=0.6, min_flops=1 << 27),
                       dict(text="matmul >= 0.85x cuBLAS at 4096^3 (auto)", bound=0.85, shape="4096"))),
    precision_auto={"highest": "SIMT FP32 only", "high": "3xTF32 on tensor cores (FP32-accurate) or SIMT FP32",
                    "medium": "TF32 on tensor cores (TF32's tolerance), 3xTF32 or SIMT FP32"},
    sim_cost={"naive": 0.05, "shared": 0.05, "register_tiled": 1.82, "tile64": 0.06, "split_k": 0.09,
              "skinny_m": 0.05, "vector": 0.05, "warp_tiled": 2.84, "wide_loads": 3.95, "small": 0.05,
              "async_copy": 3.5, "tensor_core_tf32": 0.97, "tensor_core_bf16": 0.82, "tensor_core_3xtf32": 6.3,
              "auto": 0.05},
    # on a GPU, beside the public sweep's: classes the sweep does not name (vector-shaped matmuls, routed
    # to the vector rung) and, beside each public shape that is a multiple of every tile, one of its class
    # that is not: a class's winner must serve both (H100: 128x64 tiles won 1024^3 alone, 0.80x cuBLAS,
    # and ran 1000^3 at 0.46x and 777x1333x901 at 0.47x, where the heuristic's small tiles ran 0.63x)
    tune_shapes={"simulator": ("24x20x18", "1x40x70", "30x1x70"),
                 "gpu": ("1x4096x4096", "4096x1x4096", "1x1000x3000", "1x64x65536", "1000", "500", "2000",
                         "4000x4000x250", "30x4000x4000", "4000x30x4000", "60x60x60000", "120x120x30000")},
    counter_size=(32, 32, 32),
    # the tensor-core and async-copy rungs: is the tensor pipe busy, how many shared wavefronts a request
    # (lab.inspect.counters.bound: tensor-, memory-, issue-, compute- or latency-bound), and their global
    # loads, cp.async copies (LDGSTS), which ncu does not count as ld.global
    counter_metrics=("sectors_per_request", "bank_conflicts", "achieved_occupancy_pct", "tensor_pipe_pct",
                     "shared_wavefronts_per_request", "conflicts_per_shared_load", "ldgsts_sectors_per_request",
                     "bound"),
)
