"""matvec_row: hidden tests."""
import numpy as np

from exercises import Case, randn
from kernels.spec import dot_tolerance

THREADS = 32


def cases(rng):
    out = []
    for rows, cols in ((1, 1), (45, 13), (13, 45), (70, 33)):
        A, x = randn(rng, (rows, cols)), randn(rng, cols)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        out.append(Case(f"{rows}x{cols}", [A, x], [((rows,), np.float32)], [ref],
                        [dot_tolerance(A, x, np.float32)], grid=(rows + THREADS - 1) // THREADS, block=THREADS))
    return out
