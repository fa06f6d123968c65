"""128-bit shared-memory loads that hand back TF32 operands: ``ld.shared.v4`` and the rounding in one step.

numba-cuda-mlir 0.6 keeps four adjacent 32-bit shared loads as four instructions (docs/tensor-cores.md);
one ``ld.shared.v4.b32`` (an LDS.128) reads 16 aligned bytes into four registers. :func:`ld4_tf32` is
that load followed by the rounding of the four words to TF32, chosen by ``mode`` (a compile-time
constant, an index into :data:`ROUNDINGS`):

* ``"add"`` (0) -- add half a TF32 unit in the last place to the bits (``add.s32 x, x, 0x1000``) and let
  the tensor core drop the low 13 bits: round to nearest, ties away from zero, the same value as
  ``cvt.rna.tf32.f32`` for every finite input in one integer add (NVIDIA CUTLASS, numeric_conversion.h,
  ``NumericConverter<tfloat32_t, float, FloatRoundStyle::round_half_ulp_truncate>``). A NaN whose
  payload sits only in the low 13 bits comes out as an infinity.
* ``"cvt"`` (1) -- ``cvt.rna.tf32.f32``: the PTX conversion (NaNs kept), several instructions on sm_90.
* ``"none"`` (2) -- the bits as they are: the tensor core truncates (toward zero, a biased error).

:func:`ld4_f32` is the same 128-bit load with no rounding, four float32 values (``ld.shared.v4.f32``):
the FP32 SIMT rung async_copy reads its A and B fragments with it.

Each load reads the words at byte ``base + 4 i`` of the array's shared window, ``base`` being
:func:`shared_base` of the array (computed once per kernel: the shared-window address on a GPU, 0 in the
emulation) plus 4 x an element index: a kernel adds its per-thread part to ``base`` once and passes the
rest, a constant of the unrolled loops, as ``i``, so each load is one LDS.128 with an immediate offset.
The word read first must be 16-byte aligned (an element index that is a multiple of 4).

:func:`cp_async16_at` and :func:`cp_async4_at` are kernels.gemm.mma's cp.async copies with both addresses
worked out by the caller: the shared one from :func:`shared_base`, the global one from :func:`global_base`
(each computed once per kernel). mma's ``cp_async16`` recomputes both a copy -- an ``isspacep.shared`` (a
QSPC instruction, which the next one waits for) and a ``cvta`` each time, since the compiler
cannot move inline PTX out of a loop.

In Numba's CUDA simulator the load is four reads of the array and the values stay float32 (the emulated
``mma_tf32`` rounds its inputs itself, kernels.gemm.mma); under numba-cuda on a GPU (no inline PTX) the
same: the matmul rungs are skipped there (kernels.gemm.mma.UNAVAILABLE), a kernel still compiles.

Sources: PTX ISA 8.x, "ld" (.v4 vectors, the .shared state space), "cvt" (.rna.tf32.f32), "mma" (.tf32
operands); NVIDIA CUTLASS, include/cutlass/numeric_conversion.h.
"""
from __future__ import annotations

import numpy as np

from kernels.compiler import COMPILER, MLIR, cuda, int32

ROUNDINGS = ("add", "cvt", "none")  # ld4_tf32's mode: ROUNDINGS.index(name)

LD4_ADD_PTX = ("{ .reg .b32 t0, t1, t2, t3; ld.shared.v4.b32 {t0, t1, t2, t3}, [%4]; add.s32 %0, t0, 4096; "
               "add.s32 %1, t1, 4096; add.s32 %2, t2, 4096; add.s32 %3, t3, 4096; }")
LD4_CVT_PTX = ("{ .reg .f32 t0, t1, t2, t3; ld.shared.v4.f32 {t0, t1, t2, t3}, [%4]; cvt.rna.tf32.f32 %0, t0; "
               "cvt.rna.tf32.f32 %1, t1; cvt.rna.tf32.f32 %2, t2; cvt.rna.tf32.f32 %3, t3; }")
LD4_BITS_PTX = "ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
LD4_F32_PTX = "ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"

