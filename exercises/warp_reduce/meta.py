"""warp_reduce: metadata, statement and hints."""
TITLE = "Warp shuffles: a block sum without a shared-memory tree"
DIFFICULTY = 3
PREREQUISITES = ["block_sum"]
MIRRORS = "kernels/matvec.py"  # warp_per_row: a warp's 32 partials added by shuffles (kernels/warp.py)
KERNEL = "warp_reduce_kernel"
LAUNCH = None
LESSON = ("warp_shuffle", "block_reduction")  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
STATEMENT = """
warp_reduce: partials[b] = sum of x[b*128 : (b+1)*128] (the last block's slice may be shorter),
with blocks of THREADS = 128 threads (4 warps of 32), using warp shuffles instead of a shared-memory
tree:

1. every thread takes v = x[i] (0.0 past the end of x);
2. each warp adds its 32 values with cuda.shfl_down_sync(FULL_MASK, v, offset) for offset = 16, 8,
   4, 2, 1: after the five steps lane 0 holds the warp's sum (registers only, no barrier);
3. lane 0 of each warp puts its sum into warp_sums[warp] (shared, 4 slots); cuda.syncthreads();
4. warp 0 reads the 4 slots (lanes 4..31 take 0.0) and shuffles again; thread 0 writes partials[b].

The checker launches ceil(n / 128) blocks of 128 threads.

Pitfalls: a shuffle is a warp collective: every lane named in the mask (FULL_MASK = 0xFFFFFFFF, all
32) must call it, so threads past the end of x take 0.0 instead of returning; the five offsets
start at 16 (half a warp), not 8; lane 0 ends with the sum (shfl_down moves values towards lane 0);
the barrier between writing warp_sums and reading it. Numba's own CUDA simulator has no shuffles: the
checker's simulator adds them (python test_warp_reduce.py runs through it).
(Sources: CUDA C++ Programming Guide, "Warp Shuffle Functions"; M. Harris, "Optimizing Parallel
Reduction in CUDA" (NVIDIA); NVIDIA blog "Using CUDA Warp-Level Primitives"; kernels/warp.py.)
"""
HINTS = [
    "i = cuda.grid(1); v = x[i] if i < x.shape[0] else float32(0.0); lane = t % 32; warp = t // 32.",
    "offset = 16; while offset > 0: v += cuda.shfl_down_sync(FULL_MASK, v, offset); offset //= 2 — every lane runs this loop.",
    "if lane == 0: warp_sums[warp] = v; cuda.syncthreads(); then if warp == 0: v = warp_sums[lane] if lane < WARPS else 0.0, the same five shuffles, and if t == 0: partials[cuda.blockIdx.x] = v.",
]
PASS_PCT_OF_REFERENCE = 70  # --bench: the student's kernel reaches at least 70% of the reference's speed
PEAK = "copy"               # memory-bound: % of the copy bandwidth
