"""tiled_matmul: hidden tests."""
import numpy as np

from exercises import Case, randn, sum_hints
from kernels.spec import dot_tolerance

TILE = 8  # the solution's tile (the hints name tiles of this size)


def cases(rng):
    out = []
    for m, n, k in ((1, 1, 1), (13, 19, 11), (19, 9, 21), (8, 16, 24)):
        A, B = randn(rng, (m, k)), randn(rng, (k, n))
        ref = A.astype(np.float64) @ B.astype(np.float64)
        terms = A.astype(np.float64)[:, None, :] * B.astype(np.float64).T[None, :, :]  # [m, n, k]
        out.append(Case(f"M={m} N={n} K={k}", [A, B], [((m, n), np.float32)], [ref],
                        [dot_tolerance(A, B, np.float32)], launch_args=(m, n),
                        diagnose=lambda outs, refs, t=terms: sum_hints(outs[0], refs[0], t, block=TILE,
                                                                       what="dot product", unit="tile")))
    return out
