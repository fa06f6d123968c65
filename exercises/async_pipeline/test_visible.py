"""Visible example for async_pipeline: python test_async_pipeline.py (or pytest)."""
import numpy as np

from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)
from async_pipeline import TILE, pipeline_kernel


def test_example():
    A = (np.arange(5 * 19, dtype=np.float32).reshape(5, 19) % 5) - 2
    B = (np.arange(19 * 4, dtype=np.float32).reshape(19, 4) % 3) - 1
    C = np.full((5, 4), np.nan, np.float32)
    pipeline_kernel[(1, 1), (TILE, TILE)](A, B, C)
    np.testing.assert_allclose(C, A @ B)


if __name__ == "__main__":
    test_example()
    print("ok")
