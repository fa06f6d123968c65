"""vecadd: metadata, statement and hints."""
TITLE = "Vector add across blocks, with your own launch math"
DIFFICULTY = 1
PREREQUISITES = ["map_guard"]
MIRRORS = "kernels/vecadd.py"
KERNEL = "vecadd_kernel"
LAUNCH = "launch"
LESSON = "one_element_per_thread"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
RUNG = "vecadd:element_per_thread"  # the kernels/ rung timed beside it (kernel:variant)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
vecadd: c = a + b for float32 vectors of length n, one thread per element, across many blocks.

Write two things: the kernel, and launch(n, threads) -> (blocks, threads), the launch configuration
the checker uses: blocks of the `threads` it is given (each hidden test asks for its own block size,
32 to 1024), and enough of them for n elements. The seed notebook's example: n = 5466 with 1024 threads a block needs
ceil(5466 / 1024) = 6 blocks, 678 threads of the last one have nothing to do.

Pitfalls: the index must include the block offset (blockIdx.x * blockDim.x), the number of blocks
must round up, and the extra threads of the last block must not touch memory.
(Source: CUDA C++ Programming Guide, "Thread Hierarchy"; the seed notebook "PyTorch handling of
GPU devices".)
"""
HINTS = [
    "Thread i computes c[i]. Which i? A block holds blockDim.x threads, and block b starts at element b * blockDim.x.",
    "i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x (or cuda.grid(1)); then guard: if i < c.shape[0].",
    "launch(n, threads) must cover n elements: blocks = (n + threads - 1) // threads (ceiling division), and return (blocks, threads).",
]
