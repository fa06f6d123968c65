"""Rung async_copy: FP32 SIMT matmul fed by a multi-stage ``cp.async`` shared-memory pipeline.

The register-tiled rungs load the next K-slab through registers: each thread issues global loads,
waits for them (hundreds of cycles) in the middle of its FMAs and stores the words to shared memory
itself. ``cp.async`` (PTX ISA, "cp.async"; CUDA C++ Programming Guide, "Asynchronous Data Copies")
copies global to shared memory without registers and without blocking the thread: the block keeps
STAGES slabs in shared memory, issues the copy of slab k + STAGES - 1 and then computes on slab k,
so the loads of the next slabs are in flight while the FMAs run (load tile k + 1 while computing
tile k). One wait and one barrier a slab replace the register round trip and the second barrier.

The pipeline (every thread, slab kt of ceil(K / BK)):

    prologue: issue slabs 0 .. STAGES-2, one commit group each
    for kt:   cp_async_wait(STAGES - 2)   # my copies of slab kt have landed
              syncthreads()               # everyone's have; everyone finished slab kt - 1
              issue slab kt + STAGES - 1 into the buffer slab kt - 1 used; commit
              compute on buffer kt % STAGES

The wait must come before the barrier (the barrier publishes what the wait completed) and the
issue after it (the buffer being refilled was read until the barrier). The exercise
exercises/async_pipeline is this loop with two stages.

Tile: 128 x 128 of C a block of 256 threads, each thread an 8 x 8 micro-tile (rows ty*4 + {0..3}
and 64 + ty*4 + {0..3}, the same for columns with tx), A kept row-major in shared memory (cp.async
copies verbatim, so no transposed store): per 4 k a thread reads its 8 rows of A as eight 128-bit
loads and 2 x 4 128-bit loads of B, 4 shared loads per 64 FMAs. Copies are 16 bytes (4 floats) when
K and N are multiples of 4 (aligned rows), else 4 bytes each; past the matrix edges the copy's
source size is 0 and it writes zeros. Shared memory: STAGES * (128 * (BK + 4) + BK * 128) words,
40 KB for BK = 8, STAGES = 4.

Saves over warp_tiled: the global-load latency and the register staging of the next slab (no
``a_next``/``b_next`` registers: more registers for accumulators), one barrier a slab instead of two.
Measured on the H100 (numba-cuda-mlir 0.6.0, docs/tensor-cores.md): correct at every shape tried, but
15.2 TFLOP/s at 4096^3, 0.30x cuBLAS FP32 (the target was 0.9x); 16.1 with 16-deep slabs and 2 stages.
Issue-bound: the pipeline hides the global loads (long-scoreboard stalls 0.01 per issue), but the
compiler keeps the shared loads 32-bit (553.6 M, 4.1x what 128-bit loads would need) and B's are 2-way
bank conflicted; ``ld.shared.v4.f32`` through inline PTX is the next step.

In the simulator the copies are emulated (kernels.gemm.mma): buffered per thread and written at the
wait, so a missing or misplaced wait gives wrong results there too.
"""
from __future__ import annotations

import functools

import numpy as np

from kernels.compiler import SIMULATOR, cuda, float32
from kernels.gemm.mma import EMULATED, UNAVAILABLE, cp_async4, cp_async16, cp_async_commit, cp_async_wait
from kernels.spec import Launch, blocks_for

BM = BN = 128  # block tile of C
THREADS = 256  # 16 x 16 threads, each an 8 x 8 micro-tile
BK = 8  # K-slab a stage holds
STAGES = 4  # slabs in flight: 3 loading while 1 is computed on
A_PAD = 4  # words of padding per A row in shared memory (rows stay 16-byte aligned)
FORCEINLINE = {} if SIMULATOR else {"forceinline": True}
ALIGN = None if SIMULATOR else 16


@cuda.jit(device=True, **FORCEINLINE)
def load_tile_async(sdst, base, src, rows, cols, r0, c0, tile_rows, tile_cols, lds, t, nthreads, vec):
    """Issue the copy of the tile [r0 : r0 + tile_rows, c0 : c0 + tile_cols] of ``src`` (a row-major
    float32 rows x cols matrix) into the 1-D shared array ``sdst`` from element ``base`` on, in rows of
    ``lds`` elements: thread ``t`` of ``nthreads`` copies every nthreads-th 4-element chunk. ``vec``:
    16-byte copies (cols % 4 == 0, so chunks are aligned), else four 4-byte copies a chunk. Elements
    outside the matrix are written as zeros (source size 0). Does not commit."""
    per_row = tile_cols // 4
    for c in range(t, tile_rows * per_row, nthreads):
        r = c // per_row
        k = (c - r * per_row) * 4
        gr = r0 + r
        gc = c0 + k
        di = base + r * lds + k
        if vec:
            n = 0
            if gr < rows and gc < cols:
                n = min(cols - gc, 4)
            cp_async16(sdst, di, src, gr, gc, n)
        else:
            for e in range(4):
                cp_async4(sdst, di + e, src, gr, gc + e, 1 if gr < rows and gc + e < cols else 0)


