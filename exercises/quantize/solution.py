"""quantize: q = round(clamp(x / scale + zero_point, 0, 255)) as uint8, one thread per element."""
from numba import cuda


@cuda.jit
def quantize_kernel(x, scale, zero_point, q):
    """q[i] = round(clamp(x[i] / scale + zero_point, 0, 255)); x float32[n], q uint8[n].
    Thread i = cuda.grid(1) does element i (the seed's clamp-then-round, half to even)."""
    i = cuda.grid(1)
    if i < q.shape[0]:
        v = x[i] / scale + zero_point
        q[i] = round(min(max(v, 0.0), 255.0))
