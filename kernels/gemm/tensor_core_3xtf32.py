"""Rung tensor_core_3xtf32: FP32 accuracy at tensor-core speed, three TF32 products for each float32 one.

The TF32 rungs (kernels/gemm/tensor_core_tf32.py, wgmma_tf32.py) run on the tensor cores, 7x the FP32 rate
of the CUDA cores on an H100 or H200 (495 against 67 TFLOP/s dense), but round each input to TF32 first: 10
explicit mantissa bits against float32's 23, up to 2^-11 an input, which the lab's FP32 check
(kernels.spec.dot_tolerance) rejects (442x the bound on the standard-normal check inputs, measured). The
rounding error can be carried instead of dropped (NVIDIA CUTLASS's 3xTF32 GEMM; H. Ootomo and R. Yokota,
"Recovering single precision accuracy from Tensor Cores while surpassing the FP32 theoretical peak
performance", IJHPCA 2022). Split each float32 x into two TF32 values (kernels.gemm.mma.split_tf32):

    big   = x rounded to TF32                   |x - big|         <= 2^-11 |x|
    small = (x - big) rounded to TF32           |x - big - small| <= 2^-11 |x - big| <= 2^-22 |x|

(x - big is exact in float32: at most 13 significant bits). Then

    a b = (a_b + a_s)(b_b + b_s) = a_b b_b + a_b b_s + a_s b_b + a_s b_s

and the tensor cores compute the first three (each product of two TF32 values is exact in float32). What
is lost, per product: the dropped small x small term, |a_s b_s| <= 2^-22 |a b|, and what the splits leave,
2^-22 |a| |b| each: at most 3 x 2^-22 = 12 u of |a b| (u = 2^-24, float32's rounding), typically about u
(each part a rounding error, as likely up as down: a_s / a is spread over +-2^-12, so a_s b_s over +-2^-24),
of random sign -- a random walk beside float32's own, well inside dot_tolerance's DOT_SIGMAS (6) u. TF32
alone loses about 2^-12 of each product, 4,000 u. Measured against float64 on the lab's check cases (docs/
tensor-cores.md, "3xTF32"): 0.18 and 0.32 of the FP32 bound on standard-normal inputs, where cuBLAS FP32
was 0.29 and 0.18 and TF32 442 and 997.

**The tensor cores' sums truncate.** The first wgmma build accumulated all three products in the tensor
cores' float32 accumulators, as CUTLASS does, and failed the FP32 check on the H200 wherever K was long:
1,610 of 266,240 elements at 520 x 512 x 8192 (standard-normal inputs, relative error 9.7e-6). A tensor core adds
its products to the accumulator with truncation (round toward zero: Ootomo and Yokota measured it, and
M. Fasi et al., "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021), so each step loses up to an ulp
of the running sum, always toward zero: an error that grows with K, not with its square root. The fix is
theirs: the tensor cores sum only one short stretch of K (16 k: 6 wgmmas) into *staging* registers that start
from zero, and the CUDA cores add each stretch to the sums with ``add.f32`` (round to nearest). Two staging
sets alternate, so the adds of stretch k - 1 run while the wgmmas of stretch k do; 64 adds a thread per 6
wgmmas. Every check case then passes (worst 0.32 of the bound, uniform [0, 1) at K = 65,536: 0.007).

Where the split cannot hold float32's accuracy, the rung fails its check, as any rung would:

* small is about 2^-11 |x|: below |x| = 2^-115 it is a float32 subnormal, and TF32's spacing there is
  2^-136, so such inputs keep only that absolute precision: inputs of 2^-120 times ones of 2^60 failed at 6.2x
  the bound (measured; FP32 SIMT 0.27). Ootomo and Yokota scale the small part by 2^11 to keep it normal,
  which needs its products summed apart from big x big (a third staging set here): not built;
* near FLT_MAX, rounding x up to TF32 carries into the exponent (3.4028235e38 rounds to infinity); there
  big is x truncated instead (small then positive, under 2^-10 |x|) and such inputs stay exact to 2^-21
  (inputs up to FLT_MAX times 2^-110: 0.19 of the bound);
* a NaN becomes a quiet NaN (0x7FC00000), an infinity stays one (its small part 0).

The builds:

* **wgmma (sm_90a, numba-cuda-mlir)**: :func:`make_kernel`. A pre-pass writes A and B^T as TF32 bits, each 16
  k as [16 big, 16 small] (:func:`split_a`; :func:`split_bt`, B transposed through a 32 x 33 shared tile as
  tensor_core_wgmma_tf32's): 8 bytes written an element, 4 read. The kernel: 128 x 128 block tiles of 2
  warpgroups (the staging sets take 128 registers a thread: 238 in all, no spills), 6 stages of 16 k, each
  stage A's and B's big and small parts (4 tiles of 128 rows of 64 bytes, 64-byte swizzle: 32 KB), copied
  by cp.async 4 stages ahead; per stage 3 x 2 wgmma m64n128k8 a warpgroup (small A x big B, big A x small B,
  big x big). Where the output has few tiles (long K, small M x N) K is split over grid z and the partial C's
  are added by kernels.gemm.split_k's reduction; :func:`plan` picks the ranges from a wave model bounded by
  the operands' fill from L2 (fitted to the H200).
* **wgmma on TMA** (comparable builds, not the default): kernels/gemm/tf32x3_tma.py.
* **mma.sync (sm_80 and up, and the simulator)**: the tensor_core_tf32 kernel's ``split`` build
  (kernels.gemm.tensor_core_tf32.make_tf32_kernel): each fragment word loaded as float32 from the cp.async
  tile and split in registers (kernels.gemm.mma.split_word: one inline PTX block), three mma.sync m16n8k8 a
  step from zero, added to the sums by the CUDA cores. In the simulator the mma is the emulated one (same
  fragments; it rounds its sums to nearest): the rung runs and is checked on a CPU.

Measured on an H200 (docs/tensor-cores.md, "3xTF32"; scripts/tf32x3_bench.py; cuBLAS FP32 = torch.matmul
with TF32 off, same process; the shapes of an earlier run -- a later run's 13 other shapes are
in docs/benchmarks.md: geometric mean 1.05x from 2^30 FLOPs, 1.13x from 2^32, 1.3x met at 4 of 8): 1.41x-1.58x
cuBLAS FP32 at 8192 x 8192 x 1024 (79.5 TFLOP/s, above the FP32
SIMT peak of 67), 4097^3, 3000 x 2000 x 1000 and 1536 x 6144 x 2048; 1.22x at 2500^3; 0.98x at
777 x 5000 x 3000, 0.83x at 1000 x 1000 x 16384, 0.59x and 0.65x where the pre-pass takes 40-50% of the call
(6000 x 300 x 6000, 512 x 512 x 65536), 0.62x and 0.73x at 2^30 FLOPs (640 x 896 x 1000, 1024 x 1024 x 512:
35 and 64 tiles of 128 x 128 for 132 SMs, the pre-pass a third of the call).
What it spends: the pre-pass (0.26 of 2.02 ms at 4097^3, at about 1.5 TB/s), twice TF32's operand bytes
through L2 and shared memory, three products, and the staging adds: the TF32 rung runs 2.5x-3x faster.
The mma.sync build on the H200: 23 TFLOP/s (mma.sync's ceiling there is 298 TF32, three products and the
register split on top); it is the build for an A100 (sm_80), where it was not measured.

``auto`` (float32, precision "high" or "medium": kernels/gemm/precision.py) takes this rung where the device
has the tensor cores for it (:func:`auto_route`): compute capability 9.0 under numba-cuda-mlir (wgmma) and
8.0 (mma.sync: the A100's TF32 tensor rate is 8x its FP32 rate); not 8.6/8.9 (TF32 at 1-2x the FP32 rate:
three products cost more than one), not in the simulator (its wall clock says nothing about a GPU's speed),
and only where it beat the SIMT auto on the H200 (:data:`AUTO_MIN_FLOPS`, :data:`AUTO_MIN_MN_RATIO`).

Sources: NVIDIA CUTLASS, examples/27_ampere_3xtf32_fast_accurate_tensorop_gemm and
include/cutlass/gemm/warp/mma_tensor_op_fast_f32.h (the split, big x big last); H. Ootomo and R. Yokota,
IJHPCA 36(4), 2022 (the error analysis, the truncating accumulation and the sums outside the tensor cores,
the scaled small part); M. Fasi, N. J. Higham, M. Mikaitis and S. Pranesh, PeerJ Computer Science 7:e466,
2021; PTX ISA 8.x ("wgmma.mma_async", "Shared Memory Matrix Layout" (64-byte swizzle), "mma", "cvt"
.rna.tf32.f32); torch.set_float32_matmul_precision (the precision names).
"""
from __future__ import annotations

