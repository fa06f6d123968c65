"""vecadd: c = a + b across many blocks, and the launch configuration that covers n elements.

Run the visible example: python test_vecadd.py. Check: lab exercise check vecadd.
"""
from numba import cuda


@cuda.jit
def vecadd_kernel(a, b, c):
    """c[i] = a[i] + b[i]; a, b, c: float32[n].

    Launch: launch(n, threads). Thread i = blockIdx.x * blockDim.x + threadIdx.x computes c[i].
    """
    i = cuda.threadIdx.x  # TODO: this is only the index inside the block (roughly 3 lines in all)
    c[i] = a[i] + b[i]


def launch(n, threads):
    """(blocks per grid, threads per block) so that every one of the n elements gets a thread."""
    blocks = 1  # TODO: roughly 1 line
    return blocks, threads