if COMPILER == MLIR:
    import numba_cuda_mlir.cuda.experimental as _X

    from kernels.gemm.mma import global_address, shared_address

    @cuda.jit(device=True, forceinline=True)
    def shared_base(array):
        """The 32-bit shared-window address of shared ``array``'s first element."""
        return shared_address(array)

    @cuda.jit(device=True, forceinline=True)
    def global_base(array):
        """The global address of device ``array``'s first element."""
        return global_address(array)

    @cuda.jit(device=True, forceinline=True)
    def cp_async16_at(dst, daddr, src, gaddr, row, col, count):
        """Copy src[row, col : col + count] (count 0..4 float32) to the 16 shared bytes at ``daddr`` (dst's
        shared_base + 4 x an element index) asynchronously, zeros past count. ``gaddr``: the global address
        of src[row, col] (global_base(src) + 4 (row * columns + col)), not read when count is 0."""
        _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(daddr), "l", gaddr,
                      "r", int32(count * 4))

    @cuda.jit(device=True, forceinline=True)
    def cp_async4_at(dst, daddr, src, gaddr, row, col, count):
        """Copy src[row, col] (count 1; ``gaddr`` its global address) or a zero (count 0) to the shared word
        at ``daddr`` asynchronously."""
        _X.inline_ptx("cp.async.ca.shared.global [%0], [%1], 4, %2;", "r", int32(daddr), "l", gaddr,
                      "r", int32(count * 4))

    @cuda.jit(device=True, forceinline=True)
    def ld4_tf32(array, base, i, mode):
        """The 4 words at byte base + 4 i of shared ``array`` in one 128-bit load, rounded to TF32 by
        ROUNDINGS[mode]: four int32 registers of TF32 bits (kernels.gemm.mma.FRAGMENT), as mma_tf32 takes."""
        a = int32(base + i * 4)
        if mode == 0:
            return _X.inline_ptx(LD4_ADD_PTX, "=r", np.int32, "=r", np.int32, "=r", np.int32, "=r", np.int32,
                                 "r", a)
        if mode == 1:
            return _X.inline_ptx(LD4_CVT_PTX, "=r", np.int32, "=r", np.int32, "=r", np.int32, "=r", np.int32,
                                 "r", a)
        return _X.inline_ptx(LD4_BITS_PTX, "=r", np.int32, "=r", np.int32, "=r", np.int32, "=r", np.int32, "r", a)

    @cuda.jit(device=True, forceinline=True)
    def ld4_f32(array, base, i):
        """The 4 float32 words at byte base + 4 i of shared ``array`` in one 128-bit load (an LDS.128)."""
        return _X.inline_ptx(LD4_F32_PTX, "=f", np.float32, "=f", np.float32, "=f", np.float32, "=f", np.float32,
                             "r", int32(base + i * 4))
else:  # the simulator's emulation, and numba-cuda on a GPU: four plain loads, float32 values
    from kernels.gemm.mma import cp_async4, cp_async16

    @cuda.jit(device=True)
    def shared_base(array):
        """0: the emulation indexes the array itself."""
        return 0

    @cuda.jit(device=True)
    def global_base(array):
        """0: the emulation indexes the array itself."""
        return 0

    @cuda.jit(device=True)
    def cp_async16_at(dst, daddr, src, gaddr, row, col, count):
        """kernels.gemm.mma.cp_async16 into dst[daddr // 4 :]."""
        cp_async16(dst, daddr // 4, src, row, col, count)

    @cuda.jit(device=True)
    def cp_async4_at(dst, daddr, src, gaddr, row, col, count):
        """kernels.gemm.mma.cp_async4 into dst[daddr // 4]."""
        cp_async4(dst, daddr // 4, src, row, col, count)

    @cuda.jit(device=True)
    def ld4_tf32(array, base, i, mode):
        """array[j : j + 4], j = base // 4 + i, as four float32 values (the emulated mma rounds them)."""
        j = base // 4 + i
        return array[j], array[j + 1], array[j + 2], array[j + 3]

    @cuda.jit(device=True)
    def ld4_f32(array, base, i):
        """array[j : j + 4], j = base // 4 + i: four float32 reads."""
        j = base // 4 + i
        return array[j], array[j + 1], array[j + 2], array[j + 3]
