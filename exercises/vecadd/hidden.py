"""vecadd: hidden tests."""
import numpy as np

from exercises import Case, and_drawn, randn
from kernels.vecadd import tolerance


def cases(rng):
    out = []
    for n, threads in and_drawn(((5466, 1024), (1, 1024), (1000, 256), (33, 32), (31, 32), (1025, 1024),
                                 (200, 64), (777, 96)),
                                lambda: (int(rng.integers(2, 1200)), int(rng.choice([32, 64, 96, 128, 256, 512])))):
        a, b = randn(rng, n), randn(rng, n, scale=3.0)
        ref = a.astype(np.float64) + b
        out.append(Case(f"n={n}, {threads} threads a block", [a, b], [((n,), np.float32)], [ref],
                        tolerance((a, b), [ref], np.float32), launch_args=(n, threads)))
    return out
