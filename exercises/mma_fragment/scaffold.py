"""mma_fragment: C = A @ B, one warp a 16 x 8 tile of C, on the tensor cores (mma.sync m16n8k8, TF32).

Run the visible example: python test_mma_fragment.py. Check: lab exercise check mma_fragment.
"""
from numba import cuda, float32  # noqa: F401

from kernels.gemm.mma import mma_tf32, to_tf32  # noqa: F401  (emulated in the simulator)


@cuda.jit
def mma_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N] (M % 16 == 0, N % 8 == 0,
    K % 8 == 0). Block (bx, by) of 32 threads (one warp) computes C[16*by : 16*by+16, 8*bx : 8*bx+8]:
    lane l loads its fragment of each 16 x 8 tile of A and 8 x 8 tile of B, calls mma_tf32, and
    stores its four elements of C."""
    # TODO: roughly 16 lines
