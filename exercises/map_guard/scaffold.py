"""map_guard: out[i] = 2 * x[i] + 1, one thread per element, with a bounds guard.

Run the visible example: python test_map_guard.py. Check: lab exercise check map_guard.
"""
from numba import cuda


@cuda.jit
def map_kernel(x, out):
    """out[i] = 2 * x[i] + 1 for i < n; x, out: float32[n].

    Launch (done by the checker): ceil(n / 32) blocks of 32 threads; thread i = cuda.grid(1)
    computes element i, and threads with i >= n do nothing.
    """
    # TODO: roughly 3 lines
    pass
