"""map_guard: hidden tests."""
import numpy as np

from exercises import Case, and_drawn, eps_tol, randn

THREADS = 32


def cases(rng):
    out = []
    for n in and_drawn((1, THREADS - 1, THREADS + 1, 45, 3 * THREADS + 7), lambda: int(rng.integers(2, 4 * THREADS))):
        x = randn(rng, n)
        ref = 2 * x.astype(np.float64) + 1
        out.append(Case(f"n={n}, {THREADS} threads a block", [x], [((n,), np.float32)], [ref],
                        [eps_tol(ref)], grid=(n + THREADS - 1) // THREADS, block=THREADS))
    return out
