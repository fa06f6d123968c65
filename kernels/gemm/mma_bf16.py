"""bfloat16 tensor cores from a Python kernel: ``mma.sync`` m16n8k16, ``ldmatrix`` and 16-byte copies of bf16.

Three instructions beside kernels.gemm.mma's TF32 ones:

* ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`` -- one warp multiplies a 16 x 16 tile of A
  by a 16 x 8 tile of B into a 16 x 8 float32 tile (2,048 FMAs, twice the k of the TF32 m16n8k8).
  A and B are bfloat16 (float32's 8-bit exponent, 7 explicit mantissa bits), two to a 32-bit
  register (``.bf16x2``: the lower-indexed element in the low 16 bits); C and D are float32.
  Lane l (g = l // 4, q = l % 4) holds (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating
  point type", .bf16):

      A 16 x 16 (m x k)   a0 = A[g][2q, 2q+1]    a1 = A[g+8][2q, 2q+1]
                          a2 = A[g][2q+8, 2q+9]  a3 = A[g+8][2q+8, 2q+9]
      B 16 x 8  (k x n)   b0 = B[2q, 2q+1][g]    b1 = B[2q+8, 2q+9][g]
      C 16 x 8  (m x n)   c0 = C[g][2q]  c1 = C[g][2q+1]  c2 = C[g+8][2q]  c3 = C[g+8][2q+1]  (as m16n8k8)

  (:func:`a_index`, :func:`b_index`; :func:`fragment_picture` prints the tiles.)
* ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` -- the warp loads four 8 x 8 matrices of 16-bit
  elements from shared memory straight into that layout: lanes 8j .. 8j + 7 each give the address of
  one 16-byte row of matrix j, and lane l receives, in register j, row l // 4's elements 2q and
  2q + 1 of matrix j. ``.trans`` delivers the transposed matrix: register j holds column l // 4's
  elements at rows 2q and 2q + 1 -- B's fragment read from a row-major (k x n) tile. One
  instruction replaces the 8 scalar shared loads and the packing a lane would do itself (PTX ISA,
  "Warp-level matrix load instruction: ldmatrix"). :func:`ldmatrix_x4`, :func:`ldmatrix_x4_trans` take
  ``shared_base(array)`` (the array's 32-bit shared address, computed once a kernel) and an element index.
* ``cp.async.cg.shared.global`` of 16 bytes = 8 bfloat16 (:func:`cp_async16_b16` by array, row and column;
  :func:`cp_async16_at` by the bases :func:`shared_base`, :func:`global_base` and element offsets), with
  kernels.gemm.mma's commit and wait.

bfloat16 in NumPy: NumPy has no bfloat16 dtype, so a bf16 matrix is a uint16 array of bit patterns
(the top half of the float32's bits): :func:`to_bf16_bits` rounds float32 to nearest even as
``cvt.rn.bf16.f32`` does, :func:`bf16_bits_to_float32` widens exactly. The kernels read and copy the
bits (2 bytes an element: half float32's global and shared traffic) and never convert: the tensor
cores take them as they are.

In the simulator (and lab.core.simt) the three are an emulation with the same contracts, as
kernels.gemm.mma's are: ``ldmatrix_*`` and ``mma_bf16`` are warp collectives (every lane must call
them, as ``.sync.aligned`` demands; lab.core.simt names a lane that did not); in ``ldmatrix`` each lane
reads the 8 elements of its own row address and the rows are dealt out as the hardware does, so a
wrong address gives a wrong fragment; ``mma_bf16`` assembles A, B and C from the lanes' registers by
the fragment layout above and hands each lane its elements of D. A copy's destination holds a bf16
NaN until its wait. Under numba-cuda on a GPU (no inline PTX) they compile as plain CUDA: ``ldmatrix``
by shuffling the row addresses, the mma by shuffles (kernels.gemm.mma.UNAVAILABLE keeps the matmul
rung off there).

Sources: PTX ISA 8.x, "Warp-level matrix multiply-accumulate instructions" (mma.sync, "Matrix
fragments for mma.m16n8k16 with floating point type") and "Warp-level matrix load instruction:
ldmatrix" (m8n8 .x4 .trans .b16: which thread gives which row address, which thread receives which
elements); "cvt" (.rn.bf16.f32); NVIDIA CUTLASS, include/cute/arch/mma_sm80.hpp
(SM80_16x8x16_F32BF16BF16F32_TN) and copy_sm75.hpp (SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T).
"""
from __future__ import annotations

