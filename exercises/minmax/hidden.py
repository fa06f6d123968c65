"""minmax: hidden tests (mixed signs, all positive, all negative; the extremes at the last element
and beyond the first block's reach)."""
import numpy as np

from exercises import Case, dropped_block_hint, randn

THREADS = 64


def _place_extremes(rng, x, lo_at, hi_at):
    """The minimum at ``lo_at`` and the maximum at ``hi_at``, a random distance past the others."""
    x[lo_at] = x.min() - rng.uniform(0.5, 2.0)
    x[hi_at] = x.max() + rng.uniform(0.5, 2.0)
    return x


def cases(rng):
    out = []
    for name, n, offset, place in (("one element", 1, 0.0, None), ("mixed signs", 3 * THREADS + 9, 0.2, None),
                                   ("all positive", 100, 10.0, None), ("all negative", 70, -10.0, None),
                                   ("the minimum at the last element", THREADS + 1, -0.3, "min last"),
                                   ("the maximum at the last element", 2 * THREADS + 31, 0.1, "max last")):
        x = randn(rng, n, offset=offset)
        if place == "min last":  # and the maximum somewhere in the first block
            x = _place_extremes(rng, x, n - 1, int(rng.integers(0, n - 1)))
        elif place == "max last":  # and the minimum past the first block's reach
            x = _place_extremes(rng, x, int(rng.integers(THREADS, n - 1)), n - 1)
        blocks = (n + THREADS - 1) // THREADS
        ref = np.array([x.min(), x.max()], dtype=np.float64)
        out.append(Case(f"{name}, n={n}", [x], [((2,), np.float32)], [ref], [0.0], grid=blocks,
                        block=THREADS, init=[np.array([np.inf, -np.inf])],
                        diagnose=lambda outs, refs, x=x: dropped_block_hint(outs[0], x, THREADS)))
    return out
