"""minmax: metadata, statement and hints."""
TITLE = "Min and max in one pass: two reductions, the right identities"
DIFFICULTY = 3
PREREQUISITES = ["dot"]
MIRRORS = "kernels/quantize.py"
KERNEL = "minmax_kernel"
LAUNCH = None
LESSON = "block_reduction"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
STATEMENT = """
minmax: out[0] = min(x), out[1] = max(x) for float32 x[n] (the first pass of quantize). Blocks of
THREADS = 64 threads: two shared arrays (lo, hi), a tree that keeps the min in one and the max in the
other, then thread 0 combines the block's result with cuda.atomic.min(out, 0, ...) and
cuda.atomic.max(out, 1, ...). Before the launch out = [+inf, -inf].

Pitfalls: a thread past the end must contribute the identity of the operation (+inf for min,
-inf for max), not 0.0 (wrong whenever all values are positive, or all negative); barriers as in
block_sum. (Source: kernels/quantize.py, block_minmax.)
"""
HINTS = [
    "lo[t] = x[i] if i < n else math.inf; hi[t] = x[i] if i < n else -math.inf; cuda.syncthreads()",
    "Tree: if t < s: lo[t] = min(lo[t], lo[t + s]); hi[t] = max(hi[t], hi[t + s]); then cuda.syncthreads() for every thread.",
    "if t == 0: cuda.atomic.min(out, 0, lo[0]); cuda.atomic.max(out, 1, hi[0])",
]
