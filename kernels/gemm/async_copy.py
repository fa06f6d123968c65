"""Rung async_copy: FP32 SIMT matmul fed by a multi-stage ``cp.async`` shared-memory pipeline.

The register-tiled rungs load the next K-slab through registers: each thread issues global loads,
waits for them (hundreds of cycles) in the middle of its FMAs and stores the words to shared memory
itself. ``cp.async`` (PTX ISA, "cp.async"; CUDA C++ Programming Guide, "Asynchronous Data Copies")
copies global to shared memory without registers and without blocking the thread: the block keeps
STAGES slabs in shared memory, issues the copy of slab k + STAGES - 1 and then computes on slab k,
so the loads of the next slabs are in flight while the FMAs run (load tile k + 1 while computing
tile k). One wait and one barrier a slab replace the register round trip and the second barrier.

The pipeline (every thread, slab kt of ceil(K / bk)):

    prologue: issue slabs 0 .. STAGES-2, one commit group each; wait for slab 0, barrier
    for kt:   issue slab kt + STAGES - 1 into the stage slab kt - 1 used; commit
              compute on stage kt % STAGES; before its last k-step:
                  cp_async_wait(STAGES - 2)   # my copies of slab kt + 1 have landed
                  syncthreads()               # everyone's have; everyone is done reading slab kt
                  load slab kt + 1's first fragments

The wait must come before the barrier (the barrier publishes what the wait completed) and the next
issue after it (the stage being refilled was read until the barrier). The exercise
exercises/async_pipeline is this loop with two stages and the barrier at the top of the slab.

The tile mapping. A block of (bm / wm) x (bn / wn) warps computes a bm x bn tile of C, each warp a
wm x wn tile, each lane a tm x tn micro-tile: the warp's lanes form lm x ln = (wm / tm) x (wn / tn)
= 32, lane (u, v) = (lane // ln, lane % ln) owns

    rows     u + lm i          (i < tm: lm consecutive rows a load, one per lane row)
    columns  4 (ln c + v) + e  (c < tn / 4, e < 4: 16-byte chunks, ln consecutive chunks a load)

of its warp's tile. Every shared read is one 128-bit load (``ld.shared.v4.f32``, :func:`kernels.gemm.
shared_vec.ld4_f32`; numba-cuda-mlir would issue four 32-bit loads for ``s[j : j + 4]``):

* B is kept as it is in memory, [k][n], rows of bn words: at one k a lane reads its tn columns as
  tn / 4 loads; the ln lanes of a lane row read ln consecutive chunks (conflict-free) and the lm lane
  rows the same ones (a broadcast): 16 ln bytes a load for the warp.
* A is kept row-major too, [m][k] (cp.async copies verbatim: no transposed store), rows padded to
  lda = bk + 4 words: one load reads 4 consecutive k of one row, which serve 4 k-steps. A lane
  holds tm x 4 words of A (its rows, 4 k) and 2 x tn of B (one k, two buffers); the lm rows of one
  load are consecutive, and the padding (lda = 4 mod 8 words) puts 8 consecutive rows on 8
  different 4-bank groups: conflict-free, the ln lanes of a lane row broadcast.

Per 4 k a lane issues tm + tn loads for 4 tm tn FMAs: 16 loads for 256 FMAs at 8 x 8 (the previous
build issued 32-bit loads, 4.1x as many). The fragments are double-buffered: B of k-step s + 1 is
loaded before the FMAs of k-step s, and each A row of the next 4 k right after its last FMA of
these 4 (CUTLASS's warp-level software pipelining); the slab's wait and barrier sit before its last
k-step, so the next slab's first fragments load before the FMAs of that step.

Copies: each thread copies 16-byte chunks (chunk k of rows rt, rt + rpp, ...), both addresses worked
out from two per-kernel bases (kernels.gemm.shared_vec's ``cp_async16_at``: the generic helpers convert
both addresses on every call); 4-byte copies when K or N is not a multiple of 4 (unaligned rows);
outside the matrix the copy's source size is 0 and it writes zeros. Shared memory: STAGES x (bm lda +
bk bn) words; past 48 KB dynamic shared memory (``cuda.shared.array(0, ...)``, the bytes given at
launch: :func:`configure`). :data:`BUILDS` lists the builds (tile, slab depth, stages, blocks an SM
the registers are capped for); :data:`DEFAULT` is the rung's.

Saves over warp_tiled: the global-load latency and the register staging of the next slab (no
``a_next``/``b_next`` registers: more registers for accumulators), one barrier a slab instead of two.
Measured on the H100 (numba-cuda-mlir 0.6.0, docs/tensor-cores.md), the previous build (128 x 128
block of 256 threads, 8 x 8 a thread, 32-bit shared loads): correct at every shape tried, 15.2 TFLOP/s
at 4096^3, 0.30x cuBLAS FP32, issue-bound (553.6 M shared loads, B's 2-way bank conflicted). The
builds of :data:`BUILDS` are not measured on a GPU yet (scripts/async_copy_bench.py checks and times them beside
torch). Compiled offline for sm_90 (numba-cuda-mlir 0.6.0's PTX with the kernel's launch bounds, ptxas):
no local arrays left in local memory; the 8 x 16 builds at 255 registers without spills, their
4-deep group loop 561 SASS instructions for 512 FFMA; the 8 x 8 builds capped at 128 registers spill
36-68 bytes (a few LDL a slab, none between the FFMA); their 16 k take 4 x ~307 instructions for 1,024
FFMA; uncapped (``_r1``) 168 registers, no spills.

In the simulator the copies and the 128-bit loads are emulated (kernels.gemm.mma, kernels.gemm.shared_vec):
the copies buffered per thread and written at the wait, so a missing or misplaced wait gives wrong
results there too.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from kernels.compiler import SIMULATOR, cuda, float32
from kernels.gemm.build_options import ALIGN, FORCEINLINE
from kernels.gemm.mma import EMULATED, UNAVAILABLE, cp_async_commit, cp_async_wait
from kernels.gemm.shared_vec import cp_async4_at, cp_async16_at, global_base, ld4_f32, shared_base
from kernels.spec import Launch, blocks_for


class Build(NamedTuple):
    """A build of the kernel: block tile bm x bn of C, warp tile wm x wn, lane micro-tile tm x tn, K-slabs
    of bk, ``stages`` buffers; registers capped so that ``blocks`` blocks fit an SM (launch_bounds)."""
    bm: int
    bn: int
    wm: int
    wn: int
    tm: int
    tn: int  # a multiple of 4: 16-byte chunks of B
    bk: int  # a multiple of 4: one A load covers 4 k-steps
    stages: int
    blocks: int = 1

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def lda(self) -> int:
        return self.bk + 4  # 4 mod 8 words: 8 consecutive rows on 8 different 4-bank groups

    @property
    def shared_bytes(self) -> int:
        return self.stages * (self.bm * self.lda + self.bk * self.bn) * 4

    @property
    def dynamic_bytes(self) -> int:
        """Bytes of dynamic shared memory the launch asks for: 0 (static) up to 48 KB, all of it past."""
        return self.shared_bytes if self.shared_bytes > STATIC_SHARED else 0

    def __str__(self):
        return (f"{self.bm}x{self.bn} block, {self.wm}x{self.wn} warps, {self.tm}x{self.tn} a thread, "
                f"bk {self.bk}, {self.stages} stages")


STATIC_SHARED = 48 * 1024  # a block's static shared memory; past it, dynamic
MAX_SHARED = 227 * 1024  # an H100 block's opt-in shared memory
# The builds scripts/async_copy_bench.py times. Up to 48 KB the stages are a static shared array; past it,
# dynamic shared memory (numba-cuda-mlir raises the function's limit when a launch asks for more).
BUILDS = {
    # 8 warps of 64 x 32, 8 x 8 a lane, registers capped at 128 for 2 blocks (16 warps) an SM
    "b128x128_w64x32_t8x8_k8_s4": Build(128, 128, 64, 32, 8, 8, 8, 4, 2),  # 40 KB, static
    "b128x128_w64x32_t8x8_k16_s3": Build(128, 128, 64, 32, 8, 8, 16, 3, 2),  # 55 KB
    "b128x128_w64x32_t8x8_k32_s3": Build(128, 128, 64, 32, 8, 8, 32, 3, 2),  # 104 KB: half the barriers
    "b128x128_w32x64_t8x8_k16_s3": Build(128, 128, 32, 64, 8, 8, 16, 3, 2),  # lanes 4 x 8 instead of 8 x 4
    "b128x128_w64x32_t8x8_k16_s3_r1": Build(128, 128, 64, 32, 8, 8, 16, 3, 1),  # 255 registers, 8 warps an SM
    # 4 warps of 64 x 64, 8 x 16 a lane (auto's tiling): 255 registers, 2 blocks (8 warps) an SM
    "b128x128_w64x64_t8x16_k16_s3": Build(128, 128, 64, 64, 8, 16, 16, 3, 2),  # 55 KB
    "b128x128_w64x64_t8x16_k16_s4": Build(128, 128, 64, 64, 8, 16, 16, 4, 2),  # 73 KB
    "b128x128_w64x64_t8x16_k32_s3": Build(128, 128, 64, 64, 8, 16, 32, 3, 2),  # 104 KB: half the barriers
    # 8 warps of 64 x 64: 255 registers, 1 block an SM
    "b128x256_w64x64_t8x16_k16_s3": Build(128, 256, 64, 64, 8, 16, 16, 3, 1),  # 79 KB
}
# the rung's build, chosen offline (no spills, 91% of its main loop's instructions FFMA, the 8 x 8 builds' 83%);
# scripts/async_copy_bench.py times them all
DEFAULT = "b128x128_w64x64_t8x16_k16_s3"
_D = BUILDS[DEFAULT]
BM, BN, THREADS, STAGES = _D.bm, _D.bn, _D.threads, _D.stages  # the default build's, for the rung's description


@cuda.jit(device=True, **FORCEINLINE)
def load_tile(sdst, saddr, src, gaddr, rows, cols, r0, c0, tile_rows, tile_cols, lds, t, copies, nthreads, vec):
    """Issue the copy of src[r0 : r0 + tile_rows, c0 : c0 + tile_cols] (row-major float32 rows x cols) into
    shared ``sdst`` from byte address ``saddr`` on (shared_base + 4 x an element index; ``gaddr``: src's
    global_base), in rows of ``lds`` words. Thread ``t`` copies 16-byte chunk k of rows rt, rt + rpp, ...
    (``copies`` of them; nthreads a multiple of the chunks a row); ``vec`` (a compile-time constant):
    16-byte copies (cols % 4 == 0), else four 4-byte copies a chunk. Outside the matrix: zeros. Does not
    commit."""
    per_row = tile_cols // 4
    rpp = nthreads // per_row
    rt = t // per_row
    k = t - rt * per_row
    gc = c0 + k * 4
    g = gaddr + ((r0 + rt) * cols + gc) * 4  # the global address of the thread's first chunk
    inside = r0 + tile_rows <= rows and c0 + tile_cols <= cols  # the whole tile: no checks a chunk
    for i in range(copies):
        r = rt + i * rpp
        gr = r0 + r
        d = saddr + 4 * (r * lds + k * 4)
        gi = g + i * rpp * cols * 4  # src[gr, gc]'s address
        if vec and inside:
            cp_async16_at(sdst, d, src, gi, gr, gc, 4)
        elif vec:  # cols % 4 == 0: a chunk is inside the matrix whole or not at all (outside: zeros, nothing read)
            ok = gr < rows and gc < cols
            cp_async16_at(sdst, d, src, gi if ok else gaddr, gr, gc, 4 if ok else 0)
        else:
            for e in range(4):
                ok = gr < rows and gc + e < cols
                cp_async4_at(sdst, d + 4 * e, src, gi + 4 * e if ok else gaddr, gr, gc + e, 1 if ok else 0)


def check_build(b: Build) -> None:
    """ValueError unless ``b`` is a build the kernel supports."""
    lm, ln = b.wm // b.tm, b.wn // b.tn
    if (b.tn % 4 or b.bk % 4 or b.wm % b.tm or b.wn % b.tn or lm * ln != 32 or b.bm % b.wm or b.bn % b.wn
            or b.shared_bytes > MAX_SHARED or not 2 <= b.stages <= 5  # cp_async_wait takes 0..3
            or b.threads % (b.bk // 4) or (b.bm * b.bk // 4) % b.threads  # load_tile's chunks of A ...
            or b.threads % (b.bn // 4) or (b.bk * b.bn // 4) % b.threads  # ... and of B
            or b.threads * b.blocks > 2048):
        raise ValueError(f"unsupported build {b}")


@functools.cache
def make_async_copy_kernel(build: Build = _D, vec: bool = True):
    """The async_copy kernel for ``build`` (a :class:`Build`); ``vec``: 16-byte copies, for K and N multiples
    of 4 (rows 16-byte aligned), else 4-byte copies (:func:`kernel_for` picks). A build past 48 KB of shared
    memory needs ``build.dynamic_bytes`` at launch (:func:`configure`). ValueError for an unsupported build."""
    check_build(build)
    bm, bn, wm, wn, tm, tn, bk, stages, blocks = build
    threads = build.threads
    lda = build.lda
    warps_n = bn // wn
    lm, ln = wm // tm, wn // tn  # lane rows, lane columns
    nc = tn // 4  # 16-byte chunks of B a lane reads at one k
    groups = bk // 4  # 4-deep groups a slab: one A load a row each
    # sizes as single names: compile-time literals under numba-cuda-mlir
    acc_n = tm * tn
    a_frag = tm * 4
    b_frag = 2 * tn  # two buffers
    a_words = bm * lda
    b_words = bk * bn
    a_total = stages * a_words
    smem_n = 0 if build.dynamic_bytes else a_total + stages * b_words  # 0: the launch's dynamic shared memory
    a_copies = bm * bk // 4 // threads
    b_copies = bk * bn // 4 // threads
    bounds = {} if SIMULATOR else {"launch_bounds": (threads, blocks)}

    @cuda.jit(device=True, **FORCEINLINE)
    def load_a(sm, af, i, pa, kg):
        """Row i's 4 words of group kg (k = 4 kg .. 4 kg + 3): one 128-bit load."""
        af[i * 4], af[i * 4 + 1], af[i * 4 + 2], af[i * 4 + 3] = ld4_f32(sm, pa, i * lm * lda + kg * 4)

    @cuda.jit(device=True, **FORCEINLINE)
    def load_b(sm, bf, buf, pb, k):
        """Row k's tn words into buffer ``buf``: nc 128-bit loads."""
        for c in range(nc):
            f = buf * tn + c * 4
            bf[f], bf[f + 1], bf[f + 2], bf[f + 3] = ld4_f32(sm, pb, k * bn + c * ln * 4)

    @cuda.jit(device=True, **FORCEINLINE)
    def fma_row(acc, af, i, j, bf, buf):
        """Row i of the micro-tile += A[row i, k-step j of the group] x B buffer ``buf``."""
        a = af[i * 4 + j]
        for n in range(tn):
            acc[i * tn + n] += a * bf[buf * tn + n]

    @cuda.jit(device=True, **FORCEINLINE)
    def k_step(sm, acc, af, bf, pb, k0, j):
        """k-step j (0..2, a constant) of the group at k0: B of k-step j + 1 loaded first (buffer (j + 1) % 2),
        then the FMAs with buffer j % 2."""
        load_b(sm, bf, (j + 1) % 2, pb, k0 + j + 1)
        for i in range(tm):
            fma_row(acc, af, i, j, bf, j % 2)

    @cuda.jit(**bounds)
    def async_copy_kernel(A, B, C):
        """C = A @ B, float32; block (threads,), grid (ceil(N / bn), ceil(M / bm))."""
        sm = cuda.shared.array(smem_n, float32, alignment=ALIGN)  # [stage][m][lda] of A, then [stage][k][n] of B
        a_addr = shared_base(sm)
        b_addr = a_addr + 4 * a_total
        ga = global_base(A)  # the copies' global addresses start here (computed once: inline PTX stays put)
        gb = global_base(B)
        M = A.shape[0]
        K = A.shape[1]
        N = B.shape[1]
        t = cuda.threadIdx.x
        lane = t % 32
        warp = t // 32
        u = lane // ln
        v = lane % ln
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        wm0 = (warp // warps_n) * wm
        wn0 = (warp % warps_n) * wn
        a_lane = (wm0 + u) * lda  # this lane's words in a stage: A row wm0 + u (+ lm i), B column wn0 + 4 v
        b_lane = wn0 + 4 * v  # (+ 4 ln c)
        acc = cuda.local.array(acc_n, float32)  # indexed only by unrolled loops: registers
        af = cuda.local.array(a_frag, float32)  # [row i][4 k]
        bf = cuda.local.array(b_frag, float32)  # [buffer][tn]
        for i in range(acc_n):
            acc[i] = float32(0.0)
        ntiles = (K + bk - 1) // bk
        for s in range(stages - 1):  # prologue: slabs 0 .. stages-2 in flight
            if s < ntiles:
                load_tile(sm, a_addr + 4 * s * a_words, A, ga, M, K, row0, s * bk, bm, bk, lda, t, a_copies, threads,
                          vec)
                load_tile(sm, b_addr + 4 * s * b_words, B, gb, K, N, s * bk, col0, bk, bn, bn, t, b_copies, threads,
                          vec)
            cp_async_commit()
        cp_async_wait(stages - 2)  # slab 0 landed, then its first fragments
        cuda.syncthreads()
        for i in range(tm):
            load_a(sm, af, i, a_addr + 4 * a_lane, 0)
        load_b(sm, bf, 0, b_addr + 4 * b_lane, 0)
        rd = 0  # the stage slab kt sits in (kt % stages, counted: no division in the loop)
        wr = stages - 1  # the stage slab kt + stages - 1 goes to: the one slab kt - 1 used
        for kt in range(ntiles):
            nxt = kt + stages - 1  # every thread passed the barrier after its last read of stage wr
            if nxt < ntiles:
                load_tile(sm, a_addr + 4 * wr * a_words, A, ga, M, K, row0, nxt * bk, bm, bk, lda, t, a_copies,
                          threads, vec)
                load_tile(sm, b_addr + 4 * wr * b_words, B, gb, K, N, nxt * bk, col0, bk, bn, bn, t, b_copies,
                          threads, vec)
            cp_async_commit()  # an empty group past the last slab keeps the count
            wr = rd
            pa = a_addr + 4 * (rd * a_words + a_lane)  # byte addresses: the loads below add constants
            pb = b_addr + 4 * (rd * b_words + b_lane)
            rd = rd + 1 if rd + 1 < stages else 0
            for g in range(groups):
                k_step(sm, acc, af, bf, pb, g * 4, 0)  # k-steps 0..2 (written out: constant register indices)
                k_step(sm, acc, af, bf, pb, g * 4, 1)
                k_step(sm, acc, af, bf, pb, g * 4, 2)
                na = pa  # where the next group is: this slab's group g + 1 ...
                nb = pb
                ng = g + 1
                if g + 1 == groups:  # ... or the next slab's group 0, once every thread's copies landed
                    cp_async_wait(stages - 2)
                    cuda.syncthreads()
                    na = a_addr + 4 * (rd * a_words + a_lane)
                    nb = b_addr + 4 * (rd * b_words + b_lane)
                    ng = 0
                load_b(sm, bf, 0, nb, ng * 4)
                for i in range(tm):  # k-step 3: row i's last FMAs of the group, then its next 4 k
                    fma_row(acc, af, i, 3, bf, 1)
                    load_a(sm, af, i, na, ng)
        cp_async_wait(0)  # nothing left in flight when the block exits
        for i in range(tm):
            r = row0 + wm0 + u + lm * i
            if r < M:
                for c in range(nc):
                    col = col0 + b_lane + 4 * ln * c
                    for e in range(4):
                        if col + e < N:
                            C[r, col + e] = acc[i * tn + c * 4 + e]

    return async_copy_kernel


def kernel_for(k: int, n: int, build: Build = _D):
    """The kernel for A of k columns and B of n columns: 16-byte copies when both are multiples of 4."""
    return make_async_copy_kernel(build, k % 4 == 0 and n % 4 == 0)


def configure(kernel, build: Build, grid, block):
    """``kernel[grid, block]``, with ``build.dynamic_bytes`` of dynamic shared memory when it has any."""
    return kernel[grid, block, 0, build.dynamic_bytes] if build.dynamic_bytes else kernel[grid, block]


def launch_for(build: Build, size) -> Launch:
    """The launch of ``build``'s kernel for size (m, n, k): one bm x bn tile of C a block."""
    m, n, _ = size
    grid = (blocks_for(n, build.bn), blocks_for(m, build.bm))
    return Launch(grid=grid, block=(build.threads,), threads_needed=min(grid[0] * grid[1] * build.threads,
                                                                       blocks_for(m * n, 64)))


def launch(size, threads):
    """The default build's launch: block fixed at its warps' threads, one bm x bn tile of C a block."""
    notes = []
    if threads != _D.threads:
        notes.append(f"block fixed at {_D.threads} threads (compile-time tile); --threads {threads} ignored")
    if EMULATED:
        notes.append("emulated: cp.async and ld.shared.v4 run as Python in the simulator")
    plan = launch_for(_D, size)
    return Launch(grid=plan.grid, block=plan.block, threads_needed=plan.threads_needed, note="; ".join(notes))


def prepare(cfg, inputs, outputs):
    """One launch of the async_copy kernel on (A, B, C); float32 only (ValueError otherwise)."""
    A, B = inputs
    if np.dtype(A.dtype) != np.float32:
        raise ValueError("async_copy is a float32 kernel")
    k = configure(kernel_for(A.shape[1], B.shape[1]), _D, cfg.grid, cfg.block)
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