import threading

import numpy as np

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda, int32, uint16
from kernels.gemm.build_options import ALIGN
from kernels.gemm import mma as _mma

BF16_MANTISSA = 7  # explicit mantissa bits of bfloat16 (TF32 10, float32 23)
MMA_M, MMA_N, MMA_K = 16, 8, 16  # m16n8k16: A is 16 x 16, B is 16 x 8, C and D are 16 x 8


# --- bfloat16 on the host: uint16 bit patterns ------------------------------------------------
def to_bf16_bits(x) -> np.ndarray:
    """float32 array -> uint16 array of its bfloat16 bits, rounded to nearest, ties to even (as
    ``cvt.rn.bf16.f32`` and torch's ``.bfloat16()``); NaN stays NaN, infinities stay infinite."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    return np.where(nan, (bits >> 16) | np.uint32(0x40), rounded).astype(np.uint16)


def bf16_bits_to_float32(u) -> np.ndarray:
    """uint16 bfloat16 bits -> float32 (exact: bfloat16 is float32's top half)."""
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x) -> np.ndarray:
    """float32 rounded to bfloat16 and kept in float32 (the low 16 bits zero)."""
    return bf16_bits_to_float32(to_bf16_bits(x))


# --- The fragment layout (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type") ---
def a_index(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of A (16 x 16, m x k) that element i (0..7) of ``lane`` holds; element i lives in
    register i // 2, its low half for even i: row = lane // 4 (+ 8 for i = 2, 3, 6, 7), col =
    2 * (lane % 4) + (i & 1) (+ 8 for i >= 4)."""
    return lane // 4 + 8 * ((i >> 1) & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)


def b_index(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of B (16 x 8, k x n) that element i (0..3) of ``lane`` holds (register i // 2):
    row = 2 * (lane % 4) + (i & 1) (+ 8 for i >= 2), col = lane // 4."""
    return 2 * (lane % 4) + (i & 1) + 8 * (i >> 1), lane // 4


c_index = _mma.c_index  # C and D: the m16n8k8 layout


def fragment_maps() -> dict[str, np.ndarray]:
    """{"A", "B", "C"}: for each tile an int array of its shape whose element is 10 * lane + element
    (A: 0..7, B: 0..3, C: 0..3; element i of A or B is in register i // 2)."""
    maps = {"A": np.full((16, 16), -1), "B": np.full((16, 8), -1), "C": np.full((16, 8), -1)}
    for lane in range(32):
        for i in range(8):
            maps["A"][a_index(lane, i)] = 10 * lane + i
        for i in range(4):
            maps["B"][b_index(lane, i)] = 10 * lane + i
            maps["C"][c_index(lane, i)] = 10 * lane + i
    return maps


def fragment_picture() -> str:
    """The three tiles of one m16n8k16 bf16 mma, each cell ``T<lane>.<element>``."""
    lines = []
    for name, title in (("A", "A (16 x 16, m x k): elements a0..a7 (register i // 2)"),
                        ("B", "B (16 x 8, k x n): elements b0..b3 (register i // 2)"),
                        ("C", "C, D (16 x 8, m x n): c0..c3")):
        grid = fragment_maps()[name]
        lines.append(title)
        lines.append(("      " + "".join(f"{'k' if name == 'A' else 'n'}={j:<4d}" for j in range(grid.shape[1]))).rstrip())
        for r in range(grid.shape[0]):
            cells = "".join(f"T{v // 10}.{v % 10}".ljust(6) for v in grid[r])
            lines.append(f"{'k' if name == 'B' else 'm'}={r:<3d} {cells}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def ldmatrix_source(lane: int, j: int, trans: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where ``ldmatrix.x4`` (``.trans``) puts the two halves of register ``j`` of ``lane``: ((lane
    whose row address is read, element of that row) for the low half, the same for the high half).
    Lanes 8j .. 8j + 7 give matrix j's rows 0..7; without .trans lane l gets row l // 4, elements
    2q, 2q + 1; with .trans column l // 4 at rows 2q, 2q + 1 (q = l % 4)."""
    g, q = lane // 4, lane % 4
    if trans:
        return (8 * j + 2 * q, g), (8 * j + 2 * q + 1, g)
    return (8 * j + g, 2 * q), (8 * j + g, 2 * q + 1)


