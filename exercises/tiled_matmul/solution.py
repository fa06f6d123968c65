"""tiled_matmul: C = A @ B with TILE x TILE shared-memory tiles."""
from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N]. Thread (tx, ty) of block
    (bx, by) computes C[by*TILE + ty, bx*TILE + tx]; each A and B element is loaded from global
    memory once per tile (TILE-fold reuse from shared memory)."""
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        k_a = t * TILE + tx
        k_b = t * TILE + ty
        sA[ty, tx] = A[row, k_a] if row < M and k_a < K else float32(0.0)
        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)
        cuda.syncthreads()  # the tiles are complete before anyone multiplies
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before the next loads overwrite them
    if row < M and col < N:
        C[row, col] = acc


def launch(M, N):
    """(grid, block): block (TILE, TILE); grid (ceil(N / TILE), ceil(M / TILE))."""
    return ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), (TILE, TILE)
