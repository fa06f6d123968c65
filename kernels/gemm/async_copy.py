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
the registers are capped for, block order); :data:`DEFAULT` is the rung's.

Small grids. A 128 x 128 tile a block leaves SMs idle when C has few tiles: 1000 x 1030 is 8 x 9 = 72
blocks for an H100's or H200's 132 SMs. The rung's build is a function of the shape and the SM count
(:func:`choose`, named with its reason in the launch note): the default where its grid gives every SM a
block, else :data:`SMALL` (64 x 64 tiles of 4 warps of 32 x 32, 4 x 8 a lane: 4x the blocks, 4 an SM), and
where even those leave SMs idle (64 x 4096 x 4096: 64 blocks) K is split too, as the split_k rung does
(kernels.gemm.split_k): grid z is K's ranges, block z writes its partial product into rows z M .. z M + M - 1
of a workspace, and split_k's reduction launch adds them into C. Block order: a build's ``group`` launches
the tiles a group of tile rows at a time, column by column (:func:`grouped_order`), so the blocks resident at
one time share A rows and B columns in L2.

Saves over warp_tiled: the global-load latency and the register staging of the next slab (no
``a_next``/``b_next`` registers: more registers for accumulators), one barrier a slab instead of two.
Measured on the H100 (numba-cuda-mlir 0.6.0, docs/tensor-cores.md), the first build (128 x 128 block of
256 threads, 8 x 8 a thread, 32-bit shared loads): correct at every shape tried, 15.2 TFLOP/s at 4096^3,
0.30x cuBLAS FP32, issue-bound (553.6 M shared loads, B's 2-way bank conflicted). Measured on an H200
(numba-cuda-mlir 0.6.0, scripts/async_copy_bench.py; TFLOP/s and x torch FP32 with TF32 off, which made
49.9 / 42.1 / 44.9 / 21.1 at 4096^3, 3000 x 5000 x 2000, 2048^3, 1000 x 1030 x 517), every build within
0.34 of its float64 check's tolerance:

    b128x128_w64x64_t8x16_k16_s4 (default)   39.5 (0.79x)  35.1 (0.83x)  36.9 (0.82x)  9.8 (0.47x)
    b128x128_w64x64_t8x16_k16_s3             39.6 (0.79x)  34.0 (0.81x)  34.1 (0.76x)  8.1 (0.39x)
    b128x128_w64x64_t8x16_k32_s3             40.2 (0.80x)  34.5 (0.82x)  36.5 (0.81x)  9.8 (0.46x)
    b128x128_w64x32_t8x8_k16_s3 (128 regs)   34.2 (0.69x)  29.1 (0.69x)  31.6 (0.70x)  9.3 (0.44x)

and builds since dropped: the other 8 x 8 ones 0.64-0.76x (their best, bk 32, 36.9 at 4096^3; uncapped,
168 registers, 34.4: the cap cost nothing), 128 x 256 blocks of 8 warps 0.73-0.77x and 0.28x at 1000 x 1030
x 517. The 8 x 16 lanes (512 FFMA for 24 loads every 4 k) beat the 8 x 8 ones by 0.06-0.12x at the three large
shapes, not at the small one (72 blocks: half the SMs idle, :func:`choose`); a fourth stage gains at the
mid shapes, not at 4096^3. Not measured yet: :func:`choose`'s picks (the 64 x 64 build, K
split), the 128 x 64 build, the grouped block order, the shapes 64 x 4096 x 4096, 4096 x 64 x 4096,
4096 x 4096 x 64, 1024^3, 4097^3, 8192^3, and any of these on an H100. Compiled offline for sm_90
(numba-cuda-mlir 0.6.0's PTX with the kernel's launch bounds, ptxas): no local arrays left in local
memory; the 8 x 16 builds at 248-255 registers without spills, their 4-deep group loop 561 SASS
instructions for 512 FFMA; the 8 x 8 build capped at 128 registers spills (36-44 bytes stored) (a few LDL a slab,
none between the FFMA); the 128 x 64 build 168 registers and the 64 x 64 one 122-124 (of 128), no spills.