import numpy as np

from kernels.arrays import empty_like
from kernels.compiler import COMPILER, MLIR, SIMULATOR, bound, cuda, int32
from kernels.gemm import mma
from kernels.gemm import precision as P
from kernels.gemm import tensor_core_tf32 as TC
from kernels.gemm import wgmma_bf16 as W
from kernels.gemm import wgmma_tf32 as WT
from kernels.spec import Launch, blocks_for, plural, sm_count
from kernels.device_limits import current
from kernels.gemm.split_k import reduce_launch, split_k_reduce_kernel

NAME = "tensor_core_3xtf32"
WORDS = "3xTF32 on tensor cores, FP32-accurate"  # what a row that ran it says
SLAB = 32  # k a pre-pass slab (a 32 x 32 tile of B's transpose) and the unit of the K ranges
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)  # K ranges plan() considers (grid z)
MIN_SLABS = 4  # the fewest 32-k slabs of a K range
# plan()'s model, fitted to the H200 (scripts/tf32x3_bench.py --plans; numba-cuda-mlir 0.6.0): a 128 x 128 block's
# 32 k with the GPU full, 1.45 us; the operands' fill of shared memory from L2 (8 bytes an element: big and
# small) at 4.6 TB/s at most; K ranges cost their partials (written once, read and summed once: 2 S + 1
# arrays of M x N words) at 0.7 TB/s and a launch
SLAB_US = 1.45
FILL_BYTES_PER_US = 4.6e6
REDUCE_US, REDUCE_BYTES_PER_US = 6.0, 0.7e6
# the mma.sync builds (Tile: bm, bn, wm, wn, bk, stages, pipelined)
MMA_TILES = {
    "b128x128_w64x32_k16_s3": TC.Tile(128, 128, 64, 32, 16, 3),  # 8 warps of 64 x 32: 64 accumulators a thread
    "b64x64_w32x32_k16_s4": TC.Tile(64, 64, 32, 32, 16, 4),  # small grids: 4 warps of 32 x 32 (k32 spilled 100 bytes)
}
MMA_DEFAULT, MMA_SMALL = "b128x128_w64x32_k16_s3", "b64x64_w32x32_k16_s4"
ROUND_BLOCK = 256  # split_a: threads a block, 4 columns each