# --- The emulation (Numba's CUDA simulator, lab.core.simt) ------------------------------------
def _pack(lo, hi) -> np.int32:
    """Two 16-bit patterns in one 32-bit register, lo in the low half (as .bf16x2)."""
    v = (int(lo) & 0xFFFF) | ((int(hi) & 0xFFFF) << 16)
    return np.int32(v - (1 << 32) if v >= 1 << 31 else v)


def _halves(reg) -> tuple[int, int]:
    v = int(reg) & 0xFFFFFFFF
    return v & 0xFFFF, v >> 16


_SHARED_LOCK = threading.Lock()
_SHARED: dict = {}  # id(the warp's {lane: value}) -> [that dict, result, lanes still to read it]


def _once_per_warp(got, compute):
    """compute(got), computed by the first lane of the warp to ask and handed to the others."""
    with _SHARED_LOCK:
        entry = _SHARED.get(id(got))
        if entry is None or entry[0] is not got:
            entry = _SHARED[id(got)] = [got, compute(got), len(got)]
        entry[2] -= 1
        if entry[2] <= 0:
            del _SHARED[id(got)]
    return entry[1]


def _ldmatrix_emulated(array, index, trans):
    lane = _mma._me().thread_id % 32
    index = int(index)
    if index % 8:
        raise IndexError(f"ldmatrix rows are 16 bytes, 16-byte aligned: element {index} of a 16-bit shared array")
    row = tuple(array[index + e] for e in range(8))  # this lane's row address, read by this lane
    got = _mma._warp_gather(row)
    regs = []
    for j in range(4):
        (l0, e0), (l1, e1) = ldmatrix_source(lane, j, trans)
        lo = got[l0][e0] if l0 in got else _mma.BF16_NAN  # a lane that did not take part: undefined
        hi = got[l1][e1] if l1 in got else _mma.BF16_NAN
        regs.append(_pack(lo, hi))
    return tuple(regs)


def _ldmatrix_x4_emulated(array, index):
    return _ldmatrix_emulated(array, index, False)


def _ldmatrix_x4_trans_emulated(array, index):
    return _ldmatrix_emulated(array, index, True)


def _bf16(bits) -> np.float64:
    return float(bf16_bits_to_float32(np.uint16(bits)))


def tile_product(got) -> np.ndarray:
    """D = A @ B + C of one warp's m16n8k16 mma from its lanes' registers ``got`` ({lane: (a0..a3,
    b0, b1, c0..c3)}, a and b packed bf16 pairs): the tiles are assembled by :func:`a_index`,
    :func:`b_index`, :func:`c_index`, a missing lane's elements NaN; products summed in float64,
    rounded once to float32."""
    A = np.full((MMA_M, MMA_K), np.nan)
    B = np.full((MMA_K, MMA_N), np.nan)
    C = np.full((MMA_M, MMA_N), np.nan)
    for src, regs in got.items():
        for r in range(4):
            for h, bits in enumerate(_halves(regs[r])):
                A[a_index(src, 2 * r + h)] = _bf16(bits)
            C[c_index(src, r)] = regs[6 + r]
        for r in range(2):
            for h, bits in enumerate(_halves(regs[4 + r])):
                B[b_index(src, 2 * r + h)] = _bf16(bits)
    return (A @ B + C).astype(np.float32)


