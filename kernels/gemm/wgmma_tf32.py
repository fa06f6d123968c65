"""Rung tensor_core_wgmma_tf32: Hopper's warpgroup MMA on TF32, float32 inputs in, float32 sums out.

The TF32 ``mma.sync`` rung (kernels/gemm/tensor_core_tf32.py) is capped by its instruction: a loop of
independent m16n8k8 TF32 mma.sync on register operands, no memory at all, issues 298.1 TFLOP/s on an H200
(scripts/mma_peak.py), 0.60 of the TF32 dense peak that only ``wgmma`` reaches; torch's TF32 matmul uses
wgmma. This rung runs the warpgroup MMA of the bf16 wgmma rung (kernels/gemm/wgmma_bf16.py: read its
docstring first -- descriptors, the 128-byte swizzle, the asynchronous groups) on TF32. What changes:

* The instruction: ``wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32`` -- 8 k a step instead of 16
  (a TF32 element is 4 bytes: the 32 bytes of a k-step are the same), the same float32 accumulators.
* **No transpose for TF32.** bf16 reads B as it is in memory (K x N, N contiguous: "MN-major"), the
  descriptor's transpose bit making the tensor cores read it column by column. The PTX ISA allows that bit
  for 16-bit types only: a TF32 wgmma reads both operands **K-major**, k contiguous. A is (M x K row-major);
  B must be given as B^T, N x K. So every call first writes B^T (:func:`tf32_transpose`: 32 x 32 tiles
  through shared memory, each read and each write a coalesced row of 128 bytes; the tile padded to 33
  columns so that a warp reading a column of it hits 32 different banks) -- the classic transpose, in the
  timed call: at 4096^3 it moves 128 MB, about a tenth of the product's time.
* **Rounding.** The tensor cores read a TF32 operand's top 19 bits and drop the low 13: truncation, biased
  toward zero. The pre-pass rounds instead (``cvt.rna.tf32.f32``, round to nearest as the mma.sync rung
  does): B^T on its way, A in a pass of its own (:func:`tf32_round`, into a buffer padded to a multiple of
  4 columns so that every row starts 16-byte aligned for the copies). Both in the timed call.
* Shared memory: a slab is 32 k of A (rows of 128 bytes, 128-byte swizzle: byte for byte bf16's A layout)
  and 32 k of B^T (the same layout, N rows): descriptors with SBO 1,024 for both, the k-th step of a slab at
  + 32 k bytes in both.

Builds (:data:`BUILDS`, launched by kernels.gemm.wgmma_bf16.make_wgmma_kernel with ``tf32=True``; the
strided, wgmma-first pipeline of the bf16 rung; the TMA builds by kernels/gemm/wgmma_tma.py): the default
``tma_ws_n256s4``, TMA copies on mbarriers, a producer warpgroup and 2 consumer warpgroups (m64n256k8), 128 x 256
block tiles, 4 stages of 48 KB (kernel 0.3805 ms at 4096^3 on an H200, the cp.async m256s4stmfp's 4 warpgroups
and 256 x 128 tiles 0.4671 in the same run). :func:`plan` splits K over grid z on that build where its tiles are few and K long
(kernels.gemm.wgmma_tma.k_splits: ranges summed by ``red.global.v2.f32.add`` into a zeroed C), else
:func:`choose_tile` takes 128 x 128 tiles (2 warpgroups) where the 256 x 128 grid leaves SMs idle.

Measured: see docs/tensor-cores.md ("tensor_core_wgmma_tf32") and scripts/wgmma_bench.py --tf32.

Needs: numba-cuda-mlir's inline PTX and an sm_90a GPU (compute capability 9.0). In the simulator and
under numba-cuda the rung is skipped with one line (:func:`unavailable`); tensor_core_tf32 is the emulated
TF32 lesson.

Sources: PTX ISA 8.x, "wgmma.mma_async" (".tf32: imm-trans-a and imm-trans-b are not supported: K-major
only"), "Shared Memory Matrix Layout", "cvt" (.rna.tf32.f32); CUDA C++ Programming Guide, "Shared
Memory" (bank conflicts); NVIDIA, "An Efficient Matrix Transpose in CUDA C/C++" (the padded tile).
"""
from __future__ import annotations

import numpy as np

from kernels.arrays import empty_like
from kernels.compiler import COMPILER, MLIR, SIMULATOR, bound, cuda, int32
from kernels.gemm import mma
from kernels.gemm import wgmma_bf16 as W
from kernels.gemm import wgmma_tma as TMA
from kernels.spec import blocks_for, sm_count, Launch

