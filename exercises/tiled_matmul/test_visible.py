"""Visible example for tiled_matmul: python test_tiled_matmul.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from tiled_matmul import launch, matmul_kernel


def test_example():
    A = (np.arange(5 * 9, dtype=np.float32).reshape(5, 9) % 5) - 2
    B = (np.arange(9 * 4, dtype=np.float32).reshape(9, 4) % 3) - 1
    C = np.full((5, 4), np.nan, np.float32)
    grid, block = launch(5, 4)
    matmul_kernel[grid, block](A, B, C)
    np.testing.assert_allclose(C, A @ B)


if __name__ == "__main__":
    test_example()
    print("ok")
