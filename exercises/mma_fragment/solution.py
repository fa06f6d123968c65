"""mma_fragment: C = A @ B, one warp a 16 x 8 tile of C, on the tensor cores (mma.sync m16n8k8, TF32)."""
from numba import cuda, float32

from kernels.gemm.mma import mma_tf32, to_tf32


@cuda.jit
def mma_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N] (M % 16 == 0, N % 8 == 0,
    K % 8 == 0). Block (bx, by) of 32 threads (one warp) computes C[16*by : 16*by+16, 8*bx : 8*bx+8]:
    lane l loads its fragment of each 16 x 8 tile of A and 8 x 8 tile of B, calls mma_tf32, and
    stores its four elements of C."""
    lane = cuda.threadIdx.x
    g = lane // 4  # the lane's row group (A, C) and column (B)
    q = lane % 4  # its column pair (A: k, C: n) and row (B: k)
    r0 = 16 * cuda.blockIdx.y
    c0 = 8 * cuda.blockIdx.x
    d0 = d1 = d2 = d3 = float32(0.0)
    for k0 in range(0, A.shape[1], 8):
        a0 = A[r0 + g, k0 + q]
        a1 = A[r0 + g + 8, k0 + q]
        a2 = A[r0 + g, k0 + q + 4]
        a3 = A[r0 + g + 8, k0 + q + 4]
        b0 = B[k0 + q, c0 + g]
        b1 = B[k0 + q + 4, c0 + g]
        d0, d1, d2, d3 = mma_tf32(to_tf32(a0), to_tf32(a1), to_tf32(a2), to_tf32(a3), to_tf32(b0), to_tf32(b1),
                                  d0, d1, d2, d3)
    C[r0 + g, c0 + 2 * q] = d0
    C[r0 + g, c0 + 2 * q + 1] = d1
    C[r0 + g + 8, c0 + 2 * q] = d2
    C[r0 + g + 8, c0 + 2 * q + 1] = d3