NAME = "tensor_core_wgmma_tf32"
UNAVAILABLE = W.UNAVAILABLE
TILE, ROWS = 32, 8  # tf32_transpose: a 32 x 32 tile a block of 32 x 8 threads (4 rows a thread)
ROUND_BLOCK = 256  # tf32_round: threads a block, 4 columns each

# make_wgmma_kernel's keywords (tf32=True added by the launcher); scripts/wgmma_bench.py --tf32 times each
BUILDS: dict = {
    "m256s4stmfp": dict(stages=4, strided=True, mma_first=True, wgs=4, pairs=True),  # 256 x 128, 193 KB
    "s4stmfp": dict(stages=4, strided=True, mma_first=True, pairs=True),  # 128 x 128, 2 warpgroups, 129 KB
    "n256s4stmfp": dict(stages=4, bn=256, strided=True, mma_first=True, pairs=True),  # 128 x 256 (m64n256k8)
    "s3st2p": dict(stages=3, strided=True, min_blocks=2, pairs=True),  # 128 x 128, two blocks an SM
    "m256s3stmfp": dict(stages=3, strided=True, mma_first=True, wgs=4, pairs=True),  # 256 x 128, 3 stages
    # TMA copies completing on mbarriers, a producer warpgroup (kernels/gemm/wgmma_tma.py)
    "tma_ws_m256s4": TMA.BUILDS["tma_ws_m256s4"],  # 256 x 128, producer + 4 consumers
    "tma_ws_n256s4": TMA.BUILDS["tma_ws_n256s4"],  # 128 x 256 (m64n256k8), producer + 2 consumers
}
DEFAULT, SMALL = "tma_ws_n256s4", "s4stmfp"  # the TMA build: kernel 0.3805 ms at 4096^3 on an H200, the cp.async
# m256s4stmfp 0.4671; faster at each shape measured (docs/tensor-cores.md, "TMA and mbarriers")
ROUNDING = "rna"  # "rna": A and B rounded to nearest in the pre-pass; "truncate": A's low bits dropped by
# the tensor cores (no pass over A; B^T still rounded on its way)


