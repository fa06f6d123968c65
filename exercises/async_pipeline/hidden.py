"""async_pipeline: hidden tests (one tile, ragged sizes, long K: many trips round the two buffers)."""
import numpy as np

from exercises import Case, and_drawn, randn, sum_hints, swapped_tile_product
from kernels.spec import dot_tolerance, plural

TILE = 8


def _diagnose(A, B, terms):
    def diagnose(outs, refs):
        out = np.asarray(outs[0], np.float64)
        if np.isnan(out).any():
            return ("NaN in C: a product read a buffer before its copy landed (the emulation poisons a buffer "
                    "from the copy's issue to its wait): cp_async_wait(1) after the commit of tile t + 1, then "
                    "cuda.syncthreads(), then the products; and a barrier after the products before the next "
                    "copy refills that buffer")
        return sum_hints(outs[0], refs[0], terms, block=TILE, what="dot product", unit="tile")
    return diagnose


def cases(rng):
    out = []
    for m, n, k in and_drawn(((1, 1, 1), (13, 19, 11), (8, 16, 24), (9, 7, 61)),
                             lambda: (int(rng.integers(2, 20)), int(rng.integers(2, 20)), int(rng.integers(2, 70)))):
        A, B = randn(rng, (m, k)), randn(rng, (k, n))
        ref = A.astype(np.float64) @ B.astype(np.float64)
        terms = A.astype(np.float64)[:, None, :] * B.astype(np.float64).T[None, :, :]
        out.append(Case(f"M={m} N={n} K={k} ({plural((k + TILE - 1) // TILE, 'tile')} along K)", [A, B],
                        [((m, n), np.float32)], [ref], [dot_tolerance(A, B, np.float32)],
                        grid=((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), block=(TILE, TILE),
                        diagnose=_diagnose(A, B, terms)))
    return out


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("tile product", lambda c: swapped_tile_product(c, TILE, "B"),
     "C is what the tile product gives with the B tile read as sB[tx, k] (flat: buffer + tx * TILE + k): its row and "
     "column are swapped in the product: thread (tx, ty) needs row k of the B tile at its own column tx, "
     "sB[buffer + k * TILE + tx]"),
    ("tile product", lambda c: swapped_tile_product(c, TILE, "A"),
     "C is what the tile product gives with the A tile read as sA[k, ty] (flat: buffer + k * TILE + ty): its row and "
     "column are swapped in the product: thread (tx, ty) needs its own row ty of the A tile, column k, "
     "sA[buffer + ty * TILE + k]"),
]
