"""Hopper's warpgroup MMA from a Python kernel: ``wgmma.mma_async`` bf16 with shared-memory matrix descriptors.

The lab's tensor-core rungs use Ampere's warp-level ``mma.sync``: each warp first loads its operand
*fragments* from shared memory into registers (``ldmatrix``, kernels.gemm.mma_bf16), then issues a
16 x 8 x 16 product that the warp waits for. On Hopper that path tops out well under the quoted peak:
scripts/mma_peak.py, a loop of independent mma.sync on register operands (no memory at all), reached
592.7 TFLOP/s bf16 m16n8k16 and 298.1 TF32 m16n8k8 on an H200 -- 0.60 of the dense peaks (989, 495) that
only ``wgmma`` reaches. Hopper's ``wgmma`` is what cuBLAS uses. What it saves, for one 64 x 128 x 64 piece
of a block tile (the bf16 mma.sync rung's numbers, kernels/gemm/tensor_core_bf16.py):

* instructions: 4 wgmma m64n128k16 issued by one warpgroup instead of 256 mma.sync m16n8k16 over its warps;
* operand traffic through registers: none -- the tensor cores read A and B from shared memory themselves,
  where the mma.sync rung's 64 x 64 warps first load 8 four-matrix ``ldmatrix`` per 16 k (64 for the piece)
  and hold the fragments in registers;
* waiting: wgmma is asynchronous, so a warpgroup issues slab k's MMAs and goes on to the next slab's
  barrier and copies while they run (mma.sync's results are waited for, instruction by instruction).

The rung ``tensor_core_wgmma`` (``lab run matmul --variant tensor_core_wgmma``; kernels/gemm/tensor_core_tf32.py
declares it, :func:`launch`, :func:`prepare`, :func:`unavailable` here) runs :data:`BUILD`. The instruction:

* A *warpgroup* (4 consecutive warps, 128 threads, the first warp's index a multiple of 4) issues one
  instruction for a 64 x N x 16 product (N = 8 .. 256 in steps of 8): ``wgmma.mma_async.sync.aligned.
  m64nNk16.f32.bf16.bf16`` -- m64n128k16 is 262,144 FMAs, 64 x one m16n8k16 ``mma.sync``.
* The operands are read by the tensor cores straight from shared memory: no fragment loads, no registers
  for A and B, no ldmatrix. Each operand is named by a 64-bit *matrix descriptor* (PTX ISA, "Matrix
  Descriptor Format"): bits 0-13 the tile's shared address >> 4, 16-29 the leading-dimension byte
  offset >> 4, 32-45 the stride-dimension byte offset >> 4, 62-63 the swizzle mode (0 none, 1 128-byte,
  2 64-byte, 3 32-byte). :func:`descriptor` builds one on the host, ``make_desc`` in a kernel.
* It is asynchronous: ``wgmma.fence.sync.aligned`` orders earlier register writes of the accumulators
  before the MMA; the MMAs issued are closed into a group by ``wgmma.commit_group.sync.aligned``;
  ``wgmma.wait_group.sync.aligned N`` waits until at most N groups are in flight. Only the accumulators
  (float32, N / 2 registers a thread) live in registers, laid out as mma.sync's C fragment repeated: thread
  t (warp w = t // 32, lane l) holds element i at row 16 w + l // 4 + 8 ((i // 2) % 2), column 8 (i // 4)
  + 2 (l % 4) + i % 2 (:func:`d_index`; PTX ISA, "Register Fragments and Shared Memory Matrix Layouts",
  wgmma .m64nNk16 D).
* Shared memory written by ordinary stores or cp.async must be made visible to the tensor cores' "async
  proxy" by ``fence.proxy.async.shared::cta`` before the wgmma reads it.

Shared-memory layouts (bf16; a "core matrix" is 8 rows of 16 bytes), as :func:`k_major_offset` and
:func:`mn_major_offset` compute byte offsets:

* K-major with the 128-byte swizzle (A: M x K row-major; rows of 64 bf16 = 128 bytes): row r at r x 128,
  its 16-byte chunk c stored at chunk c ^ (r % 8); 8 rows form a 1,024-byte atom, the stride-dimension
  offset (SBO) 1,024; the tile starts 1,024-byte aligned. The k-th 16-wide step of a 64-wide slab: the
  descriptor's start address + 32 k bytes (the hardware applies the XOR to the address it forms).
* MN-major with the 128-byte swizzle (B: K x N row-major as it is in global memory, read transposed by
  the ``imm-trans-b`` operand = 1): K rows of 64 N-elements, chunk c of row k at c ^ (k % 8), 8 K-rows an
  atom (1,024 bytes, the offset to the next 8 K-rows), 64-column blocks 64 x 128 = 8,192 bytes apart
  (the offset between atoms in N). The k-th 16-wide step: + 2,048 k bytes.
* The 128-byte swizzle of one 1,024-byte atom (8 rows of 8 16-byte chunks): position p of row r holds
  chunk p ^ r, so the 8 rows' chunk c -- one core matrix, 8 rows x 16 bytes, what the tensor cores read at a
  time -- lie in 8 different 16-byte columns of the 128-byte bank window: one conflict-free wavefront::

      position:  0   1   2   3   4   5   6   7        (16 bytes each; 128 bytes = all 32 banks)
      row 0     c0  c1  c2  c3  c4  c5  c6  c7
      row 1     c1  c0  c3  c2  c5  c4  c7  c6
      row 2     c2  c3  c0  c1  c6  c7  c4  c5
      row 3     c3  c2  c1  c0  c7  c6  c5  c4
      ...
      row 7     c7  c6  c5  c4  c3  c2  c1  c0

  Unswizzled, chunk c of all 8 rows would sit in the same 16-byte column: an 8-way bank conflict.
* No swizzle ("interleave"): core matrices stored whole (128 contiguous bytes), LBO apart in K and SBO
  apart in M/N.

For the MN-major B the descriptor's LBO is the offset between 64-column blocks (8,192 bytes) and SBO the
offset between 8-row groups of K (1,024): :data:`B_LBO`, :data:`B_SBO` (the GEMM passes its checks so).

The GEMM (:func:`make_wgmma_kernel`, launched by :func:`launcher`): 256 threads = 2 warpgroups (or 4), a
128 x BN block tile (BN 128 or 256; 256 x 128 with 4), warpgroup g owning rows 64 g .. 64 g + 63 and all BN columns, so one
m64n{BN}k16 instruction covers its whole tile 16 k at a time. K advances in slabs of 64 (128 bytes of bf16:
one swizzle row): A's 128 x 64 K-major, B's 64 x BN MN-major, both 128-byte swizzled, placed there by 16-byte
``cp.async`` copies (the swizzle is just where each chunk goes) into ``stages`` buffers of dynamic shared
memory, ``stages - 2`` slabs ahead. Per slab: wait for its copies, ``fence.proxy.async``, a barrier, issue
the next slab's copies, then four wgmmas (the descriptors' start addresses stepped 32 bytes in A, 2,048 in
B), commit, and ``wgmma.wait_group 1``: the MMAs of slab k run while the warpgroup goes on to slab k + 1's
barrier and copies; the buffer refilled at slab k is the one slab k - 2 read, which wait_group 1 has
retired. Ragged edges: copies past M, N or K are zero-filled (cp.async src-size 0), stores guarded. K or N
not a multiple of 8 leaves bf16 rows not 16-byte aligned: that build
(``aligned=False``) copies with plain element loads and stores, correct but without the asynchronous copies.

Builds (:data:`BUILDS`; scripts/wgmma_bench.py checks and times each; registers from ptxas for sm_90a, no
spills in any aligned build). By default each thread recomputes its chunks' swizzled and global addresses
each slab from the chunk index (230 registers for the 128 x 128 build). ``strided`` builds compute them
once -- a thread's chunks are a fixed number of rows apart, a multiple of 8, so the swizzle XOR is the same
for all of them -- and step them by constants: 127 registers, 113 with ``mma_first`` (the wgmmas issued
before the next slab's copies). That leaves room for ``wgs=4``: 4 warpgroups, a 256 x 128 block tile
(A's traffic per FMA halved against 128 x 128, as n256's halves B's), 512 threads at 109 registers;
``min_blocks=2`` with 3 stages: two 128 x 128 blocks an SM (119 registers); ``group=8``: the grouped
block order (:func:`grouped_tile`); ``pairs``: the epilogue's two adjacent columns in one 8-byte store
(half the store instructions). The plain-load path (K or N not a multiple of 8) of the 4-warpgroup
build spills (128 registers at most for 512 threads): correct, slower.

Measured (numba-cuda-mlir 0.6.0, an H200, scripts/wgmma_bench.py; torch.matmul bf16 = cuBLAS beside it,
TFLOP/s at 4096^3 and 3000 x 5000 x 2000, x torch in brackets; every build checked first, worst error 0.007
of the bf16 bound): torch 782.9 and 649.4; **m256s4stmfp, the rung's build, 563.6 (0.72x) and 411.7
(0.63x)**; m256s4stmf 494.6 and 340.0 (the 8-byte stores of C: +14%); n256s4stmf 505.1 and 341.6;
s3st2 432.7 and 300.4; s4st 429.2 and 310.2; s4stmf 384.1 and 280.1; s4stmfg8 348.8 and 246.0 (the
grouped order lost); s4, the first build, 298.7 (0.38x) and 228.1. Nsight Compute (``lab counters``,
2048^3) on s4: latency-bound, tensor pipe 28%, 12% achieved occupancy, mostly stalled on wait; the builds
since cut the registers (230 -> 109) and the copy instructions, and put 16 warps on an SM. The bf16
mma.sync rung measured 266-284 TFLOP/s at 4096^3 on an H100 (not the same GPU); mma.sync's own ceiling
on the H200 is 592.7 (scripts/mma_peak.py), wgmma's dense peak 989. cuBLAS also uses thread-block
clusters sharing loads (TMA multicast) and a producer warp (setmaxnreg). The next step, kernels/gemm/wgmma_tma.py,
feeds the same wgmmas by TMA copies completing on mbarriers, with a producer warpgroup and setmaxnreg: its
``tma_ws_n256s4`` is the rung's build now (the rung runs wgmma_tma.launch and wgmma_tma.prepare, which are
:func:`launch` and :func:`prepare` here with that build; 0.2154 ms at 4096^3 on an H200, 0.88x torch bf16,
against 0.2619 for m256s4stmfp in the same run; docs/tensor-cores.md, "TMA and mbarriers").

What needs what: ``wgmma`` exists only on sm_90a (the "a" architecture-specific target); the kernels
here are compiled with ``cuda.jit(chip="sm_90a")`` by numba-cuda-mlir's inline PTX. In Numba's CUDA
simulator and under numba-cuda there is no emulation: the module imports and :data:`UNAVAILABLE` says why.

Sources: PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (wgmma.fence,
wgmma.mma_async, wgmma.commit_group, wgmma.wait_group; "Matrix Descriptor Format"; "Shared Memory Matrix
Layout", the swizzling modes; "Register Fragments", m64nNk16 D), "membar/fence" (fence.proxy.async);
NVIDIA CUTLASS, include/cute/arch/mma_sm90_gmma.hpp (SM90_64x128x16_F32BF16BF16_SS) and
mma_sm90_desc.hpp (GmmaDescriptor), include/cute/atom/mma_traits_sm90_gmma.hpp (the canonical layouts).
"""
from __future__ import annotations

