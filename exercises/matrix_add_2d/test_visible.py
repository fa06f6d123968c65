"""Visible example for matrix_add_2d: python test_matrix_add_2d.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from matrix_add_2d import launch, matrix_add_kernel


def test_example():
    A = np.arange(6 * 20, dtype=np.float32).reshape(6, 20) / 7
    B = np.sin(A)
    C = np.full_like(A, np.nan)
    grid, block = launch(*A.shape)
    matrix_add_kernel[grid, block](A, B, C)
    np.testing.assert_allclose(C, A + 2 * B, rtol=1e-6)


if __name__ == "__main__":
    test_example()
    print("ok")
