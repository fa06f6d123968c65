"""kernels/gemm/mma.py's functions in plain CUDA for numba-cuda, which has no inline PTX on a GPU.

The mma through 32 warp shuffles (each lane's result is its four elements of D = A @ B + C, from the
fragments its neighbours hold), the copies synchronous (complete at once: a missing wait goes
unnoticed here, the simulator's emulation catches it), the inputs not rounded to TF32 (products in
float32). What kernels/gemm/mma.py exports under numba-cuda on a GPU, and what a student's kernel
calls in a process whose lab kernels are numba-cuda-mlir's (``mma.for_numba_cuda``): the student's
``from numba import cuda`` is numba-cuda, which cannot call numba-cuda-mlir's device functions.

This module imports ``numba.cuda`` itself (not ``kernels.compiler``): it is numba-cuda's whichever
compiler the process chose; mma.py imports it only where numba-cuda compiles.
"""
from numba import cuda
from numba import float32 as _f32


@cuda.jit(device=True)
def to_tf32(x):
    """x unchanged (this emulation multiplies in float32)."""
    return x


tf32_bits = to_tf32


@cuda.jit(device=True)
def mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """The m16n8k8 mma from the fragments by shuffles: for each k, lane g * 4 + k holds
    A[g][k], A[g+8][k], A[g][k+4], A[g+8][k+4]; lane n * 4 + k holds B[k][n], B[k+4][n]."""
    lane = cuda.laneid
    g = lane // 4
    q = lane % 4
    d0, d1, d2, d3 = c0, c1, c2, c3
    for kk in range(4):
        src = g * 4 + kk
        x0 = cuda.shfl_sync(0xFFFFFFFF, a0, src)
        x1 = cuda.shfl_sync(0xFFFFFFFF, a1, src)
        x2 = cuda.shfl_sync(0xFFFFFFFF, a2, src)
        x3 = cuda.shfl_sync(0xFFFFFFFF, a3, src)
        y0 = cuda.shfl_sync(0xFFFFFFFF, b0, 8 * q + kk)
        y1 = cuda.shfl_sync(0xFFFFFFFF, b1, 8 * q + kk)
        z0 = cuda.shfl_sync(0xFFFFFFFF, b0, 8 * q + 4 + kk)
        z1 = cuda.shfl_sync(0xFFFFFFFF, b1, 8 * q + 4 + kk)
        d0 += x0 * y0 + x2 * y1
        d1 += x0 * z0 + x2 * z1
        d2 += x1 * y0 + x3 * y1
        d3 += x1 * z0 + x3 * z1
    return d0, d1, d2, d3


@cuda.jit(device=True)
def cp_async16(dst, di, src, row, col, count):
    """A synchronous copy of src[row, col : col + count] to dst[di : di + 4], zeros past count."""
    for e in range(4):
        dst[di + e] = src[row, col + e] if e < count else _f32(0.0)


@cuda.jit(device=True)
def cp_async4(dst, di, src, row, col, count):
    """A synchronous copy of src[row, col] (count 1) or a zero (count 0) to dst[di]."""
    dst[di] = src[row, col] if count > 0 else _f32(0.0)


@cuda.jit(device=True)
def cp_async_commit():
    """Nothing to do: the copies were synchronous."""


@cuda.jit(device=True)
def cp_async_wait(n):
    """Nothing to wait for: the copies were synchronous."""
