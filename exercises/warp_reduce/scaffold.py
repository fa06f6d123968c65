"""warp_reduce: one partial sum per block of 128 threads, by warp shuffles.

Run the visible example: python test_warp_reduce.py. Check: lab exercise check warp_reduce.
"""
from numba import cuda, float32

THREADS = 128
WARPS = THREADS // 32
FULL_MASK = 0xFFFFFFFF


@cuda.jit
def warp_reduce_kernel(x, partials):
    """partials[b] = sum(x[b*THREADS:(b+1)*THREADS]); x float32[n], partials float32[ceil(n/THREADS)].

    Launch: ceil(n / THREADS) blocks of THREADS threads; thread t of block b loads x[b*THREADS + t].
    Each warp adds its 32 values with cuda.shfl_down_sync(FULL_MASK, v, offset), offset = 16 .. 1.
    """
    warp_sums = cuda.shared.array(WARPS, float32)  # noqa: F841  (one slot per warp)
    # TODO: roughly 18 lines (load, warp shuffles, warp_sums, cuda.syncthreads(), warp 0 again)
