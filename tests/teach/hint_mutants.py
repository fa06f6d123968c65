"""Issue 41's mutants: wrong kernels in styles unlike tests/teach/catalogue.py and mutants.py, one or
more per bug class the issue names (and a few more), each declaring the bug it was written to have.

Every entry: (exercise, label, subs, cls). ``subs``: (old, new) substitutions in the exercise's
solution.py (each ``old`` must be there). ``cls``: a key of :data:`CLASSES`, whose phrases a message
must all have to *name* that bug. A first failing message that has the phrases of another class
names another bug; one with neither describes only the symptom.

tests/teach/test_hint_accuracy.py runs them and prints the three shares.
"""

# bug class -> the phrases (all of them) of a message that names it
CLASSES = {
    "launch for another block size": ["launch()", "divides n by", "threads a block"],
    "launch divides by the wrong block dimension": ["launch()", "divides rows by", "along y"],
    "tree step without its thread test": ["tree step", "if t < s"],
    "scale direction": ["divide by the scale"],
    "clamp missing": ["clamp"],
    "k loop short": ["last k-step", "stops one step early"],
    "min/max identity": ["identit", "+inf"],
    "scan offset twice": ["offset", "twice"],
    "scan steps": ["scan", "step"],
    "softmax shift": ["row maximum"],
    "stride from the output": ["stride0", "out.shape"],
    "guard on the wrong array's shape": ["must test", "shape", "not A's"],
    "shuffle offset start": ["shuffle", "offsets run 16"],
    "one block does all": ["one block did all the work"],
    "halo guard": ["halo", "right < n"],
    "launch ignores the block size": ["returned blocks of", "asks for", "use the block size you are given"],
    "index for a per-block array": ["this array needs another index", "blockIdx.x"],
    "offset missing": ["every index", "offset missing"],
    "adds nothing": ["still holds its initial values", "atomic update", "is the value added the right one"],
    "hard-coded block stride": (["blockIdx.x", "blockDim"],
                                # the one difference from the reference, quoted (kernel_diff): a literal stride
                                ["blockIdx.x * 32", "where the reference has", "that is the bug"]),
    "min/max tree operator": ["tree combines with"],
    "zero point before the scale": ["added before dividing", "add it after dividing"],
    "zero point subtracted": ["zero point was subtracted"],
    "scan offset includes the block": ["own total", "blocks BEFORE it"],
    "index within the block": ["thread's index within its block", "global index"],
    "x and y swapped in a load index": ["uses cuda.threadIdx", "x and y swapped in this index"],
    "left halo unguarded": ["left halo", ">= 0"],
    "halo offset twice": ["halo offset subtracted twice"],
    "strides swapped": ["strides are swapped"],
    "strides assumed contiguous": ["taken as contiguous"],
    "mma tile base": ["tile's", "base", "a tile has"],
    "accumulator reset in the loop": ["accumulator is reset inside", "before the loop"],
    "K tiles rounded down": ["last, partial tile", "rounded down", "rounding up"],
    "grid stride by the block": ["steps by the block's size", "cuda.gridsize(1)"],
    "clamp bound": ["one past the largest", "the bound must be 255"],
    "halo never loaded": ["halo cells of the tile were never stored"],
    "loop step": ["the loop steps by 1 where it should step by 32"],
    "hard-coded block height": ["blockIdx.y", "blockDim.y"],
    "loop bound": ["first past the end", "a loop bound", "the bound must be shape[1]"],
    "guard against the other extent": ["compares the row with the number of columns"],
    "tree step order": ["step order and its thread test do not match"],
    "async wait after the barrier": ["lands in shared memory at cp_async_wait", "wait first"],
    "warp number": ["a warp's number is t // 32", "divide by 32"],
    "tile product indices swapped": ["row and column are swapped in the product"],
    "row from the thread index": ["this thread's index within its block", "cuda.blockIdx.x"],
    "transpose tile untransposed": ["untransposed inside the tile", "tile[tx, ty + j]"],
    "transpose blocks not swapped": ["at the block's own position", "swap roles"],
    # launch() rounds the number of blocks down: the last partial block missing, or a size smaller than a block
    # given no block at all; either said with the rule and launch()'s line
    # fresh4's minmax/w_tree_from_n: the values alone guessed the guard; the trace's loads say the last
    # element was loaded, so it was lost in the combine (lab.teach.values.last_loaded_words)
    "last element lost in the combine": ["is left out of the result, though", "loaded it", "the guard let it in",
                                         "half the block"],
    "blocks rounded down": (["round the number of blocks up", "your launch() at line "],
                            ["0 blocks", "rounding down", "(size + threads - 1) // threads", "(line "]),
    "transpose tile rows": ["tile rows 0..7", "tile[ty + j, tx]"],
    # fresh set 2's classes (issue 41, hints4)
    "guard drops the last index": ["drops the last index", "keep every i < n"],
    "tree stops one step early": ["even threads", "stops one step early"],
    "shuffle loop stops one step early": ["even lanes", "stops one step early"],
    "shuffle direction": ["shfl_up_sync", "lane 0 gets its own value back", "cuda.shfl_down_sync"],
    "own partial stored": ["thread 0's own partial alone", "the thread's own value, not the reduced value"],
    "tree adds the wrong way": ["thread 0's own partial alone", "never received the others' partials"],
    "every thread does the block's atomic": ["every thread of each block ran the atomic", "one thread do the block's atomic"],
    "shared cell never stored": (["before any thread of its block wrote it", "must be stored first"],
                                 ["before any thread of its block wrote it", "store a value there too"]),
    "atomics into each other's slots": ["each other's slots"],
    "a dimension not guarded": (["does not test the row"], ["tests the row with `<=`, or not at all"]),
    "guard compares with the other extent": (["compares the row with the number of columns"],
                                             ["compares the column with the number of rows"]),
    "sum loop step": ["sum loop steps by 1", "step by the block's size"],
    "row loop steps by less than the block": ["steps by less than the block's height"],
    "registers exchanged": ["are exchanged", "each register must hold"],
    "register holds another element": ["where the reference's a3 holds", "a second copy of a1's element"],
    "constant added": ["the expected value +", "adds a constant"],
    "serial shared reduction": ["right values", "read shared memory", "not one thread in a loop"],
    # (a tuple: any one of its phrase lists; which hidden case fails first decides the evidence, the data its words)
    "merge covers part": (["updates reached only", "covers only part of them"], ["bins 128..", "merges two bins"]),
}

