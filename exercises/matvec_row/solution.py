"""matvec_row: y = A @ x, one thread per row."""
from numba import cuda


@cuda.jit
def matvec_row_kernel(A, x, y):
    """y[i] = sum_j A[i, j] * x[j]; A float32[rows, cols], x float32[cols], y float32[rows].
    Thread i = cuda.grid(1) computes row i."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        y[i] = acc
