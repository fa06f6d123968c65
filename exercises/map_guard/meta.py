"""map_guard: metadata, statement and hints."""
TITLE = "1-D map with a bounds guard"
DIFFICULTY = 1
PREREQUISITES = []
MIRRORS = "kernels/vecadd.py"
KERNEL = "map_kernel"
LAUNCH = None
LESSON = "one_element_per_thread"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
map_guard: out[i] = 2 * x[i] + 1 for every i < n, one thread per element.

x, out: 1-D float32 arrays of length n. The checker launches ceil(n / 32) blocks of 32 threads,
so the last block usually holds threads past the end of the arrays.

Pitfalls: a thread past the end must not read x or write out (on a GPU that silently corrupts
memory; the checker reports it). Use the global index i = cuda.grid(1).
"""
HINTS = [
    "Each thread needs its global index: i = cuda.grid(1) (the same as cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x).",
    "More threads are launched than there are elements: only threads with i < out.shape[0] may touch the arrays.",
    "i = cuda.grid(1); if i < out.shape[0]: out[i] = 2 * x[i] + 1",
]
