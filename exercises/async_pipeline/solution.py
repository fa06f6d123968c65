"""async_pipeline: C = A @ B with TILE x TILE tiles copied asynchronously into two shared buffers."""
from numba import cuda, float32

from kernels.gemm.mma import cp_async4, cp_async_commit, cp_async_wait

TILE = 8
BUFFERS = 2 * TILE * TILE  # two TILE x TILE buffers (a shared array's size is one constant)


@cuda.jit
def pipeline_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N]. Thread (tx, ty) of block
    (bx, by) computes C[by*TILE + ty, bx*TILE + tx]; tile t + 1 of A and B is copied (cp.async)
    into one shared buffer while the block multiplies tile t from the other."""
    sA = cuda.shared.array(BUFFERS, float32)  # two TILE x TILE buffers, row-major
    sB = cuda.shared.array(BUFFERS, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    ntiles = (K + TILE - 1) // TILE
    me = ty * TILE + tx  # this thread's element of a tile
    # tile 0 into buffer 0
    cp_async4(sA, me, A, row, tx, 1 if row < M and tx < K else 0)
    cp_async4(sB, me, B, ty, col, 1 if ty < K and col < N else 0)
    cp_async_commit()
    acc = float32(0.0)
    for t in range(ntiles):
        if t + 1 < ntiles:  # tile t + 1 into the other buffer, in flight during the products below
            nxt = (t + 1) % 2 * TILE * TILE + me
            ka = (t + 1) * TILE + tx
            kb = (t + 1) * TILE + ty
            cp_async4(sA, nxt, A, row, ka, 1 if row < M and ka < K else 0)
            cp_async4(sB, nxt, B, kb, col, 1 if kb < K and col < N else 0)
        cp_async_commit()  # one group an iteration (an empty one at the end)
        cp_async_wait(1)  # tile t has landed; tile t + 1's group may still be in flight
        cuda.syncthreads()  # everyone's copies of tile t are visible
        base = (t % 2) * TILE * TILE
        for k in range(TILE):
            acc += sA[base + ty * TILE + k] * sB[base + k * TILE + tx]
        cuda.syncthreads()  # everyone is done with this buffer before tile t + 2 is copied into it
    if row < M and col < N:
        C[row, col] = acc
