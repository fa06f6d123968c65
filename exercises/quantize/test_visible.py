"""Visible example for quantize: python test_quantize.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from quantize import quantize_kernel


def test_example():
    x = np.array([-1.0, -0.25, 0.0, 0.4, 1.55], np.float32)
    scale = (1.55 - -1.0) / 255
    zero_point = int(min(max(0 - -1.0 / scale, 0), 255))
    q = np.zeros(5, np.uint8)
    quantize_kernel[1, 64](x, scale, zero_point, q)
    expected = np.round(np.clip(x / np.float32(scale) + zero_point, 0, 255)).astype(np.uint8)
    assert np.abs(q.astype(int) - expected).max() <= 1


if __name__ == "__main__":
    test_example()
    print("ok")
