"""dot: out[0] = a . b, a shared-memory reduction per block plus an atomic add per block."""
from numba import cuda, float32

THREADS = 64


@cuda.jit
def dot_kernel(a, b, out):
    """out[0] += sum of a[i] * b[i] over this block's THREADS elements; a, b float32[n], out float32[1]
    (0.0 before the launch). Thread t of block b multiplies element b*THREADS + t; thread 0 adds the
    block's partial atomically (blocks run in any order, at the same time)."""
    cache = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            cache[t] += cache[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, cache[0])
