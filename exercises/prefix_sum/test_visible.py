"""Visible example for prefix_sum: python test_prefix_sum.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from prefix_sum import THREADS, scan_kernel


def test_example():
    x = (np.arange(100) % 7 - 3).astype(np.int32)
    block_sums = np.array([x[:64].sum(), x[64:].sum()], np.int32)
    out = np.full(100, -1, np.int32)
    scan_kernel[2, THREADS](x, block_sums, out)
    np.testing.assert_array_equal(out, np.cumsum(x))


if __name__ == "__main__":
    test_example()
    print("ok")
