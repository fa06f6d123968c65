"""histogram: 256-bin counts of uint8 data, a private shared-memory histogram per block."""
from numba import cuda, int32

THREADS = 128
BINS = 256


@cuda.jit
def histogram_kernel(x, hist):
    """hist[v] += how many x[i] == v; x uint8[n], hist int32[BINS] (0 before the launch). Each block
    strides over x (grid-stride loop), counts into shared memory with atomics (contention stays on the
    SM), then adds its BINS counts to hist with one global atomic per bin."""
    local = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    for b in range(t, BINS, THREADS):
        local[b] = 0
    cuda.syncthreads()  # every bin is zero before anyone counts
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, x[i], 1)
    cuda.syncthreads()  # every count of this block is in before the merge reads the bins
    for b in range(t, BINS, THREADS):
        cuda.atomic.add(hist, b, local[b])
