"""Visible example for conv1d: python test_conv1d.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from conv1d import K, R, THREADS, conv1d_kernel


def test_example():
    n = 100
    x = np.sin(np.arange(n)).astype(np.float32)
    w = np.arange(1, K + 1, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    conv1d_kernel[(n + THREADS - 1) // THREADS, THREADS](x, w, y)
    padded = np.concatenate([np.zeros(R), x.astype(np.float64), np.zeros(R)])
    expected = [padded[i:i + K] @ w for i in range(n)]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    test_example()
    print("ok")
