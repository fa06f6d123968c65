"""Issue 41, third fresh set's classes (hints5): wrong kernels whose bug looked like another class to
the judge (a template fired on look-alike evidence), each declaring the bug it was written to have,
in the style of tests/teach/hint_mutants.py: (exercise, label, subs, cls), ``cls`` a key of
:data:`CLASSES`, whose phrases (all of them, or any one list of a tuple) name that bug.

tests/teach/test_hint_evidence.py runs them: no first message names another bug, and some failing
message names the mutant's own.
"""

CLASSES = {
    "row index from the block alone": ["computed the same element", "cuda.grid(1)"],
    "every thread stores the block's value": ["every thread of the block stores", "only one thread stores it"],
    "grid stride by the block": ["steps by the block's size", "cuda.gridsize(1)"],
    "tile declared too small": ["of this shared tile, declared", "declare the tile"],
    "tile loop past the tile": ["reads sA only inside", "range(TILE)"],
    "lane and warp swapped": ["are warp and lane swapped"],
    "every lane stores the warp's slot": ["both stored the warp's slot", "only one lane stores"],
    "warp slot read by the warp number": ["all read the same slot", "warp_sums[lane]"],
    "scan partner below slot 0": ["no halo cells", "must be skipped by the threads t <"],
    "scan step assigns": ["store the neighbour instead of adding it"],
    "softmax numerator unshifted": ["the write uses exp(x - m) too"],
    "softmax shift sign": ["shift's sign is flipped"],
    "softmax max tree with min": ["the max tree combines with min"],
    "fraction dropped": (["whole number", "int32"], ["block 0's one element", "the type of the shared array"]),
    "output added into before set": ["its writer read y itself", "starts at 0.0"],
    "one output for the grid, indexed by the block": ["block index", "every block adds into index 0"],
    "row from the global index where a block has a row": ["this thread's global index", "cuda.blockIdx.x"],
    "scan offset of the previous block only": ["total alone", "block_sums[0:"],
    "the block's atomic behind a global test": ["only block 0 of the", "if cuda.threadIdx.x == 0"],
    "warp slots read past the warps": ["must not access it", "t < 4"],
    "own tile cells past the end": ["threads past the end of x", "tile[t + R] = x[i] if i < n else 0.0"],
}

_CONV_FILL = "    tile[t + R] = x[i] if i < n else float32(0.0)\n"

MUTANTS = [
    ("matvec_row", "row from the block index", [("    i = cuda.grid(1)\n", "    i = cuda.blockIdx.x\n")],
     "row index from the block alone"),
    ("matvec_coalesced", "every lane stores its own partial", [("    if t == 0:\n        y[row] = partial[0]",
                                                                "    y[row] = partial[t]")],
     "every thread stores the block's value"),
    ("map_guard", "grid-stride loop stepping by blockDim", [("    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1",
                                                            "    while i < out.shape[0]:\n        out[i] = 2 * x[i] + 1\n"
                                                            "        i += cuda.blockDim.x")],
     "grid stride by the block"),
    ("transpose_shared", "tile declared BLOCK_ROWS high", [("cuda.shared.array((TILE, PADDED), float32)",
                                                           "cuda.shared.array((BLOCK_ROWS, PADDED), float32)")],
     "tile declared too small"),
    ("warp_reduce", "lane and warp formulas exchanged", [("    lane = t % 32\n    warp = t // 32\n",
                                                          "    lane = t // 32\n    warp = t % 32\n")],
     "lane and warp swapped"),
    ("warp_reduce", "every lane stores the warp's sum", [("    if lane == 0:\n        warp_sums[warp] = v",
                                                          "    warp_sums[warp] = v")],
     "every lane stores the warp's slot"),
    ("warp_reduce", "warp 0 reads warp_sums[warp]", [("v = warp_sums[lane] if lane < WARPS", "v = warp_sums[warp] if lane < WARPS")],
     "warp slot read by the warp number"),
    ("prefix_sum", "partner read with no t >= s", [("v = temp[t - s] if t >= s else 0", "v = temp[t - s]")],
     "scan partner below slot 0"),
    ("prefix_sum", "step stores the partner", [("        temp[t] += v\n", "        temp[t] = v\n")], "scan step assigns"),
    ("softmax_fused", "write without the shift", [("        out[r, j] = math.exp(x[r, j] - m) / total",
                                                    "        out[r, j] = math.exp(x[r, j]) / total")],
     "softmax numerator unshifted"),
    ("softmax_fused", "shift sign flipped", [("math.exp(x[r, j] - m)", "math.exp(m - x[r, j])")], "softmax shift sign"),
    ("softmax_fused", "max tree with min", [("cache[t] = max(cache[t], cache[t + s])", "cache[t] = min(cache[t], cache[t + s])")],
     "softmax max tree with min"),
    ("block_sum", "int32 shared cache", [("from numba import cuda, float32\n", "from numba import cuda, float32, int32\n"),
                                         ("cuda.shared.array(THREADS, float32)", "cuda.shared.array(THREADS, int32)")],
     "fraction dropped"),
    ("conv1d", "threads past the end store no cell", [(_CONV_FILL, "    if i < n:\n        tile[t + R] = x[i]\n")],
     "own tile cells past the end"),
    ("matvec_row", "adds into y[i] with no start", [("        acc = 0.0\n        for j in range(A.shape[1]):\n"
                                                    "            acc += A[i, j] * x[j]\n        y[i] = acc",
                                                    "        for j in range(A.shape[1]):\n            y[i] += A[i, j] * x[j]")],
     "output added into before set"),
    ("dot", "atomic into out[blockIdx.x]", [("cuda.atomic.add(out, 0, ", "cuda.atomic.add(out, cuda.blockIdx.x, ")],
     "one output for the grid, indexed by the block"),
    ("matvec_coalesced", "row from cuda.grid(1)", [("    row = cuda.blockIdx.x\n", "    row = cuda.grid(1)\n")],
     "row from the global index where a block has a row"),
    ("prefix_sum", "offset of the previous block only", [("        for k in range(cuda.blockIdx.x):  # the blocks before this one\n"
                                                          "            total += block_sums[k]\n",
                                                          "        if cuda.blockIdx.x > 0:\n"
                                                          "            total += block_sums[cuda.blockIdx.x - 1]\n")],
     "scan offset of the previous block only"),
    ("dot", "atomic for global thread 0 only", [("    if t == 0:\n", "    if cuda.grid(1) == 0:\n")],
     "the block's atomic behind a global test"),
    ("warp_reduce", "warp 0 reads a slot for every lane", [("v = warp_sums[lane] if lane < WARPS else float32(0.0)",
                                                             "v = warp_sums[lane]")],
     "warp slots read past the warps"),
    ("tiled_matmul", "product loop over K", [("        for k in range(TILE):", "        for k in range(A.shape[1]):")],
     "tile loop past the tile"),
]
