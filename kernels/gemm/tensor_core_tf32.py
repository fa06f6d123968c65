"""Rung tensor_core_tf32: ``mma.sync`` m16n8k8 TF32 warp tiles fed by the cp.async pipeline.

An H100 SM does 128 FP32 FMAs a clock on its SIMT lanes, and many times that on its tensor cores.
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` (PTX ISA, "Warp-level matrix multiply-
accumulate instructions") lets one warp multiply a 16 x 8 tile of A by an 8 x 8 tile of B into a
16 x 8 float32 accumulator: 1,024 FMAs in one instruction, where the SIMT rungs execute 32 a warp.
The inputs are TF32: float32's exponent with 10 mantissa bits (rounded to nearest, relative error up
to 2^-11), the products summed in float32 -- torch's ``torch.backends.cuda.matmul.allow_tf32 = True``.

Who holds what: the 32 lanes of the warp each hold 4 elements of A, 2 of B and 4 of C in registers
(the *fragments*; g = lane // 4, q = lane % 4):

    A 16 x 8 (m x k)     a0 = A[g][q]    a1 = A[g+8][q]    a2 = A[g][q+4]    a3 = A[g+8][q+4]
    B 8 x 8  (k x n)     b0 = B[q][g]    b1 = B[q+4][g]
    C 16 x 8 (m x n)     c0 = C[g][2q]   c1 = C[g][2q+1]   c2 = C[g+8][2q]   c3 = C[g+8][2q+1]

(``kernels.gemm.mma.fragment_picture()`` prints all three tiles; docs/tensor-cores.md shows them.)

The mma only sums over k, so which *memory* column is "k = q" is the kernel's choice, as long as A
and B agree; likewise which memory column of B (and of C) is "n = g". This kernel picks them so that
every fragment load is one 128-bit shared load (``ld.shared.v4``, kernels.gemm.shared_vec):

    A: lane (g, q) loads A[g][4q .. 4q+3] of a 16-deep slab  -> a0, a2 of k-step 0, then of k-step 1
    B: lane (g, q) loads B[4q + 2s][n0 .. n0+7], B[4q + 2s + 1][n0 .. n0+7], n0 = 8g  -> b0, b1 of
       n tiles 0..7 of k-step s (for a 64-wide warp tile; 4 words, one load, for 32 wide)

so "k = q" of k-step s is memory column 4q + 2s, "k = q + 4" is 4q + 2s + 1, and n tile nt's column
"n = g" is warp column g * NT + nt (C is stored at the same columns). A warp tile of 64 x 64 is 4 x 8
mma tiles: per 16 k a lane issues 8 loads of A and 8 of B for 64 mma (the previous build: 48 scalar
loads and 48 ``cvt`` for 32 mma). Each A fragment serves 8 mma, each B fragment 4.

Shared memory holds each slab as the cp.async copies wrote it -- 16-byte chunks, verbatim -- with no
padding: the chunks are *swizzled* instead (chunk c of row r stored at chunk c ^ f(r)), so the 8 lanes
that share a 128-bit load phase hit 8 different 4-bank groups. B: f(r) = bit 2 of r times 1 (2 for a
32-wide warp tile) + bit 3 of r times 4, which are q's two bits in the rows lane q reads; A: rows of
16 words need none (rows g and g + 1 fill the 32 banks), longer rows f(r) = 4 on odd rows. Without
padding a 128 x 128 block with 16-deep slabs takes 16 KB a stage: 3 stages fit the 48 KB of static
shared memory. Builds that need more take it as dynamic shared memory (``cuda.shared.array(0, ...)``,
the bytes given at launch: kernels.gemm.mma.with_shared; numba-cuda-mlir raises the function's limit past 48 KB
itself, up to the H100's 227 KB a block).

Each thread's copies are one 16-byte column of a slab's rows (chunk k of rows rt, rt + rpp, ...), their
shared and global byte addresses worked out from two per-kernel bases (kernels.gemm.shared_vec's
``cp_async16_at``): the generic copy helpers convert both addresses on every call (an ``isspacep``, a QSPC
instruction the next one waits for, and a ``cvta``), and the compiler cannot hoist inline PTX out of a loop.

*Pipelined* builds (``Tile.pipelined``, names ending ``_p``) double-buffer the fragments in registers
(CUTLASS's warp-level software pipelining): each k-step's loads are issued before the mma of the k-step
before it, so the shared-memory latency hides behind 32 mma instead of stalling the warp. B has two
buffers (k-step s's in buffer s); A is reloaded m tile by m tile right after that tile's last mma of the
group. The slab barrier moves into the last k-step: wait for the next slab's copies, barrier, load its
first fragments, then the last 32 mma of this slab; the next copies are issued at the top of the slab,
into the stage every warp finished reading before that barrier.

Rounding to TF32 costs one integer add a word: the bits plus half a TF32 unit in the last place (0x1000),
after which the tensor core drops the low 13 bits -- round to nearest, ties away from zero, the value
``cvt.rna.tf32.f32`` gives (CUTLASS's ``round_half_ulp_truncate``), where ``cvt.rna`` is several
instructions on sm_90. ``rounding="cvt"`` (the PTX conversion) and ``"none"`` (truncation, biased toward
zero) are the other builds (make_tf32_kernel).

The kernel: a block of (bm / wm) x (bn / wn) warps computes a bm x bn tile of C, each warp a wm x wn tile
(MT x NT = wm / 16 x wn / 8 mma tiles, 4 MT NT float32 accumulators a thread); the K-slabs of A
(bm x bk) and B (bk x bn) arrive through the cp.async pipeline of the async_copy rung (STAGES buffers,
one wait and one barrier a slab). :data:`TILES` lists the builds tried; :data:`DEFAULT` is the rung's.

Saves over the previous build of this rung (128 x 128 block, 64 x 32 warp tiles, scalar fragment loads
and ``cvt.rna``, padded rows, 2 stages: 47.2 TFLOP/s at 4096^3 on the H100, issue-bound with the tensor
pipe 15.7% busy, docs/tensor-cores.md): per mma, 0.25 shared loads instead of 1.5 and one integer add
instead of 1.5 ``cvt``s, a third stage. Measured on the H100 (``scripts/tensor_cores_bench.py --tiles``,
before the copy addresses above): b128x128_w64x64_k16_s3 116.4 TFLOP/s at 4096^3 (0.30x torch TF32's
387.2), 88.1 at 3000 x 5000 x 2000 (0.37x); Nsight Compute at 2048^3: latency-bound (tensor pipe 32%,
12% occupancy: 240 registers x 128 threads, 2 blocks = 8 warps an SM), mostly stalled on the long
scoreboard, no bank conflicts. Compiled offline (PTX and ptxas for sm_90), every build in :data:`TILES`
without local memory or spills; the main loop went from 535 SASS instructions a 16-deep slab
(64 mma) to 341 with the copy addresses. Then, with those copies (H100, the same run, every build
checked first): b128x128_w64x64_k16_s3 138.8 TFLOP/s at 4096^3 (0.37x torch TF32's 378.8) and 101.2 at
3000 x 5000 x 2000 (0.46x of 219.6); fragments double-buffered in registers (``_p``) 140.1 / 110.0;
5 stages 139.1, pipelined 142.0 / 111.3; the default, b128x128_w64x64_k32_s3_p (32-deep slabs, 3 stages
in 96 KB of dynamic shared memory, pipelined): **147.2 TFLOP/s at 4096^3 (0.39x) and 114.7 (0.52x)**;
8 warps of 64 x 64 (b128x256, 4 stages) 134.7. Nsight Compute at 2048^3 (``lab counters matmul
--variant tensor_core_tf32``, the k16_s3 build): latency-bound, tensor pipe 38%, 12% occupancy, stalls
long_scoreboard 30%, wait 26%: 242 registers cap every 64 x 64 build at 8 warps an SM, too few to hide
the shared-load latency; the 0.6x target (about 230 TFLOP/s) is missed.

Shapes (:func:`choose`, named in the launch note): a 128 x 128 block tile at 1000 x 1030 x 517 makes 8 x 9 =
72 blocks, 60 of an H100's 132 SMs idle for the whole product (torch TF32 25.4 TFLOP/s there, this rung
13.4 with that build). Where the default's grid has fewer blocks than the device has SMs the rung runs
:data:`SMALL`, 64 x 64 blocks of 4 warps of 32 x 32 (272 blocks there; 120 registers, 128 with 4-byte copies,
48 KB of static shared memory: launch bounds of 4 blocks an SM; offline 316 SASS instructions a 32-deep slab
for 32 HMMA, 591 with 4-byte copies, the default's 642 for 128). K or N not a multiple of 4 leaves rows 4-byte aligned only, where a 16-byte cp.async cannot go: each
16-byte chunk is four 4-byte copies; a chunk of a tile wholly inside the matrix now takes them unchecked
(four LDGSTS at immediate offsets), the edge tiles keep a check an element. Those copies cost a third of the
speed at large ragged shapes (4097^3 on an H200: 82.1 TFLOP/s, 131.9 on padded copies), so from
:data:`PAD_MIN_MNK` multiply-adds on :func:`prepare` copies A and B into zero-padded buffers inside every
call (:func:`pad_kernel`, timed with the product: 116.3 there); smaller ones keep the 4-byte copies.

In the simulator ``mma_tf32``, the copies and the 128-bit loads are emulated (kernels.gemm.mma,
kernels.gemm.shared_vec): same fragments, same waits, so a lane that holds the wrong element gives a
wrong C there too.

Sources: PTX ISA 8.x ("mma", "Matrix fragments for mma.m16n8k8", "ld", "cp.async"); NVIDIA CUTLASS
(include/cute/arch/mma_sm80.hpp, the swizzled shared layouts of include/cute/swizzle.hpp,
include/cutlass/numeric_conversion.h).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np


from kernels.arrays import empty_like
from kernels.compiler import SIMULATOR, bound, cuda, float32
from kernels.gemm.build_options import ALIGN, FORCEINLINE
from kernels.gemm import mma, async_copy, tensor_core_bf16 as bf16, wgmma_bf16 as wg, wgmma_tf32 as wt, wgmma_tma as tm
from kernels.gemm.mma import EMULATED, FRAGMENT, STATIC_SHARED, cp_async_commit, cp_async_wait, mma_tf32, pipeline_variant
from kernels.gemm.shared_vec import ROUNDINGS, cp_async4_at, cp_async16_at, global_base, ld4_tf32, shared_base
from kernels.spec import Launch, blocks_for, sm_count


class Tile(NamedTuple):
    """A build of the kernel: block tile bm x bn of C, warp tile wm x wn, K-slabs of bk, stages buffers;
    ``pipelined``: the fragments double-buffered in registers (see the module docstring)."""
    bm: int
    bn: int
    wm: int  # a multiple of 16 (mma tiles of 16 rows)
    wn: int  # 32 or 64: a lane reads wn / 8 words of each B row, one or two 16-byte chunks
    bk: int  # a multiple of 16: a lane's 128-bit A load covers two k-steps
    stages: int
    pipelined: bool = False

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def shared_bytes(self) -> int:
        return self.stages * (self.bm * self.bk + self.bk * self.bn) * 4

    @property
    def dynamic_bytes(self) -> int:
        """Bytes of dynamic shared memory the launch asks for: 0 (static) up to 48 KB, all of it past."""
        return self.shared_bytes if self.shared_bytes > STATIC_SHARED else 0

    def __str__(self):
        return (f"{self.bm}x{self.bn} block, {self.wm}x{self.wn} warps, bk {self.bk}, {self.stages} stages"
                + (", fragments double-buffered" if self.pipelined else ""))


MAX_SHARED = 227 * 1024  # an H100 block's opt-in shared memory
# The builds scripts/tensor_cores_bench.py --tiles times. Up to 48 KB the stages are a static shared array;
# past it, dynamic shared memory (numba-cuda-mlir raises the function's limit when a launch asks for more).
TILES = {
    "b128x128_w64x64_k16_s3": Tile(128, 128, 64, 64, 16, 3),  # 4 warps, 128 accumulators a thread
    "b128x256_w64x64_k16_s2": Tile(128, 256, 64, 64, 16, 2),  # 8 warps, same warp tile, half the blocks
    "b128x128_w64x32_k16_s3": Tile(128, 128, 64, 32, 16, 3),  # 8 warps, 64 accumulators: more warps an SM
    # fragments double-buffered in registers (suffix _p); s4 and more, or k32: dynamic shared memory
    "b128x128_w64x64_k16_s3_p": Tile(128, 128, 64, 64, 16, 3, True),  # the default, pipelined: 48 KB
    "b128x128_w64x64_k16_s5_p": Tile(128, 128, 64, 64, 16, 5, True),  # 80 KB: 2 blocks an SM, 4 slabs ahead
    "b128x128_w64x64_k32_s3_p": Tile(128, 128, 64, 64, 32, 3, True),  # 96 KB: 2 blocks an SM, half the barriers
    "b128x256_w64x64_k16_s4_p": Tile(128, 256, 64, 64, 16, 4, True),  # 96 KB: 8 warps, 1 block an SM
    "b256x128_w64x64_k16_s4_p": Tile(256, 128, 64, 64, 16, 4, True),  # the same, 4 x 2 warps
    "b128x256_w64x64_k32_s3_p": Tile(128, 256, 64, 64, 32, 3, True),  # 144 KB: 8 warps, 32-deep slabs
    "b128x128_w64x64_k16_s5": Tile(128, 128, 64, 64, 16, 5),  # stages alone (not pipelined), 80 KB
    "b64x64_w32x32_k32_s3_p": Tile(64, 64, 32, 32, 32, 3, True),  # small grids: 4 warps of 32 x 32, 48 KB static
}
DEFAULT = "b128x128_w64x64_k32_s3_p"  # the rung's build, the fastest measured (scripts/tensor_cores_bench.py --tiles times them all)
SMALL = "b64x64_w32x32_k32_s3_p"  # the rung's build where DEFAULT's grid would leave SMs idle (:func:`choose`)
ROUNDING = "add"


@cuda.jit(device=True, **FORCEINLINE)
def load_slab(sdst, saddr, src, gaddr, rows, cols, r0, c0, tile_rows, tile_cols, sw0, sw1, shift, t, copies,
              nthreads, vec):
    """Issue the copy of src[r0 : r0 + tile_rows, c0 : c0 + tile_cols] (row-major float32 rows x cols) into
    shared ``sdst`` from byte address ``saddr`` on (shared_base + 4 x an element index; ``gaddr``: src's
    global_base), rows of tile_cols words, each 16-byte chunk of row r placed at chunk ``chunk ^ swizzle(r)``,
    swizzle(r) = bit ``shift`` of r times sw0 + bit ``shift + 1`` times sw1. Thread ``t`` copies chunks t,
    t + nthreads, ... (``copies`` of them); ``vec`` (a compile-time constant): 16-byte copies (cols % 4 == 0),
    else four 4-byte copies a chunk. Outside the matrix: zeros. Does not commit."""
    per_row = tile_cols // 4  # chunks a row; nthreads is a multiple: thread t copies chunk k of rows rt + i rpp
    rpp = nthreads // per_row
    rt = t // per_row
    k = t - rt * per_row
    gc = c0 + k * 4
    g = gaddr + ((r0 + rt) * cols + gc) * 4  # the global address of the thread's first chunk
    inside = r0 + tile_rows <= rows and c0 + tile_cols <= cols  # the whole tile: no checks a chunk
    for i in range(copies):
        r = rt + i * rpp
        gr = r0 + r
        d = saddr + 4 * (r * tile_cols + (k ^ (((r >> shift) & 1) * sw0 + ((r >> (shift + 1)) & 1) * sw1)) * 4)
        gi = g + i * rpp * cols * 4  # src[gr, gc]'s address
        if vec and inside:
            cp_async16_at(sdst, d, src, gi, gr, gc, 4)
        elif inside:  # 4-byte copies (rows not 16-byte aligned), the whole tile inside the matrix: no checks
            for e in range(4):
                cp_async4_at(sdst, d + 4 * e, src, gi + 4 * e, gr, gc + e, 1)
        elif vec:  # cols % 4 == 0: a chunk is inside the matrix whole or not at all (outside: zeros, nothing read)
            ok = gr < rows and gc < cols
            cp_async16_at(sdst, d, src, gi if ok else gaddr, gr, gc, 4 if ok else 0)
        else:
            for e in range(4):
                ok = gr < rows and gc + e < cols
                cp_async4_at(sdst, d + 4 * e, src, gi + 4 * e if ok else gaddr, gr, gc + e, 1 if ok else 0)


@cuda.jit(device=True, **FORCEINLINE)
def _unsplit(x):
    """(x, x): what the builds without ``split`` name in place of kernels.gemm.mma.split_word (in branches that
    their constant ``split`` leaves dead), so that every build types under every compiler."""
    return x, x


@functools.cache
def make_tf32_kernel(tile: Tile = TILES[DEFAULT], rounding: str = ROUNDING, vec: bool = True, split: bool = False):
    """The tensor_core_tf32 kernel for ``tile`` (a :class:`Tile`), rounding A and B to TF32 by
    ``rounding`` (kernels.gemm.shared_vec.ROUNDINGS: "add", "cvt" or "none"); ``vec``: 16-byte copies,
    for K and N multiples of 4 (rows 16-byte aligned), else 4-byte copies (:func:`kernel_for` picks).
    A tile past 48 KB of shared memory needs ``tile.dynamic_bytes`` at launch (kernels.gemm.mma.with_shared).
    ``split``: the 3xTF32 build (kernels/gemm/tensor_core_3xtf32.py; ``rounding`` unused): each fragment word
    loaded as float32 bits and split in registers into a TF32 big and small part (kernels.gemm.mma.split_word),
    three mma a step: small A x big B, big A x small B, then big x big."""
    bm, bn, wm, wn, bk, stages, pipelined = tile
    threads = tile.threads
    warps_n = bn // wn
    MT, NT = wm // 16, wn // 8  # mma tiles a warp
    cpl = NT // 4  # 16-byte chunks of a B row a lane reads
    if (bk % 16 or wm % 16 or NT not in (4, 8) or bm % wm or bn % wn or tile.shared_bytes > MAX_SHARED
            or not 2 <= stages <= 5  # cp_async_wait takes 0..3
            or (bm * bk // 4) % threads or (bk * bn // 4) % threads or threads % (bn // 4)):  # load_slab's chunks
        raise ValueError(f"unsupported tile {tile}")
    acc_n = MT * NT * 4  # local-array sizes are single names: compile-time literals under numba-cuda-mlir
    a_frag = MT * 8  # rows g and g + 8 of each m tile, 4 words (two k-steps) each
    b_frag = NT * 2
    b_frag_n = 2 * b_frag  # two buffers: the pipelined build loads k-step s + 1's while s's mma run
    a_words_n, b_words_n = (2 * a_frag, 2 * b_frag_n) if split else (a_frag, b_frag_n)  # split: + small parts
    groups = bk // 16  # 16-deep groups a slab: one 128-bit A load a row each
    a_words = bm * bk
    b_words = bk * bn
    a_total = stages * a_words
    smem_n = 0 if tile.dynamic_bytes else a_total + stages * b_words  # 0: the launch's dynamic shared memory
    a_copies = a_words // 4 // threads
    b_copies = b_words // 4 // threads
    a_sw = 0 if bk == 16 else 4  # A rows of 16 words need no swizzle; longer rows: chunk ^ 4 on odd rows
    b_sw = 1 if cpl == 2 else 2  # B: chunk ^ (bit 2 of k) * b_sw ^ (bit 3 of k) * 4 (see the docstring)
    mode = ROUNDINGS.index("none" if split else rounding)
    sa, sb = (a_frag, b_frag_n) if split else (0, 0)  # where the small parts sit in af, bf (split builds)
    split_word = mma.split_word if split else _unsplit
    # launch bounds: 2 blocks an SM for the 64 x 64 warp tiles (their 128 accumulators need the 255 registers);
    # 4 for 32 x 32 ones (32 accumulators, 48 KB: 4 fit an SM), which caps them at 128 registers -- the 4-byte
    # copy build took 208 without the cap, 128 with it, no spills (ptxas through nvJitLink, sm_90)
    # (split builds of 32 x 32 warps: 3 blocks, 170 registers -- their doubled fragments spilled 92 bytes at 128)
    min_blocks = (3 if split else 4) if acc_n <= 32 else max(1, 65536 // (threads * 255))
    bounds = {} if SIMULATOR else {"launch_bounds": (threads, min_blocks)}

    @cuda.jit(device=True, **FORCEINLINE)
    def load_a(sm, af, mt, pa, kk, a_odd):
        """A's fragments of m tile mt, 16-deep group kk (both k-steps): rows g and g + 8, one 128-bit load each."""
        for h in range(2):
            f = (mt * 2 + h) * 4
            af[f], af[f + 1], af[f + 2], af[f + 3] = ld4_tf32(sm, pa + 64 * (kk ^ a_odd), (mt * 16 + h * 8) * bk, mode)
            if split:
                for e in range(4):
                    af[f + e], af[sa + f + e] = split_word(af[f + e])

    @cuda.jit(device=True, **FORCEINLINE)
    def load_b(sm, bf, buf, pb, kk, s, b_chunk):
        """B's fragments of k-step s of group kk into buffer ``buf``: rows 4q + 2s, 4q + 2s + 1."""
        for j in range(2):
            for c in range(cpl):
                f = buf * b_frag + c * 8 + j  # bf[(c * 4 + e) * 2 + j]: n tile c * 4 + e, register j
                bf[f], bf[f + 2], bf[f + 4], bf[f + 6] = ld4_tf32(sm, pb + 16 * (b_chunk ^ c), (kk * 16 + 2 * s + j) * bn, mode)
                if split:
                    for e in range(4):
                        bf[f + 2 * e], bf[sb + f + 2 * e] = split_word(bf[f + 2 * e])

    @cuda.jit(device=True, **FORCEINLINE)
    def mma_row(acc, af, mt, bf, buf, s):
        """The NT mma of m tile mt, k-step s: words 2s, 2s + 1 of its A loads, B buffer ``buf``."""
        a = mt * 8 + 2 * s
        for nt in range(NT):
            o = (mt * NT + nt) * 4
            b = buf * b_frag + nt * 2
            if split:  # the two correction products first (CUTLASS's order), then big x big, from zero: the tensor
                # cores' own sums truncate (round toward zero), so the step's sum is added to acc by the CUDA
                # cores, rounded to nearest (Ootomo and Yokota's accumulation outside the tensor cores)
                z = float32(0.0)
                d0, d1, d2, d3 = mma_tf32(af[sa + a], af[sa + a + 4], af[sa + a + 1], af[sa + a + 5], bf[b], bf[b + 1],
                                          z, z, z, z)
                d0, d1, d2, d3 = mma_tf32(af[a], af[a + 4], af[a + 1], af[a + 5], bf[sb + b], bf[sb + b + 1],
                                          d0, d1, d2, d3)
                d0, d1, d2, d3 = mma_tf32(af[a], af[a + 4], af[a + 1], af[a + 5], bf[b], bf[b + 1], d0, d1, d2, d3)
                d0, d1, d2, d3 = acc[o] + d0, acc[o + 1] + d1, acc[o + 2] + d2, acc[o + 3] + d3
            else:
                d0, d1, d2, d3 = mma_tf32(af[a], af[a + 4], af[a + 1], af[a + 5], bf[b], bf[b + 1],
                                          acc[o], acc[o + 1], acc[o + 2], acc[o + 3])
            acc[o] = d0
            acc[o + 1] = d1
            acc[o + 2] = d2
            acc[o + 3] = d3

    @cuda.jit(**bounds)
    def tf32_kernel(A, B, C):
        """C = A @ B, float32 in and out, TF32 products; block (threads,), grid (ceil(N / bn), ceil(M / bm))."""
        # [stage][m][k] of A, then [stage][k][n] of B, 16-byte chunks swizzled; dynamic when smem_n is 0
        sm = cuda.shared.array(smem_n, float32, alignment=ALIGN)
        a_addr = shared_base(sm)
        b_addr = a_addr + 4 * a_total
        ga = global_base(A)  # the copies' global addresses start here (computed once: inline PTX stays put)
        gb = global_base(B)
        M = A.shape[0]
        K = A.shape[1]
        N = B.shape[1]
        NC = C.shape[1]  # N, or fewer where B was zero-padded to a multiple of 4 columns (prepare)
        t = cuda.threadIdx.x
        lane = t % 32
        warp = t // 32
        g = lane // 4
        q = lane % 4
        wm0 = (warp // warps_n) * wm  # the warp's tile inside the block tile
        wn0 = (warp % warps_n) * wn
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        # this lane's words in a stage. A: row wm0 + g (+ 16 mt + 8 h), chunk q of each 16-k group, that
        # group swapped with its neighbour on odd rows when a_sw; B: rows 4q + 2s + j of each 16-k group,
        # columns of chunk g * cpl (+ 1), swizzled by bits 2, 3 of the row (= q's two bits)
        a_odd = (g & 1) * (a_sw // 4)
        a_lane = (wm0 + g) * bk + q * 4
        b_chunk = (g * cpl) ^ ((q & 1) * b_sw + (q >> 1) * 4)
        b_lane = 4 * q * bn + wn0  # + 4 (b_chunk ^ c) for chunk c
        acc = cuda.local.array(acc_n, float32)  # [mt][nt][c0..c3]: registers (unrolled loops only)
        af = cuda.local.array(a_words_n, FRAGMENT)  # [mt][h][4 words]: TF32 bits on a GPU (then the small parts)
        bf = cuda.local.array(b_words_n, FRAGMENT)  # [buffer][nt][b0, b1] (then the small parts)
        for i in range(acc_n):
            acc[i] = float32(0.0)
        ntiles = (K + bk - 1) // bk
        for s in range(stages - 1):
            if s < ntiles:
                load_slab(sm, a_addr + 4 * s * a_words, A, ga, M, K, row0, s * bk, bm, bk, a_sw, 0, 0, t, a_copies,
                          threads, vec)
                load_slab(sm, b_addr + 4 * s * b_words, B, gb, K, N, s * bk, col0, bk, bn, b_sw, 4, 2, t, b_copies,
                          threads, vec)
            cp_async_commit()
        rd = 0  # the stage slab kt sits in (kt % stages, counted: no division in the loop)
        wr = stages - 1  # the stage slab kt + stages - 1 goes to: the one slab kt - 1 used
        if pipelined:  # the first slab's first fragments, before the loop
            cp_async_wait(stages - 2)
            cuda.syncthreads()
            for mt in range(MT):
                load_a(sm, af, mt, a_addr + 4 * a_lane, 0, a_odd)
            load_b(sm, bf, 0, b_addr + 4 * b_lane, 0, 0, b_chunk)
        for kt in range(ntiles):
            if not pipelined:
                cp_async_wait(stages - 2)
                cuda.syncthreads()
            nxt = kt + stages - 1  # into the stage slab kt - 1 used: every warp is past its loads of it
            if nxt < ntiles:
                load_slab(sm, a_addr + 4 * wr * a_words, A, ga, M, K, row0, nxt * bk, bm, bk, a_sw, 0, 0, t, a_copies,
                          threads, vec)
                load_slab(sm, b_addr + 4 * wr * b_words, B, gb, K, N, nxt * bk, col0, bk, bn, b_sw, 4, 2, t,
                          b_copies, threads, vec)
            cp_async_commit()
            wr = rd
            pa = a_addr + 4 * (rd * a_words + a_lane)  # byte addresses: the loads below add constants
            pb = b_addr + 4 * (rd * b_words + b_lane)
            rd = rd + 1 if rd + 1 < stages else 0
            for kk in range(groups):
                if not pipelined:  # a group's fragments, then its mma
                    for mt in range(MT):
                        load_a(sm, af, mt, pa, kk, a_odd)
                    for s in range(2):  # k-step s: words 2s, 2s + 1 of each A load
                        load_b(sm, bf, 0, pb, kk, s, b_chunk)
                        for mt in range(MT):
                            mma_row(acc, af, mt, bf, 0, s)
                else:  # each load issued before the mma that precede its use (B: buffer s)
                    load_b(sm, bf, 1, pb, kk, 1, b_chunk)
                    for mt in range(MT):
                        mma_row(acc, af, mt, bf, 0, 0)
                    na = pa  # where the next group's fragments are: this slab's group kk + 1 ...
                    nb = pb
                    nk = kk + 1
                    if kk + 1 == groups:  # ... or the next slab's group 0, once every thread's copies landed
                        cp_async_wait(stages - 2)
                        cuda.syncthreads()
                        na = a_addr + 4 * (rd * a_words + a_lane)
                        nb = b_addr + 4 * (rd * b_words + b_lane)
                        nk = 0
                    load_b(sm, bf, 0, nb, nk, 0, b_chunk)
                    for mt in range(MT):  # m tile mt's last mma of the group, then its next A rows
                        mma_row(acc, af, mt, bf, 1, 1)
                        load_a(sm, af, mt, na, nk, a_odd)
        cp_async_wait(0)
        for mt in range(MT):  # c0, c1 (h = 0) and c2, c3 (h = 1): row g (+ 8), logical columns 2q, 2q + 1 of
            for h in range(2):  # each n tile, which B's lanes read at warp column n * NT + nt
                r = row0 + wm0 + mt * 16 + h * 8 + g
                if r < M:
                    c = col0 + wn0 + 2 * q * NT
                    for nt in range(NT):
                        o = (mt * NT + nt) * 4 + h * 2
                        if c + nt < NC:
                            C[r, c + nt] = acc[o]
                        if c + NT + nt < NC:
                            C[r, c + NT + nt] = acc[o + 1]

    return tf32_kernel


def kernel_for(k: int, n: int, tile: Tile = TILES[DEFAULT], rounding: str = ROUNDING):
    """The kernel for A of k columns and B of n columns: 16-byte copies when both are multiples of 4."""
    return make_tf32_kernel(tile, rounding, k % 4 == 0 and n % 4 == 0)


def choose(size) -> tuple[str, str]:
    """(name in :data:`TILES`, why) of the rung's build for size (m, n, k): :data:`DEFAULT` (128 x 128 block
    tiles) where its grid has a block for every SM (kernels.spec.sm_count), else :data:`SMALL` (64 x 64,
    4x the blocks): at 1000 x 1030 x 517 the default's 72 blocks would leave 60 of an H100's 132 SMs idle."""
    return mma.choose_block_tile(size, [(n, TILES[n].bm, TILES[n].bn) for n in (DEFAULT, SMALL)], sm_count())


def launch_for(tile: Tile, size) -> Launch:
    """The launch of ``tile``'s kernel for size (m, n, k): one bm x bn tile of C a block."""
    m, n, _ = size
    grid = (blocks_for(n, tile.bn), blocks_for(m, tile.bm))
    return Launch(grid=grid, block=(tile.threads,), threads_needed=min(grid[0] * grid[1] * tile.threads,
                                                                      blocks_for(m * n, 64)))


def launch(size, threads):
    """The rung's launch: the build :func:`choose` picks for the shape (its note says which and why),
    block fixed at its warps' threads, one bm x bn tile of C a block."""
    name, why = choose(size)
    tile = TILES[name]
    notes = []
    if threads != tile.threads:
        notes.append(f"block fixed at {tile.threads} threads ({tile.threads // 32} warps); --threads {threads} ignored")
    notes.append(f"build {name}: {why}")
    if (size[2] % 4 or size[1] % 4) and size[0] * size[1] * size[2] < PAD_MIN_MNK:
        notes.append("K or N not a multiple of 4: rows not 16-byte aligned, 4-byte copies")
    elif size[2] % 4 or size[1] % 4:
        notes.append(f"K, N not multiples of 4: A and B zero-padded to {padded(size[2])}, {padded(size[1])} columns "
                     f"by a copy kernel in every call (timed), so every cp.async is 16 bytes")
    notes.append("TF32 inputs (10-bit mantissa), float32 sums")
    if EMULATED:
        notes.append("emulated: mma.sync, cp.async and ld.shared.v4 run as Python in the simulator")
    plan = launch_for(tile, size)
    return Launch(grid=plan.grid, block=plan.block, threads_needed=plan.threads_needed, note="; ".join(notes))


# From this many multiply-adds on, a ragged product pays for its padding copy. Measured on an H200
# (scripts/tc_shapes_bench.py, TFLOP/s as chosen / padded in the call / 4-byte copies): 4097^3 116.3 / 82.1,
# 2048 x 2048 x 2047 89.5 / 80.7, but 1000 x 1030 x 517 19.5 / 23.3 (two more launches for a 0.05 ms product).
PAD_MIN_MNK = 1 << 31


def padded(n: int) -> int:
    """n rounded up to a multiple of 4 (16 bytes of float32): the K and N the kernel runs at."""
    return -(-n // 4) * 4


@cuda.jit
def pad_kernel(src, dst):
    """dst = src zero-padded (float32, dst at least src's shape): dst[r, c] = src[r, c] inside src, 0 past
    its edges. One thread an element of dst, row-major (coalesced): block (256,), grid
    (ceil(dst.size / 256),). Zeros add nothing to a product, so A padded along K and B along K and N
    give the same C."""
    i = cuda.grid(1)
    cols = dst.shape[1]
    if i < dst.shape[0] * cols:
        r = i // cols
        c = i - r * cols
        v = float32(0.0)
        if r < src.shape[0] and c < src.shape[1]:
            v = src[r, c]
        dst[r, c] = v


def prepare(cfg, inputs, outputs):
    """One launch of the TF32 kernel :func:`choose` picks on (A, B, C); float32 only (ValueError otherwise).

    K or N not a multiple of 4 leaves rows that a 16-byte cp.async cannot read (4-byte copies, about
    0.7x the speed: docs/tensor-cores.md, "Shapes"). From PAD_MIN_MNK multiply-adds on, every call then first
    copies A and B into buffers
    zero-padded to multiples of 4 columns (two launches of :func:`pad_kernel`, timed with the product:
    about 1/10 of its time at 4097^3) and runs the 16-byte kernel on them; C keeps its N columns."""
    A, B = inputs
    mma.float32_inputs("tensor_core_tf32", "TF32", A)
    m, k = A.shape
    n = B.shape[1]
    tile = TILES[choose((m, n, k))[0]]
    C = outputs[0]
    if (k % 4 == 0 and n % 4 == 0) or m * n * k < PAD_MIN_MNK:
        kern = mma.with_shared(kernel_for(k, n, tile), cfg.grid, cfg.block, tile.dynamic_bytes)
        return lambda: kern(A, B, C)
    kp, n_p = padded(k), padded(n)
    Ap = empty_like(A, (m, kp), np.float32)  # by A's library
    Bp = empty_like(A, (kp, n_p), np.float32)
    ga, gb = blocks_for(m * kp, 256), blocks_for(kp * n_p, 256)
    kern = mma.with_shared(kernel_for(kp, n_p, tile), cfg.grid, cfg.block, tile.dynamic_bytes)
    if SIMULATOR:  # the simulator's kernel[grid, block] keeps only the latest configuration: configure at each call
        def call():
            pad_kernel[ga, 256](A, Ap)
            pad_kernel[gb, 256](B, Bp)
            kern(Ap, Bp, C)

        return call
    pad_a, pad_b = bound(pad_kernel[ga, 256], (A, Ap)), bound(pad_kernel[gb, 256], (B, Bp))

    def call():
        pad_a()
        pad_b()
        kern(Ap, Bp, C)

    return call


unavailable = mma.float32_gate("tensor_core_tf32", "TF32")


def _rungs():
    wbm, wbn, wthreads = wg.block_shape(tm.BUILD)
    tbm, tbn, tthreads = wg.block_shape(wt.BUILDS[wt.DEFAULT])

    return {
        "async_copy": pipeline_variant(
            "async_copy", f"FP32 SIMT fed by 128-bit shared loads, {async_copy.BUILDS[async_copy.DEFAULT]} "
            f"(64x64 blocks, K split, where its grid leaves SMs idle), cp.async shared-memory pipeline "
            f"(block fixed at {async_copy.THREADS})",
            async_copy.launch, async_copy.prepare, async_copy.unavailable,
            suits=lambda s: 1 not in s[:2]),
        "tensor_core_tf32": pipeline_variant(
            "tensor_core_tf32", f"TF32 tensor cores: mma.sync m16n8k8 fed by 128-bit shared loads, "
            f"{TILES[DEFAULT]} ({TILES[SMALL].bm}x{TILES[SMALL].bn} blocks where that grid would leave SMs idle), "
            f"cp.async pipeline; TF32 inputs, float32 sums",
            launch, prepare, unavailable, precision="tf32",
            suits=lambda s: False),  # never tuned into auto: auto stays FP32
        "tensor_core_bf16": pipeline_variant(
            "tensor_core_bf16", f"bfloat16 tensor cores: mma.sync m16n8k16 with ldmatrix fragments, "
            f"{bf16.BM}x{bf16.BN} block tile of {bf16.THREADS // 32} warps ({bf16.BUILD.get('mt', bf16.MT) * 16}x"
            f"{bf16.BUILD.get('nt', bf16.NT) * 8} each), {bf16.BUILD.get('stages', bf16.STAGES)}-stage "
            f"cp.async pipeline (64x64 blocks where that grid would leave SMs idle); bfloat16 inputs, float32 sums",
            bf16.launch, bf16.prepare, bf16.unavailable,
            precision="bf16", suits=lambda s: False),  # asked for by name, as TF32
        "tensor_core_wgmma": pipeline_variant(
            "tensor_core_wgmma", f"bfloat16 tensor cores, Hopper's warpgroup MMA: wgmma m64n{wbn}k16 reading both "
            f"operands from 128-byte-swizzled shared memory (no ldmatrix), {wbm}x{wbn} block tile of "
            f"{wthreads // wg.WARPGROUP} warpgroups, {wg.pipeline_words(tm.BUILD)}, K split over grid z where the tiles "
            f"are few and K long; bfloat16 inputs, float32 sums; sm_90a only", tm.launch, tm.prepare, wg.unavailable, precision="bf16",
            suits=lambda s: False),
        "tensor_core_wgmma_tf32": pipeline_variant(
            "tensor_core_wgmma_tf32", f"TF32 tensor cores, Hopper's warpgroup MMA: wgmma m64n{tbn}k8 with both "
            f"operands K-major (B transposed, A and B rounded to TF32, in a pre-pass inside every call), "
            f"{tbm}x{tbn} block tile of {tthreads // wg.WARPGROUP} warpgroups (K split over grid z where the tiles are "
            f"few and K long, else 128x128 where that grid would leave over half the SMs idle), "
            f"{wg.pipeline_words(wt.BUILDS[wt.DEFAULT])}; TF32 inputs, float32 sums; "
            f"sm_90a only", wt.launch, wt.prepare, wt.unavailable, precision="tf32", suits=lambda s: False),
    }


# The rungs this package adds to matmul (kernels/matmul.py's variants): name -> Variant (the bf16 rungs'
# kernels live in kernels/gemm/tensor_core_bf16.py and kernels/gemm/wgmma_bf16.py).
PIPELINE_RUNGS = _rungs()
