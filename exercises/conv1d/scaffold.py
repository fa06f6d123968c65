"""conv1d: y = x (*) w with K = 2R + 1 taps, the block's tile and its halo cells in shared memory.

Run the visible example: python test_conv1d.py. Check: lab exercise check conv1d.
"""
from numba import cuda, float32

THREADS = 64
R = 3
K = 2 * R + 1
WIDTH = THREADS + 2 * R  # the tile and its halo cells (shared-array sizes must be constants)


@cuda.jit
def conv1d_kernel(x, w, y):
    """y[i] = sum_k w[k] * x[i + k - R] (x = 0 outside); x, y float32[n], w float32[K].

    Launch: ceil(n / THREADS) blocks of THREADS threads; thread t of block b computes y[b*THREADS + t]
    from tile[j] = x[b*THREADS - R + j], j = 0 .. THREADS + 2R - 1 (R halo cells on each side).
    """
    tile = cuda.shared.array(WIDTH, float32)  # noqa: F841
    # TODO: roughly 14 lines (the tile, the halo cells, cuda.syncthreads(), K products)
