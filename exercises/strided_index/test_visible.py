"""Visible example for strided_index: python test_strided_index.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from strided_index import strided_copy_kernel


def test_transpose():
    M = np.arange(12, dtype=np.float32).reshape(3, 4)  # storage 0..11, strides (4, 1)
    out = np.full((4, 3), np.nan, np.float32)          # M.T: strides (1, 4), offset 0
    strided_copy_kernel[(1, 1), (8, 8)](M.ravel(), 0, 1, 4, out)
    np.testing.assert_array_equal(out, M.T)


if __name__ == "__main__":
    test_transpose()
    print("ok")
