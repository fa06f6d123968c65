"""async_pipeline: metadata, statement and hints."""
TITLE = "Asynchronous copies: a double-buffered tiled matmul"
DIFFICULTY = 5
PREREQUISITES = ["tiled_matmul"]
MIRRORS = "kernels/matmul.py"  # its rung async_copy (kernels/gemm/async_copy.py)
KERNEL = "pipeline_kernel"
LAUNCH = None
# each element of A and B is copied into shared memory once per block, and the copy of tile t + 1 is
# in flight while the block multiplies tile t (lab.teach.lessons)
LESSON = ("shared_reuse", "async_overlap")
STATEMENT = """
async_pipeline: C = A @ B for row-major float32 A[M, K], B[K, N], C[M, N] in TILE x TILE tiles
(TILE = 8), as in tiled_matmul, but the tiles travel by asynchronous copies (cp.async) into TWO
shared buffers, so the copy of tile t + 1 is in flight while the block multiplies tile t. Block
(bx, by) of (TILE, TILE) threads computes the tile of C at rows by*TILE.., columns bx*TILE..; thread
(tx, ty) computes C[by*TILE + ty, bx*TILE + tx] and copies one element of each tile of A and B:

    cp_async4(sA, buf*TILE*TILE + ty*TILE + tx, A, row, t*TILE + tx, 1 if inside A else 0)
    cp_async4(sB, buf*TILE*TILE + ty*TILE + tx, B, t*TILE + ty, col, 1 if inside B else 0)

(count 0 writes a zero and reads nothing). cp_async_commit() closes the copies issued so far into
a group; cp_async_wait(n) returns when at most n of this thread's groups are still in flight. Only
then are this thread's copies complete, and only after a cuda.syncthreads() that follows the wait
may other threads read them. The loop, for t in range(ceil(K / TILE)):

    issue tile t + 1 (if any) into buffer (t + 1) % 2; commit
    wait until tile t has landed (one group, tile t + 1's, may stay in flight); syncthreads
    multiply buffer t % 2; syncthreads (tile t + 2 will overwrite this buffer)

with tile 0 issued and committed before the loop. The checker launches grid (ceil(N / TILE),
ceil(M / TILE)), block (TILE, TILE).

Pitfalls: a read before the wait reads whatever was there (the simulator's emulation writes a
poison when a copy is issued and the value at its wait); the wait must come before the barrier, not
after it; cp_async_wait(1) must come after the commit of tile t + 1 (before it, tile t's group is
the newest and may stay in flight); without the barrier after the products, a fast thread refills a
buffer its neighbours still read. Commit a group every iteration, even an empty one at the end, so
"one group may stay in flight" always means tile t + 1's.
The overlap is the exercise: right values with no copy in flight while the block reads shared
memory (one buffer waited for with cp_async_wait(0) before every tile's products, or the copy of
tile t + 1 issued, or waited for, before the products of tile t start), or plain loads into shared
memory with no cp_async4 at all, fail (the simulator's emulation counts the copies and the shared
reads made with copies in flight; with a single tile along K there is nothing to overlap).
(Sources: CUDA C++ Programming Guide, "Asynchronous Data Copies" (the two-stage pipeline); PTX ISA,
"cp.async", "cp.async.commit_group", "cp.async.wait_group"; kernels/gemm/async_copy.py.)
"""
HINTS = [
    "row = by*TILE + ty, col = bx*TILE + tx; ntiles = (K + TILE - 1) // TILE; write a small helper or two lines that issue tile t into buffer buf, and issue tile 0 + cp_async_commit() before the loop.",
    "In the loop: if t + 1 < ntiles: issue tile t + 1 into buffer (t + 1) % 2; then cp_async_commit(); cp_async_wait(1); cuda.syncthreads().",
    "base = (t % 2) * TILE * TILE; for k in range(TILE): acc += sA[base + ty*TILE + k] * sB[base + k*TILE + tx]; cuda.syncthreads(); after the loop: if row < M and col < N: C[row, col] = acc.",
]
PASS_PCT_OF_REFERENCE = 50
PEAK = "fp32"
ONE_WRITER = True
