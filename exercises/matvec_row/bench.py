"""matvec_row: the size ``--bench`` times: A 8192 x 4096 on a GPU, 96 x 64 in the simulator."""
from exercises import Case, randn

THREADS = 32


def case(rng, simulator):
    rows, cols = (96, 64) if simulator else (8192, 4096)
    A, x = randn(rng, (rows, cols)), randn(rng, cols)
    return Case(f"{rows}x{cols}", [A, x], [((rows,), A.dtype)], [None], [None],
                grid=(rows + THREADS - 1) // THREADS, block=THREADS)


def rung_size(case):
    return case.args[0].shape
