"""matvec_coalesced: y = A @ x, one warp (block of 32 threads) per row, reduced in shared memory.

Run the visible example: python test_matvec_coalesced.py. Check: lab exercise check matvec_coalesced.
"""
from numba import cuda, float32

WARP = 32


@cuda.jit
def matvec_warp_kernel(A, x, y):
    """y[b] = sum_j A[b, j] * x[j] for block b; A float32[rows, cols], x float32[cols], y float32[rows].

    Launch: rows blocks of 32 threads. Lane t sums columns t, t+32, ...; the 32 partials are
    added in shared memory; lane 0 writes y[b].
    """
    partial = cuda.shared.array(WARP, float32)  # noqa: F841
    # TODO: roughly 12 lines (strided partial sum, cuda.syncthreads(), tree reduction)
