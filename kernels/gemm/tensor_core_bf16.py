"""Rung tensor_core_bf16: ``mma.sync`` m16n8k16 bfloat16 warp tiles, ``ldmatrix`` fragments, cp.async pipeline.

The TF32 rung (kernels/gemm/tensor_core_tf32.py) loads each fragment element with a scalar shared load
and rounds it with a ``cvt``: 28 shared loads and 24 conversions per 16 mma, and the tensor pipe was
busy 15.7% of the time. This rung keeps that block structure and removes both costs:

* bfloat16 inputs (float32's exponent, 7 explicit mantissa bits; torch's ``A.bfloat16() @ B.bfloat16()``)
  multiplied by ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``: 2,048 FMAs an instruction,
  twice the TF32 mma's, the products summed in float32, C float32 (torch's bf16 matmul returns bf16;
  this rung keeps the float32 sums).
* ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` loads a whole fragment: per 16 k a warp issues 4 of them
  for its four 16 x 16 A tiles and 2 ``.trans`` ones for its four 16 x 8 B tiles (B is k x n row-major
  in shared memory; .trans hands each lane its column pairs), then 16 mma: 6 shared-load instructions
  per 16 mma, against the TF32 rung's 28 per 16 half-size mma.
* Global and shared traffic in 2-byte elements. NumPy has no bfloat16, so the kernel takes uint16 arrays
  of bfloat16 bit patterns (kernels.gemm.mma_bf16.to_bf16_bits, round to nearest even) and copies and
  feeds the bits untouched. Converting float32 inside the kernel (``cvt.rn.bf16x2.f32`` after the
  load) would read 4 bytes an element from global memory and stage float32 in shared memory, where
  ldmatrix cannot read it: twice the traffic and a conversion pass a slab. The rung's ``prepare``
  rounds the float32 inputs to bf16 once, before the timed calls, as a torch user calls ``.bfloat16()``
  once; the kernel's time is the matmul of bf16 matrices.

Who holds what (kernels.gemm.mma_bf16; PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point
type"; g = lane // 4, q = lane % 4; each register two bf16, lower index in the low half):

    A 16 x 16   a0 = A[g][2q..2q+1]  a1 = A[g+8][2q..2q+1]  a2 = A[g][2q+8..2q+9]  a3 = A[g+8][2q+8..2q+9]
    B 16 x 8    b0 = B[2q..2q+1][g]  b1 = B[2q+8..2q+9][g]
    C 16 x 8    c0 = C[g][2q]  c1 = C[g][2q+1]  c2 = C[g+8][2q]  c3 = C[g+8][2q+1]

ldmatrix.x4 (PTX ISA, "ldmatrix"): lanes 8j .. 8j + 7 give the row addresses of 8 x 8 matrix j, lane l
receives row l // 4, elements 2q, 2q + 1 of matrix j in register j. With lane l pointing at row
l % 16, column (l // 16) * 8 of a 16 x 16 A tile, matrices 0..3 are the tile's quadrants top-left,
bottom-left, top-right, bottom-right: exactly a0..a3. For B, lane l points at k row l % 16, column
(l // 16) * 8 of a 16 x 16 (k x n) piece; .trans gives b0, b1 of the left 16 x 8 tile in registers 0, 1
and of the right one in 2, 3.

The kernel (default build, ``BUILD``): a block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile
of C; each warp 64 x 32: 4 x 4 mma tiles, 64 float32 accumulators a thread, 16 independent mma per 16 k.
The K-slabs of A (128 x BK) and B (BK x 128) arrive through the async_copy rung's cp.async pipeline
(STAGES buffers). Where K and N are multiples of 8 (:func:`kernel_for` picks ``aligned``) each thread
computes its 16-byte chunks once -- shared offset, global offset at slab 0, how many of the 8 elements
exist -- and a slab's copies are two adds and a clamp a chunk (:func:`issue_slab`); otherwise the general
loads (:func:`load_tile_b16`: 16-byte copies where the row allows, plain loads past the edges, zeros
outside). Shared rows are padded by 8 elements (16 bytes) so that the 8 row addresses of each ldmatrix
phase fall in 8 different 16-byte bank groups: A rows of BK + 8 elements (80 bytes at BK = 32: rows 20
words apart, 0, 20, 8, 28, 16, 4, 24, 12 mod 32), B rows of BN + 8 (68 words apart at BN = 128: 0, 4, ...,
28). Shared memory: :func:`shared_bytes`, 37 KB for BK = 32, STAGES = 2; static arrays stop at 48 KB,
``dynamic`` builds take up to 227 KB (:func:`configured` opts the kernel in). The epilogue stores one mma
row a call with a literal row index (:func:`store_tile_row`), so the accumulators of a 64 x 64 warp tile
(``warps_m=2, warps_n=2, nt=8``: 128 a thread) stay in registers.

Measured on the H100 (scripts/bf16_bench.py; numba-cuda-mlir 0.6.0): the first build (the same tiles, its
copies addressed by a per-chunk loop of 64-bit index arithmetic, ~1,500 SASS instructions a 32-deep slab
for 32 HMMA) passed every check at 148.3 TFLOP/s at 4096^3, 0.19x torch bf16 (798.8), and 133.7 at 2048^3
(0.20x of 683.8); ``bk=16, stages=4`` 124.5. Nsight Compute at 2048^3: latency-bound, tensor pipe 22%, SM
57%, L1/shared 31% of peak, 22% achieved occupancy (25% theoretical), mostly stalled on ``wait``. Offline
(sm_90, ptxas 13.0, the launch bounds) the current default's main loop is 245 SASS instructions a slab
(32 HMMA, 12 LDSM, 4 LDGSTS), 128 registers, no local memory; the candidate builds (64 x 64 warp tiles,
deeper pipelines in dynamic shared memory) are in docs/tensor-cores.md and scripts/bf16_bench.py's
BUILDS. Timed on the H100 with those copies (every build checked first; torch bf16 775.0 TFLOP/s at
4096^3): 8 warps of 64 x 32, 2 stages 237.8 (0.31x); 4 warps of 64 x 64 242.3; 4 stages in dynamic shared
memory 262.7; the default, BUILD = 4 warps of 64 x 64 with 4 stages of BK = 32 in 74 KB of dynamic shared
memory: **284.2 TFLOP/s (0.37x)**, 244.9 at 2048^3 (0.36x of 677.5). Nsight Compute at 2048^3 (the
8-warp build): memory-bound on L2 (64% of peak; DRAM 7%, tensor pipe 34%), stalls math_pipe_throttle,
wait. Target 0.5x (about 390 TFLOP/s): missed.

Shapes (:func:`choose`, :func:`prepare`; the launch note names both): the rung's ``prepare`` rounds A and B to
bf16 once before the calls and now zero-pads K and N to multiples of 8 in that same pass, so every row is
16-byte aligned and every build takes the 16-byte copies from offsets computed once. The general loads
(:func:`load_tile_b16` without ``vec``) -- what 1000 x 1030 x 517 ran: plain 2-byte loads and stores
through registers, nothing in flight while the mma ran, 255 registers, 2,131 SASS
instructions a 32-deep slab against 319 -- gave 7.3 TFLOP/s there, under torch's FP32 (20.1). They stay
for direct callers of :func:`kernel_for`. Where BUILD's 128 x 128 grid has fewer blocks than the device has
SMs (72 at 1000 x 1030), the rung runs SMALL_BUILD: 64 x 64 blocks of 4 warps of 32 x 32, 4 stages in 38 KB
of static shared memory, 118 registers (offline: 143 SASS instructions a slab for 16 HMMA).

Checked against the float64 reference with a tolerance for 7-bit inputs
(kernels.gemm.mma.rounded_inputs_tolerance: the float32 bound plus the random walk of the input rounding,
u = 2^-7 a product, scaled by sqrt(sum_k (a_k b_k)^2), i.e. ~sqrt(K)).

In the simulator ``ldmatrix``, ``mma_bf16`` and the copies are emulated (kernels.gemm.mma_bf16): the same
lane-to-row addresses, fragments and waits, so a wrong address or register gives a wrong C there too.
"""
from __future__ import annotations

