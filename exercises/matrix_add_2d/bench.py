"""matrix_add_2d: the size ``--bench`` times: 4096 x 4095 on a GPU, 20 x 36 in the simulator
(non-square, so swapped axes show as strided loads)."""
from exercises import Case, randn


def case(rng, simulator):
    rows, cols = (20, 36) if simulator else (4096, 4095)
    A, B = randn(rng, (rows, cols)), randn(rng, (rows, cols))
    return Case(f"{rows}x{cols}", [A, B], [((rows, cols), A.dtype)], [None], [None], launch_args=(rows, cols))
