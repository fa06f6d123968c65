"""dot: out[0] = a . b, a shared-memory reduction per block plus an atomic add per block.

Run the visible example: python test_dot.py. Check: lab exercise check dot.
"""
from numba import cuda, float32

THREADS = 64


@cuda.jit
def dot_kernel(a, b, out):
    """out[0] += sum of a[i] * b[i] over this block's THREADS elements; a, b float32[n], out float32[1]
    (0.0 before the launch). Launch: ceil(n / THREADS) blocks of THREADS threads."""
    cache = cuda.shared.array(THREADS, float32)  # noqa: F841
    # TODO: roughly 13 lines
