"""matvec_row: metadata, statement and hints."""
TITLE = "Mat-vec, one thread per row"
DIFFICULTY = 2
PREREQUISITES = ["vecadd"]
MIRRORS = "kernels/matvec.py"
KERNEL = "matvec_row_kernel"
LAUNCH = None
LESSON = "one_element_per_thread"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
RUNG = "matvec:row_per_thread"  # the kernels/ rung timed beside it (kernel:variant)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
matvec_row: y = A @ x for a row-major float32 A[rows, cols] and x[cols]; thread i = cuda.grid(1)
computes the whole dot product of row i: y[i] = sum_j A[i, j] * x[j].

The checker launches ceil(rows / 32) blocks of 32 threads. Accumulate in a local variable and write
y[i] once.

Pitfalls: rows != cols (loop over A.shape[1], the columns); guard i < rows. Note what a warp reads:
32 threads read 32 different rows at once (addresses cols apart: not coalesced). matvec_coalesced
fixes that. (Source: the seed notebook's Numba mat-vec; kernels/matvec.py rung 1.)
"""
HINTS = [
    "i = cuda.grid(1); if i < y.shape[0]: ... one thread owns row i.",
    "acc = 0.0; for j in range(A.shape[1]): acc += A[i, j] * x[j]",
    "After the loop: y[i] = acc (one write per thread).",
]