import functools

import numpy as np

from kernels.arrays import to_device_like, to_host
from kernels.compiler import SIMULATOR, cuda, float32, int32, int64, uint16
from kernels.gemm import mma
from kernels.gemm.mma import EMULATED, cp_async_commit, cp_async_wait
from kernels.gemm.mma_bf16 import (cp_async16_at, global_base, ldmatrix_x4, ldmatrix_x4_trans, mma_bf16,
                                    shared_base, to_bf16_bits)
from kernels.spec import Launch, blocks_for, sm_count

BK = 32  # K-slab a stage holds (two mma k-steps)
STAGES = 2  # 2 x 18.5 KB of static shared memory
WARPS_M, WARPS_N = 2, 4  # 8 warps
MT, NT = 4, 4  # mma tiles a warp: 4 x 4 (a 64 x 32 warp tile)
PAD = 8  # elements (16 bytes) of padding a shared row: conflict-free ldmatrix, rows 16-byte aligned
ALIGN = None if SIMULATOR else 16
FORCEINLINE = {} if SIMULATOR else {"forceinline": True}


@cuda.jit(device=True, **FORCEINLINE)
def load_tile_b16(sbase, sdst, base, gbase, src, rows, cols, r0, c0, shift, chunks, lds, t, nthreads, vec):
    """Issue the copy of the tile [r0 : r0 + tile_rows, c0 : c0 + 8 << shift] of ``src`` (a row-major
    rows x cols uint16 matrix of bf16 bits, :func:`global_base` ``gbase``) into the 1-D shared uint16
    ``sdst`` (:func:`shared_base` ``sbase``) from element ``base`` on, in rows of ``lds``: thread ``t``
    of ``nthreads`` takes 8-element chunks t, t + nthreads, ... (``chunks`` of them, a compile-time
    count; row c >> shift, column (c & (2^shift - 1)) * 8: shifts, no divisions). ``vec`` (cols % 8
    == 0: aligned chunks): 16-byte cp.async; else plain loads and stores. Elements outside the matrix
    are zeros. Does not commit."""
    mask = (1 << shift) - 1
    for i in range(chunks):
        c = t + i * nthreads
        r = c >> shift
        k = (c & mask) * 8
        gr = r0 + r
        gc = c0 + k
        di = base + r * lds + k
        if vec:
            n = 0
            if gr < rows and gc < cols:
                n = min(cols - gc, 8)
            cp_async16_at(sbase, di, gbase, gr * cols + gc, n)
        else:
            for e in range(8):
                sdst[di + e] = src[gr, gc + e] if gr < rows and gc + e < cols else uint16(0)


