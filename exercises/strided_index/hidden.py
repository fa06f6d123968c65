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
        _drawn(rng, storage, M),
    ]


def _drawn(rng, storage, M):
    """A view drawn from the seed (start, step and extent of each axis, transposed or not): the views above
    ship with the lab; this one a submission cannot know (exercises.and_drawn)."""
    r0, c0 = int(rng.integers(0, 6)), int(rng.integers(0, 8))
    rs, cs = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    r1, c1 = int(rng.integers(r0 + 1, M.shape[0] + 1)), int(rng.integers(c0 + 1, M.shape[1] + 1))
    view, name = M[r0:r1:rs, c0:c1:cs], f"M[{r0}:{r1}:{rs}, {c0}:{c1}:{cs}]"
    if rng.integers(2):
        view, name = view.T, name + ".T"
    return _case(f"view {name}", storage, view)


def _indices(case, row_step, col_step=None, base=None):
    """storage indices of every out[r, c] with the row step ``row_step(case)``, the column step
    ``col_step(case)`` (default stride1) and the start ``base(case)`` (default the offset); None past
    storage."""
    storage, offset, _, s1 = case.args
    rows, cols = case.outputs[0][0]
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    start = offset if base is None else base(case)
    idx = start + r * row_step(case) + c * (s1 if col_step is None else col_step(case))
    return None if idx.min() < 0 or idx.max() >= storage.size else idx


def _values(case, row_step, col_step=None, base=None):
    idx = _indices(case, row_step, col_step, base)
    return None if idx is None else [np.asarray(case.args[0], np.float64)[idx]]


def _access(case, who, row_step, col_step=None, base=None):
    """("storage", (index,)) that thread ``who`` (block, thread) reads with the row step ``row_step``
    (and the column step and start of :func:`_indices`); ValueError for a thread past out (no element)."""
    (bx, by, *_), (tx, ty, *_) = (tuple(who[0]) + (0, 0))[:2], (tuple(who[1]) + (0, 0))[:2]
    bdx, bdy = case.block
    c, r = bx * bdx + tx, by * bdy + ty
    rows, cols = case.outputs[0][0]
    if r >= rows or c >= cols:  # a thread past out has no element: what let it access is the guard, not a stride
        raise ValueError("no element of out")
    start = case.args[1] if base is None else base(case)
    return "storage", (start + r * row_step(case) + c * (case.args[3] if col_step is None else col_step(case)),)


def _out_width(case):
    return case.outputs[0][0][1]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message[, the access
# of a thread: (array, index)])
MISTAKES = [
    ("stride", lambda c: _values(c, _out_width),
     "out[r, c] is storage[offset + r * out.shape[1] + c * stride1]: the row step was taken from the output's "
     "shape, not stride0: a view's strides are steps in the storage (stride0 between rows, stride1 between "
     "columns), whatever shape the output has",
     lambda c, who: _access(c, who, _out_width)),
    ("stride", lambda c: _values(c, _out_width, lambda c: 1),
     "out[r, c] is storage[offset + r * out.shape[1] + c]: the view was taken as contiguous (row-major, steps "
     "(columns, 1)), but a view's strides are its own: use stride0 between rows and stride1 between columns",
     lambda c, who: _access(c, who, _out_width, lambda c: 1)),
    ("stride", lambda c: _values(c, lambda c: c.args[3], lambda c: c.args[2]),
     "out[r, c] is storage[offset + r * stride1 + c * stride0]: the strides are swapped: stride0 is the step "
     "between rows (it multiplies the row index), stride1 between columns",
     lambda c, who: _access(c, who, lambda c: c.args[3], lambda c: c.args[2])),
    ("offset", lambda c: _values(c, lambda c: c.args[2], base=lambda c: c.args[1] * c.args[2]),
     "out[r, c] is storage[offset * stride0 + r * stride0 + c * stride1]: the offset was multiplied by a stride; "
     "it is already a count of elements of the storage: storage[offset + r * stride0 + c * stride1]",
     lambda c, who: _access(c, who, lambda c: c.args[2], base=lambda c: c.args[1] * c.args[2])),
]