import functools

import numpy as np

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda
from kernels.device_limits import current
from kernels.spec import Launch, blocks_for

CHIP = "sm_90a"  # wgmma is architecture-specific: sm_90a, not sm_90
WARPGROUP = 128
M_TILE, K_STEP = 64, 16  # one wgmma: 64 x N x 16
SWIZZLE_NONE, SWIZZLE_128B, SWIZZLE_64B, SWIZZLE_32B = 0, 1, 2, 3  # descriptor bits 62-63
B_LBO, B_SBO = 8192, 1024  # MN-major B (128-byte swizzle): LBO = 64-column blocks apart, SBO = 8 K-rows apart

if COMPILER == MLIR and not SIMULATOR:
    UNAVAILABLE = ""
else:
    UNAVAILABLE = (f"needs {MLIR}'s inline PTX and an sm_90a GPU for wgmma (no emulation in the simulator "
                   f"or under {COMPILER or 'numba-cuda'})")


# --- Host side: descriptors, layouts, the accumulator fragment --------------------------------
def descriptor(address: int, lbo: int, sbo: int, swizzle: int) -> int:
    """The 64-bit wgmma matrix descriptor (an int) of a tile at shared byte ``address`` (16-byte aligned)
    with leading/stride byte offsets ``lbo``, ``sbo`` (multiples of 16, under 256 KB) and ``swizzle``
    (SWIZZLE_*); base offset 0 (the swizzled tile starts at a multiple of its atom)."""
    return (((address & 0x3FFFF) >> 4) | (((lbo & 0x3FFFF) >> 4) << 16) | (((sbo & 0x3FFFF) >> 4) << 32)
            | ((swizzle & 3) << 62))


