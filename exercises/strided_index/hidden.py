"""strided_index: hidden tests (views of a random row-major matrix M, held as flat storage)."""
import numpy as np

from exercises import Case, randn

B = 8


def _case(name, storage, view):
    item = storage.itemsize
    offset = (view.__array_interface__["data"][0] - storage.__array_interface__["data"][0]) // item
    s0, s1 = (s // item for s in view.strides)
    rows, cols = view.shape
    return Case(name, [storage, offset, s0, s1], [((rows, cols), np.float32)],
                [view.astype(np.float64)], [0.0], grid=((cols + B - 1) // B, (rows + B - 1) // B), block=(B, B))


def cases(rng):
    R, C = 13, 21
    storage = randn(rng, R * C)
    M = storage.reshape(R, C)
    return [
        _case("contiguous 13x21", storage, M),
        _case("transposed view (21x13, strides (1, 21))", storage, M.T),
        _case("sliced view M[2:11, 1::3]", storage, M[2:11, 1::3]),
        _case("transposed slice M[3:, 5:9].T", storage, M[3:, 5:9].T),
        _case("one element M[4:5, 7:8]", storage, M[4:5, 7:8]),
    ]
