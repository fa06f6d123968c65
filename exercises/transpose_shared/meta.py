"""transpose_shared: metadata, statement and hints."""
TITLE = "Matrix transpose through a shared-memory tile"
DIFFICULTY = 3
PREREQUISITES = ["matrix_add_2d", "tiled_matmul"]
MIRRORS = "kernels/transpose.py"  # the same three rungs (the NVIDIA blog's transposeCoalesced)
KERNEL = "transpose_kernel"
LAUNCH = None
LESSON = "coalesced"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
transpose_shared: out = A.T for a row-major float32 A[rows, cols] (out is float32[cols, rows]),
with both the reads of A and the writes of out coalesced: a block copies a TILE x TILE tile
(TILE = 32) of A into shared memory row by row, synchronises, then writes the tile's transpose to
out row by row, reading the shared tile column by column.

Blocks are (TILE, BLOCK_ROWS) = (32, 8) threads: thread (tx, ty) handles the tile rows ty, ty + 8,
ty + 16, ty + 24 (a loop j in range(0, TILE, BLOCK_ROWS)). Block (bx, by) loads A[by*TILE + ty + j,
bx*TILE + tx] into tile[ty + j, tx], and stores tile[tx, ty + j] into out[bx*TILE + ty + j,
by*TILE + tx]: the block indices swap between the load and the store.

The checker launches grid (ceil(cols / 32), ceil(rows / 32)) of (32, 8) threads.

Pitfalls: a barrier between the loads and the stores (threads read what other threads loaded);
guard the loads against A's shape and the stores against out's shape (rows, cols all differ and are
not multiples of 32); swap the block indices for the store. Declaring the tile (TILE, TILE + 1)
pads each row by one float so that a column of the tile falls in 32 different shared-memory banks:
without it, reading a column is a 32-way bank conflict. That costs speed, not correctness.
(Sources: NVIDIA blog "An Efficient Matrix Transpose in CUDA C/C++" (M. Harris); NVIDIA blog
"Using Shared Memory in CUDA C/C++"; CUDA C++ Programming Guide, "Shared Memory" (bank conflicts).)
"""
HINTS = [
    "Load: x = bx*TILE + tx, y = by*TILE + ty; for j in range(0, TILE, BLOCK_ROWS): if y + j < rows and x < cols: tile[ty + j, tx] = A[y + j, x].",
    "cuda.syncthreads() — then the store's indices swap the blocks: x = by*TILE + tx (a column of out, i.e. a row of A), y = bx*TILE + ty.",
    "for j in range(0, TILE, BLOCK_ROWS): if y + j < cols and x < rows: out[y + j, x] = tile[tx, ty + j] (the tile read column-wise).",
]
PASS_PCT_OF_REFERENCE = 70  # --bench: the student's kernel reaches at least 70% of the reference's speed
PEAK = "copy"               # memory-bound: % of the copy bandwidth