In the simulator the copies and the 128-bit loads are emulated (kernels.gemm.mma, kernels.gemm.shared_vec):
the copies buffered per thread and written at the wait, so a missing or misplaced wait gives wrong
results there too.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from kernels.arrays import empty_like
from kernels.compiler import SIMULATOR, cuda, float32
from kernels.gemm import mma
from kernels.gemm.build_options import ALIGN, FORCEINLINE
from kernels.gemm.mma import EMULATED, STATIC_SHARED, UNAVAILABLE, cp_async_commit, cp_async_wait
from kernels.gemm.shared_vec import cp_async4_at, cp_async16_at, global_base, ld4_f32, shared_base
from kernels.gemm.split_k import k_ranges, reduce_launch, split_k_reduce_kernel
from kernels.spec import Launch, blocks_for, sm_count


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
    group: int = 0  # > 0: blocks run through tile rows in groups of this many, column by column (L2 reuse)

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
                f"bk {self.bk}, {self.stages} stages" + (f", blocks grouped by {self.group} tile rows" if self.group
                                                         else ""))


MAX_SHARED = 227 * 1024  # an H100 block's opt-in shared memory
# The builds scripts/async_copy_bench.py times. Up to 48 KB the stages are a static shared array; past it,
# dynamic shared memory (numba-cuda-mlir raises the function's limit when a launch asks for more).
BUILDS = {
    # 4 warps of 64 x 64, 8 x 16 a lane (auto's tiling): 255 registers, 2 blocks (8 warps) an SM
    "b128x128_w64x64_t8x16_k16_s4": Build(128, 128, 64, 64, 8, 16, 16, 4, 2),  # 73 KB: the default
    "b128x128_w64x64_t8x16_k16_s3": Build(128, 128, 64, 64, 8, 16, 16, 3, 2),  # 55 KB: one stage fewer
    "b128x128_w64x64_t8x16_k32_s3": Build(128, 128, 64, 64, 8, 16, 32, 3, 2),  # 104 KB: half the barriers
    # the default with the blocks' order grouped: 8 tile rows a group, column by column (L2 reuse)
    "b128x128_w64x64_t8x16_k16_s4_g8": Build(128, 128, 64, 64, 8, 16, 16, 4, 2, 8),
    # 8 warps of 64 x 32, 8 x 8 a lane, registers capped at 128 for 2 blocks (16 warps) an SM
    "b128x128_w64x32_t8x8_k16_s3": Build(128, 128, 64, 32, 8, 8, 16, 3, 2),  # 55 KB
    # smaller blocks for grids that leave SMs idle (:func:`choose`): 4 warps each
    "b128x64_w64x32_t8x8_k16_s4": Build(128, 64, 64, 32, 8, 8, 16, 4, 3),  # 57 KB, 168 registers
    "b64x64_w32x32_t4x8_k16_s4": Build(64, 64, 32, 32, 4, 8, 16, 4, 4),  # 36 KB static, 128 registers
}
# the rung's build: the best geometric mean over the four shapes timed on the H200 (module docstring)
DEFAULT = "b128x128_w64x64_t8x16_k16_s4"
SMALL = "b64x64_w32x32_t4x8_k16_s4"  # :func:`choose`'s build where the default's grid leaves SMs idle
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


def grouped_order(bx, by, gx, gy, group):
    """(tile row, tile column) of block (bx, by) of a gx x gy grid when the blocks, launched x first, go
    through the tile rows in groups of ``group`` rows, column by column inside a group (the last group may
    have fewer rows): the blocks resident at one time read fewer distinct A rows and B columns, so more of
    their slabs come from L2 (Triton's matmul tutorial, "L2 cache optimizations"). A bijection of the grid."""
    pid = by * gx + bx
    width = group * gx
    g = pid // width
    first = g * group
    in_group = min(gy - first, group)
    r = pid - g * width
    return first + r % in_group, r // in_group


grouped_tile = cuda.jit(device=True, **FORCEINLINE)(grouped_order)


