"""matvec_coalesced: hidden tests."""
from exercises import and_drawn, matvec_case


def cases(rng):
    return [matvec_case(rng, rows, cols, grid=rows, block=32, lanes=32)
            for rows, cols in and_drawn(((1, 1), (5, 70), (9, 33), (3, 100), (4, 31)),
                                        lambda: (int(rng.integers(2, 10)), int(rng.integers(2, 120))))]
