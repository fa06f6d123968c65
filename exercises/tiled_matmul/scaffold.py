"""tiled_matmul: C = A @ B with TILE x TILE shared-memory tiles.

Run the visible example: python test_tiled_matmul.py. Check: lab exercise check tiled_matmul.
"""
from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_kernel(A, B, C):
    """C = A @ B; A float32[M, K], B float32[K, N], C float32[M, N].

    Thread (tx, ty) of block (bx, by) computes C[by*TILE + ty, bx*TILE + tx], one TILE x TILE tile
    of A and of B in shared memory at a time.
    """
    sA = cuda.shared.array((TILE, TILE), float32)  # noqa: F841
    sB = cuda.shared.array((TILE, TILE), float32)  # noqa: F841
    # TODO: roughly 18 lines


def launch(M, N):
    """(grid, block): block (TILE, TILE); grid covers all N columns (x) and M rows (y)."""
    return (1, 1), (TILE, TILE)  # TODO: roughly 2 lines
