"""vecadd: c = a + b across many blocks, and the launch configuration that covers n elements."""
from numba import cuda


@cuda.jit
def vecadd_kernel(a, b, c):
    """c[i] = a[i] + b[i]; a, b, c: float32[n]. Thread i = blockIdx.x * blockDim.x + threadIdx.x
    computes c[i]; the guard keeps the last block's extra threads idle."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


def launch(n, threads):
    """(ceil(n / threads) blocks, threads per block)."""
    blocks = (n + threads - 1) // threads
    return blocks, threads
