"""Visible example for minmax: python test_minmax.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from minmax import THREADS, minmax_kernel


def test_example():
    x = np.sin(np.arange(100, dtype=np.float32))
    out = np.array([np.inf, -np.inf], np.float32)
    minmax_kernel[2, THREADS](x, out)
    np.testing.assert_array_equal(out, [x.min(), x.max()])


if __name__ == "__main__":
    test_example()
    print("ok")
