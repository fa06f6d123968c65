"""Rung tensor_core_tf32: ``mma.sync`` m16n8k8 TF32 warp tiles fed by the cp.async pipeline.

An H100 SM does 128 FP32 FMAs a clock on its SIMT lanes, and many times that on its tensor cores.
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` (PTX ISA, "Warp-level matrix multiply-
accumulate instructions") lets one warp multiply a 16 x 8 tile of A by an 8 x 8 tile of B into a
16 x 8 float32 accumulator: 1,024 FMAs in one instruction, where the SIMT rungs execute 32 a warp.
The inputs are TF32: float32's exponent with 10 mantissa bits (``cvt.rna.tf32.f32`` rounds each
element, relative error up to 2^-11), the products summed in float32 -- torch's
``torch.backends.cuda.matmul.allow_tf32 = True``.

Who holds what: the 32 lanes of the warp each hold 4 elements of A, 2 of B and 4 of C in registers
(the *fragments*; g = lane // 4, q = lane % 4):

    A 16 x 8 (m x k)     a0 = A[g][q]    a1 = A[g+8][q]    a2 = A[g][q+4]    a3 = A[g+8][q+4]
    B 8 x 8  (k x n)     b0 = B[q][g]    b1 = B[q+4][g]
    C 16 x 8 (m x n)     c0 = C[g][2q]   c1 = C[g][2q+1]   c2 = C[g+8][2q]   c3 = C[g+8][2q+1]

    C, lane.register:   n=0   n=1   n=2   n=3   ...  n=6   n=7
                  m=0   T0.0  T0.1  T1.0  T1.1  ...  T3.0  T3.1
                  m=1   T4.0  T4.1  T5.0  T5.1  ...  T7.0  T7.1
                  ...
                  m=8   T0.2  T0.3  T1.2  T1.3  ...  T3.2  T3.3

(``kernels.gemm.mma.fragment_picture()`` prints all three tiles; docs/tensor-cores.md shows them.)

The kernel: a block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile of C; each warp a
64 x 32 tile: 4 x 4 mma tiles, 64 float32 accumulators a thread. The K-slabs of A (128 x BK) and B
(BK x 128) arrive in shared memory through the same cp.async pipeline as the async_copy rung
(kernels/gemm/async_copy.py, STAGES buffers). Per 8 k a warp loads its fragments from shared memory
(16 words of A and 8 of B a lane, each rounded to TF32) and issues 16 mma.sync. The shared rows are
padded so the fragment loads are free of bank conflicts: A rows of BK + 4 words (lane (g, q) reads
word g * (BK + 4) + q: 32 distinct banks), B rows of 128 + 8 words (q * 136 + g: 32 distinct banks).

Saves over the SIMT rungs: 32x fewer arithmetic instructions (one mma.sync for 1,024 FMAs); the
price is TF32's 10-bit mantissa (checked with a tolerance for 10-bit inputs, kernels.gemm.precision).
Measured on the H100 (numba-cuda-mlir 0.6.0, docs/tensor-cores.md): correct at every shape tried (worst
error 0.31 of the TF32 bound), 47.2 TFLOP/s at 4096^3: 0.13x torch's TF32 matmul (359; the target was
0.6x), 1.2x the best FP32 rung; 53.0 without cvt.rna (truncation). Issue-bound: the tensor pipe is
active 15.7% of the time; per 16 mma a warp issues 28 shared loads, 24 cvt and the index arithmetic.
``ldmatrix``, a 64 x 64 warp tile and more stages (dynamic shared memory) are the next steps.

In the simulator ``mma_tf32`` and the copies are emulated (kernels.gemm.mma): same fragments, same
waits, so a lane that holds the wrong element gives a wrong C there too.
"""
from __future__ import annotations

import functools

import numpy as np

from kernels.compiler import SIMULATOR, cuda, float32
from kernels.gemm.async_copy import load_tile_async
from kernels.gemm.mma import (EMULATED, FRAGMENT, UNAVAILABLE, cp_async_commit, cp_async_wait, mma_tf32, tf32_bits,
                              to_tf32)
from kernels.spec import Launch, blocks_for

