"""histogram: metadata, statement and hints."""
TITLE = "Histogram: shared-memory atomics, then one merge per block"
DIFFICULTY = 3
PREREQUISITES = ["dot"]
MIRRORS = "-"  # no kernels/ module counts (the NVIDIA blog's shared-atomics histogram is the model)
KERNEL = "histogram_kernel"
LAUNCH = None
LESSON = "block_reduction"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
STATEMENT = """
histogram: hist[v] = how many elements of x equal v, for uint8 values x[n] and BINS = 256 int32
bins (hist is 0 before the launch). Blocks of THREADS = 128 threads, fewer blocks than n / 128, so
each thread strides over x (a grid-stride loop: i = cuda.grid(1), cuda.grid(1) + cuda.gridsize(1),
...).

Each block counts into its own private histogram in shared memory with cuda.atomic.add (fast: the
atomics stay on the SM), then merges it into the global hist with one cuda.atomic.add per bin:
1. zero the 256 shared bins (thread t zeroes bins t, t + 128); cuda.syncthreads();
2. for each of the thread's elements: cuda.atomic.add(local, x[i], 1); cuda.syncthreads();
3. thread t adds local[b] to hist[b] for b = t, t + 128 with cuda.atomic.add.

The checker launches min(ceil(n / 128), 3) blocks of 128 threads.

Pitfalls: several threads hit the same bin at once: local[v] += 1 loses counts (a read-modify-write
race), so does hist[b] += local[b] across blocks; shared memory starts as garbage (zero it, all 256
bins, and wait for it); the barrier before the merge (other threads are still counting); 256 bins
with 128 threads means two bins per thread.
(Sources: NVIDIA blog "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell" (N. Sakharnykh);
CUDA C++ Programming Guide, "Atomic Functions" and "Shared Memory"; NVIDIA blog "CUDA Pro Tip: Write
Flexible Kernels with Grid-Stride Loops".)
"""
HINTS = [
    "t = cuda.threadIdx.x; for b in range(t, BINS, THREADS): local[b] = 0; then cuda.syncthreads().",
    "for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)): cuda.atomic.add(local, x[i], 1); then cuda.syncthreads().",
    "for b in range(t, BINS, THREADS): cuda.atomic.add(hist, b, local[b]) — blocks merge at the same time, so the global adds are atomic too.",
]
PASS_PCT_OF_REFERENCE = 70  # --bench: the student's kernel reaches at least 70% of the reference's speed
PEAK = "copy"               # memory-bound: % of the copy bandwidth