@cuda.jit(device=True, **FORCEINLINE)
def issue_slab(pA, abuf, gA, a_soff, a_goff, a_lim, pB, bbuf, gB, b_soff, b_goff, b_row, b_n, kofs, K, N):
    """Issue this thread's 16-byte cp.async chunks of the K-slab from column (A) / row (B) ``kofs`` on
    into the stage that starts at elements ``abuf`` of A's and ``bbuf`` of B's shared arrays, from the
    per-chunk values the kernel computed once (K and N multiples of 8): A chunk i goes to a_soff[i],
    comes from row-major element a_goff[i] + kofs, a_lim[i] - kofs elements of it exist (clamped to
    0..8; a row past M has a_lim -2^30); B chunk i goes to b_soff[i], comes from b_goff[i] + kofs * N,
    its k row b_row[i] + kofs exists while < K, b_n[i] of its columns exist. Two adds and a clamp a
    chunk. Does not commit."""
    k32 = int32(kofs)  # 32-bit counts and offsets where they fit: fewer instructions than Python's int64
    for i in range(a_soff.shape[0]):
        n = int32(min(max(int32(a_lim[i] - k32), int32(0)), int32(8)))
        cp_async16_at(pA, int32(abuf + a_soff[i]), gA, a_goff[i] + kofs, n)
    for i in range(b_soff.shape[0]):
        n = b_n[i] if int32(b_row[i] + k32) < int32(K) else int32(0)
        cp_async16_at(pB, int32(bbuf + b_soff[i]), gB, b_goff[i] + kofs * N, n)


