"""Visible example for transpose_shared: python test_transpose_shared.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from transpose_shared import BLOCK_ROWS, TILE, transpose_kernel


def test_example():
    rows, cols = 40, 7
    A = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.full((cols, rows), np.nan, np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    transpose_kernel[grid, (TILE, BLOCK_ROWS)](A, out)
    np.testing.assert_array_equal(out, A.T)


if __name__ == "__main__":
    test_example()
    print("ok")
