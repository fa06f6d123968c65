"""Visible example for histogram: python test_histogram.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from histogram import BINS, THREADS, histogram_kernel


def test_example():
    x = (np.arange(700) * 7 % 300).clip(0, 255).astype(np.uint8)
    hist = np.zeros(BINS, np.int32)
    histogram_kernel[2, THREADS](x, hist)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=BINS))


if __name__ == "__main__":
    test_example()
    print("ok")
