"""Rung 4 of matmul: a 64 x 64 block tile (4 x 4 sums a thread), double-buffered, any tile of 16..128.

Source: CUDA C++ Programming Guide, "Shared Memory"; S. Boehm, "How to Optimize a CUDA Matmul Kernel
for cuBLAS-like Performance" (2022: block and thread tiles, transposed A tile). The lesson
(kernels/matmul.py) explains rungs 1-3; this rung trades reuse for blocks.
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda, uint64

from kernels.device_limits import current
from kernels.gemm.build_options import A_PAD, ALIGN
from kernels.spec import Launch, blocks_for


# --- Rung 4: a smaller tile (64 x 64, 4 x 4 a thread) ----------------------------------------------
# The 128 x 128 tile pays off only when there are enough tiles: 1024^3 has 64 of them for 132 SMs
# (2 blocks an SM: 264 slots), so three quarters of the GPU idles. A 64 x 64 tile gives 4x the blocks
# (256 at 1024^3) at half the reuse (each loaded element feeds 64 FMAs instead of 128; a thread's 16
# shared words a k feed 16 FMAs, one LDS.128 per 8 FMAs). The kernel computes one K range of grid z
# (all of K here; split-K, kernels/gemm/split_k.py, gives each z its own range).
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


def tile_build(bm: int, bn: int, itemsize: int):
    """The tile kernel for a bm x bn tile in a dtype of ``itemsize`` bytes: K-slab 16, or 8 when the
    two double-buffered slabs of 16 would pass the static shared memory a block may declare on the
    current device (``shared_per_block``, 48 KB on every CUDA GPU so far: float64 at 128-wide
    tiles), built once."""
    bk = T_BK if 2 * T_BK * (bm + A_PAD + bn) * itemsize <= current().shared_per_block else 8
    if (bm, bn, bk) not in _TILE_BUILDS:
        _TILE_BUILDS[bm, bn, bk] = make_tile_kernel(bm, bn, bk)
    return _TILE_BUILDS[bm, bn, bk]


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
