"""conv1d: y = x (*) w with K = 2R + 1 taps, the block's tile and its halo cells in shared memory."""
from numba import cuda, float32

THREADS = 64
R = 3
K = 2 * R + 1
WIDTH = THREADS + 2 * R  # the tile and its halo cells (shared-array sizes must be constants)


@cuda.jit
def conv1d_kernel(x, w, y):
    """y[i] = sum_k w[k] * x[i + k - R] (x = 0 outside); x, y float32[n], w float32[K]. Thread t of
    block b computes y[b*THREADS + t]; the block loads x[b*THREADS - R : b*THREADS + THREADS + R] into
    shared memory once (threads t < R also load the R halo cells on each side), so each x element is
    read from global memory about once instead of K times."""
    tile = cuda.shared.array(WIDTH, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    tile[t + R] = x[i] if i < n else float32(0.0)
    if t < R:  # the halo cells: R on the left, R on the right
        left = i - R
        tile[t] = x[left] if left >= 0 and left < n else float32(0.0)
        right = i + THREADS
        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)
    cuda.syncthreads()  # the tile and its halo are loaded before anyone reads a neighbour's cell
    if i < n:
        acc = float32(0.0)
        for k in range(K):
            acc += w[k] * tile[t + k]
        y[i] = acc
