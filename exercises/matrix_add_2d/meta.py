"""matrix_add_2d: metadata, statement and hints."""
TITLE = "2-D grid over a non-square matrix"
DIFFICULTY = 2
PREREQUISITES = ["vecadd"]
MIRRORS = "kernels/vecadd.py"
KERNEL = "matrix_add_kernel"
LAUNCH = "launch"
LESSON = "one_element_per_thread"  # (coalescing: graded by --bench)  the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
matrix_add_2d: C = A + 2 * B for float32 matrices of shape (rows, cols), one thread per element,
on a 2-D grid of 2-D blocks.

Mapping: (x, y) = cuda.grid(2); x runs along columns and y along rows, so the 32 threads of a warp
(consecutive x) touch consecutive addresses of a row-major matrix (coalesced). Thread (x, y)
computes C[y, x].

Write launch(rows, cols) -> (grid, block): block = (16, 8) (16 columns x 8 rows of threads),
grid = (blocks along columns, blocks along rows), each rounded up.

Pitfalls: rows != cols (a swapped index passes only on square matrices), both dimensions need a
guard, and grid x pairs with columns.

Grading: `lab exercise check` grades the values and one element per thread; coalescing (x along
columns) is graded only by `lab exercise check --bench`, which counts the sectors your warps touch:
x along rows gives right values and passes the plain check, and fails --bench.
"""
HINTS = [
    "x, y = cuda.grid(2) gives x = blockIdx.x * blockDim.x + threadIdx.x and y likewise; x is the column.",
    "Guard both: if y < C.shape[0] and x < C.shape[1]: C[y, x] = A[y, x] + 2 * B[y, x].",
    "launch: block = (16, 8); grid = ((cols + 15) // 16, (rows + 7) // 8); return grid, block.",
]
