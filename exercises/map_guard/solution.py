"""map_guard: out[i] = 2 * x[i] + 1, one thread per element, with a bounds guard."""
from numba import cuda


@cuda.jit
def map_kernel(x, out):
    """out[i] = 2 * x[i] + 1 for i < n; x, out: float32[n]. Thread i = cuda.grid(1) computes
    element i; the guard keeps the last block's extra threads idle."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2 * x[i] + 1
