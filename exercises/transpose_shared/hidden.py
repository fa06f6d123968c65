"""transpose_shared: hidden tests (1x1, one row, wide and tall shapes that are not multiples of the
tile, one past a tile and a warp -1)."""
import numpy as np

from exercises import Case, randn

TILE, BLOCK_ROWS = 32, 8


def cases(rng):
    out = []
    for rows, cols in ((1, 1), (1, 33), (31, 33), (40, 9)):
        A = randn(rng, (rows, cols))
        grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
        out.append(Case(f"{rows}x{cols}", [A], [((cols, rows), np.float32)], [A.astype(np.float64).T],
                        [0.0], grid=grid, block=(TILE, BLOCK_ROWS)))
    return out
