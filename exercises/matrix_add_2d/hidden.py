"""matrix_add_2d: hidden tests."""
import numpy as np

from exercises import Case, and_drawn, eps_tol, randn


def cases(rng):
    out = []
    for rows, cols in and_drawn(((1, 1), (37, 50), (50, 37), (5, 70)),
                                lambda: (int(rng.integers(2, 60)), int(rng.integers(2, 60)))):
        A, B = randn(rng, (rows, cols)), randn(rng, (rows, cols), scale=2.0)
        ref = A.astype(np.float64) + 2 * B.astype(np.float64)
        out.append(Case(f"{rows}x{cols}", [A, B], [((rows, cols), np.float32)], [ref],
                        [eps_tol(np.abs(A) + 2 * np.abs(B))], launch_args=(rows, cols)))
    return out
