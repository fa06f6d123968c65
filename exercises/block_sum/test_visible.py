"""Visible example for block_sum: python test_block_sum.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from block_sum import THREADS, block_sum_kernel


def test_example():
    x = np.linspace(-1, 3, 100).astype(np.float32)
    partials = np.full(2, np.nan, np.float32)
    block_sum_kernel[2, THREADS](x, partials)
    np.testing.assert_allclose(partials, [x[:64].sum(), x[64:].sum()], rtol=1e-5)


if __name__ == "__main__":
    test_example()
    print("ok")
