"""matvec_row: y = A @ x, one thread per row.

Run the visible example: python test_matvec_row.py. Check: lab exercise check matvec_row.
"""
from numba import cuda


@cuda.jit
def matvec_row_kernel(A, x, y):
    """y[i] = sum_j A[i, j] * x[j]; A float32[rows, cols], x float32[cols], y float32[rows].

    Thread i = cuda.grid(1) computes row i.
    """
    # TODO: roughly 6 lines
    pass
