"""quantize: q = round(clamp(x / scale + zero_point, 0, 255)) as uint8, one thread per element.

Run the visible example: python test_quantize.py. Check: lab exercise check quantize.
"""
import math  # noqa: F401

from numba import cuda


@cuda.jit
def quantize_kernel(x, scale, zero_point, q):
    """q[i] = round(clamp(x[i] / scale + zero_point, 0, 255)); x float32[n], q uint8[n].

    Launch: ceil(n / 64) blocks of 64 threads; thread i = cuda.grid(1) does element i.
    """
    # TODO: roughly 4 lines
    pass