def _mma_bf16_emulated(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    lane = _mma._me().thread_id % 32
    got = _mma._warp_gather((a0, a1, a2, a3, b0, b1, c0, c1, c2, c3))
    D = _once_per_warp(got, tile_product)
    return tuple(D[c_index(lane, i)] for i in range(4))


def _cp_async16_b16_emulated(dst, di, src, row, col, count):
    _mma._cp_async_emulated(dst, di, src, row, col, 8, count)


def _cp_async16_at_emulated(dst, di, src, goff, count):
    row, col = divmod(int(goff), src.shape[1]) if count > 0 else (0, 0)
    _mma._cp_async_emulated(dst, di, src, row, col, 8, count)


# --- The GPU (numba-cuda-mlir's inline PTX) ---------------------------------------------------
MMA_BF16_PTX = ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};")
LDMATRIX_X4_PTX = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
LDMATRIX_X4_TRANS_PTX = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"

if COMPILER == MLIR:
    import numba_cuda_mlir.cuda.experimental as _X

    @cuda.jit(device=True, forceinline=True)
    def shared_base(array):
        """What ldmatrix_x4 takes for the shared uint16 ``array``: its 32-bit shared-window address here
        (computed once a kernel, not once a load), the array itself in the emulations."""
        return _mma.shared_address(array)

    @cuda.jit(device=True, forceinline=True)
    def ldmatrix_x4(base, index):
        """(r0, r1, r2, r3): four 8 x 8 matrices of 16-bit elements from the shared uint16 array whose
        :func:`shared_base` is ``base``; this lane gives the address of element ``index`` (a multiple of
        8: rows are 16 bytes, 16-byte aligned) as row lane % 8 of matrix lane // 8; register j gets
        matrix j's row lane // 4, elements 2 (lane % 4) and + 1 (:func:`ldmatrix_source`)."""
        a = base + index * 2
        return _X.inline_ptx(LDMATRIX_X4_PTX, "=r", np.int32, "=r", np.int32, "=r", np.int32, "=r", np.int32,
                             "r", int32(a))

    @cuda.jit(device=True, forceinline=True)
    def ldmatrix_x4_trans(base, index):
        """:func:`ldmatrix_x4` of the transposed matrices: register j gets matrix j's column lane // 4,
        rows 2 (lane % 4) and + 1."""
        a = base + index * 2
        return _X.inline_ptx(LDMATRIX_X4_TRANS_PTX, "=r", np.int32, "=r", np.int32, "=r", np.int32, "=r", np.int32,
                             "r", int32(a))

    @cuda.jit(device=True, forceinline=True)
    def mma_bf16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """(d0, d1, d2, d3) = this lane's fragment of D = A @ B + C, one m16n8k16 bf16 mma.sync
        (a, b: bf16x2 registers, e.g. from ldmatrix; c, d: float32)."""
        return _X.inline_ptx(MMA_BF16_PTX, "=f", np.float32, "=f", np.float32, "=f", np.float32, "=f", np.float32,
                             "r", a0, "r", a1, "r", a2, "r", a3, "r", b0, "r", b1,
                             "f", c0, "f", c1, "f", c2, "f", c3)

    @cuda.jit(device=True, forceinline=True)
    def global_base(array):
        """What cp_async16_at takes for the device uint16 matrix ``array``: its global address here
        (computed once a kernel), the array itself in the emulations."""
        return _mma.global_address(array)

    @cuda.jit(device=True, forceinline=True)
    def cp_async16_at(sbase, di, gbase, goff, count):
        """Copy elements goff .. goff + count - 1 (count 0..8; row-major offsets) of the matrix whose
        :func:`global_base` is ``gbase`` to elements di .. di + 7 of the shared uint16 array whose
        :func:`shared_base` is ``sbase``, zeros past count: 16 bytes, both 16-byte aligned; nothing is
        read when count is 0. The addresses are two adds, no array bookkeeping."""
        s = gbase
        if count > 0:
            s += goff * 2
        _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(sbase + di * 2), "l", s,
                      "r", int32(count * 2))

    @cuda.jit(device=True, forceinline=True)
    def cp_async16_b16(dst, di, src, row, col, count):
        """Copy src[row, col : col + count] (count 0..8 bfloat16 bit patterns, uint16) to dst[di : di + 8]
        asynchronously, zeros past count: 16 bytes, both addresses 16-byte aligned."""
        d = _mma.shared_address(dst) + di * 2
        s = _mma.global_address(src)
        if count > 0:
            s += (row * src.shape[1] + col) * 2
        _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(d), "l", s,
                      "r", int32(count * 2))
