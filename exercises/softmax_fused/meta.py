"""softmax_fused: metadata, statement and hints."""
TITLE = "Fused softmax: one block per row, max-shifted"
DIFFICULTY = 4
PREREQUISITES = ["block_sum", "minmax"]
MIRRORS = "kernels/softmax.py"
KERNEL = "softmax_kernel"
LAUNCH = None
LESSON = "block_reduction"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
RUNG = "softmax:fused"  # the kernels/ rung timed beside it (kernel:variant)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
softmax_fused: out[r, :] = exp(x[r, :] - m) / sum_j exp(x[r, j] - m) with m = max_j x[r, j], for a
float32 x[rows, cols], in ONE kernel: block r (of THREADS = 32 threads) handles row r. Each thread
strides over the columns (j = t, t + 32, ...): a block max (shared memory tree), then a block sum of
exp(x - m) (another tree), then every thread writes its columns.

The checker launches rows blocks of 32 threads. Rows hold values near +-1e4 and some -inf entries.

Pitfalls: without subtracting the row max, exp overflows (inf / inf = nan) or underflows the whole
row (0 / 0); a -inf entry gives exactly 0; barriers between the trees (each thread must read the
final max before reusing the shared array). (Source: the seed notebook ARENA 2.0, "kernel fusion",
naive softmax; kernels/softmax.py.)
"""
HINTS = [
    "Pass 1: m = -inf; for j in range(t, cols, THREADS): m = max(m, x[r, j]); cache[t] = m; tree with max; cuda.syncthreads(); m = cache[0].",
    "Another cuda.syncthreads() before reusing cache for the sum; pass 2: acc = 0.0; for j in range(t, cols, THREADS): acc += math.exp(x[r, j] - m); cache[t] = acc; tree with +; total = cache[0].",
    "Pass 3: out[r, j] = math.exp(x[r, j] - m) / total for j = t, t + THREADS, ...",
]
