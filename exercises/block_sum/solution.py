"""block_sum: one partial sum per block of 64 threads, by a tree in shared memory."""
from numba import cuda, float32

THREADS = 64


@cuda.jit
def block_sum_kernel(x, partials):
    """partials[b] = sum(x[b*THREADS:(b+1)*THREADS]); x float32[n], partials float32[ceil(n/THREADS)].
    Thread t of block b loads x[b*THREADS + t] (0 past the end); a tree halves the live threads
    each step; thread 0 writes the block's sum."""
    cache = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = x[i] if i < x.shape[0] else float32(0.0)
    cuda.syncthreads()  # all loads land before the tree reads them
    s = THREADS // 2
    while s > 0:
        if t < s:
            cache[t] += cache[t + s]
        cuda.syncthreads()  # this level is complete before the next reads it
        s //= 2
    if t == 0:
        partials[cuda.blockIdx.x] = cache[0]
