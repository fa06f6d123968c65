"""Issue 41, fifth fresh set's classes (hints7): wrong kernels whose first message told the student
something wrong (a fix that does not fit, a claim the code contradicts) or hedged where the evidence
decides, each a different variant of the fresh mistake, in the style of tests/teach/hint_mutants.py:
(exercise, label, subs, cls), ``cls`` a key of :data:`CLASSES` whose phrases (all of them) the first
failing message must have; :data:`AVOID`: phrases of the old wrong words it must not have.

tests/teach/test_hint_fresh5.py runs them (the first failing hidden test of each, in this process).
"""

CLASSES = {
    "load index is the lane": ["was read by 4 threads", "the index is the same in every warp", "cuda.threadIdx.x % 32"],
    "merge of one block only": ["only block 0 of the", "threads a block in that block", "every block runs the same merge"],
    "blocks counted from the other extent": ["counts the blocks along x from rows", "whatever the cols",
                                             "count them from cols"],
    "store inside the loop, no running sum": ["is its last term only", "stored it 13 times", "never added up"],
    "block offset by the block's threads, not its tile": ["moves by 8 from one block to the next along y",
                                                          "the reference's by 32", "blocks overlap or leave gaps"],
    "load and store fused in one loop": ["inside the loop at line", "a cell that another thread stores at a later pass",
                                         "one loop that fills tile, then one cuda.syncthreads()"],
    "no barrier closing the tile loop": ["nothing orders one pass's reads", "end the loop's body with a second"],
    "block offset by the grid's size": ["multiplies blockIdx.x by", "not by the block's size"],
    "guard by equality": ["your guard at line", "tests equality", "`if i >= n: return`"],
    "halo cell from another element": ["into tile[t+THREADS+R]", "where the reference solution's same thread"],
    "elements of the next block taken in": (["which the reference solution's block 0 never reads", "is made of other elements"],
                                            ["threads of block 0", "reads each of its elements once", "enters"],
                                            # a case of one block (n=64): no next block, the overlap of two loads
                                            ["was read by 2 threads", "through different loads",
                                             "each element needs one reader"]),
    "several lanes store the block's result": ["was stored by 32 threads", "stores each element of partials from one thread",
                                               "let one thread store it"],
    "halo test leaves a thread out": ["was never stored before it was read", "is false for t = 2"],
    # (where the first access past the end comes before any load that differs from the reference's, the hedge on
    # the bound and kernel_diff's one difference name it: the seed decides which comes first)
    "load column from threadIdx.y, no guard missing": (["x and y swapped in this index"],
                                                        ["where the reference has `cuda.blockIdx.x * TILE + tx`: that is the bug"]),
    # (on some seeds the first access past the end comes first, and the loads beside the reference's name the wrong
    # origin without the axes: seed 1185539385)
    "tile origins from the exchanged block axes": (["the block's x and y are exchanged in this index"],
                                                   ["the index is wrong: the reference solution, run on this case",
                                                    "where the reference's a0 holds"]),
}

# the words each class used to get, wrong for it
AVOID = {
    "load index is the lane": ["read the same slot"],
    "merge of one block only": ["if cuda.threadIdx.x == 0"],
    "blocks counted from the other extent": ["round the number of blocks up"],
    "store inside the loop, no running sum": ["the accumulator is reset"],
    "block offset by the block's threads, not its tile": ["x and y are exchanged"],
    "load and store fused in one loop": ["add one between writing shared memory"],
    "no barrier closing the tile loop": ["add one between writing shared memory", "split"],
    "block offset by the grid's size": ["every block repeats the whole loop"],
    "guard by equality": [],
    "halo cell from another element": ["are the halo cells loaded"],
    "elements of the next block taken in": ["or one added twice?"],
    "several lanes store the block's result": ["or one added more than once?"],
    "halo test leaves a thread out": ["or 0/0, inf/inf"],
    "load column from threadIdx.y, no guard missing": ["nothing tested its", "and the guard let it through"],
    "tile origins from the exchanged block axes": ["a loop bound, a stride or an offset runs past the end?",
                                                   "multiplies cuda.blockIdx"],
}

