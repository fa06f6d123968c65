"""Visible example for matvec_row: python test_matvec_row.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from matvec_row import matvec_row_kernel


def test_example():
    A = np.arange(15, dtype=np.float32).reshape(5, 3) - 6
    x = np.array([0.5, -2.0, 1.25], dtype=np.float32)
    y = np.full(5, np.nan, np.float32)
    matvec_row_kernel[1, 32](A, x, y)
    np.testing.assert_allclose(y, A @ x, rtol=1e-6)


if __name__ == "__main__":
    test_example()
    print("ok")
