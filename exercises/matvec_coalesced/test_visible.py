"""Visible example for matvec_coalesced: python test_matvec_coalesced.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from matvec_coalesced import matvec_warp_kernel


def test_example():
    A = (np.arange(2 * 40, dtype=np.float32).reshape(2, 40) % 7) - 3
    x = np.linspace(-1, 1, 40).astype(np.float32)
    y = np.full(2, np.nan, np.float32)
    matvec_warp_kernel[2, 32](A, x, y)
    np.testing.assert_allclose(y, A @ x, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    test_example()
    print("ok")
