"""strided_index: out[r, c] = storage[offset + r * stride0 + c * stride1] (a view, made contiguous)."""
from numba import cuda


@cuda.jit
def strided_copy_kernel(storage, offset, stride0, stride1, out):
    """out[r, c] = storage[offset + r*stride0 + c*stride1]; storage float32[size], out float32[rows, cols].
    Thread (x, y) = cuda.grid(2) computes out[y, x] (x = column)."""
    c, r = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = storage[offset + r * stride0 + c * stride1]
