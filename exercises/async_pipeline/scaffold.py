"""async_pipeline: C = A @ B with TILE x TILE tiles copied asynchronously into two shared buffers.

Run the visible example: python test_async_pipeline.py. Check: lab exercise check async_pipeline.
"""
from numba import cuda, float32

from kernels.gemm.mma import cp_async4, cp_async_commit, cp_async_wait  # noqa: F401  (emulated in the simulator)

TILE = 8
BUFFERS = 2 * TILE * TILE  # two TILE x TILE buffers (a shared array's size is one constant)


@cuda.jit
def pipeline_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N]. Thread (tx, ty) of block
    (bx, by) computes C[by*TILE + ty, bx*TILE + tx]; tile t + 1 of A and B is copied (cp.async)
    into one shared buffer while the block multiplies tile t from the other."""
    sA = cuda.shared.array(BUFFERS, float32)  # noqa: F841  (two TILE x TILE buffers, row-major)
    sB = cuda.shared.array(BUFFERS, float32)  # noqa: F841
    # TODO: roughly 25 lines
