"""Issue 41, fourth round (hints6): wrong kernels whose first message said only what differs ("how the
values were combined", "read X, the reference's Y", a hedged list), each written in another style than
the reference solution's (an if/else for a conditional expression, a while loop with its counter,
cuda.grid spelled out, other local names) and with one bug, in the style of tests/teach/hint_mutants.py:
(exercise, label, subs, cls), ``cls`` a key of :data:`CLASSES` whose phrases name that bug (the line
and the expression that differ from the reference solution's, lab.teach.kernel_diff).

tests/teach/test_kernel_diff.py runs them: each first failing message names its bug.
"""

CLASSES = {
    "operator in the combine": ["statement for statement but one", "`x[idx] * 2 - 1` where the reference has `2 * x[i] + 1`"],
    "accumulator's start": ["statement for statement but one", "`0.5` where the reference has `0.0`"],
    "bin shifted": ["statement for statement but one", "`min(x[k] + 1, BINS - 1)` where the reference has `x[i]`"],
    "tree runs ascending": ["but one loop", "`stride = 1`", "`while stride < THREADS:`"],
    "identity of min": ["statement for statement but one", "`0.0` where the reference has `math.inf`"],
}

MUTANTS = [
    ("map_guard", "2 * x - 1, grid index spelled in another order",
     [("    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1",
       "    idx = cuda.threadIdx.x + cuda.blockDim.x * cuda.blockIdx.x\n    if idx < len(x):\n"
       "        out[idx] = x[idx] * 2 - 1")],
     "operator in the combine"),
    ("matvec_row", "sum starts at 0.5, a while loop over the columns",
     [("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
       "        total = 0.5\n        j = 0\n        while j < A.shape[1]:\n            total += x[j] * A[i, j]\n"
       "            j += 1\n        y[i] = total")],
     "accumulator's start"),
    ("histogram", "bin x + 1, counted in a while loop",
     [("    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):\n        cuda.atomic.add(local, x[i], 1)",
       "    k = cuda.grid(1)\n    while k < x.shape[0]:\n        cuda.atomic.add(local, min(x[k] + 1, BINS - 1), 1)\n"
       "        k += cuda.gridsize(1)")],
     "bin shifted"),
    ("block_sum", "tree from stride 1 up, the load as an if/else",
     [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n",
       "    if i < x.shape[0]:\n        cache[t] = x[i]\n    else:\n        cache[t] = 0.0\n"),
      ("    s = THREADS // 2\n    while s > 0:\n        if t < s:\n            cache[t] += cache[t + s]\n"
       "        cuda.syncthreads()  # this level is complete before the next reads it\n        s //= 2",
       "    stride = 1\n    while stride < THREADS:\n        if t < stride:\n            cache[t] += cache[t + stride]\n"
       "        cuda.syncthreads()\n        stride *= 2")],
     "tree runs ascending"),
    ("minmax", "min's identity 0, the loads as if/else",
     [("        lo[t] = math.inf\n", "        lo[t] = 0.0\n")],
     "identity of min"),
]

# fresh4's class "a shared cell read before any thread stored it": the hedged NaN list gave way to the
# stores that fill the array, their condition quoted (lab.teach.shared_words.unstored_cell)
CLASSES["fill under a condition"] = ["was never stored before it was read", "runs only where", "an else branch storing 0"]
MUTANTS += [
    ("warp_reduce", "only thread 0 stores its warp's sum",
     [("    if lane == 0:\n        warp_sums[warp] = v", "    if t == 0:\n        warp_sums[warp] = v")],
     "fill under a condition"),
    ("matvec_coalesced", "the partial stored only by threads below the column count",
     [("    partial[t] = acc\n", "    if t < A.shape[1]:\n        partial[t] = acc\n")], "fill under a condition"),
]

# fresh4's class "is it added N times?": one thread ran the block's atomic at every step of a loop
# (lab.teach.diagnose.repeated_atomic reads it off the trace's atomics)
CLASSES["atomic inside the loop"] = ["in each block one thread ran the atomic", "inside a loop", "move it after the loop"]
MUTANTS += [
    ("dot", "the block's atomic inside the tree loop",
     [("        cuda.syncthreads()\n        s //= 2\n    if t == 0:\n        cuda.atomic.add(out, 0, cache[0])",
       "        cuda.syncthreads()\n        if t == 0:\n            cuda.atomic.add(out, 0, cache[0])\n        s //= 2")],
     "atomic inside the loop"),
]
