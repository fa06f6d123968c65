"""prefix_sum: inclusive scan; each block scans its elements, then adds the blocks before it.

Run the visible example: python test_prefix_sum.py. Check: lab exercise check prefix_sum.
"""
from numba import cuda, int32

THREADS = 64


@cuda.jit
def scan_kernel(x, block_sums, out):
    """out[i] = x[0] + ... + x[i]; x int32[n], block_sums int32[ceil(n/THREADS)] (the total of each
    block's THREADS elements), out int32[n].

    Launch: ceil(n / THREADS) blocks of THREADS threads; thread t of block b handles element
    b*THREADS + t: a scan of the block's elements in shared memory, plus sum(block_sums[0:b]).
    """
    temp = cuda.shared.array(THREADS, int32)  # noqa: F841
    offset = cuda.shared.array(1, int32)  # noqa: F841  (this block's offset, computed by thread 0)
    # TODO: roughly 20 lines (load, the scan's steps with two barriers each, the offset, store)