MUTANTS = [
    ("warp_reduce", "load index from the lane, written inline",
     [("    i = cuda.grid(1)\n", "    i = cuda.blockIdx.x * cuda.blockDim.x + t % 32\n")],
     "load index is the lane"),
    ("histogram", "merge behind a test on the global index",
     [("    for b in range(t, BINS, THREADS):\n        cuda.atomic.add(hist, b, local[b])",
       "    if cuda.grid(1) < THREADS:\n        for b in range(t, BINS, THREADS):\n            cuda.atomic.add(hist, b, local[b])")],
     "merge of one block only"),
    ("matrix_add_2d", "grid x counted from the rows",
     [("    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
       "    gx = -(-rows // block[0])\n    gy = -(-rows // block[1])\n    grid = (gx, gy)")],
     "blocks counted from the other extent"),
    ("matvec_row", "the product stored at every step of a while loop",
     [("        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
       "        j = 0\n        while j < A.shape[1]:\n            term = x[j] * A[i, j]\n            y[i] = term\n"
       "            j += 1")],
     "store inside the loop, no running sum"),
    ("transpose_shared", "tile row from the block's thread rows",
     [("    y = cuda.blockIdx.y * TILE + ty  # a row of A\n", "    y = cuda.blockIdx.y * BLOCK_ROWS + ty\n")],
     "block offset by the block's threads, not its tile"),
    ("transpose_shared", "load and store in one while loop",
     [("    for j in range(0, TILE, BLOCK_ROWS):\n        if y + j < rows and x < cols:\n            tile[ty + j, tx] = A[y + j, x]\n"
       "    cuda.syncthreads()  # the whole tile is loaded before anyone reads a column of it\n"
       "    x = cuda.blockIdx.y * TILE + tx  # a column of out = a row of A\n"
       "    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A\n"
       "    for j in range(0, TILE, BLOCK_ROWS):\n        if y + j < cols and x < rows:\n            out[y + j, x] = tile[tx, ty + j]",
       "    ox = cuda.blockIdx.y * TILE + tx\n    oy = cuda.blockIdx.x * TILE + ty\n    j = 0\n    while j < TILE:\n"
       "        if y + j < rows and x < cols:\n            tile[ty + j, tx] = A[y + j, x]\n        cuda.syncthreads()\n"
       "        if oy + j < cols and ox < rows:\n            out[oy + j, ox] = tile[tx, ty + j]\n        j += BLOCK_ROWS")],
     "load and store fused in one loop"),
    ("tiled_matmul", "no barrier after the products",
     [("            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()  # everyone is done with the tiles before the next "
       "loads overwrite them\n", "            acc += sA[ty, k] * sB[k, tx]\n")],
     "no barrier closing the tile loop"),
    ("quantize", "block offset from the grid's size",
     [("    i = cuda.grid(1)\n", "    i = cuda.threadIdx.x + cuda.gridDim.x * cuda.blockIdx.x\n")],
     "block offset by the grid's size"),
    ("map_guard", "work under a != test",
     [("    if i < out.shape[0]:\n", "    if out.shape[0] != i:\n")],
     "guard by equality"),
    ("conv1d", "right halo from one element early, inline",
     [("        right = i + THREADS\n        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n",
       "        if i + THREADS - 1 < n:\n            tile[t + THREADS + R] = x[i + THREADS - 1]\n        else:\n"
       "            tile[t + THREADS + R] = 0.0\n")],
     "halo cell from another element"),
    ("block_sum", "each thread adds its right neighbour in the load",
     [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n",
       "    cache[t] = 0.0\n    if i < x.shape[0]:\n        cache[t] = x[i]\n    if i + 1 < x.shape[0]:\n"
       "        cache[t] = cache[t] + x[i + 1]\n")],
     "elements of the next block taken in"),
    ("warp_reduce", "the threads below 32 store the result",
     [("        if lane == 0:\n            partials[cuda.blockIdx.x] = v", "        if t < 32:\n"
       "            partials[cuda.blockIdx.x] = v")],
     "several lanes store the block's result"),
    ("conv1d", "right halo under its own test, one thread short",
     [("        right = i + THREADS\n", "    if t <= R - 2:\n        right = i + THREADS\n")],
     "halo test leaves a thread out"),
    ("map_guard", "block offset of half a block",
     [("    i = cuda.grid(1)\n", "    i = cuda.threadIdx.x + 16 * cuda.blockIdx.x\n")],
     "block offset by the grid's size"),
    ("tiled_matmul", "B's column from threadIdx.y, the guard on the right column",
     [("        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)\n",
       "        if k_b < K and col < N:\n            sB[ty, tx] = B[k_b, cuda.blockIdx.x * cuda.blockDim.x + ty]\n"
       "        else:\n            sB[ty, tx] = 0.0\n")],
     "load column from threadIdx.y, no guard missing"),
    ("mma_fragment", "tile origins from the other block axis, spelled with blockDim",
     [("    r0 = 16 * cuda.blockIdx.y\n    c0 = 8 * cuda.blockIdx.x\n",
       "    bx, by = cuda.blockIdx.x, cuda.blockIdx.y\n    c0 = by * 8\n    r0 = bx * 16\n")],
     "tile origins from the exchanged block axes"),
]
