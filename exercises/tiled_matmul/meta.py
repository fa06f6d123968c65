"""tiled_matmul: metadata, statement and hints."""
TITLE = "Tiled matmul in shared memory"
DIFFICULTY = 4
PREREQUISITES = ["matrix_add_2d", "block_sum"]
MIRRORS = "kernels/matmul.py"
KERNEL = "matmul_kernel"
LAUNCH = "launch"
LESSON = "shared_reuse"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 50  # 50, not 70: tile loops compile less predictably than a map; within 2x of the reference's TILE=8 is the lesson
PEAK = "fp32"  # --bench reports % of the FP32 peak (compute-bound)
RUNG = "matmul:shared"  # the kernels/ rung timed beside it (kernel:variant)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
tiled_matmul: C = A @ B for row-major float32 A[M, K], B[K, N], C[M, N], in TILE x TILE tiles
(TILE = 8). Block (bx, by) computes the tile of C at rows by*TILE.., columns bx*TILE..; thread
(tx, ty) = threadIdx computes C[by*TILE + ty, bx*TILE + tx]. For each of the ceil(K / TILE) tiles
along K: the block loads a tile of A and a tile of B into shared memory (0.0 outside the matrices),
synchronises, multiplies the tiles, synchronises again, then moves on. Each element of A and B is
read from global memory once per tile instead of once per output.

Write launch(M, N) -> (grid, block): block (TILE, TILE), grid (ceil(N / TILE), ceil(M / TILE)).

Pitfalls: TWO barriers per tile (after the loads: others read what you loaded; after the products:
the next loads overwrite what others still read) — GPU-Puzzles' tiled matmul famously passed without
them; round the tile count up; guard the loads and the final store; M, N, K all differ. A thread reads
only tile cells stored in that step: pad with 0.0 (or keep threads outside C out of the product loop);
a read of a cell nobody stored is reported even when its value is thrown away.
(Source: CUDA C++ Programming Guide, "Shared Memory" (the tiled matrix multiplication example);
kernels/matmul.py.)
"""
HINTS = [
    "row = by*TILE + ty, col = bx*TILE + tx. Loop t over range((K + TILE - 1) // TILE).",
    "sA[ty, tx] = A[row, t*TILE + tx] if in range else 0.0; sB[ty, tx] = B[t*TILE + ty, col] if in range else 0.0; cuda.syncthreads()",
    "for k in range(TILE): acc += sA[ty, k] * sB[k, tx]; cuda.syncthreads() — and after the loop: if row < M and col < N: C[row, col] = acc.",
]
