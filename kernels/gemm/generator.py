"""The warp-tiled GEMM kernel factory: :func:`gemm_kernel` builds matmul rungs 7-9 from a GemmConfig key.

Source: S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022), kernels
6-10 (vectorized shared loads, warp tiling); CUDA C++ Programming Guide, "Shared Memory".
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda, uint64

from kernels.compiler import SIMULATOR
from kernels.gemm.build_options import ALIGN, FORCEINLINE
from kernels.gemm.config import GemmConfig
from kernels.warp import WARP


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
