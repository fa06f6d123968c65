"""Issue 41, sixth fresh set's classes (hints8): wrong kernels whose first message only showed the symptom
or told the student something wrong, each in two spellings that are not the fresh set's text, in the style of
tests/teach/hint_mutants7.py: (exercise, label, subs, cls), ``cls`` a key of :data:`CLASSES` whose phrases
(all of them; a tuple: any one list) the first failing message must have; :data:`AVOID`: phrases of the old
words it must not have.

tests/teach/test_hint_fresh6.py runs them (the first failing hidden test of each, in this process).
"""

CLASSES = {
    "shared store index without the thread": ["does not depend on the thread", "stores the one cell",
                                              "add the thread's own index"],
    "shared store index equal for the storing threads": ["has the same value (0) for both threads",
                                                         "names of your kernel tell them apart", "warp = "],
    "two stores of one array in another order": ["the same indices in another order",
                                                 "index both stores in the same order"],
    "first tile's copies not committed": ["are not committed before it", "call cp_async_commit() right after"],
    "wait leaving two groups in flight": ["groups are still in flight", "cp_async_wait(1) (only the next tile's"],
    "max sent to the min's slot": ["where the reference has `1`: that is the bug"],
    # (a thread past both edges reads at an offset from its own index: the guard's `<` not `<=` said without the line)
    "2-D early return on > for >=": (["lets through the index equal to the bound", "`>=` (return when the index"],
                                     ["past the output, and still made this access", "it lets it through"]),
    "fragment row past B, no guard anywhere": ["read B[", "outside its shape (8, 8)"],
    "block count from another division": ["fewer than even", "divides something else than the elements",
                                          "round the number of blocks up: ("],
}

# the words each class used to get, wrong for it
AVOID = {
    "shared store index without the thread": ["a halo cell or an offset that lands"],
    "shared store index equal for the storing threads": ["a halo cell or an offset that lands"],
    "two stores of one array in another order": ["a halo cell or an offset that lands"],
    "first tile's copies not committed": ["then cuda.syncthreads(), then the products; and a barrier"],
    "wait leaving two groups in flight": ["then cuda.syncthreads(), then the products; and a barrier"],
    "max sent to the min's slot": ["the max's tree combines with min"],
    "2-D early return on > for >=": ["nothing tested its", "the strides are swapped"],
    "fragment row past B, no guard anywhere": ["must test B's shape", "not A's"],
    "block count from another division": [],
}

MUTANTS = [
    ("conv1d", "right halo stored at one fixed cell",
     [("        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n",
       "        tile[WIDTH - R] = x[right] if right < n else float32(0.0)\n")],
     "shared store index without the thread"),
    ("conv1d", "left halo stored at cell 0 by every halo thread",
     [("        tile[t] = x[left] if left >= 0 and left < n else float32(0.0)\n",
       "        first = 0\n        tile[first] = x[left] if left >= 0 and left < n else float32(0.0)\n")],
     "shared store index without the thread"),
    ("warp_reduce", "warp slot indexed by the lane",
     [("        warp_sums[warp] = v\n", "        warp_sums[lane] = v\n")],
     "shared store index equal for the storing threads"),
    ("warp_reduce", "warp slot indexed by t % 32 inline",
     [("        warp_sums[warp] = v\n", "        warp_sums[cuda.threadIdx.x % 32] = v\n")],
     "shared store index equal for the storing threads"),
    ("tiled_matmul", "A's tile stored transposed, the padding not",
     [("        sA[ty, tx] = A[row, k_a] if row < M and k_a < K else float32(0.0)\n",
       "        if row < M and k_a < K:\n            sA[tx, ty] = A[row, k_a]\n        else:\n            sA[ty, tx] = 0.0\n")],
     "two stores of one array in another order"),
    ("tiled_matmul", "B's padding stored transposed",
     [("        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)\n",
       "        if k_b >= K or col >= N:\n            sB[tx, ty] = float32(0.0)\n        else:\n"
       "            sB[ty, tx] = B[k_b, col]\n")],
     "two stores of one array in another order"),
    ("async_pipeline", "tile 0 issued, its commit left out",
     [("    cp_async_commit()\n    acc = float32(0.0)\n", "    acc = float32(0.0)\n")],
     "first tile's copies not committed"),
    ("async_pipeline", "tile 0's commit moved into the loop's end",
     [("    cp_async_commit()\n    acc = float32(0.0)\n", "    acc = float32(0.0)\n"),
      ("        cuda.syncthreads()  # everyone is done with this buffer before tile t + 2 is copied into it\n",
       "        cuda.syncthreads()  # everyone is done with this buffer before tile t + 2 is copied into it\n"
       "        cp_async_commit()\n")],
     "first tile's copies not committed"),
    ("async_pipeline", "wait for all but three groups",
     [("        cp_async_wait(1)", "        cp_async_wait(3)")],
     "wait leaving two groups in flight"),
    ("async_pipeline", "wait for all but two groups",
     [("        cp_async_wait(1)", "        cp_async_wait(2)")],
     "wait leaving two groups in flight"),
    ("minmax", "max into slot 0",
     [("        cuda.atomic.max(out, 1, hi[0])", "        cuda.atomic.max(out, 0, hi[0])")],
     "max sent to the min's slot"),
    ("minmax", "max into slot 0 through a name",
     [("        cuda.atomic.max(out, 1, hi[0])", "        slot = 0\n        cuda.atomic.max(out, slot, hi[0])")],
     "max sent to the min's slot"),
    ("matrix_add_2d", "two early returns, the row's on >",
     [("    if y < C.shape[0] and x < C.shape[1]:\n        C[y, x] = A[y, x] + 2 * B[y, x]",
       "    if x >= C.shape[1]:\n        return\n    if y > C.shape[0]:\n        return\n    C[y, x] = A[y, x] + 2 * B[y, x]")],
     "2-D early return on > for >="),
    ("strided_index", "one early return on > for both",
     [("    if r < out.shape[0] and c < out.shape[1]:\n        out[r, c] = storage[offset + r * stride0 + c * stride1]",
       "    nr, nc = out.shape\n    if r > nr or c > nc:\n        return\n    out[r, c] = storage[offset + r * stride0 + c * stride1]")],
     "2-D early return on > for >="),
    ("mma_fragment", "b1 eight rows down",
     [("        b1 = B[k0 + q + 4, c0 + g]", "        b1 = B[k0 + q + 8, c0 + g]")],
     "fragment row past B, no guard anywhere"),
    ("mma_fragment", "b0 from the row of the next step",
     [("        b0 = B[k0 + q, c0 + g]", "        kb = k0 + 8\n        b0 = B[kb + q, c0 + g]")],
     "fragment row past B, no guard anywhere"),
    ("vecadd", "blocks from the threads over n",
     [("    blocks = (n + threads - 1) // threads\n", "    blocks = -(-threads // n)\n")],
     "block count from another division"),
    ("vecadd", "blocks from the square root of n",
     [("    blocks = (n + threads - 1) // threads\n", "    blocks = max(1, int(n ** 0.5) // threads)\n")],
     "block count from another division"),
]
