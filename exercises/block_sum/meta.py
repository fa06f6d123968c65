"""block_sum: metadata, statement and hints."""
TITLE = "Shared-memory reduction: one partial sum per block"
DIFFICULTY = 3
PREREQUISITES = ["vecadd"]
MIRRORS = "kernels/softmax.py"
KERNEL = "block_sum_kernel"
LAUNCH = None
LESSON = "block_reduction"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
block_sum: partials[b] = sum of x[b*64 : (b+1)*64] (the last block's slice may be shorter), with
blocks of THREADS = 64 threads: each thread loads one element into shared memory (0.0 past the
end of x), then the block adds them up by a tree: at step s = 32, 16, ..., 1 thread t < s adds
cache[t + s] into cache[t]; thread 0 writes partials[blockIdx.x].

The checker launches ceil(n / 64) blocks of 64 threads.

Pitfalls: a cuda.syncthreads() is needed after the loads and after every tree step (another thread
reads what this one wrote); every thread must reach every barrier (no early return for threads past
the end of x: give them 0.0 instead); shared memory starts out as garbage.
(Source: CUDA C++ Programming Guide, "Shared Memory" and "Synchronization Functions".)
"""
HINTS = [
    "t = cuda.threadIdx.x; i = cuda.grid(1); cache[t] = x[i] if i < x.shape[0] else 0.0; then cuda.syncthreads().",
    "s = THREADS // 2; while s > 0: if t < s: cache[t] += cache[t + s] ... s //= 2",
    "Put cuda.syncthreads() inside the while loop after the if (all threads reach it), and finish with: if t == 0: partials[cuda.blockIdx.x] = cache[0].",
]
