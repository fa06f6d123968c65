"""Visible example for map_guard: python test_map_guard.py (or pytest). The hidden tests try more
sizes: lab exercise check map_guard."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from map_guard import map_kernel


def test_example():
    x = np.array([0.5, -1.0, 3.0, 2.25, -0.125], dtype=np.float32)
    out = np.full_like(x, np.nan)
    map_kernel[1, 32](x, out)  # 32 threads for 5 elements
    np.testing.assert_allclose(out, 2 * x + 1)


if __name__ == "__main__":
    test_example()
    print("ok")
