"""tiled_matmul: hidden tests."""
import numpy as np

from exercises import Case, and_drawn, randn, sum_hints, swapped_tile_product
from kernels.spec import dot_tolerance

TILE = 8  # the solution's tile (the hints name tiles of this size)


def cases(rng):
    out = []
    for m, n, k in and_drawn(((1, 1, 1), (13, 19, 11), (19, 9, 21), (8, 16, 24)),
                             lambda: tuple(int(v) for v in rng.integers(2, 25, size=3))):
        A, B = randn(rng, (m, k)), randn(rng, (k, n))
        ref = A.astype(np.float64) @ B.astype(np.float64)
        terms = A.astype(np.float64)[:, None, :] * B.astype(np.float64).T[None, :, :]  # [m, n, k]
        out.append(Case(f"M={m} N={n} K={k}", [A, B], [((m, n), np.float32)], [ref],
                        [dot_tolerance(A, B, np.float32)], launch_args=(m, n),
                        diagnose=lambda outs, refs, t=terms: sum_hints(outs[0], refs[0], t, block=TILE,
                                                                       what="dot product", unit="tile")))
    return out


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    *[("tile product", lambda c, t=t: swapped_tile_product(c, t, "B"),
       "C is what the tile product gives with sB[tx, k]: the B tile's row and column are swapped in the product: "
       "thread (tx, ty) needs row k of the B tile in its own column tx: acc += sA[ty, k] * sB[k, tx]")
      for t in (8, 16, 32)],
    *[("tile product", lambda c, t=t: swapped_tile_product(c, t, "A"),
       "C is what the tile product gives with sA[k, ty]: the A tile's row and column are swapped in the product: "
       "thread (tx, ty) needs its own row ty of the A tile, column k: acc += sA[ty, k] * sB[k, tx]")
      for t in (8, 16, 32)],
]
