"""transpose_shared: out = A.T through a shared-memory tile (coalesced reads and writes).

Run the visible example: python test_transpose_shared.py. Check: lab exercise check transpose_shared.
"""
from numba import cuda, float32

TILE = 32
BLOCK_ROWS = 8
PADDED = TILE + 1  # a tile row is 33 floats: a column of the tile spans 32 different banks


@cuda.jit
def transpose_kernel(A, out):
    """out[c, r] = A[r, c]; A float32[rows, cols], out float32[cols, rows].

    Launch: grid (ceil(cols / TILE), ceil(rows / TILE)) of (TILE, BLOCK_ROWS) threads. Block (bx, by)
    moves the tile A[by*TILE : by*TILE + TILE, bx*TILE : bx*TILE + TILE] through shared memory;
    thread (tx, ty) copies rows ty, ty + BLOCK_ROWS, ... of the tile in, and of its transpose out.
    """
    tile = cuda.shared.array((TILE, PADDED), float32)  # noqa: F841
    # TODO: roughly 12 lines (load loop, cuda.syncthreads(), store loop with the blocks swapped)
