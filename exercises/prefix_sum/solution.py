"""prefix_sum: inclusive scan; each block scans its elements, then adds the blocks before it."""
from numba import cuda, int32

THREADS = 64


@cuda.jit
def scan_kernel(x, block_sums, out):
    """out[i] = x[0] + ... + x[i]; x int32[n], block_sums int32[ceil(n/THREADS)] (the total of each
    block's THREADS elements), out int32[n]. Thread t of block b scans element b*THREADS + t with
    log2(THREADS) Hillis-Steele steps in shared memory, then adds the offset of block b: the sum of
    block_sums[0:b]."""
    temp = cuda.shared.array(THREADS, int32)
    offset = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    temp[t] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()  # the block's elements are in before the scan reads neighbours
    s = 1
    while s < THREADS:
        v = temp[t - s] if t >= s else 0
        cuda.syncthreads()  # everyone has read step s's inputs before anyone overwrites them
        temp[t] += v
        cuda.syncthreads()  # step s is complete before the next step reads it
        s *= 2
    if t == 0:
        total = 0
        for k in range(cuda.blockIdx.x):  # the blocks before this one
            total += block_sums[k]
        offset[0] = total
    cuda.syncthreads()  # the offset is in before every thread adds it
    if i < x.shape[0]:
        out[i] = temp[t] + offset[0]
