"""minmax: hidden tests (mixed signs, all positive, all negative)."""
import numpy as np

from exercises import Case, randn

THREADS = 64


def cases(rng):
    out = []
    for name, n, offset in (("n=1", 1, 0.0), ("mixed signs", 3 * THREADS + 9, 0.2),
                            ("all positive", 100, 10.0), ("all negative", 70, -10.0)):
        x = randn(rng, n, offset=offset)
        blocks = (n + THREADS - 1) // THREADS
        ref = np.array([x.min(), x.max()], dtype=np.float64)
        out.append(Case(f"{name}, n={n}", [x], [((2,), np.float32)], [ref], [0.0], grid=blocks,
                        block=THREADS, init=[np.array([np.inf, -np.inf])]))
    return out
