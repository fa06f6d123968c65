"""softmax_fused: row softmax in one kernel, one block of 32 threads per row."""
import math

from numba import cuda, float32

THREADS = 32


@cuda.jit
def softmax_kernel(x, out):
    """out[r, :] = softmax(x[r, :]) with the row max subtracted; x, out float32[rows, cols].
    Thread t of block r handles columns t, t+THREADS, ...: one read of the row for the max, one for
    the sum, one for the write (the naive version launches three kernels and stores twice more)."""
    cache = cuda.shared.array(THREADS, float32)
    r = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    m = float32(-math.inf)
    for j in range(t, cols, THREADS):
        m = max(m, x[r, j])
    cache[t] = m
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            cache[t] = max(cache[t], cache[t + s])
        cuda.syncthreads()
        s //= 2
    m = cache[0]
    cuda.syncthreads()  # everyone has read the max before cache is reused for the sum
    acc = float32(0.0)
    for j in range(t, cols, THREADS):
        acc += math.exp(x[r, j] - m)
    cache[t] = acc
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            cache[t] += cache[t + s]
        cuda.syncthreads()
        s //= 2
    total = cache[0]
    for j in range(t, cols, THREADS):
        out[r, j] = math.exp(x[r, j] - m) / total
