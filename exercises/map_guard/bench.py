"""map_guard: the size ``--bench`` times: 2^24 elements on a GPU, a few blocks in the simulator."""
from exercises import Case, randn

THREADS = 256


def case(rng, simulator):
    n = 1000 if simulator else 1 << 24
    x = randn(rng, n)
    return Case(f"n={n}", [x], [((n,), x.dtype)], [None], [None], grid=(n + THREADS - 1) // THREADS, block=THREADS)
