"""conv1d: metadata, statement and hints."""
TITLE = "1-D convolution: a tile with halo cells in shared memory"
DIFFICULTY = 3
PREREQUISITES = ["block_sum"]
MIRRORS = "-"  # no kernels/ module convolves (the CUDA Programming Guide's shared-memory tiling is the model)
KERNEL = "conv1d_kernel"
LAUNCH = None
LESSON = "shared_reuse"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
conv1d: y[i] = sum_k w[k] * x[i + k - R] for k = 0 .. K-1 (K = 2R + 1 = 7 taps, R = 3), float32
x[n], w[K], y[n], with x taken as 0.0 outside 0..n-1 (a "same"-size output, as PyTorch's conv1d
with padding R computes it: no flipping of w).

Blocks of THREADS = 64 threads; thread t of block b computes y[b*64 + t]. Each input element is
used by K outputs, so the block first copies its part of x into shared memory once: the 64 elements
x[b*64 .. b*64 + 63] and R halo cells on each side (x[b*64 - R .. b*64 - 1] and x[b*64 + 64 ..
b*64 + 64 + R - 1]), tile[j] = x[b*64 - R + j] for j = 0 .. 64 + 2R - 1, 0.0 outside x. Then
y[i] = sum_k w[k] * tile[t + k].

1. tile[t + R] = x[i] (0.0 past the end);
2. threads t < R also load the halo cells: tile[t] = x[i - R] and tile[t + 64 + R] = x[i + 64]
   (0.0 outside x);
3. cuda.syncthreads(); then, for i < n, the K products from the tile.

The checker launches ceil(n / 64) blocks of 64 threads.

Pitfalls: the halo cells (without them the outputs next to a block's edge read garbage); the left
halo of block 0 and the right halo of the last block lie outside x (zero them, do not read x[-1]);
the barrier between the loads and the products (threads read cells other threads loaded); threads
past the end must still reach the barrier (and may have halo cells to load).
(Sources: CUDA C++ Programming Guide, "Shared Memory"; NVIDIA blog "Using Shared Memory in CUDA
C/C++"; D. Kirk, W. Hwu, "Programming Massively Parallel Processors", ch. 7 (convolution, halo cells).)
"""
HINTS = [
    "t = cuda.threadIdx.x; i = cuda.grid(1); n = x.shape[0]; tile[t + R] = x[i] if i < n else 0.0.",
    "if t < R: left = i - R; tile[t] = x[left] if left >= 0 else 0.0; right = i + THREADS; tile[t + THREADS + R] = x[right] if right < n else 0.0.",
    "cuda.syncthreads(); if i < n: acc = 0.0; for k in range(K): acc += w[k] * tile[t + k]; y[i] = acc.",
]
PASS_PCT_OF_REFERENCE = 70  # --bench: the student's kernel reaches at least 70% of the reference's speed
PEAK = "copy"               # memory-bound (14 flops per 8 bytes): % of the copy bandwidth
