"""matvec_coalesced: hidden tests."""
import numpy as np

from exercises import Case, randn
from kernels.spec import dot_tolerance


def cases(rng):
    out = []
    for rows, cols in ((1, 1), (5, 70), (9, 33), (3, 100)):
        A, x = randn(rng, (rows, cols)), randn(rng, cols)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        out.append(Case(f"{rows}x{cols}", [A, x], [((rows,), np.float32)], [ref],
                        [dot_tolerance(A, x, np.float32)], grid=rows, block=32))
    return out
