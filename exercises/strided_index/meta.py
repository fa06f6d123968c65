"""strided_index: metadata, statement and hints."""
TITLE = "Strides: read a transposed or sliced view from flat storage"
DIFFICULTY = 2
PREREQUISITES = ["matrix_add_2d"]
MIRRORS = "-"
KERNEL = "strided_copy_kernel"
LAUNCH = None
LESSON = "one_element_per_thread"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
strided_index: a tensor is a pointer into flat storage plus strides. Element (r, c) of a view
lives at storage[offset + r * stride0 + c * stride1] (the seed notebook on strides:
index = r * x.stride(0) + c * x.stride(1)). A transpose swaps the strides; a slice moves the offset
and multiplies a stride.

Copy the view into a contiguous out[rows, cols]: out[r, c] = storage[offset + r*stride0 + c*stride1].
storage: float32[size] (1-D); offset, stride0, stride1: ints, in elements; out: float32[rows, cols].
The checker launches blocks of (8, 8) threads on a 2-D grid; thread (x, y) = cuda.grid(2)
computes out[y, x] (x = column).

Pitfalls: the strides of a transposed view are not (cols, 1); do not forget the offset.
(Source: the seed notebook "tensors as pointers into storage", ashutosh15072000/Deep-Learning-Basics.)
"""
HINTS = [
    "x, y = cuda.grid(2); r = y, c = x; guard r < out.shape[0] and c < out.shape[1].",
    "The storage index is offset + r * stride0 + c * stride1: stride0 goes with the row, stride1 with the column.",
    "out[r, c] = storage[offset + r * stride0 + c * stride1]",
]
