"""warp_reduce: one partial sum per block of 128 threads, by warp shuffles."""
from numba import cuda, float32

THREADS = 128
WARPS = THREADS // 32
FULL_MASK = 0xFFFFFFFF


@cuda.jit
def warp_reduce_kernel(x, partials):
    """partials[b] = sum(x[b*THREADS:(b+1)*THREADS]); x float32[n], partials float32[ceil(n/THREADS)].
    Thread t of block b loads x[b*THREADS + t] (0 past the end: every lane takes part in the
    shuffles); each warp reduces in registers with five shfl_down_sync steps, lane 0 of each warp
    posts its sum to shared memory, and warp 0 reduces those WARPS sums the same way."""
    warp_sums = cuda.shared.array(WARPS, float32)
    t = cuda.threadIdx.x
    lane = t % 32
    warp = t // 32
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else float32(0.0)
    offset = 16
    while offset > 0:  # after the loop lane 0 holds the warp's sum
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if lane == 0:
        warp_sums[warp] = v
    cuda.syncthreads()  # every warp's sum is in shared memory before warp 0 reads them
    if warp == 0:
        v = warp_sums[lane] if lane < WARPS else float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)
            offset //= 2
        if lane == 0:
            partials[cuda.blockIdx.x] = v