@cuda.jit(device=True, **FORCEINLINE)
def store_tile_row(C, acc, i, nt, r0, c0, rows_left, cols_left):
    """Store mma tile row ``i`` of this lane's accumulators (acc[(i * nt + j) * 4 + e], e = c0..c3 of
    tile j) to C: c0, c1 at rows r0 + 16 i, columns c0 + 8 j + 0, 1; c2, c3 eight rows down; only
    elements within rows_left rows and cols_left columns of (r0, c0)."""
    for j in range(nt):
        o = (i * nt + j) * 4
        ra = r0 + i * 16
        c = c0 + j * 8
        if i * 16 < rows_left and j * 8 < cols_left:
            C[ra, c] = acc[o]
        if i * 16 < rows_left and j * 8 + 1 < cols_left:
            C[ra, c + 1] = acc[o + 1]
        if i * 16 + 8 < rows_left and j * 8 < cols_left:
            C[ra + 8, c] = acc[o + 2]
        if i * 16 + 8 < rows_left and j * 8 + 1 < cols_left:
            C[ra + 8, c + 1] = acc[o + 3]


DYNAMIC_SHARED_MAX = 227 * 1024  # bytes of shared memory a block may opt into on an H100 (sm_90)


def shared_bytes(bk: int = BK, stages: int = STAGES, warps_m: int = WARPS_M, warps_n: int = WARPS_N, mt: int = MT,
                 nt: int = NT, **_) -> int:
    """Shared memory of a build: stages x (BM x (bk + PAD) + bk x (BN + PAD)) bf16 elements, in bytes."""
    bm, bn, _t = tile_shape(warps_m, warps_n, mt, nt)
    return 2 * stages * (bm * (bk + PAD) + bk * (bn + PAD))


def configured(kernel, grid, block, build: dict):
    """A callable f(A, B, C) that launches ``kernel`` (a make_bf16_kernel(**build)) on ``grid``, ``block``,
    with shared_bytes(**build) of dynamic shared memory for a ``dynamic`` build (kernels.gemm.mma.with_shared)."""
    return mma.with_shared(kernel, grid, block, shared_bytes(**build) if build.get("dynamic") else 0)


def tile_shape(warps_m: int = WARPS_M, warps_n: int = WARPS_N, mt: int = MT, nt: int = NT) -> tuple[int, int, int]:
    """(BM, BN, threads) of a build: warps_m x warps_n warps, each mt x nt mma tiles (16 x 8 each)."""
    return warps_m * mt * 16, warps_n * nt * 8, warps_m * warps_n * 32