BM = BN = 128  # block tile of C
THREADS = 256  # 8 warps: 2 along m, 4 along n
WM, WN = 64, 32  # warp tile
MT, NT = WM // 16, WN // 8  # mma tiles a warp: 4 x 4
BK = 16  # K-slab a stage holds (two mma k-steps)
ACC = MT * NT * 4  # accumulators a thread (local-array sizes are single names: compile-time literals)
A_FRAG = MT * 4
B_FRAG = NT * 2
STAGES = 2  # 2 x 37 KB would not fit; 2 x 18.5 KB: 37 KB of static shared memory
A_PAD = 4  # A rows of BK + 4 words: conflict-free fragment loads
B_PAD = 8  # B rows of BN + 8 words
ALIGN = None if SIMULATOR else 16


@functools.cache
def make_tf32_kernel(bk: int = BK, stages: int = STAGES, round_inputs: bool = True):
    """The tensor_core_tf32 kernel for K-slabs of ``bk`` (a multiple of 8) and ``stages`` >= 2 buffers;
    ``round_inputs``: round A and B to TF32 with cvt.rna (else the tensor cores drop the low 13 bits)."""
    lda = bk + A_PAD
    ldb = BN + B_PAD
    a_words = BM * lda
    b_words = bk * ldb
    a_total = stages * a_words  # single names: compile-time sizes under numba-cuda-mlir (async_copy.py)
    b_total = stages * b_words
    bounds = {} if SIMULATOR else {"launch_bounds": (THREADS, 2)}

    @cuda.jit(**bounds)
    def tf32_kernel(A, B, C):
        """C = A @ B, float32 in and out, TF32 products; block (256,), grid (ceil(N / 128), ceil(M / 128))."""
        sA = cuda.shared.array(a_total, float32, alignment=ALIGN)  # [stage][m][k]
        sB = cuda.shared.array(b_total, float32, alignment=ALIGN)  # [stage][k][n]
        M = A.shape[0]
        K = A.shape[1]
        N = B.shape[1]
        t = cuda.threadIdx.x
        lane = t % 32
        warp = t // 32
        g = lane // 4
        q = lane % 4
        wm = (warp // 4) * WM  # the warp's tile inside the block tile
        wn = (warp % 4) * WN
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        vec = K % 4 == 0 and N % 4 == 0
        acc = cuda.local.array(ACC, float32)  # [mt][nt][c0..c3]: registers (unrolled loops only)
        af = cuda.local.array(A_FRAG, FRAGMENT)  # TF32 bits (an int32 register) on a GPU
        bf = cuda.local.array(B_FRAG, FRAGMENT)
        for i in range(ACC):
            acc[i] = float32(0.0)
        ntiles = (K + bk - 1) // bk
        for s in range(stages - 1):
            if s < ntiles:
                load_tile_async(sA, s * a_words, A, M, K, row0, s * bk, BM, bk, lda, t, THREADS, vec)
                load_tile_async(sB, s * b_words, B, K, N, s * bk, col0, bk, BN, ldb, t, THREADS, vec)
            cp_async_commit()
        for kt in range(ntiles):
            cp_async_wait(stages - 2)
            cuda.syncthreads()
            nxt = kt + stages - 1
            if nxt < ntiles:
                buf = nxt % stages
                load_tile_async(sA, buf * a_words, A, M, K, row0, nxt * bk, BM, bk, lda, t, THREADS, vec)
                load_tile_async(sB, buf * b_words, B, K, N, nxt * bk, col0, bk, BN, ldb, t, THREADS, vec)
            cp_async_commit()
            abase = (kt % stages) * a_words
            bbase = (kt % stages) * b_words
            for kk in range(0, bk, 8):
                for mt in range(MT):  # A fragments: a0..a3 of each 16 x 8 tile
                    r = abase + (wm + mt * 16 + g) * lda + kk + q
                    for i in range(4):
                        x = sA[r + (i & 1) * 8 * lda + (i >> 1) * 4]
                        af[mt * 4 + i] = to_tf32(x) if round_inputs else tf32_bits(x)
                for nt in range(NT):  # B fragments: b0, b1 of each 8 x 8 tile
                    c = bbase + (kk + q) * ldb + wn + nt * 8 + g
                    for i in range(2):
                        x = sB[c + i * 4 * ldb]
                        bf[nt * 2 + i] = to_tf32(x) if round_inputs else tf32_bits(x)
                for mt in range(MT):
                    for nt in range(NT):
                        o = (mt * NT + nt) * 4
                        d0, d1, d2, d3 = mma_tf32(af[mt * 4], af[mt * 4 + 1], af[mt * 4 + 2], af[mt * 4 + 3],
                                                  bf[nt * 2], bf[nt * 2 + 1],
                                                  acc[o], acc[o + 1], acc[o + 2], acc[o + 3])
                        acc[o] = d0
                        acc[o + 1] = d1
                        acc[o + 2] = d2
                        acc[o + 3] = d3
        cp_async_wait(0)
        for mt in range(MT):
            for nt in range(NT):
                o = (mt * NT + nt) * 4
                for i in range(4):  # c_i sits at row g (+ 8 for c2, c3), column 2q (+ 1 for c1, c3)
                    r = row0 + wm + mt * 16 + g + (i >> 1) * 8
                    c = col0 + wn + nt * 8 + 2 * q + (i & 1)
                    if r < M and c < N:
                        C[r, c] = acc[o + i]

    return tf32_kernel


def launch(size, threads):
    """Block fixed at 256 threads (8 warps), one 128 x 128 tile of C a block."""
    m, n, _ = size
    notes = []
    if threads != THREADS:
        notes.append(f"block fixed at {THREADS} threads (8 warps); --threads {threads} ignored")
    notes.append("TF32 inputs (10-bit mantissa), float32 sums")
    if EMULATED:
        notes.append("emulated: mma.sync and cp.async run as Python in the simulator")
    grid = (blocks_for(n, BN), blocks_for(m, BM))
    return Launch(grid=grid, block=(THREADS,), threads_needed=min(grid[0] * grid[1] * THREADS, blocks_for(m * n, 64)),
                  note="; ".join(notes))


def prepare(cfg, inputs, outputs):
    """One launch of the TF32 kernel on (A, B, C); float32 only (ValueError otherwise)."""
    A, B = inputs
    if np.dtype(A.dtype) != np.float32:
        raise ValueError("tensor_core_tf32 takes float32 inputs")
    k = make_tf32_kernel()[cfg.grid, cfg.block]
    C = outputs[0]
    return lambda: k(A, B, C)


def unavailable(dtype) -> str:
    """Why the rung does not run here ("" when it does)."""
    if UNAVAILABLE:
        return f"tensor_core_tf32 {UNAVAILABLE}"
    if np.dtype(dtype) != np.float32:
        return f"tensor_core_tf32 takes float32 inputs, rounded to TF32 (--dtype {np.dtype(dtype).name})"
    return ""


def _rungs():
    from kernels.gemm import async_copy
    from kernels.gemm import tensor_core_bf16 as bf16
    from kernels.gemm.mma import pipeline_variant

    return {
        "async_copy": pipeline_variant(
            "async_copy", f"FP32 SIMT, {async_copy.BM}x{async_copy.BN} block tile, 8x8 per thread, a "
            f"{async_copy.STAGES}-stage cp.async shared-memory pipeline (block fixed at {async_copy.THREADS})",
            async_copy.launch, async_copy.prepare, async_copy.unavailable,
            suits=lambda s: 1 not in s[:2]),
        "tensor_core_tf32": pipeline_variant(
            "tensor_core_tf32", f"TF32 tensor cores: mma.sync m16n8k8, {BM}x{BN} block tile of 8 warps "
            f"({WM}x{WN} each), {STAGES}-stage cp.async pipeline; TF32 inputs, float32 sums",
            launch, prepare, unavailable, precision="tf32",
            suits=lambda s: False),  # never tuned into auto: auto stays FP32
        "tensor_core_bf16": pipeline_variant(
            "tensor_core_bf16", f"bfloat16 tensor cores: mma.sync m16n8k16 with ldmatrix fragments, "
            f"{bf16.BM}x{bf16.BN} block tile of 8 warps ({bf16.MT * 16}x{bf16.NT * 8} each), {bf16.STAGES}-stage "
            f"cp.async pipeline; bfloat16 inputs, float32 sums", bf16.launch, bf16.prepare, bf16.unavailable,
            precision="bf16", suits=lambda s: False),  # asked for by name, as TF32
    }


# The rungs this package adds to matmul (kernels/matmul.py's variants): name -> Variant (the bf16 rung's
# kernel lives in kernels/gemm/tensor_core_bf16.py).
PIPELINE_RUNGS = _rungs()