_SCAN_OUT = "    if i < x.shape[0]:\n        out[i] = temp[t] + offset[0]"
_DOT_ONE_BLOCK = ("    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)\n",
                  "    if cuda.blockIdx.x != 0:\n        return\n    acc = float32(0.0)\n"
                  "    for j in range(t, a.shape[0], THREADS):\n        acc += a[j] * b[j]\n    cache[t] = acc\n")

MUTANTS = [
    # launch() evaluated: the block size it rounds for is not the one it returns
    ("vecadd", "rounds up for a hard-coded 256", [("    blocks = (n + threads - 1) // threads\n",
                                                   "    blocks = (n + 255) // 256\n")], "launch for another block size"),
    ("vecadd", "blocks from a constant 128, plus one", [("    blocks = (n + threads - 1) // threads\n",
                                                         "    blocks = n // 128 + 1\n")], "launch for another block size"),
    ("matrix_add_2d", "rows divided by the block's width", [("(rows + block[1] - 1) // block[1]", "(rows + block[0] - 1) // block[0]")],
     "launch divides by the wrong block dimension"),
    ("matrix_add_2d", "rows divided by a literal 16", [("(rows + block[1] - 1) // block[1]", "(rows + 15) // 16")],
     "launch divides by the wrong block dimension"),
    # reductions: which threads act at each step
    ("block_sum", "tree step guarded by t + s < THREADS", [("        if t < s:\n", "        if t + s < THREADS:\n")],
     "tree step without its thread test"),
    ("dot", "tree step for every thread", [("        if t < s:\n            cache[t] += cache[t + s]\n",
                                             "        if t + s < THREADS:\n            cache[t] = cache[t] + cache[t + s]\n")],
     "tree step without its thread test"),
    # quantize: scale direction, clamp
    ("quantize", "multiplies by the scale", [("x[i] / scale", "x[i] * scale")], "scale direction"),
    ("quantize", "scale inverted in a local", [("        v = x[i] / scale + zero_point\n",
                                                 "        inv = 1.0 / scale\n        v = x[i] / inv + zero_point\n")], "scale direction"),
    ("quantize", "no clamp", [("round(min(max(v, 0.0), 255.0))", "round(v) % 256")], "clamp missing"),
    # mma: the K loop one step short
    ("mma_fragment", "k loop stops one step early", [("range(0, A.shape[1], 8)", "range(0, A.shape[1] - 8, 8)")], "k loop short"),
    ("mma_fragment", "k steps counted down from K // 8 - 1", [("for k0 in range(0, A.shape[1], 8):", "for k0 in range(8 * (A.shape[1] // 8 - 1) - 8, -1, -8):")],
     "k loop short"),
    # min/max identities
    ("minmax", "identities swapped", [("        lo[t] = math.inf\n        hi[t] = -math.inf\n",
                                        "        lo[t] = -math.inf\n        hi[t] = math.inf\n")], "min/max identity"),
    ("minmax", "zero identities", [("        lo[t] = math.inf\n        hi[t] = -math.inf\n",
                                     "        lo[t] = 0.0\n        hi[t] = 0.0\n")], "min/max identity"),
    # scans: offsets and step order
    ("prefix_sum", "offset added into temp and again at the store", [(_SCAN_OUT, "    temp[t] += offset[0]\n" + _SCAN_OUT)],
     "scan offset twice"),
    ("prefix_sum", "scan stops at s = 16", [("    while s < THREADS:\n", "    while s < THREADS // 2:\n")], "scan steps"),
    ("prefix_sum", "neighbour read only for t > s", [("temp[t - s] if t >= s else 0", "temp[t - s] if t > s else 0")], "scan steps"),
    # softmax: the max shift
    ("softmax_fused", "shifted by the row's first element", [("    m = cache[0]\n    cuda.syncthreads()", "    m = x[r, 0]\n    cuda.syncthreads()")],
     "softmax shift"),
    ("softmax_fused", "max of the first 32 columns only", [("    for j in range(t, cols, THREADS):\n        m = max(m, x[r, j])\n",
                                                           "    if t < cols:\n        m = x[r, t]\n")], "softmax shift"),
    # strides
    ("strided_index", "row stride from the output's width", [("r * stride0", "r * out.shape[1]")], "stride from the output"),
    # transpose: the store guarded by A's shape
    ("transpose_shared", "store guarded by A's shape", [("        if y + j < cols and x < rows:\n", "        if y + j < rows and x < cols:\n")],
     "guard on the wrong array's shape"),
    # warp shuffles
    ("warp_reduce", "shuffle offsets start at 32", [("    offset = 16\n    while offset > 0:  # after", "    offset = 32\n    while offset > 0:  # after")],
     "shuffle offset start"),
    # conv1d: the right halo cell's guard
    ("conv1d", "right halo guarded with <=", [("x[right] if right < n else", "x[right] if right <= n else")], "halo guard"),
    ("conv1d", "right halo unguarded", [("x[right] if right < n else float32(0.0)", "x[right]")], "halo guard"),
    # mapping: one block does everything
    ("dot", "block 0 does the whole dot", [_DOT_ONE_BLOCK], "one block does all"),
    # issue 41's fresh-set classes (written here in styles of their own)
    ("vecadd", "launch() keeps its own 128 threads", [("    blocks = (n + threads - 1) // threads\n    return blocks, threads",
                                                       "    return (n + 127) // 128, 128")], "launch ignores the block size"),
    ("block_sum", "tree step with no thread test at all", [("        if t < s:\n            cache[t] += cache[t + s]\n",
                                                            "        cache[t] += cache[t + s]\n")],
     "tree step without its thread test"),
    ("block_sum", "partial stored at the global index", [("        partials[cuda.blockIdx.x] = cache[0]", "        partials[i] = cache[0]")],
     "index for a per-block array"),
    ("strided_index", "storage offset left out", [("storage[offset + r * stride0", "storage[r * stride0")], "offset missing"),
    ("histogram", "private counts incremented by 0", [("cuda.atomic.add(local, x[i], 1)", "cuda.atomic.add(local, x[i], 0)")],
     "adds nothing"),
    ("map_guard", "block offset from a literal 64", [("    i = cuda.grid(1)\n", "    i = 64 * cuda.blockIdx.x + cuda.threadIdx.x\n")],
     "hard-coded block stride"),
    # the second fresh set's classes (issue 41), in styles of their own
    ("minmax", "max tree keeps the smaller value", [("            hi[t] = max(hi[t], hi[t + s])\n",
                                                    "            if hi[t + s] < hi[t]:\n                hi[t] = hi[t + s]\n")],
     "min/max tree operator"),
    ("minmax", "min tree combined with max", [("lo[t] = min(lo[t], lo[t + s])", "lo[t] = max(lo[t], lo[t + s])")],
     "min/max tree operator"),
    ("quantize", "zero point inside the division", [("        v = x[i] / scale + zero_point\n",
                                                     "        v = (x[i] + zero_point) / scale\n")], "zero point before the scale"),
    ("quantize", "zero point negated in a local", [("        v = x[i] / scale + zero_point\n",
                                                    "        zp = -zero_point\n        v = x[i] / scale + zp\n")], "zero point subtracted"),
    ("prefix_sum", "offset loop runs to the block itself", [("for k in range(cuda.blockIdx.x):", "for k in range(cuda.blockIdx.x + 1):")],
     "scan offset includes the block"),
    ("warp_reduce", "both shuffle loops start at 32", [("    offset = 16\n    while offset > 0:  # after", "    offset = 32\n    while offset > 0:  # after"),
                                                       ("        offset = 16\n        while offset > 0:\n", "        offset = 32\n        while offset > 0:\n")],
     "shuffle offset start"),
    ("dot", "b read at the thread's slot", [("a[i] * b[i] if i", "a[i] * b[t] if i")], "index within the block"),
    ("vecadd", "a read at threadIdx.x", [("        c[i] = a[i] + b[i]\n", "        c[i] = a[cuda.threadIdx.x] + b[i]\n")],
     "index within the block"),
    ("tiled_matmul", "A's tile column from ty", [("        k_a = t * TILE + tx\n", "        k_a = t * TILE + ty\n")],
     "x and y swapped in a load index"),
    ("conv1d", "left halo read without its test", [("x[left] if left >= 0 and left < n else", "x[left] if left < n else")],
     "left halo unguarded"),
    ("conv1d", "window index shifted back by R", [("            acc += w[k] * tile[t + k]\n",
                                                   "            j = t + k - R\n            acc += w[k] * tile[j]\n")],
     "halo offset twice"),
    ("strided_index", "strides exchanged", [("r * stride0 + c * stride1", "c * stride0 + r * stride1")], "strides swapped"),
    ("strided_index", "row-major steps assumed", [("r * stride0 + c * stride1", "r * out.shape[1] + c")],
     "strides assumed contiguous"),
    ("softmax_fused", "max tree from a quarter of the block", [("    s = THREADS // 2\n    while s > 0:\n        if t < s:\n            cache[t] = max(",
                                                                "    s = THREADS // 4\n    while s > 0:\n        if t < s:\n            cache[t] = max(")],
     "softmax shift"),
    ("softmax_fused", "each thread keeps its own max", [("    m = cache[0]\n    cuda.syncthreads()  # everyone", "    cuda.syncthreads()  # everyone")],
     "softmax shift"),
    ("matvec_row", "sum restarted at each column", [("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n",
                                                     "        for j in range(A.shape[1]):\n            acc = A[i, j] * x[j]\n")],
     "accumulator reset in the loop"),
    ("matvec_coalesced", "lane sum restarted per column", [("    acc = float32(0.0)\n    for j in range(t, A.shape[1], WARP):\n        acc += A[row, j] * x[j]\n",
                                                           "    acc = float32(0.0)\n    for j in range(t, A.shape[1], WARP):\n        acc = float32(0.0)\n        acc += A[row, j] * x[j]\n")],
     "accumulator reset in the loop"),
    ("tiled_matmul", "K tiles counted by floor division", [("for t in range((K + TILE - 1) // TILE):", "for t in range(K // TILE):")],
     "K tiles rounded down"),
    ("async_pipeline", "K tiles counted with int()", [("    ntiles = (K + TILE - 1) // TILE\n", "    ntiles = int(K / TILE)\n")],
     "K tiles rounded down"),
    ("histogram", "grid-stride step of one block", [("x.shape[0], cuda.gridsize(1)):", "x.shape[0], cuda.blockDim.x):")],
     "grid stride by the block"),
    ("quantize", "clamped to 256", [("round(min(max(v, 0.0), 255.0))", "round(min(max(v, 0.0), 256.0))")], "clamp bound"),
    ("conv1d", "no halo cells loaded", [("    if t < R:  # the halo cells", "    if t < 0:  # the halo cells")], "halo never loaded"),
    ("matvec_coalesced", "lane loop steps by one column", [("for j in range(t, A.shape[1], WARP):", "for j in range(t, A.shape[1]):")],
     "loop step"),
    ("matrix_add_2d", "row index from a literal 16", [("    x, y = cuda.grid(2)\n",
                                                      "    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n"
                                                      "    y = cuda.threadIdx.y + 16 * cuda.blockIdx.y\n")], "hard-coded block height"),
    ("block_sum", "block offset from a literal 32", [("    i = cuda.grid(1)\n", "    i = cuda.blockIdx.x * 32 + t\n")],
     "hard-coded block stride"),
    ("matvec_row", "column loop over the rows", [("for j in range(A.shape[1]):", "for j in range(A.shape[0]):")], "loop bound"),
    ("matrix_add_2d", "guard with the extents exchanged", [("if y < C.shape[0] and x < C.shape[1]:", "if x < C.shape[0] and y < C.shape[1]:")],
     "guard against the other extent"),
    ("block_sum", "steps grow with the t < s test", [("    s = THREADS // 2\n    while s > 0:\n", "    s = 1\n    while s < THREADS:\n"),
                                                      ("        s //= 2\n", "        s *= 2\n")], "tree step order"),
    ("block_sum", "halving steps with the interleaved test", [("        if t < s:\n", "        if t % (2 * s) == 0:\n")],
     "tree step order"),
    ("async_pipeline", "wait placed after the barrier",
     [("        cp_async_wait(1)  # tile t has landed; tile t + 1's group may still be in flight\n"
       "        cuda.syncthreads()  # everyone's copies of tile t are visible\n",
       "        cuda.syncthreads()\n        cp_async_wait(1)\n")], "async wait after the barrier"),
    ("warp_reduce", "warp number from the number of warps", [("    warp = t // 32\n", "    warp = t // WARPS\n")], "warp number"),
    ("tiled_matmul", "B tile read across its row", [("acc += sA[ty, k] * sB[k, tx]", "acc += sB[tx, k] * sA[ty, k]")],
     "tile product indices swapped"),
    ("tiled_matmul", "A tile read down its column", [("acc += sA[ty, k] * sB[k, tx]", "acc += sA[k, ty] * sB[k, tx]")],
     "tile product indices swapped"),
    ("async_pipeline", "flat B tile index transposed", [("sB[base + k * TILE + tx]", "sB[base + tx * TILE + k]")],
     "tile product indices swapped"),
    ("matvec_coalesced", "row taken from the lane", [("acc += A[row, j] * x[j]", "acc += A[t, j] * x[j]")],
     "row from the thread index"),
    ("transpose_shared", "store reads the cell it loaded", [("out[y + j, x] = tile[tx, ty + j]", "out[y + j, x] = tile[ty + j, tx]")],
     "transpose tile untransposed"),
    ("transpose_shared", "store keeps the block's own position",
     [("    x = cuda.blockIdx.y * TILE + tx  # a column of out", "    x = cuda.blockIdx.x * TILE + tx  # a column of out"),
      ("    y = cuda.blockIdx.x * TILE + ty  # a row of out", "    y = cuda.blockIdx.y * TILE + ty  # a row of out")],
     "transpose blocks not swapped"),
    ("transpose_shared", "tile row without the pass", [("tile[ty + j, tx] = A[y + j, x]", "tile[ty, tx] = A[y + j, x]")],
     "transpose tile rows"),
    ("histogram", "merge of the first THREADS bins only", [("    for b in range(t, BINS, THREADS):\n        cuda.atomic.add(hist, b, local[b])",
                                                            "    cuda.atomic.add(hist, t, local[t])")], "merge covers part"),
    ("mma_fragment", "tile rows step by 8", [("r0 = 16 * cuda.blockIdx.y", "r0 = cuda.blockIdx.y * 8")], "mma tile base"),
    ("mma_fragment", "tile columns step by 16", [("c0 = 8 * cuda.blockIdx.x", "c0 = cuda.blockIdx.x << 4")], "mma tile base"),
    # fresh set 2's classes, in other styles than its files
    ("map_guard", "guard on i + 1", [("    if i < out.shape[0]:", "    if i + 1 < out.shape[0]:")], "guard drops the last index"),
    ("block_sum", "tree loop while s >= 2", [("    while s > 0:", "    while s >= 2:")], "tree stops one step early"),
    ("warp_reduce", "warp loop while offset > 1", [("    while offset > 0:  # after the loop", "    while offset > 1:  # after the loop")],
     "shuffle loop stops one step early"),
    ("warp_reduce", "shfl_up in both loops", [("cuda.shfl_down_sync(FULL_MASK, v, offset)", "cuda.shfl_up_sync(FULL_MASK, v, offset)")],
     "shuffle direction"),
    ("matvec_coalesced", "lane 0 stores its own acc", [("        y[row] = partial[0]", "        y[row] = acc")], "own partial stored"),
    ("block_sum", "tree adds the lower cell into the upper", [("            cache[t] += cache[t + s]", "            cache[t + s] += cache[t]")],
     "tree adds the wrong way"),
    ("dot", "atomic under t >= 0", [("    if t == 0:\n        cuda.atomic.add(out, 0, cache[0])",
                                     "    if t >= 0:\n        cuda.atomic.add(out, 0, cache[0])")], "every thread does the block's atomic"),
    ("dot", "products stored only in range", [("    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)",
                                               "    if i < a.shape[0]:\n        cache[t] = a[i] * b[i]")], "shared cell never stored"),
    ("minmax", "min and max slots exchanged", [("        cuda.atomic.min(out, 0, lo[0])\n        cuda.atomic.max(out, 1, hi[0])",
                                                 "        cuda.atomic.max(out, 0, hi[0])\n        cuda.atomic.min(out, 1, lo[0])")],
     "atomics into each other's slots"),
    ("matrix_add_2d", "guard on the column only", [("    if y < C.shape[0] and x < C.shape[1]:", "    if x < C.shape[1]:")],
     "a dimension not guarded"),
    ("strided_index", "guard extents exchanged (1-D storage)", [("    if r < out.shape[0] and c < out.shape[1]:",
                                                                 "    if c < out.shape[0] and r < out.shape[1]:")],
     "guard compares with the other extent"),
    ("softmax_fused", "sum loop stepping by one", [("    for j in range(t, cols, THREADS):\n        acc += math.exp(x[r, j] - m)",
                                                    "    j = t\n    while j < cols:\n        acc += math.exp(x[r, j] - m)\n        j += 1")],
     "sum loop step"),
    ("transpose_shared", "load loop over BLOCK_ROWS rows", [("    for j in range(0, TILE, BLOCK_ROWS):\n        if y + j < rows",
                                                            "    for j in range(BLOCK_ROWS):\n        if y + j < rows")],
     "row loop steps by less than the block"),
    ("mma_fragment", "b0 and b1 exchanged", [("b0 = B[k0 + q, c0 + g]", "b0 = B[k0 + 4 + q, c0 + g]"),
                                             ("b1 = B[k0 + q + 4, c0 + g]", "b1 = B[k0 + q, c0 + g]")], "registers exchanged"),
    ("mma_fragment", "a3 loaded like a1", [("a3 = A[r0 + g + 8, k0 + q + 4]", "a3 = A[8 + r0 + g, k0 + q]")],
     "register holds another element"),
    ("map_guard", "a constant of 1.5", [("out[i] = 2 * x[i] + 1", "out[i] = x[i] + x[i] + 1.5")], "constant added"),
    ("minmax", "the tree starts at half of min(n, THREADS)",
     [("    s = THREADS // 2\n", "    s = min(x.shape[0], THREADS) // 2\n")], "last element lost in the combine"),
    ("vecadd", "blocks rounded down, a small n gets none",
     [("    blocks = (n + threads - 1) // threads\n", "    blocks = n // threads\n")], "blocks rounded down"),
    ("matrix_add_2d", "grid x rounded down, y rounded up another way",
     [("    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
       "    grid = (cols // block[0], (rows - 1) // block[1] + 1)")], "blocks rounded down"),
    ("block_sum", "thread 0 adds the cells in a while loop",
     [("    s = THREADS // 2\n    while s > 0:\n        if t < s:\n            cache[t] += cache[t + s]\n"
       "        cuda.syncthreads()  # this level is complete before the next reads it\n        s //= 2\n"
       "    if t == 0:\n        partials[cuda.blockIdx.x] = cache[0]",
       "    if t == 0:\n        total = float32(0.0)\n        k = 0\n        while k < THREADS:\n            total += cache[k]\n"
       "            k += 1\n        partials[cuda.blockIdx.x] = total")], "serial shared reduction"),
]

