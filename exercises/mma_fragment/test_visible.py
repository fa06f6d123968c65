"""Visible example for mma_fragment: python test_mma_fragment.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from mma_fragment import mma_kernel


def test_example():
    A = (np.arange(16 * 8, dtype=np.float32).reshape(16, 8) % 7) - 3  # small integers: exact in TF32
    B = (np.arange(8 * 8, dtype=np.float32).reshape(8, 8) % 5) - 2
    C = np.full((16, 8), np.nan, np.float32)
    mma_kernel[(1, 1), 32](A, B, C)
    np.testing.assert_allclose(C, A @ B)


if __name__ == "__main__":
    test_example()
    print("ok")
