"""matrix_add_2d: C = A + 2 * B on a 2-D grid; thread (x, y) = cuda.grid(2) computes C[y, x]."""
from numba import cuda


@cuda.jit
def matrix_add_kernel(A, B, C):
    """C[y, x] = A[y, x] + 2 * B[y, x]; A, B, C: float32[rows, cols]; x = column (consecutive
    threads of a warp read consecutive addresses), y = row."""
    x, y = cuda.grid(2)
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = A[y, x] + 2 * B[y, x]


def launch(rows, cols):
    """(grid, block): block (16, 8); grid = (ceil(cols / 16), ceil(rows / 8))."""
    block = (16, 8)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    return grid, block
