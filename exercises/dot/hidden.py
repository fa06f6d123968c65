"""dot: hidden tests."""
import numpy as np

from exercises import Case, and_drawn, missing_partial, randn, sum_hints
from kernels.spec import plural

THREADS = 64


def cases(rng):
    out = []
    for n in and_drawn((1, THREADS + 1, 3 * THREADS + 11, 260), lambda: int(rng.integers(2, 4 * THREADS))):
        a, b = randn(rng, n, offset=0.3), randn(rng, n, offset=0.7)
        prod = a.astype(np.float64) * b
        blocks = (n + THREADS - 1) // THREADS
        partials = np.add.reduceat(prod, np.arange(blocks) * THREADS)
        ref = np.array([prod.sum()])
        tol = 8 * np.finfo(np.float32).eps * np.abs(prod).sum() * np.sqrt(n + 1)
        out.append(Case(f"n={n} ({plural(blocks, 'block')})", [a, b], [((1,), np.float32)], [ref], [tol],
                        grid=blocks, block=THREADS, init=[np.zeros(1)],
                        diagnose=lambda outs, refs, p=partials, t=prod: (missing_partial(outs[0][0], refs[0][0], p)
                                                                         or sum_hints(outs[0], refs[0], t[None, :], block=THREADS))))
    return out
