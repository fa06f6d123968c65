"""Wrong kernels written as students write them, for the checker's classes of issue 20: each one
passed the hidden tests (or got a hint that pointed at the wrong bug) before the checker learned to
catch it. (exercise, label, [(old, new) substitutions in solution.py], phrases the failing message
must have, phrases it must not have.)

Grouped by class; tests/teach/test_checker_classes.py runs them in the simulator.
"""

# 1a. Python a GPU cannot compile (the simulator runs it as plain Python); checked by the offline compile
COMPILE = [
    ("matvec_row", "np.dot of a row",
     [("from numba import cuda", "import numpy as np\nfrom numba import cuda"), ("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
                                                   "        y[i] = np.dot(A[i], x)")],
     ["does not compile for a GPU", "np.dot is not supported in a CUDA kernel", "(line 12)"], []),
    ("matvec_row", "sum over a generator",
     [("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
       "        y[i] = sum(A[i, j] * x[j] for j in range(A.shape[1]))")],
     ["does not compile for a GPU", "generator expression", "(line 11)"], []),
    ("quantize", "an undecorated helper",
     [("@cuda.jit\ndef quantize_kernel", "def clamp(v, lo, hi):\n    return min(max(v, lo), hi)\n\n\n@cuda.jit\ndef quantize_kernel"),
      ("round(min(max(v, 0.0), 255.0))", "round(clamp(v, 0.0, 255.0))")],
     ["does not compile for a GPU", "clamp is a plain Python function", "(line 16)"], []),
    ("dot", "the block's sum over a generator",
     [("        cuda.atomic.add(out, 0, cache[0])",
       "        cuda.atomic.add(out, 0, sum(a[j] * b[j] for j in range(i, min(i + THREADS, a.shape[0]))))")],
     ["does not compile for a GPU", "generator expression", "(line 24)"], []),
    ("minmax", "np.min of the shared array",
     [("import math\n", "import math\n\nimport numpy as np\n"), ("cuda.atomic.min(out, 0, lo[0])", "cuda.atomic.min(out, 0, np.min(lo))")],
     ["does not compile for a GPU", "np.min is not supported in a CUDA kernel (line 35)"], []),
    ("softmax_fused", "max over a generator",
     [("    for j in range(t, cols, THREADS):\n        m = max(m, x[r, j])\n",
       "    m = max(m, max(x[r, j] for j in range(t, cols, THREADS)) if t < cols else m)\n")],
     ["does not compile for a GPU", "generator expression"], []),
]

# 1b. a plain function: the simulator runs it, a GPU cannot launch it
NOT_A_KERNEL = [
    ("map_guard", "no @cuda.jit", [("@cuda.jit\n", "")], ["not a CUDA kernel: decorate it with @cuda.jit"], []),
    ("vecadd", "no @cuda.jit", [("@cuda.jit\n", "")], ["not a CUDA kernel: decorate it with @cuda.jit"], []),
    ("matvec_row", "a device function", [("@cuda.jit\n", "@cuda.jit(device=True)\n")], ["a device function"], []),
]

# 1c. every block redoes the whole problem: right values, each element written once per block
EVERY_BLOCK = [
    ("map_guard", "loop from threadIdx.x",
     [("    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i]",
       "    for i in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):\n        out[i]")],
     ["was written by 4 threads, one per block", "every block repeats the whole loop", "block's offset"], []),
    ("vecadd", "loop from threadIdx.x",
     [("    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n    if i < c.shape[0]:\n        c[i]",
       "    for i in range(cuda.threadIdx.x, c.shape[0], cuda.blockDim.x):\n        c[i]")],
     ["threads, one per block", "every block repeats the whole loop"], []),
    ("matvec_row", "rows strided by the block",
     [("    i = cuda.grid(1)\n    if i < y.shape[0]:\n", "    for i in range(cuda.threadIdx.x, y.shape[0], cuda.blockDim.x):\n")],
     ["one per block", "every block repeats the whole loop"], []),
    ("matrix_add_2d", "2-D loops from threadIdx",
     [("    x, y = cuda.grid(2)\n    if y < C.shape[0] and x < C.shape[1]:\n        C[y, x] = A[y, x] + 2 * B[y, x]",
       "    for y in range(cuda.threadIdx.y, C.shape[0], cuda.blockDim.y):\n"
       "        for x in range(cuda.threadIdx.x, C.shape[1], cuda.blockDim.x):\n"
       "            C[y, x] = A[y, x] + 2 * B[y, x]")],
     ["one per block", "every block repeats the whole loop"], []),
    ("strided_index", "2-D loops from threadIdx",
     [("    c, r = cuda.grid(2)\n    if r < out.shape[0] and c < out.shape[1]:\n        out[r, c]",
       "    for r in range(cuda.threadIdx.y, out.shape[0], cuda.blockDim.y):\n"
       "        for c in range(cuda.threadIdx.x, out.shape[1], cuda.blockDim.x):\n            out[r, c]")],
     ["one per block", "every block repeats the whole loop"], []),
    ("quantize", "loop from threadIdx.x",
     [("    i = cuda.grid(1)\n    if i < q.shape[0]:\n", "    for i in range(cuda.threadIdx.x, q.shape[0], cuda.blockDim.x):\n")],
     ["one per block"], []),
]