@functools.cache
def make_bf16_kernel(bk: int = BK, stages: int = STAGES, warps_m: int = WARPS_M, warps_n: int = WARPS_N,
                     mt: int = MT, nt: int = NT, min_blocks: int = 2, aligned: bool = False,
                     dynamic: bool = False):
    """The tensor_core_bf16 kernel: K-slabs of ``bk`` (a multiple of 16), ``stages`` >= 2 buffers,
    warps_m x warps_n warps of mt x nt mma tiles (``nt`` even: B fragments come two tiles an ldmatrix);
    launch bounds (threads, ``min_blocks``). Shared memory must stay under 48 KB (static arrays)."""
    if bk % 16 or nt % 2 or stages < 2 or not 1 <= mt <= 4:
        raise ValueError(f"bk={bk} (a multiple of 16), nt={nt} (even), stages={stages} (>= 2), mt={mt} (1..4)")
    bm, bn, threads = tile_shape(warps_m, warps_n, mt, nt)
    wm_size, wn_size = mt * 16, nt * 8
    lda = bk + PAD
    ldb = bn + PAD
    a_elems = bm * lda
    b_elems = bk * ldb
    a_total = stages * a_elems  # single names: compile-time sizes under numba-cuda-mlir
    b_total = stages * b_elems
    limit = DYNAMIC_SHARED_MAX if dynamic else 48 * 1024
    if 2 * (a_total + b_total) > limit:
        raise ValueError(f"{2 * (a_total + b_total)} bytes of shared memory: over the {limit} of "
                         f"{'dynamic' if dynamic else 'static'} shared memory")
    # dynamic: one launch-sized array (both declarations of size 0 alias it), B's stages after A's
    a_decl = 0 if dynamic else a_total
    b_decl = 0 if dynamic else b_total
    b_org = a_total if dynamic else 0
    a_shift, b_shift = (bk // 8).bit_length() - 1, (bn // 8).bit_length() - 1  # 8-element chunks a row
    if 8 << a_shift != bk or 8 << b_shift != bn or (bm * bk) % (8 * threads) or (bk * bn) % (8 * threads):
        raise ValueError(f"bk={bk}, bn={bn}: powers of two, each slab a whole number of 8-element chunks a thread")
    a_chunks, b_chunks = bm * bk // (8 * threads), bk * bn // (8 * threads)
    acc_n = mt * nt * 4
    a_frag = mt * 4
    b_frag = nt * 2
    bounds = {} if SIMULATOR else {"launch_bounds": (threads, min_blocks)}

    @cuda.jit(**bounds)
    def bf16_kernel(A, B, C):
        """C = A @ B: A (M, K) and B (K, N) uint16 bf16 bits, C (M, N) float32; block (threads,),
        grid (ceil(N / bn), ceil(M / bm))."""
        sA = cuda.shared.array(a_decl, uint16, alignment=ALIGN)  # [stage][m][k]
        sB = cuda.shared.array(b_decl, uint16, alignment=ALIGN)  # [stage][k][n]
        pA = shared_base(sA)  # ldmatrix's and cp.async's view of them: shared-window addresses, once
        pB = shared_base(sB)
        gA = global_base(A)
        gB = global_base(B)
        M = A.shape[0]
        K = A.shape[1]
        N = B.shape[1]
        t = cuda.threadIdx.x
        lane = t % 32
        warp = t // 32
        g = lane // 4
        q = lane % 4
        lrow = lane % 16  # the row (A: m, B: k) whose address this lane gives ldmatrix
        lcol = (lane // 16) * 8  # and the column
        wm = (warp // warps_n) * wm_size
        wn = (warp % warps_n) * wn_size
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        vec_a = K % 8 == 0
        vec_b = N % 8 == 0
        acc = cuda.local.array(acc_n, float32)  # [mt][nt][c0..c3]
        af = cuda.local.array(a_frag, int32)  # [mt][a0..a3], bf16x2 each
        bf = cuda.local.array(b_frag, int32)  # [nt][b0, b1]
        for i in range(acc_n):
            acc[i] = float32(0.0)
        ntiles = (K + bk - 1) // bk
        # this thread's chunks of a slab, once: shared offset, global offset at slab 0, what exists
        a_soff = cuda.local.array(a_chunks, int32)
        a_goff = cuda.local.array(a_chunks, int64)
        a_lim = cuda.local.array(a_chunks, int32)
        for i in range(a_chunks):
            c = t + i * threads
            r = c >> a_shift
            k = (c & ((1 << a_shift) - 1)) * 8
            a_soff[i] = r * lda + k
            a_goff[i] = (row0 + r) * K + k
            a_lim[i] = K - k if row0 + r < M else -(1 << 30)
        b_soff = cuda.local.array(b_chunks, int32)
        b_goff = cuda.local.array(b_chunks, int64)
        b_row = cuda.local.array(b_chunks, int32)
        b_n = cuda.local.array(b_chunks, int32)
        for i in range(b_chunks):
            c = t + i * threads
            r = c >> b_shift
            k = (c & ((1 << b_shift) - 1)) * 8
            b_soff[i] = r * ldb + k
            b_goff[i] = r * N + col0 + k
            b_row[i] = r
            b_n[i] = min(max(N - col0 - k, 0), 8)
        for s in range(stages - 1):
            if s < ntiles:
                if aligned:
                    issue_slab(pA, s * a_elems, gA, a_soff, a_goff, a_lim, pB, b_org + s * b_elems, gB, b_soff, b_goff,
                               b_row, b_n, s * bk, K, N)
                else:
                    load_tile_b16(pA, sA, s * a_elems, gA, A, M, K, row0, s * bk, a_shift, a_chunks, lda, t, threads,
                                  vec_a)
                    load_tile_b16(pB, sB, b_org + s * b_elems, gB, B, K, N, s * bk, col0, b_shift, b_chunks, ldb, t, threads,
                                  vec_b)
            cp_async_commit()
        for kt in range(ntiles):
            cp_async_wait(stages - 2)  # my copies of slab kt landed
            cuda.syncthreads()  # everyone's did, and everyone is done with slab kt - 1
            nxt = kt + stages - 1
            if nxt < ntiles and aligned:
                buf = nxt % stages
                issue_slab(pA, buf * a_elems, gA, a_soff, a_goff, a_lim, pB, b_org + buf * b_elems, gB, b_soff, b_goff,
                           b_row, b_n, nxt * bk, K, N)
            elif nxt < ntiles:
                buf = nxt % stages
                load_tile_b16(pA, sA, buf * a_elems, gA, A, M, K, row0, nxt * bk, a_shift, a_chunks, lda, t, threads,
                              vec_a)
                load_tile_b16(pB, sB, b_org + buf * b_elems, gB, B, K, N, nxt * bk, col0, b_shift, b_chunks, ldb, t, threads,
                              vec_b)
            cp_async_commit()
            abase = (kt % stages) * a_elems
            bbase = b_org + (kt % stages) * b_elems
            for kk in range(0, bk, 16):
                for i in range(mt):  # a0..a3 of the 16 x 16 tile i: its quadrants
                    r0, r1, r2, r3 = ldmatrix_x4(pA, abase + (wm + i * 16 + lrow) * lda + kk + lcol)
                    af[i * 4] = r0
                    af[i * 4 + 1] = r1
                    af[i * 4 + 2] = r2
                    af[i * 4 + 3] = r3
                for p in range(nt // 2):  # b0, b1 of tiles 2p and 2p + 1
                    r0, r1, r2, r3 = ldmatrix_x4_trans(pB, bbase + (kk + lrow) * ldb + wn + p * 16 + lcol)
                    bf[p * 4] = r0
                    bf[p * 4 + 1] = r1
                    bf[p * 4 + 2] = r2
                    bf[p * 4 + 3] = r3
                for i in range(mt):
                    for j in range(nt):
                        o = (i * nt + j) * 4
                        d0, d1, d2, d3 = mma_bf16(af[i * 4], af[i * 4 + 1], af[i * 4 + 2], af[i * 4 + 3],
                                                  bf[j * 2], bf[j * 2 + 1],
                                                  acc[o], acc[o + 1], acc[o + 2], acc[o + 3])
                        acc[o] = d0
                        acc[o + 1] = d1
                        acc[o + 2] = d2
                        acc[o + 3] = d3
        cp_async_wait(0)
        r0 = row0 + wm + g
        c0 = col0 + wn + 2 * q
        rows_left = M - r0  # this lane's rows r0 + d exist for d < rows_left, its columns c0 + d for d < cols_left
        cols_left = C.shape[1] - c0  # B may carry zero columns past C's (the rung pads N to a multiple of 8)
        # one call a tile row, each with a literal i: the loops that stay are short enough to unroll, so
        # every acc index is a constant and the 128 accumulators of a 64 x 64 warp tile stay in registers
        store_tile_row(C, acc, 0, nt, r0, c0, rows_left, cols_left)
        if mt > 1:
            store_tile_row(C, acc, 1, nt, r0, c0, rows_left, cols_left)
        if mt > 2:
            store_tile_row(C, acc, 2, nt, r0, c0, rows_left, cols_left)
        if mt > 3:
            store_tile_row(C, acc, 3, nt, r0, c0, rows_left, cols_left)

    return bf16_kernel


# The rung's build: make_bf16_kernel's keywords over its defaults. scripts/bf16_bench.py --builds times the
# candidates (its BUILDS) beside it; switching the rung to one is this line, e.g. dict(warps_m=2, warps_n=2, nt=8).
BUILD: dict = dict(warps_m=2, warps_n=2, nt=8, stages=4, dynamic=True)  # w64k32s4dyn: the fastest measured
BM, BN, THREADS = tile_shape(**{k: v for k, v in BUILD.items() if k in ("warps_m", "warps_n", "mt", "nt")})
# Where BUILD's grid would leave SMs idle (:func:`choose`): 64 x 64 block tiles, 4 warps of 32 x 32, 4 stages
# in 38 KB of static shared memory.
SMALL_BUILD: dict = dict(warps_m=2, warps_n=2, mt=2, nt=4, stages=4, dynamic=False)
BUILDS = {"default": BUILD, "small": SMALL_BUILD}


def build_tile(build: dict) -> tuple[int, int, int]:
    """(BM, BN, threads) of ``build`` (make_bf16_kernel's keywords over its defaults)."""
    return tile_shape(**{k: v for k, v in build.items() if k in ("warps_m", "warps_n", "mt", "nt")})


def choose(size) -> tuple[str, str]:
    """(name in :data:`BUILDS`, why) of the rung's build for size (m, n, k): "default" (128 x 128 block
    tiles) where its grid has a block for every SM (kernels.spec.sm_count), else "small" (64 x 64, 4x the
    blocks): at 1000 x 1030 x 517 the default's 72 blocks would leave 60 of an H100's 132 SMs idle."""
    return mma.choose_block_tile(size, [(n, *build_tile(BUILDS[n])[:2]) for n in ("default", "small")], sm_count())


def padded(n: int) -> int:
    """n rounded up to a multiple of 8 (16 bytes of bf16): the K and N the rung's kernel runs at."""
    return -(-n // 8) * 8


def kernel_for(K: int, N: int, **build):
    """The kernel for a K-deep product with N columns: ``make_bf16_kernel(**BUILD, **build)`` with
    ``aligned`` (16-byte cp.async from per-thread offsets computed once) where K and N are multiples of
    8, the general loads otherwise (``aligned=False`` in ``build`` forces those)."""
    return make_bf16_kernel(**{"aligned": K % 8 == 0 and N % 8 == 0, **BUILD, **build})


def launch(size, threads):
    """The build :func:`choose` picks (its note says which and why), block fixed at its warps' threads,
    one BM x BN tile of C a block."""
    m, n, k = size
    name, why = choose(size)
    bm, bn, nthreads = build_tile(BUILDS[name])
    notes = []
    if threads != nthreads:
        notes.append(f"block fixed at {nthreads} threads ({nthreads // 32} warps); --threads {threads} ignored")
    notes.append(f"build {name}: {why}")
    if k % 8 or n % 8:
        notes.append(f"K, N padded with zeros to {padded(k)}, {padded(n)} (multiples of 8) in the bf16 rounding "
                     f"before the calls: every copy 16 bytes")
    notes.append("bfloat16 inputs (7-bit mantissa, rounded once before the calls), float32 sums and output")
    if EMULATED:
        notes.append("emulated: mma.sync, ldmatrix and cp.async run as Python in the simulator")
    grid = (blocks_for(n, bn), blocks_for(m, bm))
    return Launch(grid=grid, block=(nthreads,), threads_needed=min(grid[0] * grid[1] * nthreads, blocks_for(m * n, 64)),
                  note="; ".join(notes))


def device_bf16(a, rows: int | None = None, cols: int | None = None):
    """A device (or simulator) float32 matrix rounded to bfloat16: a device uint16 array of its bits,
    zero-padded to ``rows`` x ``cols`` when given (bf16 zeros: they add nothing to a product)."""
    host = to_host(a)
    bits = to_bf16_bits(host)
    if (rows or bits.shape[0], cols or bits.shape[1]) != bits.shape:
        out = np.zeros((rows or bits.shape[0], cols or bits.shape[1]), np.uint16)
        out[:bits.shape[0], :bits.shape[1]] = bits
        bits = out
    return to_device_like(bits, a)


def prepare(cfg, inputs, outputs):
    """A and B (float32) rounded to bfloat16 once, here, K and N zero-padded to multiples of 8 (rows of
    16 bytes: the 16-byte copies from offsets computed once), then one launch a call of the build
    :func:`choose` picks; float32 only (ValueError otherwise)."""
    A, B = inputs
    mma.float32_inputs("tensor_core_bf16", "bfloat16", A)
    m, k = A.shape
    n = B.shape[1]
    A16, B16 = device_bf16(A, m, padded(k)), device_bf16(B, padded(k), padded(n))
    build = BUILDS[choose((m, n, k))[0]]
    kern = configured(kernel_for(padded(k), padded(n), **build), cfg.grid, cfg.block, build)
    C = outputs[0]
    return lambda: kern(A16, B16, C)


unavailable = mma.float32_gate("tensor_core_bf16", "bfloat16")
