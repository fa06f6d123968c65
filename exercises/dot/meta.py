"""dot: metadata, statement and hints."""
TITLE = "Dot product: block reductions combined with an atomic"
DIFFICULTY = 3
PREREQUISITES = ["block_sum"]
MIRRORS = "kernels/matvec.py"
KERNEL = "dot_kernel"
LAUNCH = None
LESSON = "block_reduction"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
STATEMENT = """
dot: out[0] = sum_i a[i] * b[i] for float32 vectors of length n. Blocks of THREADS = 64 threads:
each thread puts a[i] * b[i] (0.0 past the end) into shared memory, the block reduces it as in
block_sum, and thread 0 adds the block's partial to out[0] with cuda.atomic.add(out, 0, partial).
out[0] is 0.0 before the launch.

The checker launches ceil(n / 64) blocks of 64 threads.

Pitfalls: out[0] += partial from several blocks at once is a race (read-modify-write): only an
atomic adds every partial; barriers as in block_sum.
(Source: CUDA C++ Programming Guide, "Atomic Functions".)
"""
HINTS = [
    "Start as block_sum, loading a[i] * b[i] instead of x[i].",
    "Every block ends with one number; blocks cannot wait for each other, so combine them with an atomic.",
    "if t == 0: cuda.atomic.add(out, 0, cache[0])",
]
