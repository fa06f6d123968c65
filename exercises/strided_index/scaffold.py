"""strided_index: out[r, c] = storage[offset + r * stride0 + c * stride1] (a view, made contiguous).

Run the visible example: python test_strided_index.py. Check: lab exercise check strided_index.
"""
from numba import cuda


@cuda.jit
def strided_copy_kernel(storage, offset, stride0, stride1, out):
    """out[r, c] = storage[offset + r*stride0 + c*stride1]; storage float32[size], out float32[rows, cols].

    Thread (x, y) = cuda.grid(2) computes out[y, x] (x = column).
    """
    # TODO: roughly 4 lines
    pass
