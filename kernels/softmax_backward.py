"""The backward pass of row-wise softmax: dx = y * (dy - sum_j dy_j * y_j), one block per row.

Source: the Jacobian of softmax, dy_i/dx_j = y_i (delta_ij - y_j), so for an upstream gradient dy,
dx_j = sum_i dy_i y_i (delta_ij - y_j) = y_j (dy_j - <dy, y>) (e.g. PyTorch's
``_softmax_backward_data``). It needs only the forward's output y, not x.

y, dy, dx: ROWS x COLS, C-contiguous, one float dtype. Each element of y and dy is read twice (the
dot product, then the output; the second read mostly hits L1/L2) and dx written once. Used by the
torch op ``lab.softmax``'s autograd (torch_bridge.lab_ops); not a `lab run` kernel.
"""
from __future__ import annotations

from kernels.compiler import cuda, float64
from kernels.spec import Launch

MAX_THREADS = 1024


@cuda.jit
def softmax_backward_kernel(y, dy, dx):
    """Block r computes row r: thread t sums dy[r, j] * y[r, j] over j = t, t + T, ... (coalesced,
    float64 accumulator), a shared-memory tree reduction gives the row's dot product (T, the
    threads per block, must be a power of two), then thread t writes dx[r, j] = y (dy - dot)."""
    part = cuda.shared.array(MAX_THREADS, float64)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    T = cuda.blockDim.x
    acc = float64(0)
    for j in range(t, y.shape[1], T):
        acc += float64(dy[row, j]) * float64(y[row, j])
    part[t] = acc
    cuda.syncthreads()
    half = T // 2
    while half > 0:  # halve the live slots each step; every thread reaches every barrier
        if t < half:
            part[t] += part[t + half]
        cuda.syncthreads()
        half //= 2
    dot = y.dtype.type(part[0])
    for j in range(t, y.shape[1], T):
        dx[row, j] = y[row, j] * (dy[row, j] - dot)


def launch(size, threads):
    """One block of ``threads`` (a power of two, <= 1024) threads per row: grid = (ROWS,)."""
    rows, cols = size
    if threads & (threads - 1) or not 0 < threads <= MAX_THREADS:
        raise ValueError(f"threads={threads}: must be a power of two in 1..{MAX_THREADS}")
    return Launch(grid=(rows,), block=(threads,), threads_needed=rows * min(cols, threads))


def reference(y, dy):
    """NumPy: (y * (dy - sum(dy * y, axis=1)),)."""
    return (y * (dy - (dy * y).sum(axis=1, keepdims=True)),)
