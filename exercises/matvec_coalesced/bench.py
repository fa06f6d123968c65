"""matvec_coalesced: the size ``--bench`` times: A 8192 x 4096 on a GPU, 8 x 256 in the simulator."""
from exercises import Case, randn


def case(rng, simulator):
    rows, cols = (8, 256) if simulator else (8192, 4096)
    A, x = randn(rng, (rows, cols)), randn(rng, cols)
    return Case(f"{rows}x{cols}", [A, x], [((rows,), A.dtype)], [None], [None], grid=rows, block=32)


def rung_size(case):
    return case.args[0].shape