def check_build(b: Build) -> None:
    """ValueError unless ``b`` is a build the kernel supports."""
    lm, ln = b.wm // b.tm, b.wn // b.tn
    if (b.tn % 4 or b.bk % 4 or b.wm % b.tm or b.wn % b.tn or lm * ln != 32 or b.bm % b.wm or b.bn % b.wn
            or b.shared_bytes > MAX_SHARED or not 2 <= b.stages <= 5  # cp_async_wait takes 0..3
            or b.threads % (b.bk // 4) or (b.bm * b.bk // 4) % b.threads  # load_tile's chunks of A ...
            or b.threads % (b.bn // 4) or (b.bk * b.bn // 4) % b.threads  # ... and of B
            or b.threads * b.blocks > 2048 or b.group < 0):
        raise ValueError(f"unsupported build {b}")


@functools.cache
def make_async_copy_kernel(build: Build = _D, vec: bool = True):
    """The async_copy kernel for ``build`` (a :class:`Build`); ``vec``: 16-byte copies, for K and N multiples
    of 4 (rows 16-byte aligned), else 4-byte copies (:func:`kernel_for` picks). A build past 48 KB of shared
    memory needs ``build.dynamic_bytes`` at launch (:func:`configure`). ValueError for an unsupported build."""
    check_build(build)
    bm, bn, wm, wn, tm, tn, bk, stages = build.bm, build.bn, build.wm, build.wn, build.tm, build.tn, build.bk, build.stages
    group = build.group
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
    bounds = {} if SIMULATOR else {"launch_bounds": (threads, build.blocks)}

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
        """C = A @ B, float32; block (threads,), grid (ceil(N / bn), ceil(M / bm), splits). With splits > 1
        (grid z), block z adds K range z (kchunk = ceil(K / splits) rounded up to bk) into rows z M .. z M + M - 1
        of C (splits M x N): its partial product, for a reduction launch to add."""
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
        by = cuda.blockIdx.y
        bx = cuda.blockIdx.x
        if group:
            by, bx = grouped_tile(bx, by, cuda.gridDim.x, cuda.gridDim.y, group)
        row0 = by * bm
        col0 = bx * bn
        splits = cuda.gridDim.z
        kchunk = ((K + splits - 1) // splits + bk - 1) // bk * bk  # K range z: k0 .. k0 + kchunk - 1
        k0 = cuda.blockIdx.z * kchunk
        crow = cuda.blockIdx.z * M  # this range's partial: rows crow .. crow + M - 1 of C
        wm0 = (warp // warps_n) * wm
        wn0 = (warp % warps_n) * wn
        a_lane = (wm0 + u) * lda  # this lane's words in a stage: A row wm0 + u (+ lm i), B column wn0 + 4 v
        b_lane = wn0 + 4 * v  # (+ 4 ln c)
        acc = cuda.local.array(acc_n, float32)  # indexed only by unrolled loops: registers
        af = cuda.local.array(a_frag, float32)  # [row i][4 k]
        bf = cuda.local.array(b_frag, float32)  # [buffer][tn]
        for i in range(acc_n):
            acc[i] = float32(0.0)
        ntiles = (min(K - k0, kchunk) + bk - 1) // bk  # <= 0 for an empty range: zeros written
        for s in range(stages - 1):  # prologue: slabs 0 .. stages-2 in flight
            if s < ntiles:
                load_tile(sm, a_addr + 4 * s * a_words, A, ga, M, K, row0, k0 + s * bk, bm, bk, lda, t, a_copies,
                          threads, vec)
                load_tile(sm, b_addr + 4 * s * b_words, B, gb, K, N, k0 + s * bk, col0, bk, bn, bn, t, b_copies,
                          threads, vec)
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
                load_tile(sm, a_addr + 4 * wr * a_words, A, ga, M, K, row0, k0 + nxt * bk, bm, bk, lda, t, a_copies,
                          threads, vec)
                load_tile(sm, b_addr + 4 * wr * b_words, B, gb, K, N, k0 + nxt * bk, col0, bk, bn, bn, t, b_copies,
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
                            C[crow + r, col + e] = acc[i * tn + c * 4 + e]

    return async_copy_kernel


def kernel_for(k: int, n: int, build: Build = _D):
    """The kernel for A of k columns and B of n columns: 16-byte copies when both are multiples of 4."""
    return make_async_copy_kernel(build, k % 4 == 0 and n % 4 == 0)


def launch_for(build: Build, size, splits: int = 1) -> Launch:
    """The launch of ``build``'s kernel for size (m, n, k): one bm x bn tile of C a block, ``splits`` K ranges
    (grid z; :func:`enqueue` adds their partials)."""
    m, n, _ = size
    grid = (blocks_for(n, build.bn), blocks_for(m, build.bm)) + ((splits,) if splits > 1 else ())
    return Launch(grid=grid, block=(build.threads,), threads_needed=min(grid[0] * grid[1] * build.threads,
                                                                       blocks_for(m * n, build.tm * build.tn)) * splits)


class Choice(NamedTuple):
    """:func:`choose`'s pick: a key of :data:`BUILDS`, the K ranges (grid z) and why, in words."""
    name: str
    splits: int
    why: str


SPLIT_MIN_K = 256  # shortest K range a split gets (twice that from K = 4096 on), as kernels.gemm.split_k's plan


def choose(size, sms: int | None = None) -> Choice:
    """The build for size (m, n, k) on ``sms`` SMs (default: the current device's, kernels.device_limits; the
    described H100's 132 in the simulator). The default's grid when it gives every SM a block; else
    :data:`SMALL` (64 x 64 tiles: 4x the blocks); if that still leaves SMs idle, K split into ranges (grid z)
    for about 2 blocks an SM, none shorter than SPLIT_MIN_K k, added by a second launch. A pure function."""
    m, n, k = size
    if sms is None:
        sms = sm_count()
    big, small = BUILDS[DEFAULT], BUILDS[SMALL]
    tiles = blocks_for(m, big.bm) * blocks_for(n, big.bn)
    if tiles >= sms:
        return Choice(DEFAULT, 1, f"the {big.bm}x{big.bn} grid, {_blocks(tiles)}, fills {sms} SMs")
    small_tiles = blocks_for(m, small.bm) * blocks_for(n, small.bn)
    why = (f"the {big.bm}x{big.bn} grid, {_blocks(tiles)}, would leave SMs of {sms} idle: {small.bm}x{small.bn} "
           f"tiles, {_blocks(small_tiles)}")
    splits = 1
    if 0 < small_tiles < sms:
        want = blocks_for(2 * sms, small_tiles)
        splits = max(1, min(want, k // (2 * SPLIT_MIN_K if k >= 4096 else SPLIT_MIN_K)))
        if splits > 1:
            kchunk, splits = k_ranges(k, splits, small.bk)
            why += f" x {splits} K ranges of {kchunk}, then a reduction launch"
    return Choice(SMALL, splits, why)


def _blocks(n: int) -> str:
    return f"{n} block" + ("" if n == 1 else "s")


def launch(size, threads):
    """The launch of :func:`choose`'s build: block fixed at its warps' threads, one bm x bn tile of C a block,
    K ranges over grid z where the choice splits K; the note says which build and why."""
    pick = choose(size)
    build = BUILDS[pick.name]
    notes = [f"build {pick.name} ({pick.why})"]
    if threads != build.threads:
        notes.append(f"block fixed at {build.threads} threads (compile-time tile); --threads {threads} ignored")
    if EMULATED:
        notes.append("emulated: cp.async and ld.shared.v4 run as Python in the simulator")
    plan = launch_for(build, size, pick.splits)
    return Launch(grid=plan.grid, block=plan.block, threads_needed=plan.threads_needed, note="; ".join(notes))


def enqueue(build: Build, A, B, C, splits: int = 1):
    """C = A @ B by ``build``'s kernel, as a function of no arguments that enqueues it: A (M, K), B (K, N),
    C (M, N), float32 and C-contiguous (device arrays; numpy arrays in the simulator), grid
    :func:`launch_for`. With splits > 1 (K ranges over grid z) the kernel writes the partial products into
    a workspace (splits M x N float32, allocated here, once) and kernels.gemm.split_k's reduction launch
    adds them into C."""
    m, n = C.shape
    k = A.shape[1]
    plan = launch_for(build, (m, n, k), splits)
    kern = mma.with_shared(kernel_for(k, n, build), plan.grid, plan.block, build.dynamic_bytes)
    if splits == 1:
        return lambda: kern(A, B, C)
    W = empty_like(C, (splits * m, n), np.float32)  # by C's library
    W2, C1 = W.reshape(splits, m * n), C.reshape(m * n)
    grid, block = reduce_launch(splits, m * n)
    reduce = split_k_reduce_kernel[grid, block]

    def run():
        kern(A, B, W)
        reduce(W2, C1)
    return run


def prepare(cfg, inputs, outputs):
    """One launch of :func:`choose`'s build on (A, B, C) (and the reduction where it splits K); float32 only
    (ValueError otherwise)."""
    A, B = inputs
    if np.dtype(A.dtype) != np.float32:
        raise ValueError("async_copy is a float32 kernel")
    C = outputs[0]
    pick = choose((C.shape[0], C.shape[1], A.shape[1]))
    return enqueue(BUILDS[pick.name], A, B, C, pick.splits)


def unavailable(dtype) -> str:
    """Why the rung does not run here ("" when it does): float32 only, and cp.async needs
    numba-cuda-mlir on a GPU or the simulator's emulation."""
    if UNAVAILABLE:
        return f"async_copy {UNAVAILABLE}"
    if np.dtype(dtype) != np.float32:
        return f"async_copy is a float32 rung (--dtype {np.dtype(dtype).name})"
    return ""
