"""transpose_shared: out = A.T through a padded shared-memory tile (coalesced reads and writes)."""
from numba import cuda, float32

TILE = 32
BLOCK_ROWS = 8
PADDED = TILE + 1  # a tile row is 33 floats: a column of the tile spans 32 different banks


@cuda.jit
def transpose_kernel(A, out):
    """out[c, r] = A[r, c]; A float32[rows, cols], out float32[cols, rows]. Block (bx, by) of
    (TILE, BLOCK_ROWS) threads moves the TILE x TILE tile at A[by*TILE.., bx*TILE..]; each thread
    copies TILE / BLOCK_ROWS elements in and out. Consecutive tx read consecutive columns of A and
    write consecutive columns of out (both coalesced); the +1 column of padding puts a tile column
    in 32 different banks."""
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = A.shape
    x = cuda.blockIdx.x * TILE + tx  # a column of A
    y = cuda.blockIdx.y * TILE + ty  # a row of A
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < rows and x < cols:
            tile[ty + j, tx] = A[y + j, x]
    cuda.syncthreads()  # the whole tile is loaded before anyone reads a column of it
    x = cuda.blockIdx.y * TILE + tx  # a column of out = a row of A
    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < cols and x < rows:
            out[y + j, x] = tile[tx, ty + j]
