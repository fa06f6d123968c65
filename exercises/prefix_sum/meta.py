"""prefix_sum: metadata, statement and hints."""
TITLE = "Prefix sum: a block scan, then the block offsets"
DIFFICULTY = 4
PREREQUISITES = ["block_sum"]
MIRRORS = "-"  # no kernels/ module scans (GPU Gems 3 ch. 39 is the model)
KERNEL = "scan_kernel"
LAUNCH = None
LESSON = "block_scan"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
prefix_sum: the inclusive scan out[i] = x[0] + x[1] + ... + x[i] of int32 x[n], across many blocks
of THREADS = 64 threads. A scan of any length takes two steps (GPU Gems 3, ch. 39.2.4): every block
scans its own 64 elements, then adds the total of all the blocks before it. The block totals are
given: block_sums[b] = sum of x[b*64 : (b+1)*64] (what block_sum's kernel computes, launched first).

1. thread t loads x[i] (0 past the end) into temp[t]; cuda.syncthreads();
2. the block scan (Hillis & Steele): for s = 1, 2, 4, ..., 32: v = temp[t - s] if t >= s else 0;
   cuda.syncthreads(); temp[t] += v; cuda.syncthreads() — after the last step temp[t] is the sum of
   the block's elements 0..t;
3. the block offset: thread 0 adds up block_sums[0 : b] (the blocks BEFORE this one) into
   offset[0] (shared); cuda.syncthreads();
4. out[i] = temp[t] + offset[0] for i < n.

The checker launches ceil(n / 64) blocks of 64 threads.

Pitfalls: each scan step needs two barriers: the read of temp[t - s] must happen before thread t - s
overwrites it (an in-place step without the middle barrier is a race); inclusive, not exclusive
(out[0] = x[0]); the offset counts the blocks before b, not block b itself; every thread reaches
every barrier (threads past the end load 0 instead of returning).
(Sources: M. Harris, S. Sengupta, J. D. Owens, "Parallel Prefix Sum (Scan) with CUDA", GPU Gems 3,
ch. 39 (39.2.1 the naive scan, 39.2.4 arrays of arbitrary size); CUDA C++ Programming Guide,
"Synchronization Functions".)
"""
HINTS = [
    "t = cuda.threadIdx.x; i = cuda.grid(1); temp[t] = x[i] if i < x.shape[0] else 0; cuda.syncthreads().",
    "s = 1; while s < THREADS: v = temp[t - s] if t >= s else 0; cuda.syncthreads(); temp[t] += v; cuda.syncthreads(); s *= 2",
    "if t == 0: total = 0; for k in range(cuda.blockIdx.x): total += block_sums[k]; offset[0] = total — then cuda.syncthreads() and if i < x.shape[0]: out[i] = temp[t] + offset[0].",
]
PASS_PCT_OF_REFERENCE = 70  # --bench: the student's kernel reaches at least 70% of the reference's speed
PEAK = "copy"               # memory-bound: % of the copy bandwidth