@functools.cache
def make_async_copy_kernel(bk: int = BK, stages: int = STAGES):
    """The async_copy kernel for K-slabs of ``bk`` (a multiple of 4) and ``stages`` >= 2 buffers."""
    lda = bk + A_PAD
    a_words = BM * lda
    b_words = bk * BN
    # sizes as single names: numba-cuda-mlir takes a size expression as a run-time value (a shared array
    # of 0 bytes, then an illegal address); a name is a compile-time literal
    a_total = stages * a_words
    b_total = stages * b_words
    bounds = {} if SIMULATOR else {"launch_bounds": (THREADS, 2)}

    @cuda.jit(**bounds)
    def async_copy_kernel(A, B, C):
        """C = A @ B, float32, block (256,), grid (ceil(N / 128), ceil(M / 128))."""
        sA = cuda.shared.array(a_total, float32, alignment=ALIGN)  # [stage][m][k], rows of lda
        sB = cuda.shared.array(b_total, float32, alignment=ALIGN)  # [stage][k][n]
        M = A.shape[0]
        K = A.shape[1]
        N = B.shape[1]
        t = cuda.threadIdx.x
        tx = t % 16
        ty = t // 16
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        vec = K % 4 == 0 and N % 4 == 0
        acc = cuda.local.array(64, float32)  # indexed only by unrolled loops: registers
        a_frag = cuda.local.array(32, float32)
        b_frag = cuda.local.array(8, float32)
        for i in range(64):
            acc[i] = float32(0.0)
        ntiles = (K + bk - 1) // bk
        for s in range(stages - 1):  # prologue: slabs 0 .. stages-2 in flight
            if s < ntiles:
                load_tile_async(sA, s * a_words, A, M, K, row0, s * bk, BM, bk, lda, t, THREADS, vec)
                load_tile_async(sB, s * b_words, B, K, N, s * bk, col0, bk, BN, BN, t, THREADS, vec)
            cp_async_commit()
        for kt in range(ntiles):
            cp_async_wait(stages - 2)  # my copies of slab kt landed
            cuda.syncthreads()  # everyone's did, and everyone is done with slab kt - 1
            nxt = kt + stages - 1
            if nxt < ntiles:  # refill the buffer slab kt - 1 used
                buf = nxt % stages
                load_tile_async(sA, buf * a_words, A, M, K, row0, nxt * bk, BM, bk, lda, t, THREADS, vec)
                load_tile_async(sB, buf * b_words, B, K, N, nxt * bk, col0, bk, BN, BN, t, THREADS, vec)
            cp_async_commit()  # an empty group past the last slab keeps the count
            abase = (kt % stages) * a_words
            bbase = (kt % stages) * b_words
            for kk in range(0, bk, 4):
                for i in range(8):
                    r = ty * 4 + (i % 4) + (i // 4) * 64
                    for j in range(4):
                        a_frag[i * 4 + j] = sA[abase + r * lda + kk + j]
                for j in range(4):
                    for h in range(2):
                        for e in range(4):
                            b_frag[h * 4 + e] = sB[bbase + (kk + j) * BN + h * 64 + tx * 4 + e]
                    for i in range(8):
                        a = a_frag[i * 4 + j]
                        for n in range(8):
                            acc[i * 8 + n] += a * b_frag[n]
        cp_async_wait(0)  # nothing left in flight when the block exits
        for i in range(8):
            r = row0 + ty * 4 + (i % 4) + (i // 4) * 64
            if r < M:
                for n in range(8):
                    c = col0 + tx * 4 + (n % 4) + (n // 4) * 64
                    if c < N:
                        C[r, c] = acc[i * 8 + n]

    return async_copy_kernel


def launch(size, threads):
    """Block fixed at 256 threads, one 128 x 128 tile of C a block: grid (ceil(N / 128), ceil(M / 128))."""
    m, n, _ = size
    notes = []
    if threads != THREADS:
        notes.append(f"block fixed at {THREADS} threads (compile-time tile); --threads {threads} ignored")
    if EMULATED:
        notes.append("emulated: cp.async runs as Python in the simulator (buffered until its wait)")
    grid = (blocks_for(n, BN), blocks_for(m, BM))
    return Launch(grid=grid, block=(THREADS,), threads_needed=min(grid[0] * grid[1] * THREADS, blocks_for(m * n, 64)),
                  note="; ".join(notes))


def prepare(cfg, inputs, outputs):
    """One launch of the async_copy kernel on (A, B, C); float32 only (ValueError otherwise)."""
    A, B = inputs
    if np.dtype(A.dtype) != np.float32:
        raise ValueError("async_copy is a float32 kernel")
    k = make_async_copy_kernel()[cfg.grid, cfg.block]
    C = outputs[0]
    return lambda: k(A, B, C)


def unavailable(dtype) -> str:
    """Why the rung does not run here ("" when it does): float32 only, and cp.async needs
    numba-cuda-mlir on a GPU or the simulator's emulation."""
    if UNAVAILABLE:
        return f"async_copy {UNAVAILABLE}"
    if np.dtype(dtype) != np.float32:
        return f"async_copy is a float32 rung (--dtype {np.dtype(dtype).name})"
    return ""