# --- Which build runs here ----------------------------------------------------------------------------
def wgmma_here() -> bool:
    """Whether the wgmma build runs here: numba-cuda-mlir on a GPU of compute capability 9.0 (sm_90a)."""
    if W.UNAVAILABLE or SIMULATOR:
        return False
    cc = current().cc
    return cc is not None and tuple(cc) == (9, 0)


def unavailable(dtype) -> str:
    """Why the rung does not run here ("" when it does): numba-cuda on a GPU (no inline PTX: the mma.sync
    and wgmma instructions are out of reach), a dtype other than float32."""
    if mma.UNAVAILABLE:
        return f"{NAME} {mma.UNAVAILABLE}"
    if np.dtype(dtype) != np.float32:
        return f"{NAME} takes float32 inputs, split into two TF32 parts each (--dtype {np.dtype(dtype).name})"
    return ""


# --- The wgmma build's plan: block tile and K ranges ----------------------------------------------------
def plan(size, sms: int | None = None) -> tuple[str, int, int, str]:
    """(build of :data:`WG_BUILDS`, K ranges S, 32-k slabs a range, why) for an m x n x k product.

    A wave model, as kernels.gemm.model's for the SIMT tiles: a block an SM at a time (a build takes 193 KB of
    shared memory), so a grid of b blocks takes ceil(b / SMs) waves, each block's K range of s slabs s x
    :data:`SLAB_US`; but no faster than the operands' fill of shared memory from L2 (every block reads its
    128 rows of A's and B's big and small parts: 2,048 bytes a k, at :data:`FILL_BYTES_PER_US`); S > 1 ranges
    add the partials' traffic and the reduction launch. Measured (H200): 1000 x 1000 x 16384 ran 0.74 ms on one
    range (64 blocks), 0.54 on 2 or 4 (the fill's bound), 3000 x 2000 x 1000 0.16 on one, 0.30 on 2 (the
    partials). The cheapest S wins, each range at least :data:`MIN_SLABS` slabs."""
    m, n, k = size
    sms = sms or sm_count()
    slabs = max(1, blocks_for(k, SLAB))
    tiles = blocks_for(m, BM) * blocks_for(n, BN)
    fill = tiles * slabs * SLAB * 2 * (BM + BN) * 4 / FILL_BYTES_PER_US
    best = None
    for want in SPLITS:
        if want > 1 and slabs < want * MIN_SLABS:
            break
        per = blocks_for(slabs, want)
        s = blocks_for(slabs, per)  # ranges left once each has per slabs
        est = max(blocks_for(tiles * s, sms) * per * SLAB_US, fill)
        if s > 1:
            est += REDUCE_US + (2 * s + 1) * m * n * 4 / REDUCE_BYTES_PER_US
        if best is None or est < best[0] - 1e-9:
            best = (est, s, per)
    est, s, per = best
    why = (f"{BM}x{BN} block tiles, {plural(tiles * s, 'block')} for {plural(sms, 'SM')}"
           + (f" ({s} K ranges of {per * SLAB} k, then a reduction)" if s > 1 else "")
           + f", ~{est:.0f} us estimated")
    return WG_DEFAULT, s, per, why


def mma_choose(size) -> tuple[str, str]:
    """(build of :data:`MMA_TILES`, why): the 128 x 128 tiles where their grid has a block for every SM, else
    64 x 64 ones (kernels.gemm.mma.choose_block_tile)."""
    return mma.choose_block_tile(size, [(n, MMA_TILES[n].bm, MMA_TILES[n].bn) for n in (MMA_DEFAULT, MMA_SMALL)],
                                 sm_count())


# --- The wgmma build: the kernel (numba-cuda-mlir on an sm_90a GPU) ----------------------------------------
BM, BN = 128, 128  # block tile: 2 warpgroups of 64 rows, each m64n128k8 over all 128 columns
THREADS = 2 * W.WARPGROUP
GROUP = 16  # the pre-pass writes K in groups of 16: [16 big, 16 small] TF32 words, 32 columns a group
WG_REGS = BN // 2  # accumulators a thread: m64n128's 64, and as many in each of the two staging sets
# builds: bk (k a stage: 32 -> rows of 128 bytes, 128-byte swizzle; 16 -> 64 bytes, 64-byte swizzle), stages
WG_BUILDS = {"k16s6": (16, 6), "k32s3": (32, 3)}  # the cp.async builds (:func:`make_kernel`)
WG_DEFAULT = "k16s6"  # the cp.async build: faster than every TMA build measured (docs/tensor-cores.md, "3xTF32 on TMA")


