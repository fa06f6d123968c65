"""minmax: out = [min(x), max(x)] by shared-memory trees and two atomics per block.

Run the visible example: python test_minmax.py. Check: lab exercise check minmax.
"""
import math  # noqa: F401

from numba import cuda, float32

THREADS = 64


@cuda.jit
def minmax_kernel(x, out):
    """out[0] = min(out[0], min of this block's elements), out[1] likewise max; x float32[n],
    out float32[2] (= [inf, -inf] before the launch). Launch: ceil(n / THREADS) blocks of THREADS."""
    lo = cuda.shared.array(THREADS, float32)  # noqa: F841
    hi = cuda.shared.array(THREADS, float32)  # noqa: F841
    # TODO: roughly 15 lines