def d_index(thread: int, i: int) -> tuple[int, int]:
    """(row, col) of the 64 x N accumulator tile that register i (0 .. N/2 - 1) of warpgroup thread
    ``thread`` (0..127) holds."""
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


def k_major_offset(r, k, swizzle: int = SWIZZLE_128B, lbo: int = 128, sbo: int = 1024):
    """Byte offset of element (r, k) (r: the M or N index, k: the K index; arrays or ints) of a K-major bf16
    tile: 128-byte swizzle (rows of 64 elements, 128 bytes; ``lbo`` unused) or no swizzle (core matrices
    of 8 x 8 elements, ``lbo`` bytes apart in K and ``sbo`` apart in r)."""
    r, k = np.asarray(r), np.asarray(k)
    if swizzle == SWIZZLE_128B:
        return (r // 8) * sbo + (r % 8) * 128 + (((k // 8) % 8) ^ (r % 8)) * 16 + (k % 8) * 2
    if swizzle == SWIZZLE_NONE:
        return (r // 8) * sbo + (k // 8) * lbo + (r % 8) * 16 + (k % 8) * 2
    raise ValueError(f"swizzle {swizzle}: 128-byte (1) or none (0)")


def mn_major_offset(k, n, block: int = 8192):
    """Byte offset of element (k, n) of an MN-major bf16 tile with the 128-byte swizzle: 64-element
    (128-byte) rows of n for each k, chunk c of row k at c ^ (k % 8), 64-column blocks ``block`` bytes apart."""
    k, n = np.asarray(k), np.asarray(n)
    return (n // 64) * block + k * 128 + ((((n % 64) // 8) ^ (k % 8)) * 16) + (n % 8) * 2


def grouped_tile(b, gx, gy, group):
    """(column, row) of the C tile that block b (numbered row-major over a gx x gy grid) computes in the
    grouped order: the blocks walk down a group of ``group`` block rows (fewer in the last group) before the
    next column, so those running at once share A rows and B columns in L2. A permutation of the tiles."""
    per = group * gx  # the blocks of a full group of rows
    first = (b // per) * group
    rows = min(group, gy - first)
    return (b % per) // rows, first + (b % per) % rows


# --- The instructions (numba-cuda-mlir inline PTX) --------------------------------------------
# numba-cuda-mlir 0.6's inline_ptx needs literal constraint strings, and CPython 3.12 passes a call of over
# 30 arguments as one built list (the strings then lose their literal type): at most 14 operands a
# statement. The m64n128k16 accumulators are 64 registers, so they are not operands at all: one
# statement at the kernel's start declares them as PTX registers of the function (``.reg .f32 wacc<R>``,
# no braces, so later statements see them), the wgmma statements name them directly, and ACC_READ
# statements copy 8 at a time into Numba values for the epilogue. The compiler never sees them (every
# inline_ptx is a volatile asm: kept in order), so nothing touches them while an MMA is in flight.
def acc_declare_ptx(regs: int) -> str:
    """Declare the ``regs`` float32 accumulators wacc0 .. and set them to zero."""
    return f".reg .f32 wacc<{regs}>;\n" + "\n".join(f"mov.b32 wacc{i}, 0;" for i in range(regs))


def wgmma_ptx(n: int, steps: int, tnsp_b: int, tf32: bool = False) -> str:
    """``wgmma.fence`` then ``steps`` m64n{n}k16 bf16 wgmmas (m64n{n}k8 TF32 ones with ``tf32``: no transpose
    operands, both K-major) into wacc0 .. wacc{n/2-1}: A descriptors %0 .. %(steps-1), B descriptors %steps ..,
    the int scale-d last (0: D = A B, else D = A B + D); not committed."""
    accs = ", ".join(f"wacc{i}" for i in range(n // 2))
    lines = ["{", ".reg .pred p;", f"setp.ne.b32 p, %{2 * steps}, 0;", "wgmma.fence.sync.aligned;"]
    shape, tail = (f"m64n{n}k8.f32.tf32.tf32", "") if tf32 else (f"m64n{n}k16.f32.bf16.bf16", f", 0, {tnsp_b}")
    lines += [f"wgmma.mma_async.sync.aligned.{shape} {{{accs}}}, %{s}, %{steps + s}, p, 1, 1{tail};"
              for s in range(steps)]
    return "\n".join(lines + ["}"])


def acc_read_ptx(j: int) -> str:
    """Copy wacc{8j} .. wacc{8j+7} into the 8 outputs."""
    return "\n".join(f"mov.f32 %{i}, wacc{8 * j + i};" for i in range(8))


def _generated(name: str, args: str, body: str, env: dict):
    """A forceinline device function ``name(args)`` whose body is the generated source ``body``."""
    exec(f"def {name}({args}):\n{body}", env)  # noqa: S102  (PTX register names are fixed in the strings)
    return cuda.jit(device=True, inline="always")(env[name])


if COMPILER == MLIR and not SIMULATOR:
    import numba_cuda_mlir.cuda.experimental as _X

    from kernels.compiler import int32, int64, uint16
    from kernels.gemm.mma import shared_address

    @functools.cache
    def acc_declare(regs: int):
        """A device function acc_declare(): declares and zeroes the accumulators (call once, first)."""
        return _generated("acc_declare", "", f"    _X.inline_ptx({acc_declare_ptx(regs)!r})\n", {"_X": _X})

    @functools.cache
    def wgmma_issue(n: int, steps: int, tnsp_b: int, tf32: bool = False):
        """A device function issue(da0 .., db0 .., scale): wgmma_ptx(n, steps, tnsp_b, tf32) (int64 descriptors)."""
        das, dbs = [f"da{s}" for s in range(steps)], [f"db{s}" for s in range(steps)]
        ops = ", ".join([f'"l", {d}' for d in das + dbs] + ['"r", scale'])
        body = f"    _X.inline_ptx({wgmma_ptx(n, steps, tnsp_b, tf32)!r}, {ops})\n"
        return _generated("issue", ", ".join(das + dbs + ["scale"]), body, {"_X": _X})

    @functools.cache
    def acc_store(regs: int):
        """A device function store(C, r0, c0, M, N): C[r, c] = the accumulator (r, c) of this thread's
        fragment for every one with r < M and c < N, where r0 = the tile's first row + 16 (warp in the
        warpgroup) + lane // 4 and c0 = the tile's first column + 2 (lane % 4) (:func:`d_index`). Straight-line
        code: ``regs`` / 8 ACC_READ statements, each followed by its 8 guarded stores."""
        out = ", ".join('"=f", np.float32' for _ in range(8))
        body = []
        for j in range(regs // 8):
            body.append(f"    v = _X.inline_ptx({acc_read_ptx(j)!r}, {out})")
            for i in range(8):
                reg = 8 * j + i
                dr, dc = 8 * ((reg // 2) % 2), 8 * (reg // 4) + reg % 2
                body.append(f"    if r0 + {dr} < M and c0 + {dc} < N:\n        C[r0 + {dr}, c0 + {dc}] = v[{i}]")
        return _generated("store", "C, r0, c0, M, N", "\n".join(body) + "\n", {"_X": _X, "np": np})

    @functools.cache
    def acc_store_pairs(regs: int):
        """As :func:`acc_store`, store(C, r0, c0, M, N, cb, ld) for a C-contiguous C, with cb = C's global
        address and ld its row stride in bytes (4 N), or 0 where cb or ld is not a multiple of 8: registers 2i
        and 2i + 1 hold columns c, c + 1 of one row (c even), stored by one 8-byte ``st.global.v2.f32`` where
        both exist and ld > 0 (the pair's address then a multiple of 8), else one guarded store each."""
        out = ", ".join('"=f", np.float32' for _ in range(8))
        body = []
        for j in range(regs // 8):
            body.append(f"    v = _X.inline_ptx({acc_read_ptx(j)!r}, {out})")
            for i in range(0, 8, 2):
                reg = 8 * j + i
                dr, dc = 8 * ((reg // 2) % 2), 8 * (reg // 4)
                body.append(f"    if r0 + {dr} < M:\n"
                            f"        if ld > 0 and c0 + {dc + 1} < N:\n"
                            f"            _X.inline_ptx('st.global.v2.f32 [%0], {{%1, %2}};', 'l', cb + int64(r0 + {dr}) * ld"
                            f" + (c0 + {dc}) * 4, 'f', v[{i}], 'f', v[{i + 1}])\n"
                            f"        else:\n"
                            f"            if c0 + {dc} < N:\n                C[r0 + {dr}, c0 + {dc}] = v[{i}]\n"
                            f"            if c0 + {dc + 1} < N:\n                C[r0 + {dr}, c0 + {dc + 1}] = v[{i + 1}]")
        return _generated("store", "C, r0, c0, M, N, cb, ld", "\n".join(body) + "\n", {"_X": _X, "np": np, "int64": int64})

    grouped_tile_device = cuda.jit(device=True, inline="always")(grouped_tile)

    @cuda.jit(device=True, forceinline=True)
    def wgmma_commit():
        """``wgmma.commit_group.sync.aligned``: close the wgmmas issued so far into a group."""
        _X.inline_ptx("wgmma.commit_group.sync.aligned;")

    @cuda.jit(device=True, forceinline=True)
    def wgmma_wait0():
        """``wgmma.wait_group.sync.aligned 0``: wait for every committed group."""
        _X.inline_ptx("wgmma.wait_group.sync.aligned 0;")

    @cuda.jit(device=True, forceinline=True)
    def wgmma_wait1():
        """``wgmma.wait_group.sync.aligned 1``: wait until at most the newest group is in flight."""
        _X.inline_ptx("wgmma.wait_group.sync.aligned 1;")

    @cuda.jit(device=True, forceinline=True)
    def make_desc(address, lbo, sbo, swizzle):
        """The wgmma matrix descriptor (int64) of the tile at 32-bit shared ``address`` (:func:`descriptor`)."""
        return (int64((address & 0x3FFFF) >> 4) | (int64((lbo & 0x3FFFF) >> 4) << 16)
                | (int64((sbo & 0x3FFFF) >> 4) << 32) | (int64(swizzle & 3) << 62))

    @cuda.jit(device=True, forceinline=True)
    def fence_proxy_async():
        """``fence.proxy.async.shared::cta``: this thread's shared-memory writes (stores, completed
        cp.async) become visible to the wgmma that follows a barrier."""
        _X.inline_ptx("fence.proxy.async.shared::cta;")

    @cuda.jit(device=True, forceinline=True)
    def aligned_base(array, align):
        """(the shared address of ``array``'s first element rounded up to ``align`` bytes, the element index
        of that address in the uint16 ``array``): a swizzled tile must start at a multiple of its atom."""
        base = shared_address(array)
        pad = (align - (base & (align - 1))) & (align - 1)
        return int32(base + pad), pad // 2


# --- The GEMM: two warpgroups, a 128 x BN block tile, 64-wide K slabs in a cp.async pipeline -----
BM, BK = 128, 64  # block rows (a warpgroup's 64 each) and the K slab; BN = 128 or 256 (m64nBNk16)
BN = 128  # the default build's
THREADS = 2 * WARPGROUP
A_BYTES = BM * BK * 2  # a stage's A: 128 x 64 K-major sw128; then its B: 64 x BN MN-major sw128
STAGES = 4
DYNAMIC_SHARED_MAX = 227 * 1024  # an H100 block's dynamic shared memory, opted in


def shared_bytes(stages: int = STAGES, bn: int = BN, wgs: int = 2) -> int:
    """Dynamic shared memory of a build: stages x (A 8 KB a warpgroup + B 128 bn bytes) and 1 KB to align
    to 1,024."""
    return stages * (64 * wgs * BK * 2 + BK * bn * 2) + 1024


if COMPILER == MLIR and not SIMULATOR:
    from kernels.gemm.mma import cp_async_commit, cp_async_wait, global_address
    from kernels.gemm.mma_bf16 import cp_async16_at, global_base

    @cuda.jit(device=True, forceinline=True)
    def _copy8(smem, e0, di, src, row, col, rows, cols):
        """smem[e0 + di : + 8] = src[row, col : col + 8], zeros past ``rows`` x ``cols`` (plain loads: rows
        of src not 16-byte aligned)."""
        for e in range(8):
            v = uint16(0)
            if row < rows and col + e < cols:
                v = src[row, col + e]
            smem[e0 + di + e] = v

    @functools.cache
    def make_wgmma_kernel(stages: int = STAGES, aligned: bool = True, min_blocks: int = 1,
                          b_lbo: int = B_LBO, b_sbo: int = B_SBO, bn: int = BN, strided: bool = False,
                          mma_first: bool = False, group: int = 1, wgs: int = 2, pairs: bool = False,
                          tf32: bool = False):
        """gemm(A, B, C): C = A @ B with A (M, K), B (K, N) uint16 bf16 bits, C (M, N) float32; block
        (128 wgs,): ``wgs`` warpgroups (2 or 4), a 64 wgs x bn block tile; grid (ceil(N / bn), ceil(M / (64 wgs))),
        shared_bytes(stages, bn, wgs) of dynamic shared memory.
        ``aligned`` (K and N multiples of 8): 16-byte cp.async copies; else plain loads (synchronous).
        Each warpgroup multiplies its 64 rows by the whole bn-wide B slab: m64n{bn}k16, bn / 2
        accumulators a thread. ``strided`` (aligned builds): each thread's copy addresses computed once
        (``copy_plan`` in the kernel) and stepped by constants, not recomputed from the chunk index each slab.
        ``mma_first``: each slab's wgmmas are issued right after the barrier, the next slab's copies behind them
        (the stage they refill is the one slab kt - 2 read either way, retired by the last wait_group 1).
        ``group`` > 1: the blocks launched one after another walk down a group of ``group`` block rows before
        the next column (a permutation of the tiles), so the blocks running together share A rows and B
        columns in L2 (the grouped order of Triton's matmul tutorial). ``pairs``: the epilogue stores two
        adjacent columns with one 8-byte store (:func:`acc_store_pairs`; C must be C-contiguous).
        ``tf32`` (strided aligned builds only): gemm(A, BT, C) with A (M, K) and BT (N, K) float32 (or uint32 TF32
        bits), K a multiple of 4: m64n{bn}k8 TF32 wgmmas, both operands K-major (the TF32 wgmma has no transpose),
        slabs of 32 k (128 bytes, the same swizzled rows as bf16's 64), B's chunks copied as A's are
        (kernels/gemm/wgmma_tf32.py)."""
        if tf32 and not (strided and aligned):
            raise ValueError("a TF32 build takes the strided 16-byte copies only (K a multiple of 4)")
        if stages < 3 or bn not in (128, 256) or wgs not in (2, 4) or bn * wgs > 512:
            raise ValueError("stages >= 3 (slab k + stages - 2 is copied during the wgmmas of k and k - 1); "
                             "bn 128 or 256; 2 or 4 warpgroups (4 with bn 128: 128 registers a thread at most)")
        threads, a_bytes = wgs * WARPGROUP, 64 * wgs * BK * 2  # A: 64 wgs rows x 64 K-major sw128, then B
        regs = bn // 2
        declare, issue, store = acc_declare(regs), wgmma_issue(bn, BK // K_STEP, 1, tf32), acc_store(regs)
        esize = 4 if tf32 else 2  # bytes an element: a 16-byte chunk holds epc of them, a 128-byte slab row bk
        epc, bk = 16 // esize, 128 // esize
        store_pairs = acc_store_pairs(regs)
        ahead = stages - 2  # slabs in flight ahead of the one being multiplied
        stage_bytes = a_bytes + BK * bn * 2
        b_chunks = 8 if tf32 else bn // 8  # 16-byte chunks a B row (TF32: bn rows of K, as A's; bf16: 64 rows of N)
        b_per_thread = 8 * bn // threads
        a_kstep = (K_STEP * 2) >> 4  # descriptor units (16 bytes) a k step: 32 bytes (16 bf16 or 8 TF32)
        b_kstep = a_kstep if tf32 else (K_STEP * 128) >> 4  # MN-major bf16 B: 16 rows of 128 bytes

        @cuda.jit(device=True, inline="always")
        def load(smem, base, e0, ga, gb, A, B, st, s, t, m0, n0, M, N, K):
            """Issue this thread's copies of slab s (A[m0:+64 wgs, 64 s:+64], B[64 s:+64, n0:+bn]) into stage st,
            each 16-byte chunk at its swizzled place (k_major_offset, mn_major_offset)."""
            k0 = s * BK
            for i in range(4):  # A: 64 wgs rows x 8 chunks, 4 a thread
                q = t + threads * i
                ar, ac = q // 8, q % 8
                di = (st * stage_bytes + ar * 128 + ((ac ^ (ar % 8)) * 16)) // 2
                if aligned:
                    cnt = min(max(K - k0 - 8 * ac, 0), 8) if m0 + ar < M else 0
                    cp_async16_at(base, di, ga, (m0 + ar) * K + k0 + 8 * ac, cnt)
                else:
                    _copy8(smem, e0, di, A, m0 + ar, k0 + 8 * ac, M, K)
            for i in range(b_per_thread):  # B: 64 rows x bn / 8 chunks
                q = t + threads * i
                br, bc = q // b_chunks, q % b_chunks
                di = (st * stage_bytes + a_bytes + (bc // 8) * 8192 + br * 128 + (((bc % 8) ^ (br % 8)) * 16)) // 2
                if aligned:
                    cnt = min(max(N - n0 - 8 * bc, 0), 8) if k0 + br < K else 0
                    cp_async16_at(base, di, gb, (k0 + br) * N + n0 + 8 * bc, cnt)
                else:
                    _copy8(smem, e0, di, B, k0 + br, n0 + 8 * bc, K, N)

        a_rows, b_rows = threads // 8, threads // b_chunks  # rows one pass of the block's chunks covers
        fast = strided and aligned

        @cuda.jit(device=True, inline="always")
        def load_strided(sb, a_src, a_dst, b_src, b_dst, b_cnt, ar0, ac, br0, k0, m0, n0, M, N, K):
            """Issue this thread's copies of the slab at k0 into the stage at shared byte address ``sb``, from
            the addresses of :func:`copy_plan` (a_src, b_src: this slab's, bytes). A chunk i: a_rows i rows
            below chunk 0, at a_dst + 128 a_rows i in the stage (a_rows a multiple of 8: the swizzle's row % 8,
            so the XOR, is chunk 0's); B chunk i likewise b_rows i rows down; zeros past M, K, N."""
            a_cnt = int32(min(max(K - k0 - epc * ac, 0), epc) * esize)
            for i in range(4):
                ok = m0 + ar0 + a_rows * i < M and a_cnt > 0  # (nothing read: the address stays a valid one)
                _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(sb + a_dst + 128 * a_rows * i),
                              "l", a_src + int64(esize * a_rows * i) * K if ok else a_src, "r", a_cnt if ok else int32(0))
            for i in range(b_per_thread):
                if tf32:  # BT's rows are N's, K-major like A's: the count is A's
                    ok = n0 + br0 + b_rows * i < N and a_cnt > 0
                    src, cnt = b_src + int64(4 * b_rows * i) * K, a_cnt
                else:
                    ok = k0 + br0 + b_rows * i < K and b_cnt > 0
                    src, cnt = b_src + int64(2 * b_rows * i) * N, b_cnt
                _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(sb + b_dst + 128 * b_rows * i),
                              "l", src if ok else b_src, "r", cnt if ok else int32(0))

        @cuda.jit(device=True, inline="always")
        def slab(smem, base, e0, ga, gb, A, B, a_src, a_dst, b_src, b_dst, b_cnt, ar0, ac, br0, s, t, m0, n0, M, N, K):
            """Issue this thread's copies of slab s into stage s % stages (load_strided or load)."""
            if fast:
                load_strided(base + (s % stages) * stage_bytes, a_src + 128 * s, a_dst,
                             b_src + (int64(128 * s) if tf32 else int64(2 * BK * s) * N),
                             b_dst, b_cnt, ar0, ac, br0, bk * s, m0, n0, M, N, K)
            else:
                load(smem, base, e0, ga, gb, A, B, s % stages, s, t, m0, n0, M, N, K)

        @cuda.jit(chip=CHIP, launch_bounds=(threads, min_blocks))
        def gemm(A, B, C):
            declare()
            smem = cuda.shared.array(0, uint16)
            M, K = A.shape
            N = B.shape[0] if tf32 else B.shape[1]
            t = cuda.threadIdx.x
            wg, tw = t // WARPGROUP, t % WARPGROUP
            bx, by = cuda.blockIdx.x, cuda.blockIdx.y
            if group > 1:
                bx, by = grouped_tile_device(cuda.blockIdx.y * cuda.gridDim.x + bx, cuda.gridDim.x, cuda.gridDim.y, group)
            m0, n0 = by * (64 * wgs), bx * bn
            base, e0 = aligned_base(smem, 1024)
            ga, gb = global_base(A), global_base(B)
            nk = (K + bk - 1) // bk
            # copy_plan: this thread's first A chunk (row ar0, chunk ac) and B chunk (row br0, chunk bc), their
            # bytes in a stage (swizzled) and in slab 0 of global memory; B's count is the same every slab
            ar0, ac, br0, bc = t // 8, t % 8, t // b_chunks, t % b_chunks
            a_dst = int32(ar0 * 128 + (ac ^ (ar0 % 8)) * 16)
            b_dst = int32(a_bytes + (bc // 8) * 8192 + br0 * 128 + ((bc % 8) ^ (br0 % 8)) * 16)
            a_src = ga + int64((m0 + ar0) * K + epc * ac) * esize
            if tf32:  # BT (N x K): rows n0 + br0 .., chunk bc of K, placed as A's are
                b_dst = int32(a_bytes + br0 * 128 + (bc ^ (br0 % 8)) * 16)
                b_src = gb + int64((n0 + br0) * K + 4 * bc) * 4
            else:
                b_src = gb + (int64(br0) * N + n0 + 8 * bc) * 2
            b_cnt = int32(min(max(N - n0 - 8 * bc, 0), 8) * 2)
            for s in range(ahead):
                if s < nk:
                    slab(smem, base, e0, ga, gb, A, B, a_src, a_dst, b_src, b_dst, b_cnt, ar0, ac, br0, s, t, m0, n0, M, N, K)
                cp_async_commit()  # always: the wait below counts groups
            for kt in range(nk):
                cp_async_wait(ahead - 1)  # slab kt has landed (this thread's copies)
                fence_proxy_async()
                cuda.syncthreads()  # everyone's copies of kt visible; the wgmmas of kt - 2 done (wait 1 below)
                if not mma_first and kt + ahead < nk:  # into the stage slab kt - 2 read
                    slab(smem, base, e0, ga, gb, A, B, a_src, a_dst, b_src, b_dst, b_cnt, ar0, ac, br0, kt + ahead, t,
                         m0, n0, M, N, K)
                if not mma_first:
                    cp_async_commit()  # (an empty group past the last slab keeps the count)
                sb = base + (kt % stages) * stage_bytes
                da = make_desc(sb + wg * (64 * 128), 16, 1024, SWIZZLE_128B)
                db = make_desc(sb + a_bytes, 16 if tf32 else b_lbo, 1024 if tf32 else b_sbo, SWIZZLE_128B)
                issue(da, da + a_kstep, da + 2 * a_kstep, da + 3 * a_kstep,
                      db, db + b_kstep, db + 2 * b_kstep, db + 3 * b_kstep, int32(1))
                wgmma_commit()
                if mma_first and kt + ahead < nk:  # the tensor cores start first, the copies go out behind them
                    slab(smem, base, e0, ga, gb, A, B, a_src, a_dst, b_src, b_dst, b_cnt, ar0, ac, br0, kt + ahead, t,
                         m0, n0, M, N, K)
                if mma_first:
                    cp_async_commit()
                wgmma_wait1()
            wgmma_wait0()
            NC = C.shape[1]  # N, or fewer where B was zero-padded to a multiple of 8 columns (prepare)
            if pairs:
                cb = global_address(C)  # C is C-contiguous (launcher checks): rows 4 NC bytes apart
                store_pairs(C, m0 + 64 * wg + 16 * (tw // 32) + (tw % 32) // 4, n0 + 2 * (tw % 4), M, NC, cb,
                            int64(4 * NC) if NC % 2 == 0 and cb % 8 == 0 else int64(0))
            else:
                store(C, m0 + 64 * wg + 16 * (tw // 32) + (tw % 32) // 4, n0 + 2 * (tw % 4), M, NC)

        return gemm


# The builds scripts/wgmma_bench.py checks and times (make_wgmma_kernel's keywords), and the rung's.
BUILDS: dict = {  # in the bench's order: the rung's first, then the likeliest to beat it
    "s4": dict(stages=4),  # 128 x 128 blocks (m64n128k16), 4 stages of 32 KB (129 KB), 230 registers: one block an SM
    "m256s4stmf": dict(stages=4, strided=True, mma_first=True, wgs=4),  # 256 x 128 blocks, 4 warpgroups, 193 KB, 109
    "s4stmf": dict(stages=4, strided=True, mma_first=True),  # copy addresses stepped, wgmmas before copies: 113
    "s4stmfg8": dict(stages=4, strided=True, mma_first=True, group=8),  # and groups of 8 block rows (L2): 128
    "s3st2": dict(stages=3, strided=True, min_blocks=2),  # 3 stages (97 KB), 119 registers: two blocks an SM
    "m256s4stmfp": dict(stages=4, strided=True, mma_first=True, wgs=4, pairs=True),  # and 8-byte stores of C
    "n256s4stmf": dict(stages=4, bn=256, strided=True, mma_first=True),  # 128 x 256 (m64n256k16), 4 x 48 KB: 196
    "s4st": dict(stages=4, strided=True),  # copy addresses computed once and stepped: 127
    "n256s4": dict(stages=4, bn=256),  # 128 x 256, 128 accumulators: 210
}
BUILD: dict = BUILDS["m256s4stmfp"]  # 563.6 TFLOP/s at 4096^3 on an H200 (0.72x torch bf16), the fastest cp.async
# build measured; the rung runs kernels/gemm/wgmma_tma.py's BUILD now (TMA, mbarriers, a producer warpgroup)


def launcher(m: int, n: int, k: int, stages: int = STAGES, bn: int = BN, grid=None, wgs: int = 2, **build):
    """f(A, B, C): make_wgmma_kernel(stages, aligned=(k % 8 == 0 and n % 8 == 0), bn=bn, **build) launched
    for an m x n x k product (on ``grid``, default one BM x bn tile of C a block) with its dynamic shared
    memory (opted in past 48 KB after the first, compiling call is refused)."""
    if UNAVAILABLE:
        raise RuntimeError(f"wgmma_bf16 {UNAVAILABLE}")
    from kernels.gemm.mma import with_shared  # lazy: backend chosen first (numba)

    kernel = make_wgmma_kernel(stages, k % 8 == 0 and n % 8 == 0, bn=bn, wgs=wgs, **build)
    nbytes = shared_bytes(stages, bn, wgs)
    if nbytes > DYNAMIC_SHARED_MAX:
        raise ValueError(f"{nbytes} bytes of shared memory: over {DYNAMIC_SHARED_MAX}")
    grid = grid or ((n + bn - 1) // bn, (m + 64 * wgs - 1) // (64 * wgs))
    launch = with_shared(kernel, grid, (WARPGROUP * wgs,), nbytes)
    if not build.get("pairs"):
        return launch

    def call(A, B, C):
        flags = getattr(C, "flags", None)
        if flags is not None and not flags["C_CONTIGUOUS"]:
            raise ValueError("a pairs build stores C's rows 4 N bytes apart: C must be C-contiguous")
        return launch(A, B, C)

    return call


# --- The matmul rung tensor_core_wgmma: float32 inputs rounded to bf16 once, float32 sums and output ----
NAME = "tensor_core_wgmma"


def build_name(build: dict = BUILD) -> str:
    """A build's short name, as scripts/wgmma_bench.py lists them: s4, n256s4, ..."""
    bn = build.get("bn", BN)
    return (("" if build.get("wgs", 2) == 2 else f"m{64 * build['wgs']}") + ("" if bn == BN else f"n{bn}") + f"s{build.get('stages', STAGES)}" + ("st" if build.get("strided") else "")
            + ("mf" if build.get("mma_first") else "") + ("p" if build.get("pairs") else "") + (f"g{build['group']}" if build.get("group", 1) > 1 else "")
            + (str(build["min_blocks"]) if build.get("min_blocks", 1) > 1 else ""))


def block_shape(build: dict = BUILD) -> tuple[int, int, int]:
    """(rows, columns, threads) of a build's block: 64 rows and 128 threads a (consumer) warpgroup, bn columns,
    and 128 threads more for a warp-specialized TMA build's producer warpgroup."""
    wgs = build.get("wgs", 2)
    return 64 * wgs, build.get("bn", BN), WARPGROUP * (wgs + (1 if build.get("ws") else 0))


def pipeline_words(build: dict = BUILD) -> str:
    """How a build feeds the tensor cores, in words for a rung's note."""
    stages = build.get("stages", STAGES)
    if build.get("tma"):
        return f"{stages}-stage TMA pipeline on mbarriers" + (", a producer warpgroup" if build.get("ws") else "")
    return f"{stages}-stage cp.async pipeline"


def launch(size, threads, build: dict = BUILD, name: str | None = None):
    """Block fixed at the build's warpgroups (:func:`block_shape`: 256 threads, a 128 x 128 tile of C by
    default), one tile a block. ``build`` and its ``name`` (default :data:`BUILD`, :func:`build_name`): the
    TMA rung (kernels/gemm/wgmma_tma.py) passes its own."""
    m, n, _ = size
    bm, bn, block = block_shape(build)
    notes = []
    if threads != block:
        notes.append(f"block fixed at {block} threads ({block // WARPGROUP} warpgroups); --threads {threads} ignored")
    notes.append(f"build {name or build_name(build)}: Hopper wgmma m64n{bn}k16 from 128-byte-swizzled shared memory, "
                 f"{bm}x{bn} block tiles, {pipeline_words(build)}; bf16 inputs, float32 sums")
    grid = (blocks_for(n, bn), blocks_for(m, bm))
    return Launch(grid=grid, block=(block,), threads_needed=min(grid[0] * grid[1] * block, blocks_for(m * n, 64)),
                  note="; ".join(notes))


def prepare(cfg, inputs, outputs, build: dict = BUILD, make=None, pad: int = 8):
    """A and B (float32) rounded to bfloat16 once, here (uint16 bits on the device), K and N zero-padded to
    multiples of ``pad`` in that pass (zeros add nothing): 8 as the bf16 rung pads them (rows of 16 bytes:
    every copy a 16-byte cp.async), 64 for the TMA rung (rows of whole 128-byte lines); then one launch a call
    of ``make(m, n, k, grid=..., **build)`` (default :func:`launcher`; the TMA rung passes its own); C keeps
    its N columns. float32 only (ValueError otherwise)."""
    from kernels.gemm.tensor_core_bf16 import device_bf16  # lazy: backend chosen first (numba)

    A, B = inputs
    if np.dtype(A.dtype) != np.float32:
        raise ValueError(f"{NAME} takes float32 inputs (rounded to bfloat16)")
    (C,) = outputs
    m, k = A.shape
    n = B.shape[1]

    def up(x):
        return -(-x // pad) * pad

    A16, B16 = device_bf16(A, m, up(k)), device_bf16(B, up(k), up(n))
    f = (make or launcher)(m, up(n), up(k), grid=tuple(cfg.grid), **build)
    return lambda: f(A16, B16, C)


def unavailable(dtype, name: str = NAME, lesson: str = "tensor_core_bf16", rounded: str = "bfloat16") -> str:
    """Why the rung ``name`` does not run here ("" when it does): the simulator and numba-cuda (no wgmma; the
    rung ``lesson`` is the emulated one), a GPU other than compute capability 9.0 (sm_90a code loads only
    there), a dtype other than float32 (the inputs are rounded to ``rounded``)."""
    if SIMULATOR:
        return f"{name}: wgmma has no emulation in the simulator; the {lesson} rung is the emulated lesson"
    if UNAVAILABLE:
        return f"{name} {UNAVAILABLE}"
    cc = current().cc
    if cc is not None and tuple(cc) != (9, 0):
        return (f"{name} needs a compute-capability 9.0 GPU (Hopper: sm_90a code loads only there); "
                f"this one is {cc[0]}.{cc[1]}")
    if np.dtype(dtype) != np.float32:
        return f"{name} takes float32 inputs, rounded to {rounded} (--dtype {np.dtype(dtype).name})"
    return ""
