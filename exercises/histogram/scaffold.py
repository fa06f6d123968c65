"""histogram: 256-bin counts of uint8 data, a private shared-memory histogram per block.

Run the visible example: python test_histogram.py. Check: lab exercise check histogram.
"""
from numba import cuda, int32

THREADS = 128
BINS = 256


@cuda.jit
def histogram_kernel(x, hist):
    """hist[v] += how many x[i] == v; x uint8[n], hist int32[BINS] (0 before the launch).

    Launch: any number of blocks of THREADS threads; thread i of the grid counts x[i],
    x[i + gridsize], ... into the block's shared histogram, then the block adds it to hist.
    """
    local = cuda.shared.array(BINS, int32)  # noqa: F841  (this block's private bins)
    # TODO: roughly 8 lines (zero, cuda.syncthreads(), count, cuda.syncthreads(), merge)
