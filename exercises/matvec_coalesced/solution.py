"""matvec_coalesced: y = A @ x, one warp (block of 32 threads) per row, reduced in shared memory."""
from numba import cuda, float32

WARP = 32


@cuda.jit
def matvec_warp_kernel(A, x, y):
    """y[b] = sum_j A[b, j] * x[j] for block b; A float32[rows, cols], x float32[cols], y float32[rows].
    Lane t sums columns t, t+32, ... (each step of the warp reads 32 consecutive elements: coalesced);
    the 32 partials are added by a tree in shared memory; lane 0 writes y[b]."""
    partial = cuda.shared.array(WARP, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for j in range(t, A.shape[1], WARP):
        acc += A[row, j] * x[j]
    partial[t] = acc
    cuda.syncthreads()  # every lane's partial is written before anyone reads it
    s = WARP // 2
    while s > 0:
        if t < s:
            partial[t] += partial[t + s]
        cuda.syncthreads()  # this level is done before the next reads it
        s //= 2
    if t == 0:
        y[row] = partial[0]
