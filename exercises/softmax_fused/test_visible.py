"""Visible example for softmax_fused: python test_softmax_fused.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from softmax_fused import THREADS, softmax_kernel


def test_example():
    x = np.array([[1.0, 2.0, 3.0, -1.0, 0.5], [1000.0, 1001.0, 999.0, 998.0, 1000.5]], np.float32)
    out = np.full_like(x, np.nan)
    softmax_kernel[2, THREADS](x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


if __name__ == "__main__":
    test_example()
    print("ok")