# 1d. bugs that random data rarely shows: adversarial inputs
ADVERSARIAL = [
    ("softmax_fused", "row max over the first blockDim columns only",
     [("    for j in range(t, cols, THREADS):\n        m = max(m, x[r, j])\n",
       "    if t < cols:\n        m = x[r, t]\n")], [""], []),
    ("minmax", "guard drops the last element",
     [("    if i < x.shape[0]:\n        lo[t]", "    if i < x.shape[0] - 1:\n        lo[t]")],
     ["the last element is left out"], []),
    ("quantize", "round half up",
     [("q[i] = round(min(max(v, 0.0), 255.0))", "q[i] = int(min(max(v, 0.0), 255.0) + 0.5)")],
     ["ties at .5", "round half to even"], []),
    ("vecadd", "launch one block short for warp+1",
     [("(n + threads - 1) // threads", "max(n // threads, 1)")], ["round the number of blocks up"], []),
]

# 2. hints that pointed at the wrong bug
HINTS = [
    ("matvec_row", "accumulates into the poisoned output",
     [("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
       "        for j in range(A.shape[1]):\n            y[i] += A[i, j] * x[j]")],
     ["was written by thread", "but it is NaN", "its writer read y itself"], ["never written"]),
    ("block_sum", "shared memory not zeroed past the end",
     [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n", "    if i < x.shape[0]:\n        cache[t] = x[i]\n")],
     ["but it is NaN", "cache[", "was never stored before it was read", "`i < x.shape[0]`", "an else branch storing 0"],
     ["never written", "read before initialised"]),
    ("matrix_add_2d", "x and y swapped, grid right",
     [("    x, y = cuda.grid(2)\n", "    y, x = cuda.grid(2)\n")],
     ["the grid covers the matrix", "are x and y swapped"], ["round the number"]),
    ("matrix_add_2d", "grid rounded down",
     [("((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
       "(max(cols // block[0], 1), max(rows // block[1], 1))")],
     ["round the number of blocks up",  # and the line of launch() that divides the rows (issue 41)
      "(your launch() at line 17: `grid = (max(cols // block[0], 1), max(rows // block[1], 1))`)"], ["swapped"]),
    ("matvec_row", "loop over rows (a wrong loop bound)",
     [("range(A.shape[1])", "range(A.shape[0])")], ["a loop bound"], ["guard it"]),
    ("strided_index", "missing guard (2-D)",
     [("    if r < out.shape[0] and c < out.shape[1]:\n        out[r, c]", "    if True:\n        out[r, c]")],
     ["guard it"], ["loop bound", "swapped"]),
    ("vecadd", "missing guard (just past the end)",
     [("    if i < c.shape[0]:\n        c[i]", "    c[i]")],
     ["at line 10: `c[i] = a[i] + b[i]`; ", "guard it, e.g. `if i < n:`"], ["loop bound"]),  # the access's line quoted
    ("block_sum", "race names the lines",
     [("        cuda.syncthreads()  # this level", "        pass  # this level")],
     # the other access is a read or a write of line 20 (`cache[t] += cache[t + s]`), whichever the
     # simulator's scheduling meets first (a loaded 8-worker run here once failed on "wrote")
     ["race: ", "cache[", "] at line 20: `cache[t] += cache[t + s]`, which thread",
      " at line 20: `cache[t] += cache[t + s]` with no"], ["(line 13)"]),
    ("softmax_fused", "race, then an index past the end",
     [("    cuda.syncthreads()  # everyone has read the max", "    pass  # everyone has read the max"),
      ("    for j in range(t, cols, THREADS):\n        out[r, j]", "    for j in range(t, cols + 1, THREADS):\n        out[r, j]")],
     ["race: ", "at line"], ["out of bounds"]),
    ("softmax_fused", "sum tree starts at a quarter",
     [("    cache[t] = acc\n    cuda.syncthreads()\n    s = THREADS // 2", "    cache[t] = acc\n    cuda.syncthreads()\n    s = THREADS // 4")],
     ["denominator"], ["transposed"]),
    ("matvec_row", "range off by one",
     [("range(A.shape[1])", "range(A.shape[1] - 1)")], ["misses its last term", "off by one"], []),
    ("matvec_row", "range from 1",
     [("range(A.shape[1])", "range(1, A.shape[1])")], ["misses its first term"], []),
    ("block_sum", "tree starts at a quarter",
     [("    s = THREADS // 2\n", "    s = THREADS // 4\n")], ["holds only the partials of threads 0..31 of 64"], []),
    ("matvec_coalesced", "tree drops partials (hint)",
     [("s = WARP // 2", "s = WARP // 4")], ["holds only the partials of threads 0..15 of 32"], []),
    ("tiled_matmul", "tile count rounded down (a tile missing)",
     [("range((K + TILE - 1) // TILE)", "range(K // TILE)")], ["misses exactly the partial of tile"], []),
    ("dot", "plain store of the block's partial",
     [("cuda.atomic.add(out, 0, cache[0])", "out[0] = cache[0]")], ["one per block", "cuda.atomic.add"], []),
    ("quantize", "clamp to 254",
     [("min(max(v, 0.0), 255.0)", "min(max(v, 0.0), 254.0)")], ["come out as 254: clamp to 255"], []),
]

ALL = COMPILE + NOT_A_KERNEL + EVERY_BLOCK + ADVERSARIAL + HINTS