# phrases of the checker's hints that name a bug (a class of their own, not one of CLASSES): a first
# message with one of these, and not the mutant's own phrases, names another bug
OTHER_HINTS = {
    "round the number of blocks up": "grid rounded down",
    "starts too large": "tree start",
    "clamp before converting": "conversion",
    "check the formula": "formula",
    "which element of A each a_i holds": "fragment mapping",
    "guard it": "missing guard",
    "swapped": "swapped indices",
    "read before initialised": "uninitialised read",
    "times the expected value": "repeated partial",
    "block offset": "block offset",
    "are x and y swapped": "swapped indices",
}


def _alternatives(phrases) -> list:
    """A class's phrase lists: one list, or a tuple of lists (any of them names the class)."""
    return list(phrases) if isinstance(phrases, tuple) else [phrases]


def classify(message: str, cls: str) -> str:
    """"named" (every phrase of ``cls``), "other" (a phrase of another class or hint), or "symptom"."""
    if any(all(p in message for p in ps) for ps in _alternatives(CLASSES[cls])):
        return "named"
    others = [ps for c, alt in CLASSES.items() if c != cls for ps in _alternatives(alt)] + [[p] for p in OTHER_HINTS]
    return "other" if any(all(p in message for p in ps) for ps in others) else "symptom"