def wg_shape(build: str) -> dict:
    """A wgmma build's sizes: bk, stages, row bytes, bytes of one part (128 rows: A or B, big or small), of a stage
    (4 parts), of its dynamic shared memory (and 1 KB to align the swizzled tiles), the descriptors' swizzle."""
    bk, stages = WG_BUILDS[build]
    rb = 4 * bk
    part = 128 * rb
    return dict(bk=bk, stages=stages, rb=rb, part=part, stage=4 * part, shared=stages * 4 * part + 1024,
                swizzle=W.SWIZZLE_128B if bk == 32 else W.SWIZZLE_64B)


def issue_ptx(t: str, steps: int) -> str:
    """One stage's 3 x ``steps`` wgmmas into staging set ``t`` ("A" or "B": registers wtA0..63 or wtB0..63), the
    first with scale-d false (the set starts from this stage alone): for each k-step (descriptors + 2 each: 32
    bytes of K-major rows) small A x big B, big A x small B, big x big. Operands: %0 A big's descriptor, %1 A
    small's, %2 B big's, %3 B small's (int64), %4 any int (the predicates are made from it). Not committed."""
    regs = ", ".join(f"wt{t}{i}" for i in range(WG_REGS))
    lines = ["{", ".reg .pred pz, po;", ".reg .b64 ab, as, bb, bs;", "setp.ne.b32 pz, %4, %4;", "setp.eq.b32 po, %4, %4;",
             "wgmma.fence.sync.aligned;"]
    for j in range(steps):
        lines += [f"add.s64 ab, %0, {2 * j};", f"add.s64 as, %1, {2 * j};", f"add.s64 bb, %2, {2 * j};",
                  f"add.s64 bs, %3, {2 * j};"]
        for n, (a, b) in enumerate((("as", "bb"), ("ab", "bs"), ("ab", "bb"))):
            pred = "pz" if j == 0 and n == 0 else "po"
            lines.append(f"wgmma.mma_async.sync.aligned.m64n{BN}k8.f32.tf32.tf32 {{{regs}}}, {a}, {b}, {pred}, 1, 1;")
    return "\n".join(lines + ["}"])


def flush_ptx(t: str) -> str:
    """The accumulators plus staging set ``t``, rounded to nearest by the CUDA cores (``add.f32``: RN)."""
    return "\n".join(f"add.f32 wacc{i}, wacc{i}, wt{t}{i};" for i in range(WG_REGS))