def padded(k: int) -> int:
    """k rounded up to a multiple of 4 (16 bytes of float32): the K the kernel runs at."""
    return -(-k // 4) * 4


if COMPILER == MLIR and not SIMULATOR:
    from kernels.gemm.mma import to_tf32

    @cuda.jit
    def tf32_transpose(B, BT):
        """BT[n, k] = B[k, n] rounded to TF32 (its bits, int32), for k < K, n < N; BT[n, k] = 0 for K <= k <
        BT.shape[1]. B (K, N) float32, BT (N, Kp) int32. Block (32, 8): a 32 x 32 tile of B at (32 blockIdx.x,
        32 blockIdx.y) read row by row (coalesced), through a 32 x 33 shared tile, written row by row of BT
        (coalesced); grid (ceil(Kp / 32), ceil(N / 32))."""
        tile = cuda.shared.array((32, 33), int32)
        k0, n0 = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        K, N = B.shape
        for j in range(0, TILE, ROWS):
            k, n = k0 + ty + j, n0 + tx
            v = int32(0)
            if k < K and n < N:
                v = to_tf32(B[k, n])
            tile[ty + j, tx] = v
        cuda.syncthreads()
        for j in range(0, TILE, ROWS):
            n, k = n0 + ty + j, k0 + tx
            if n < N and k < BT.shape[1]:
                BT[n, k] = tile[tx, ty + j]

    @cuda.jit
    def tf32_round(A, Ar):
        """Ar[r, c] = A[r, c] rounded to TF32 (int32 bits) for c < K, 0 for K <= c < Ar.shape[1] (a multiple of
        4). A (M, K) float32, Ar (M, Kp) int32; block (256,): row blockIdx.x, 4 adjacent columns a thread from
        4 (256 blockIdx.y + threadIdx.x) (four loads in flight, then four stores; a warp's loads one contiguous
        512-byte run); grid (M, ceil(Kp / 1024))."""
        r = cuda.blockIdx.x
        c0 = (cuda.blockIdx.y * ROUND_BLOCK + cuda.threadIdx.x) * 4
        K = A.shape[1]
        if c0 < Ar.shape[1]:
            v0, v1, v2, v3 = int32(0), int32(0), int32(0), int32(0)
            if c0 + 3 < K:
                v0, v1, v2, v3 = to_tf32(A[r, c0]), to_tf32(A[r, c0 + 1]), to_tf32(A[r, c0 + 2]), to_tf32(A[r, c0 + 3])
            else:
                if c0 < K:
                    v0 = to_tf32(A[r, c0])
                if c0 + 1 < K:
                    v1 = to_tf32(A[r, c0 + 1])
                if c0 + 2 < K:
                    v2 = to_tf32(A[r, c0 + 2])
            Ar[r, c0], Ar[r, c0 + 1], Ar[r, c0 + 2], Ar[r, c0 + 3] = v0, v1, v2, v3

    @cuda.jit
    def tf32_round_flat(A, Ar):
        """The first build of :func:`tf32_round` (scripts/wgmma_tf32_bench.py times both): one thread an element
        of Ar, row-major, its row and column from one division; block (256,), grid (ceil(M Kp / 256),). At
        4096 x 4096 on the H100: 0.089 ms; :func:`tf32_round` 0.051 (Nsight Compute counts 16 sectors a warp's
        request, its 32 loads 16 bytes apart, but the thread's next three loads hit those lines in L1); a build
        reading 4 columns 256 apart (each warp access 128 contiguous bytes) 0.067; torch's A.clone() 0.048."""
        i = cuda.grid(1)
        cols = Ar.shape[1]
        if i < Ar.shape[0] * cols:
            r = i // cols
            c = i - r * cols
            v = int32(0)
            if c < A.shape[1]:
                v = to_tf32(A[r, c])
            Ar[r, c] = v


def round_grid(m: int, kp: int) -> tuple[int, int]:
    """:func:`tf32_round`'s grid for an m x kp Ar: a row a block index x, 1,024 columns a block index y."""
    return m, blocks_for(kp, 4 * ROUND_BLOCK)


def launcher(m: int, n: int, kp: int, build: dict, grid=None, splits: int = 1, atomic: int = TMA.ATOMIC):
    """f(A, BT, C): the TF32 wgmma kernel of ``build`` (:data:`BUILDS`) for an m x n x kp product (kp a
    multiple of 4), A (m, kp) and BT (n, kp) of TF32 bits, C (m, n) float32 C-contiguous; grid default one
    block tile of C a block, with its dynamic shared memory. A TMA build takes ``splits`` K ranges (grid z, or
    ``grid``'s third entry): C is then their workspace or, with ``atomic``, the zeroed C they add into
    (kernels.gemm.wgmma_tma.launcher; :func:`prepare` wraps the sum). The cp.async builds have no K ranges
    (ValueError for more than one)."""
    if UNAVAILABLE:
        raise RuntimeError(f"{NAME} {UNAVAILABLE}")
    if kp % 4:
        raise ValueError(f"K = {kp}: the TF32 wgmma kernel copies 16-byte rows (K a multiple of 4; prepare pads)")
    bm, bn, threads = W.block_shape(build)
    if build.get("tma"):
        return TMA.launcher(m, n, kp, tf32=True, grid=grid, splits=splits, atomic=atomic, **build)
    if splits > 1 or (grid is not None and len(grid) > 2 and grid[2] > 1):
        raise ValueError("K ranges: the TMA builds only (the cp.async builds have no grid z)")
    kernel = W.make_wgmma_kernel(aligned=True, tf32=True, **build)
    grid = tuple(grid[:2]) if grid else (blocks_for(n, bn), blocks_for(m, bm))
    return mma.with_shared(kernel, grid, (threads,), W.shared_bytes(build.get("stages", W.STAGES), bn,
                                                                     build.get("wgs", 2)))


def plan(size) -> tuple[str, int, str]:
    """(build, K ranges, why) for an m x n x k product: :data:`DEFAULT`'s 128 x 256 tiles with the K ranges
    kernels.gemm.wgmma_tma.k_splits picks (its wave model of the TMA build, on this GPU's SMs) where it picks
    more than one; else :func:`choose_tile`'s build on one range."""
    m, n, k = size
    sms = sm_count()
    bm, bn, _ = W.block_shape(BUILDS[DEFAULT])
    splits, per, est = TMA.k_splits(m, n, padded(k), bm, bn, True, sms)
    if splits > 1:
        return DEFAULT, splits, TMA.k_splits_words(m, n, bm, bn, True, splits, per, est, sms)
    name, why = choose_tile(size)
    return name, 1, why


def choose(size) -> tuple[str, str]:
    """(build, why) of :func:`plan`."""
    name, _, why = plan(size)
    return name, why


def choose_tile(size) -> tuple[str, str]:
    """(build, why): :data:`DEFAULT`'s 128 x 256 tiles unless their grid leaves over half the SMs idle, then
    :data:`SMALL`'s 128 x 128 (kernels.gemm.mma.choose_block_tile). Half, measured: at 2048^3 on the H100
    the default's 128 blocks for 132 SMs ran 163 TFLOP/s, SMALL's 256 blocks 139."""
    tiles = [(name, *W.block_shape(BUILDS[name])[:2]) for name in (DEFAULT, SMALL)]
    return mma.choose_block_tile(size, tiles, sm_count(), share=0.5)


def launch(size, threads):
    """The build and K ranges :func:`plan` picks (named in the note), block fixed at its warpgroups' threads,
    one tile of C a block (grid z: the K ranges, where there are several)."""
    m, n, k = size
    name, splits, why = plan(size)
    bm, bn, block = W.block_shape(BUILDS[name])
    notes = []
    if threads != block:
        notes.append(f"block fixed at {block} threads ({block // W.WARPGROUP} warpgroups); --threads {threads} ignored")
    notes.append(f"build {name}: Hopper wgmma m64n{bn}k8 TF32, both operands K-major from 128-byte-swizzled "
                 f"shared memory; {why}")
    notes.append("B transposed to N x K and A and B rounded to TF32 in a pre-pass inside every call"
                 + (f" (K padded to {padded(k)})" if k % 4 else "") + "; float32 sums and output")
    grid = (blocks_for(n, bn), blocks_for(m, bm)) + ((splits,) if splits > 1 else ())
    return Launch(grid=grid, block=(block,),
                  threads_needed=min(grid[0] * grid[1] * block, blocks_for(m * n, 64)) * splits, note="; ".join(notes))


def prepare(cfg, inputs, outputs, build: str | None = None, rounding: str = ROUNDING, splits: int | None = None,
            atomic: int = TMA.ATOMIC):
    """Each call: A rounded to TF32 into a buffer padded to Kp = padded(K) columns (:func:`tf32_round`; with
    ``rounding="truncate"`` only when K is not a multiple of 4, else A as it is), B transposed and rounded into
    BT (N x Kp, :func:`tf32_transpose`), then the wgmma kernel of ``build`` (default :func:`plan`'s, on the
    launch's grid: its third entry the K ranges) on (A', BT, C), and with several K ranges their sum
    (kernels.gemm.wgmma_tma.k_ranges_call: a reduction launch, or ``atomic`` adds into a zeroed C).
    ``build`` named: its own grid, ``splits`` K ranges (default 1). float32 only (ValueError otherwise)."""
    A, B = inputs
    mma.float32_inputs(NAME, "TF32", A)
    (C,) = outputs
    m, k = A.shape
    n = B.shape[1]
    kp = padded(k)
    name = build or plan((m, n, k))[0]
    grid = tuple(cfg.grid) if build is None else None
    if splits is None:
        splits = grid[2] if grid is not None and len(grid) > 2 else 1
    if grid is None and splits > 1:
        bm, bn, _ = W.block_shape(BUILDS[name])
        grid = (blocks_for(n, bn), blocks_for(m, bm), splits)
    f = TMA.k_ranges_call(launcher(m, n, kp, BUILDS[name], grid=grid, splits=splits, atomic=atomic), C, splits,
                          atomic)
    BT = empty_like(B, (n, kp), np.int32)
    trans = bound(tf32_transpose[(blocks_for(kp, TILE), blocks_for(n, TILE)), (TILE, ROWS)], (B, BT))
    if rounding == "truncate" and k == kp:
        def call():
            trans()
            f(A, BT)
        return call
    Ar = empty_like(A, (m, kp), np.int32)
    rnd = bound(tf32_round[round_grid(m, kp), ROUND_BLOCK], (A, Ar))

    def call():
        rnd()
        trans()
        f(Ar, BT)

    return call


def unavailable(dtype) -> str:
    """Why the rung does not run here ("" when it does): tensor_core_wgmma's reasons
    (kernels.gemm.wgmma_bf16.unavailable: the simulator, numba-cuda, a GPU other than compute capability 9.0,
    a dtype other than float32)."""
    return W.unavailable(dtype, NAME, "tensor_core_tf32", "TF32")
