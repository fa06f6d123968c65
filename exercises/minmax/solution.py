"""minmax: out = [min(x), max(x)] by shared-memory trees and two atomics per block."""
import math

from numba import cuda, float32

THREADS = 64


@cuda.jit
def minmax_kernel(x, out):
    """out[0] = min(out[0], min of this block's elements), out[1] likewise max; x float32[n],
    out float32[2] (= [inf, -inf] before the launch). Threads past the end load the identities
    (+inf for min, -inf for max); thread 0 folds the block's result in with atomics."""
    lo = cuda.shared.array(THREADS, float32)
    hi = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.shape[0]:
        lo[t] = x[i]
        hi[t] = x[i]
    else:
        lo[t] = math.inf
        hi[t] = -math.inf
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            lo[t] = min(lo[t], lo[t + s])
            hi[t] = max(hi[t], hi[t + s])
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.min(out, 0, lo[0])
        cuda.atomic.max(out, 1, hi[0])