def chunk_place(c, row, bk: int):
    """(byte offset in a stage, relative to its first part) of 16-byte chunk c (0 .. bk / 2 - 1) of a stage's row
    ``row`` of A2 or BT2 (2 bk columns: groups of [16 big, 16 small]): its part (big 0, small 1), its place in
    that part's row (k // 4) swizzled as the descriptors say (128-byte rows: chunk ^ row % 8; 64-byte rows:
    chunk ^ (row // 2) % 4)."""
    part, cc = (c % 8) // 4, (c // 8) * 4 + c % 4
    if bk == 32:
        return part * 128 * 128 + row * 128 + ((cc ^ (row % 8)) * 16)
    return part * 128 * 64 + row * 64 + ((cc ^ ((row // 2) % 4)) * 16)


if COMPILER == MLIR and not SIMULATOR:
    import numba_cuda_mlir.cuda.experimental as _X

    from kernels.compiler import int64, uint16
    from kernels.gemm.mma import cp_async_commit, cp_async_wait, global_address, split_word, tf32_bits
    from kernels.gemm.wgmma_bf16 import (CHIP, acc_declare_ptx, acc_store_pairs, aligned_base, fence_proxy_async,
                                         make_desc, wgmma_commit, wgmma_wait0, wgmma_wait1)

    _DECLARE_PTX = acc_declare_ptx(WG_REGS) + f"\n.reg .f32 wtA<{WG_REGS}>;\n.reg .f32 wtB<{WG_REGS}>;"
    _FLUSH_A_PTX, _FLUSH_B_PTX = flush_ptx("A"), flush_ptx("B")

    @cuda.jit(device=True, forceinline=True)
    def declare():
        """The accumulators (zeroed) and the two staging sets (written first by a scale-d-false wgmma)."""
        _X.inline_ptx(_DECLARE_PTX)

    @cuda.jit(device=True, forceinline=True)
    def flush_a():
        _X.inline_ptx(_FLUSH_A_PTX)

    @cuda.jit(device=True, forceinline=True)
    def flush_b():
        _X.inline_ptx(_FLUSH_B_PTX)

    def make_kernel(build: str = WG_DEFAULT, split: bool = False):
        """gemm(A2, BT2, C): C = A @ B from A2 (S M, K2) and BT2 (S N, K2), the TF32 bits of A's and B^T's big and
        small parts (:func:`split_a`, :func:`split_bt`: groups of 16 k as [16 big, 16 small]), K2 a multiple of
        64; C (S M, N) float32, C-contiguous; block (256,), grid (ceil(N / 128), ceil(M / 128), S), S K ranges
        when ``split`` (block z: rows z M of A2 and C, z N of BT2); wg_shape(build)["shared"] bytes of dynamic
        shared memory. Each stage (bk k): its copies waited for, a barrier, 3 bk / 8 wgmmas into the staging set
        of its parity (:func:`issue_ptx`), commit, the copies of stage + stages - 2 into the buffer stage - 2
        used, then ``wgmma.wait_group 1`` (the stage before is done) and that stage's set added to the
        accumulators (:func:`flush_ptx`: round to nearest) while this one's wgmmas run."""
        sh = wg_shape(build)
        bk, stages, rb, part, stage, swz = sh["bk"], sh["stages"], sh["rb"], sh["part"], sh["stage"], sh["swizzle"]
        steps, per_row, copies = bk // 8, bk // 2, bk // 4  # k-steps a stage, 16-byte chunks a row, a thread's
        rstep = THREADS // per_row  # rows between a thread's chunks (16 or 32: the swizzle's row bits kept)
        sbo = 8 * rb
        ahead = stages - 2
        store_pairs = acc_store_pairs(WG_REGS)
        ptx_a, ptx_b = issue_ptx("A", steps), issue_ptx("B", steps)

        @cuda.jit(device=True, forceinline=True)
        def issue_a(ab, asm, bb, bsm, one):
            _X.inline_ptx(ptx_a, "l", ab, "l", asm, "l", bb, "l", bsm, "r", one)

        @cuda.jit(device=True, forceinline=True)
        def issue_b(ab, asm, bb, bsm, one):
            _X.inline_ptx(ptx_b, "l", ab, "l", asm, "l", bb, "l", bsm, "r", one)

        @cuda.jit(device=True, forceinline=True)
        def copies_of(sb, a_src, b_src, dst, M, N, K2, m_row, n_row):
            """This thread's copies of a stage into the buffer at shared byte address ``sb``: A2's rows m_row +
            rstep i and BT2's n_row + rstep i, one 16-byte chunk each at dst (+ 2 parts for B) + rstep rb i;
            zeros past M (N)."""
            for i in range(copies):
                ok = m_row + rstep * i < M
                _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(sb + dst + rstep * rb * i),
                              "l", a_src + int64(4 * rstep * i) * K2 if ok else a_src, "r", int32(16) if ok else int32(0))
            for i in range(copies):
                ok = n_row + rstep * i < N
                _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r",
                              int32(sb + 2 * part + dst + rstep * rb * i),
                              "l", b_src + int64(4 * rstep * i) * K2 if ok else b_src, "r", int32(16) if ok else int32(0))

        @cuda.jit(chip=CHIP, launch_bounds=(THREADS, 1))
        def gemm(A2, BT2, C):
            declare()
            smem = cuda.shared.array(0, uint16)
            M, K2 = A2.shape
            N = BT2.shape[0]
            ga, gb, rz = global_address(A2), global_address(BT2), 0
            if split:
                M, N = M // cuda.gridDim.z, N // cuda.gridDim.z
                rz = cuda.blockIdx.z * M
                ga, gb = ga + int64(rz) * K2 * 4, gb + int64(cuda.blockIdx.z * N) * K2 * 4
            t = cuda.threadIdx.x
            wg, tw = t // 128, t % 128
            m0, n0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
            base, _ = aligned_base(smem, 1024)
            nk = K2 // (2 * bk)
            row, c = t // per_row, t % per_row
            g = c // 8
            cc = g * 4 + c % 4
            if bk == 32:
                dst = int32(((c % 8) // 4) * part + row * 128 + ((cc ^ (row % 8)) * 16))
            else:
                dst = int32(((c % 8) // 4) * part + row * 64 + ((cc ^ ((row // 2) % 4)) * 16))
            a_src = ga + (int64(m0 + row) * K2 + 4 * c) * 4
            b_src = gb + (int64(n0 + row) * K2 + 4 * c) * 4
            for s in range(ahead):
                if s < nk:
                    copies_of(base + s * stage, a_src + 8 * bk * s, b_src + 8 * bk * s, dst, M, N, K2, m0 + row, n0 + row)
                cp_async_commit()
            one = int32(1)
            for kt in range(nk):
                cp_async_wait(ahead - 1)
                fence_proxy_async()
                cuda.syncthreads()
                sb = base + (kt % stages) * stage
                da = make_desc(sb + wg * (64 * rb), 16, sbo, swz)
                ds = make_desc(sb + part + wg * (64 * rb), 16, sbo, swz)
                db = make_desc(sb + 2 * part, 16, sbo, swz)
                dbs = make_desc(sb + 3 * part, 16, sbo, swz)
                if kt % 2 == 0:
                    issue_a(da, ds, db, dbs, one)
                else:
                    issue_b(da, ds, db, dbs, one)
                wgmma_commit()
                nxt = kt + ahead
                if nxt < nk:
                    copies_of(base + (nxt % stages) * stage, a_src + 8 * bk * nxt, b_src + 8 * bk * nxt, dst, M, N, K2,
                              m0 + row, n0 + row)
                cp_async_commit()
                wgmma_wait1()
                if kt > 0:
                    if kt % 2 == 0:
                        flush_b()
                    else:
                        flush_a()
            wgmma_wait0()
            if nk > 0:
                if (nk - 1) % 2 == 0:
                    flush_a()
                else:
                    flush_b()
            NC = C.shape[1]
            cb = global_address(C)
            store_pairs(C, rz + m0 + 64 * wg + 16 * (tw // 32) + (tw % 32) // 4, n0 + 2 * (tw % 4), rz + M, NC, cb,
                        int64(4 * NC) if NC % 2 == 0 and cb % 8 == 0 else int64(0))

        return gemm

    _KERNELS: dict = {}

    def kernel(build: str, split: bool):
        """:func:`make_kernel`'s build (a name of :data:`WG_BUILDS`), made once."""
        if (build, split) not in _KERNELS:
            _KERNELS[build, split] = make_kernel(build, split)
        return _KERNELS[build, split]

    @cuda.jit
    def split_a(A, A2, per):
        """A (M, K) float32 -> A2 (S M, 64 per) int32 TF32 bits, S = A2.shape[0] // M K ranges of ``per`` 32-k
        slabs: group g of 16 k of range z of row r at A2[z M + r, 32 g : 32 g + 32] as [16 big, 16 small]
        (kernels.gemm.mma.split_word), zeros past K. Block (256,): row blockIdx.x, 4 adjacent k a thread from
        4 (256 blockIdx.y + threadIdx.x) (a warp's 32 loads one contiguous 512-byte run); grid
        (M, ceil(32 S per / 1024))."""
        r = cuda.blockIdx.x
        k0 = (cuda.blockIdx.y * ROUND_BLOCK + cuda.threadIdx.x) * 4
        M, K = A.shape
        S = A2.shape[0] // M
        if k0 < S * per * SLAB:
            z = k0 // (per * SLAB)
            kz = k0 - z * per * SLAB  # k within range z
            c = 2 * GROUP * (kz // GROUP) + kz % GROUP
            row = z * M + r
            for e in range(4):
                x = int32(0)
                if k0 + e < K:
                    x = tf32_bits(A[r, k0 + e])
                b, s = split_word(x)
                A2[row, c + e] = b
                A2[row, c + GROUP + e] = s

    @cuda.jit
    def split_bt(B, BT2, per):
        """B (K, N) float32 -> BT2 (S N, 64 per) int32 TF32 bits, transposed: group g of 16 k of range z of column
        n at BT2[z N + n, 32 g : 32 g + 32] as [16 big, 16 small], zeros past K. Block (32, 8): the 32 x 32 tile of
        B at (32 blockIdx.x, 32 blockIdx.y) read row by row (coalesced) into a 32 x 33 shared tile
        (tensor_core_wgmma_tf32's transpose), written row by row of BT2; grid (S per, ceil(N / 32))."""
        tile = cuda.shared.array((32, 33), int32)
        slab = cuda.blockIdx.x
        k0, n0 = slab * SLAB, cuda.blockIdx.y * SLAB
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        K, N = B.shape
        for j in range(0, SLAB, 8):
            k, n = k0 + ty + j, n0 + tx
            v = int32(0)
            if k < K and n < N:
                v = tf32_bits(B[k, n])
            tile[ty + j, tx] = v
        cuda.syncthreads()
        z = slab // per
        c = 2 * SLAB * (slab - z * per) + 2 * GROUP * (tx // GROUP) + tx % GROUP
        for j in range(0, SLAB, 8):
            n = n0 + ty + j
            if n < N:
                b, s = split_word(tile[tx, ty + j])
                row = z * N + n
                BT2[row, c] = b
                BT2[row, c + GROUP] = s


def prepass_launches(A, B, A2, BT2, per: int):
    """The two pre-pass launches as zero-argument calls (split_a, split_bt) into A2, BT2 (see their shapes)."""
    m = A.shape[0]
    s = A2.shape[0] // m
    n = B.shape[1]
    return (bound(split_a[(m, blocks_for(s * per * SLAB, 4 * ROUND_BLOCK)), ROUND_BLOCK], (A, A2, per)),
            bound(split_bt[(s * per, blocks_for(n, SLAB)), (SLAB, 8)], (B, BT2, per)))


def wgmma_prepare(A, B, C, splits: int, per: int, build: str = WG_DEFAULT, launcher=None):
    """Each call: the pre-pass (A2, BT2: :func:`split_a`, :func:`split_bt`), the 3xTF32 wgmma kernel of ``build``
    (grid z = ``splits`` K ranges of ``per`` 32-k slabs, a ``split`` build when over 1), and with several ranges
    the reduction of their partial C's (kernels.gemm.split_k.split_k_reduce_kernel). ``launcher(A2, BT2, grid)``:
    another kernel's f(A2, BT2, C) on that grid instead (kernels.gemm.tf32x3_tma's builds)."""
    m, k = A.shape
    n = B.shape[1]
    A2 = empty_like(A, (splits * m, 2 * SLAB * per), np.int32)
    BT2 = empty_like(A, (splits * n, 2 * SLAB * per), np.int32)
    sa, sb = prepass_launches(A, B, A2, BT2, per)
    grid = (blocks_for(n, BN), blocks_for(m, BM), splits)
    if launcher is None:
        f = mma.with_shared(kernel(build, splits > 1), grid, (THREADS,), wg_shape(build)["shared"])
    else:
        f = launcher(A2, BT2, grid)
    if splits == 1:
        def call():
            sa()
            sb()
            f(A2, BT2, C)
        return call
    Wk = empty_like(C, (splits * m, n), np.float32)
    W2, C1 = Wk.reshape(splits, m * n), C.reshape(m * n)
    grid, block = reduce_launch(splits, m * n)
    red = bound(split_k_reduce_kernel[grid, block], (W2, C1))

    def call():
        sa()
        sb()
        f(A2, BT2, Wk)
        red()
    return call


# --- The mma.sync build ------------------------------------------------------------------------------
def mma_kernel(tile, k: int, n: int):
    """The split (3xTF32) build of the tensor_core_tf32 kernel for ``tile``: 16-byte copies when K and N are
    multiples of 4, else 4-byte ones."""
    return TC.make_tf32_kernel(tile, TC.ROUNDING, k % 4 == 0 and n % 4 == 0, split=True)


def mma_prepare(cfg, A, B, C, name: str):
    """One launch of the split mma.sync kernel of build ``name`` (padded copies first for large ragged
    products, as tensor_core_tf32 does: kernels.gemm.tensor_core_tf32.prepare)."""
    m, k = A.shape
    n = B.shape[1]
    tile = MMA_TILES[name]
    if (k % 4 == 0 and n % 4 == 0) or m * n * k < TC.PAD_MIN_MNK:
        kern = mma.with_shared(mma_kernel(tile, k, n), cfg.grid, cfg.block, tile.dynamic_bytes)
        return lambda: kern(A, B, C)
    kp, n_p = TC.padded(k), TC.padded(n)
    Ap, Bp = empty_like(A, (m, kp), np.float32), empty_like(A, (kp, n_p), np.float32)
    ga, gb = blocks_for(m * kp, 256), blocks_for(kp * n_p, 256)
    kern = mma.with_shared(mma_kernel(tile, kp, n_p), cfg.grid, cfg.block, tile.dynamic_bytes)
    pad_a, pad_b = bound(TC.pad_kernel[ga, 256], (A, Ap)), bound(TC.pad_kernel[gb, 256], (B, Bp))

    def call():
        pad_a()
        pad_b()
        kern(Ap, Bp, C)
    return call


# --- The rung --------------------------------------------------------------------------------------------
def launch(size, threads):
    """The rung's launch: the wgmma build where it runs (:func:`wgmma_here`; :func:`plan`'s tile and K ranges,
    grid z the ranges), else the mma.sync split build (:func:`mma_choose`'s tile); the note names the build."""
    m, n, k = size
    notes = []
    if wgmma_here():
        name, s, per, why = plan(size)
        block = THREADS
        bk, stages = WG_BUILDS[name]
        how = f"{stages} stages of {bk} k copied by cp.async"
        notes.append(f"{WORDS}: Hopper wgmma m64n{BN}k8 TF32, 3 a k-step (small x big, big x small, big x big) into "
                     f"registers added to the sums by the CUDA cores every 16 k (round to nearest); build {name}: "
                     f"{how}; {why}")
        notes.append("pre-pass inside every call: A and B split into TF32 big and small parts, B transposed")
        if threads != block:  # after the words auto's row quotes first
            notes.append(f"block fixed at {block} threads ({block // W.WARPGROUP} warpgroups); --threads {threads} ignored")
        grid = (blocks_for(n, BN), blocks_for(m, BM), s)
        return Launch(grid=grid, block=(block,), threads_needed=min(grid[0] * grid[1] * block, blocks_for(m * n, 64)) * s,
                      note="; ".join(notes))
    name, why = mma_choose(size)
    tile = MMA_TILES[name]
    if threads != tile.threads:
        notes.append(f"block fixed at {tile.threads} threads ({tile.threads // 32} warps); --threads {threads} ignored")
    notes.append(f"{WORDS}: mma.sync m16n8k8 TF32, each fragment split in registers, 3 mma a step; build {name}: {why}")
    if mma.EMULATED:
        notes.append("emulated: mma.sync, cp.async and ld.shared.v4 run as Python in the simulator")
    plan_ = TC.launch_for(tile, size)
    return Launch(grid=plan_.grid, block=plan_.block, threads_needed=plan_.threads_needed, note="; ".join(notes))


def prepare(cfg, inputs, outputs):
    """The wgmma build (:func:`wgmma_prepare`, :func:`plan`'s choice) where it runs, else the mma.sync split
    build (:func:`mma_prepare`); float32 only (ValueError otherwise)."""
    A, B = inputs
    mma.float32_inputs(NAME, "two TF32 parts each", A)
    (C,) = outputs
    m, k = A.shape
    n = B.shape[1]
    if wgmma_here():
        name, s, per, _ = plan((m, n, k))
        return wgmma_prepare(A, B, C, s, per, name)
    return mma_prepare(cfg, A, B, C, mma_choose((m, n, k))[0])


# --- auto's tensor-core route (kernels/matmul.py's auto asks first) -----------------------------------------
# Where auto takes the rung (float32, precision high), measured on the H200 against the SIMT auto (precision
# highest) in one run (docs/tensor-cores.md, "3xTF32"): it lost at 512^3 (2^28 FLOPs: 6.6 TFLOP/s against
# 12.6; the pre-pass and four launches), at 6000 x 300 x 6000 (22.9 against 29.9) and 512 x 512 x 65536 (32.8
# against 38.8), where the pre-pass -- 12 bytes an element of A and B, against 2 M N K FLOPs: M N / (6 (M + N))
# FLOPs a byte -- took 40-50% of the call; it won from 640 x 896 x 1000 (2^30, M N / (M + N) = 373: 17.3 against
# 17.1) and at every other shape tried. A second run at 13 other shapes (docs/data/tf32x3_h200.json) lost
# at 700^3 (2^29.4: 12.6 against 17.2) and 800 x 900 x 1100 (2^30.6: 19.1 against 20.8) and won at every shape from
# 2^31.8 (1.10x-1.80x the SIMT auto): the threshold moved to 2^31.
AUTO_MIN_FLOPS = 1 << 31
AUTO_MIN_MN_RATIO = 320  # M N / (M + N) at least this (skinny products, M or N small, stay SIMT)
TENSOR_CC = {(9, 0): "Hopper", (8, 0): "A100"}  # TF32 tensor rate about 7-8x the FP32 SIMT rate


def auto_route(size):
    """(rung, threads, why) for float32 ``auto`` to run on tensor cores, or None to keep the SIMT choice.

    Yes where the precision allows it (kernels/gemm/precision.py: "high" for this rung, "medium" also TF32's),
    the run's dtype is float32 (or unknown: torch's float32 matmul setting), numba-cuda-mlir runs on a GPU
    (not the simulator, not numba-cuda), the GPU is compute capability 9.0 (the wgmma build) or 8.0 (the
    mma.sync build), 2 M N K at least :data:`AUTO_MIN_FLOPS` and M N / (M + N) at least
    :data:`AUTO_MIN_MN_RATIO` (the pre-pass's bytes against the FLOPs).
    "medium" takes tensor_core_wgmma_tf32 (9.0) or tensor_core_tf32 (8.0), checked at TF32's tolerance."""
    m, n, k = size
    precision, dtype = P.get(), P.dtype()
    if not P.allows("3xtf32", precision) or (dtype is not None and dtype != np.float32):
        return None
    if SIMULATOR or mma.UNAVAILABLE or m * n < AUTO_MIN_MN_RATIO * (m + n) or 2 * m * n * k < AUTO_MIN_FLOPS:
        return None
    cc = current().cc
    cc = tuple(cc) if cc is not None else None
    if cc not in TENSOR_CC:
        return None
    hopper = cc == (9, 0) and wgmma_here()
    if cc == (9, 0) and not hopper:
        return None
    if P.allows("tf32", precision):
        rung = "tensor_core_wgmma_tf32" if hopper else "tensor_core_tf32"
        what = "TF32 on tensor cores (precision medium: inputs rounded to 10 mantissa bits, TF32's tolerance)"
    else:
        rung, what = NAME, "float32"  # (the rung's own note says "3xTF32 on tensor cores, FP32-accurate")
    if rung == NAME:
        threads = launch(size, 0).block[0]
    elif hopper:
        threads = W.block_shape(WT.BUILDS[WT.choose(size)[0]])[2]
    else:
        threads = TC.TILES[TC.choose(size)[0]].threads
    return rung, threads, (f"{what}: compute capability {cc[0]}.{cc[1]} ({TENSOR_CC[cc]}: TF32 tensor cores at about "
                           f"8x the FP32 rate), precision {precision}")


# The rung (kernels/matmul.py's variants, after tensor_core_wgmma_tf32): checked at FP32's tolerance (no
# coarser one of its own); never tuned into auto's SIMT classes: auto takes it by :func:`auto_route`.
RUNG = mma.pipeline_variant(
    NAME, f"{WORDS}: each float32 split into a TF32 big and small part, big x big + big x small + small x big "
    f"summed in float32 (CUTLASS's 3xTF32); Hopper wgmma on the TF32 wgmma kernel (a pre-pass writes the parts, "
    f"K split over grid z for few tiles), else mma.sync m16n8k8 with the split in registers (emulated in the "
    f"simulator); checked at FP32's tolerance", launch, prepare, unavailable, suits=lambda s: False)