elif SIMULATOR:
    def shared_base(array):
        """The array itself: the emulation reads it by index."""
        return array

    ldmatrix_x4 = _ldmatrix_x4_emulated
    ldmatrix_x4_trans = _ldmatrix_x4_trans_emulated
    mma_bf16 = _mma_bf16_emulated
    cp_async16_b16 = _cp_async16_b16_emulated
    global_base = shared_base
    cp_async16_at = _cp_async16_at_emulated
else:
    # numba-cuda on a GPU: no inline PTX; plain CUDA with the same contracts (compiles; the rung is
    # skipped here, kernels.gemm.mma.UNAVAILABLE)
    from kernels.compiler import float32 as _f32, libdevice as _libdevice, uint16 as _u16

    @cuda.jit(device=True)
    def shared_base(array):
        """The array itself: this emulation reads it by index."""
        return array

    @cuda.jit(device=True)
    def _ld_pair(array, i0, i1):
        return int32(int32(array[i0]) | (int32(array[i1]) << 16))

    @cuda.jit(device=True)
    def ldmatrix_x4(array, index):
        """ldmatrix.x4 by shuffling the row addresses: register j from row lane // 4 of matrix j."""
        lane = cuda.laneid
        g = lane // 4
        q = lane % 4
        r0 = cuda.shfl_sync(0xFFFFFFFF, index, g)
        r1 = cuda.shfl_sync(0xFFFFFFFF, index, 8 + g)
        r2 = cuda.shfl_sync(0xFFFFFFFF, index, 16 + g)
        r3 = cuda.shfl_sync(0xFFFFFFFF, index, 24 + g)
        return (_ld_pair(array, r0 + 2 * q, r0 + 2 * q + 1), _ld_pair(array, r1 + 2 * q, r1 + 2 * q + 1),
                _ld_pair(array, r2 + 2 * q, r2 + 2 * q + 1), _ld_pair(array, r3 + 2 * q, r3 + 2 * q + 1))

    @cuda.jit(device=True)
    def _trans_reg(array, index, j, g, q):
        lo = cuda.shfl_sync(0xFFFFFFFF, index, 8 * j + 2 * q)
        hi = cuda.shfl_sync(0xFFFFFFFF, index, 8 * j + 2 * q + 1)
        return _ld_pair(array, lo + g, hi + g)

    @cuda.jit(device=True)
    def ldmatrix_x4_trans(array, index):
        """ldmatrix.x4.trans by shuffling the row addresses: register j from column lane // 4."""
        lane = cuda.laneid
        g = lane // 4
        q = lane % 4
        return (_trans_reg(array, index, 0, g, q), _trans_reg(array, index, 1, g, q),
                _trans_reg(array, index, 2, g, q), _trans_reg(array, index, 3, g, q))

    @cuda.jit(device=True)
    def _lo(r):
        return _libdevice.int_as_float(int32(r << 16))

    @cuda.jit(device=True)
    def _hi(r):
        return _libdevice.int_as_float(int32(r & int32(-65536)))

    @cuda.jit(device=True)
    def mma_bf16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """The m16n8k16 mma from the fragments by shuffles, for each pair of k (2p, 2p + 1) of each
        half h: lane 4g + p holds A[g][.], A[g+8][.] in a(2h), a(2h+1); lane 4n + p holds B[.][n] in b(h)."""
        lane = cuda.laneid
        g = lane // 4
        q = lane % 4
        d0, d1, d2, d3 = c0, c1, c2, c3
        for h in range(2):
            lo_a = a0 if h == 0 else a2
            hi_a = a1 if h == 0 else a3
            br = b0 if h == 0 else b1
            for p in range(4):
                x = cuda.shfl_sync(0xFFFFFFFF, lo_a, 4 * g + p)
                y = cuda.shfl_sync(0xFFFFFFFF, hi_a, 4 * g + p)
                u = cuda.shfl_sync(0xFFFFFFFF, br, 8 * q + p)
                w = cuda.shfl_sync(0xFFFFFFFF, br, 8 * q + 4 + p)
                d0 += _lo(x) * _lo(u) + _hi(x) * _hi(u)
                d1 += _lo(x) * _lo(w) + _hi(x) * _hi(w)
                d2 += _lo(y) * _lo(u) + _hi(y) * _hi(u)
                d3 += _lo(y) * _lo(w) + _hi(y) * _hi(w)
        return _f32(d0), _f32(d1), _f32(d2), _f32(d3)

    @cuda.jit(device=True)
    def cp_async16_b16(dst, di, src, row, col, count):
        """A synchronous copy of src[row, col : col + count] to dst[di : di + 8], zeros past count."""
        for e in range(8):
            dst[di + e] = src[row, col + e] if e < count else _u16(0)

    @cuda.jit(device=True)
    def global_base(array):
        """The array itself: this emulation reads it by index."""
        return array

    @cuda.jit(device=True)
    def cp_async16_at(dst, di, src, goff, count):
        """A synchronous copy of the count elements from row-major offset goff of src to dst[di : di + 8]."""
        row = goff // src.shape[1]
        col = goff - row * src.shape[1]
        for e in range(8):
            dst[di + e] = src[row, col + e] if e < count else _u16(0)


