"""transpose_shared: hidden tests (1x1, one row, wide and tall shapes that are not multiples of the
tile, one past a tile and a warp -1)."""
import numpy as np

from exercises import Case, and_drawn, randn

TILE, BLOCK_ROWS = 32, 8


def cases(rng):
    out = []
    for rows, cols in and_drawn(((1, 1), (1, 33), (31, 33), (40, 9)),
                                lambda: (int(rng.integers(2, 50)), int(rng.integers(2, 50)))):
        A = randn(rng, (rows, cols))
        grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
        out.append(Case(f"{rows}x{cols}", [A], [((cols, rows), np.float32)], [A.astype(np.float64).T],
                        [0.0], grid=grid, block=(TILE, BLOCK_ROWS)))
    return out


def _moved(case, source):
    """out when element out[R, C] holds A[source(R, C)] (NaN where that is None or outside A: a tile cell
    nobody stored, an element nobody wrote)."""
    A = np.asarray(case.args[0], np.float64)
    rows, cols = A.shape
    out = np.full((cols, rows), np.nan)
    for R in range(cols):
        for C in range(rows):
            at = source(R, C, rows, cols)
            if at is not None and 0 <= at[0] < rows and 0 <= at[1] < cols:
                out[R, C] = A[at]
    return [out]


def _rows_without_j(R, C, rows, cols):
    """The tile loaded with tile[ty, tx] (no + j): row p < BLOCK_ROWS of the tile holds the last row
    p + j of A's tile in bounds, the other rows were never stored; the store reads tile[tx, ty + j]."""
    p, q, r0, c0 = C % TILE, R % TILE, (C // TILE) * TILE, (R // TILE) * TILE
    if p >= BLOCK_ROWS:
        return None
    js = [j for j in range(0, TILE, BLOCK_ROWS) if r0 + p + j < rows]
    return (r0 + p + js[-1], c0 + q) if js else None


def _grid_covers(R, C, rows, cols):
    return R < -(-rows // TILE) * TILE and C < -(-cols // TILE) * TILE


def _untransposed(R, C, rows, cols):
    """The store reads tile[ty + j, tx]: out's tile (bx, by) holds A's tile (by, bx) untransposed."""
    return (C // TILE) * TILE + R % TILE, (R // TILE) * TILE + C % TILE


def _in_place(R, C, rows, cols):
    """The store keeps the block's own (bx, by): A's tile transposed at A's own tile position."""
    if not _grid_covers(R, C, rows, cols):
        return None
    return (R // TILE) * TILE + C % TILE, (C // TILE) * TILE + R % TILE


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("tile transposed", lambda c: _moved(c, _untransposed),
     "out holds each tile's elements untransposed inside the tile (the blocks move, their contents do not turn): "
     "the store reads tile[ty + j, tx], the cell the thread itself loaded: read across, tile[tx, ty + j], so that "
     "the tile is transposed as it is written out"),
    ("block swap", lambda c: _moved(c, _in_place),
     "out holds A's tiles transposed in place, each at the block's own position, not at the mirrored one: for the "
     "store the block's indices swap roles: out's column comes from cuda.blockIdx.y * TILE + tx and its row from "
     "cuda.blockIdx.x * TILE + ty + j (tile (bx, by) of A is tile (by, bx) of out)"),
    ("tile rows", lambda c: _moved(c, _rows_without_j),
     f"out holds only tile rows 0..{BLOCK_ROWS - 1} of each tile, each the last row p + j that the loop loaded: "
     f"the load stores tile[ty, tx] for every j, so each pass overwrites the last: store tile[ty + j, tx] (each "
     f"thread loads TILE / BLOCK_ROWS rows of the tile, one a pass)"),
]
