"""block_sum: one partial sum per block of 64 threads, by a tree in shared memory.

Run the visible example: python test_block_sum.py. Check: lab exercise check block_sum.
"""
from numba import cuda, float32

THREADS = 64


@cuda.jit
def block_sum_kernel(x, partials):
    """partials[b] = sum(x[b*THREADS:(b+1)*THREADS]); x float32[n], partials float32[ceil(n/THREADS)].

    Launch: ceil(n / THREADS) blocks of THREADS threads; thread t of block b loads x[b*THREADS + t].
    """
    cache = cuda.shared.array(THREADS, float32)  # noqa: F841
    # TODO: roughly 12 lines (load, cuda.syncthreads(), tree, write)