# --- A one-warp probe of ldmatrix (the tests run it in the simulator, scripts/bf16_bench.py on a GPU) ---
@cuda.jit
def ldmatrix_probe(X, R, RT):
    """One warp: the 16 x 16 uint16 tile X (256 elements, row-major) into shared memory, then this lane's
    four registers of ``ldmatrix_x4`` (R[lane, j]) and of ``ldmatrix_x4_trans`` (RT[lane, j]) from it, lane l
    pointing at row l % 16, column (l // 16) * 8."""
    s = cuda.shared.array(256, uint16, alignment=ALIGN)  # ldmatrix rows: 16-byte aligned
    lane = cuda.threadIdx.x
    for e in range(8):
        s[lane * 8 + e] = X[lane * 8 + e]
    cuda.syncthreads()
    r0, r1, r2, r3 = ldmatrix_x4(shared_base(s), (lane % 16) * 16 + (lane // 16) * 8)
    R[lane, 0] = r0
    R[lane, 1] = r1
    R[lane, 2] = r2
    R[lane, 3] = r3
    t0, t1, t2, t3 = ldmatrix_x4_trans(shared_base(s), (lane % 16) * 16 + (lane // 16) * 8)
    RT[lane, 0] = t0
    RT[lane, 1] = t1
    RT[lane, 2] = t2
    RT[lane, 3] = t3


def ldmatrix_probe_wrong() -> tuple[int, int]:
    """Run :func:`ldmatrix_probe` on the tile whose element (r, c) holds 16 r + c and count the registers (of
    128 each) that differ from the mma fragments (:func:`a_index`; :func:`b_index` of both 8-column halves
    for .trans): (plain, trans), (0, 0) when ldmatrix hands every lane its fragment."""
    X = np.arange(256, dtype=np.uint16)
    dR, dRT = cuda.to_device(np.zeros((32, 4), np.int32)), cuda.to_device(np.zeros((32, 4), np.int32))
    ldmatrix_probe[1, 32](cuda.to_device(X), dR, dRT)
    R, RT = dR.copy_to_host(), dRT.copy_to_host()
    halves = lambda reg: [int(reg) & 0xFFFF, (int(reg) >> 16) & 0xFFFF]  # noqa: E731
    bad = bad_t = 0
    for lane in range(32):
        for j in range(4):
            bad += halves(R[lane, j]) != [16 * r + c for r, c in (a_index(lane, 2 * j), a_index(lane, 2 * j + 1))]
            k, n = b_index(lane, 2 * (j % 2))
            n += 8 * (j // 2)
            bad_t += halves(RT[lane, j]) != [16 * k + n, 16 * (k + 1) + n]
    return bad, bad_t
