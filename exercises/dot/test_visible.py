"""Visible example for dot: python test_dot.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from dot import THREADS, dot_kernel


def test_example():
    a = np.linspace(-1, 2, 150).astype(np.float32)
    b = np.cos(a)
    out = np.zeros(1, np.float32)
    dot_kernel[3, THREADS](a, b, out)
    np.testing.assert_allclose(out[0], np.dot(a.astype(np.float64), b), rtol=1e-4)


if __name__ == "__main__":
    test_example()
    print("ok")
