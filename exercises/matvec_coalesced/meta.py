"""matvec_coalesced: metadata, statement and hints."""
TITLE = "Mat-vec, a warp per row (coalesced reads)"
DIFFICULTY = 3
PREREQUISITES = ["matvec_row", "block_sum"]
MIRRORS = "kernels/matvec.py"
KERNEL = "matvec_warp_kernel"
LAUNCH = None
LESSON = ("coalesced", "block_reduction")  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
RUNG = "matvec:warp_per_row"  # the kernels/ rung timed beside it (kernel:variant)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
matvec_coalesced: y = A @ x with one warp (a block of 32 threads) per row: block b computes y[b].
Lane t (= threadIdx.x) sums A[b, j] * x[j] for j = t, t + 32, t + 64, ... so that at each step the
warp reads 32 consecutive elements of the row (one coalesced transaction instead of 32). Then the
32 partial sums are added up through shared memory: partial[t] = acc; a tree (16, 8, 4, 2, 1) with
cuda.syncthreads() between the steps; lane 0 writes y[b].

The checker launches rows blocks of 32 threads.

Pitfalls: every partial must be counted (start the tree at 16 for 32 lanes); shared memory written
by one thread and read by another needs a cuda.syncthreads() in between; every thread of the block
must reach every syncthreads (no early return). (Source: kernels/matvec.py, warp_per_row rungs.)
"""
HINTS = [
    "row = cuda.blockIdx.x; t = cuda.threadIdx.x; acc = 0.0; for j in range(t, A.shape[1], 32): acc += A[row, j] * x[j]",
    "partial = cuda.shared.array(32, float32); partial[t] = acc; cuda.syncthreads() — now every lane's partial is visible.",
    "s = 16; while s > 0: if t < s: partial[t] += partial[t + s]; cuda.syncthreads(); s //= 2 — then if t == 0: y[row] = partial[0].",
]
