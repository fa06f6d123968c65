"""softmax_fused: hidden tests (inputs and tolerance from kernels/softmax.py)."""
import numpy as np

from exercises import Case, and_drawn


THREADS = 32


def _spike(rng, x, where):
    """Each row's maximum moved to a random column ``where`` picks (the last column, or one beyond the
    first block's reach), 90..110 above the rest: exp without the right max overflows float32."""
    rows, cols = x.shape
    for r in range(rows):
        c = where(r, cols)
        finite = x[r][np.isfinite(x[r])]
        x[r, c] = (finite.max() if finite.size else 0.0) + rng.uniform(90.0, 110.0)
    return x


def _diagnose(outs, refs, x=None):
    """A hint when every row is off by one factor (the denominator, the row's sum, is wrong)."""
    out, ref = np.asarray(outs[0], np.float64), refs[0]
    if not np.all(np.isfinite(out)):
        return None
    sums = out.sum(axis=1)
    rows = np.where(np.abs(sums - 1) > 1e-3)[0]
    if not len(rows):
        return None
    for r in rows:  # the wrong rows are right up to one factor each
        big = ref[r] > 1e-6
        ratio = out[r, big] / ref[r, big]
        if not big.any() or not np.allclose(ratio, ratio[0], rtol=1e-3):
            return None
    if True:
        r = int(rows[0])
        xr = np.asarray(x if x is not None else np.zeros(0), np.float64)
        if xr.size and sums[r] > 0 and np.isclose(-np.log(sums[r]), xr[r].max(), rtol=1e-3, atol=1e-3):
            return (f"row {r} sums to {sums[r]:.4g}, not 1: the denominator is exp(row max) times too large: subtract "
                    f"the same max in the sum as in the numerator (exp(x - m))")
        return (f"row {r} sums to {sums[r]:.4g}, not 1, but is right up to that factor: the row's sum (the "
                f"denominator) is off by that factor; it must be the sum of exp(x[r, j] - max) over every column of "
                f"the row, each term once (every thread's part added, none twice)")
    return None


def cases(rng):
    from kernels.softmax import make_inputs, tolerance

    out = []
    last = lambda r, cols: cols - 1  # noqa: E731
    # past the first THREADS columns, in a column of the block's upper half of lanes
    beyond = lambda r, cols: min(cols - 1, THREADS * int(rng.integers(1, max(2, cols // THREADS)))  # noqa: E731
                                 + int(rng.integers(THREADS // 2, THREADS)))
    # past the first THREADS columns, in a column of one of the block's last 8 lanes (a max tree that
    # starts too small, or one that stops at the first THREADS columns, misses it)
    upper = lambda r, cols: THREADS + int(rng.integers(THREADS - 8, THREADS))  # noqa: E731
    for rows, cols, where in and_drawn(((1, 1, None), (4, 37, None), (6, 100, None), (3, 5, None), (2, THREADS - 1, None),
                                        (3, THREADS + 1, last), (4, 3 * THREADS + 7, beyond), (2, 2 * THREADS + 5, upper)),
                                       lambda: (int(rng.integers(1, 6)), int(rng.integers(2, 3 * THREADS)), None),
                                       key=lambda c: c[1]):
        (x,) = make_inputs((rows, cols), np.dtype(np.float32), rng)
        if where is not None:
            x = _spike(rng, x, where)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        label = f"{rows}x{cols}" + ("" if where is None else ", the maximum far above the rest, "
                                   + ("in the last column" if where is last else
                                      f"past column {THREADS}, a last lane's" if where is upper else
                                      f"past column {THREADS}"))
        out.append(Case(label, [x], [((rows, cols), np.float32)], [ref],
                        tolerance((x,), [ref], np.dtype(np.float32)), grid=rows, block=32,
                        diagnose=lambda outs, refs, x=x: _diagnose(outs, refs, x)))
    return out


def _shifted(case, shift):
    """softmax with each row shifted by ``shift(x)`` (a column of row values), in the kernel's float32:
    exp of a large difference overflows to inf there, inf / inf is NaN."""
    x = np.asarray(case.args[0], np.float32)
    m = np.asarray(shift(x), np.float32).reshape(-1, 1)
    e = np.exp((x - m).astype(np.float64)).astype(np.float32)
    total = e.sum(axis=1, dtype=np.float32).reshape(-1, 1)
    return [(e / total).astype(np.float64)]


def _lanes_max(x, lanes):
    """Each row's maximum over the columns of lanes 0 .. ``lanes - 1`` (column j is lane j % THREADS's)."""
    keep = (np.arange(x.shape[1]) % THREADS) < lanes
    return x[:, keep].max(axis=1)


def _own_max(case):
    """softmax where each thread shifts its columns by its own maximum (over columns t, t + THREADS, ..)
    and divides by the row's sum of those, in the kernel's float32."""
    x = np.asarray(case.args[0], np.float32)
    lane = np.arange(x.shape[1]) % THREADS
    m = np.empty_like(x)
    for t in range(min(THREADS, x.shape[1])):
        m[:, lane == t] = x[:, lane == t].max(axis=1, keepdims=True)
    if np.array_equal(m, np.repeat(x.max(axis=1, keepdims=True), x.shape[1], axis=1)):
        return None
    e = np.exp((x - m).astype(np.float64)).astype(np.float32)
    total = e.sum(axis=1, dtype=np.float32).reshape(-1, 1)
    return [(e / total).astype(np.float64)]


def _sum_counted(case, times):
    """softmax whose row sum counts column j ``times(j)`` times (a sum loop with the wrong step), in the
    kernel's float32; None where that is the right sum."""
    x = np.asarray(case.args[0], np.float32)
    w = np.asarray(times(np.arange(x.shape[1])), np.float64)
    if np.all(w == 1):
        return None
    e = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64)).astype(np.float32)
    total = (e.astype(np.float64) * w).sum(axis=1).reshape(-1, 1)
    return [(e / total).astype(np.float64)]


def _numerator_unshifted(case):
    """softmax whose sum used exp(x - m) (m the row max) but whose write uses exp(x): exp(m) times the
    softmax, in the kernel's float32 (exp overflows to inf for large x)."""
    x = np.asarray(case.args[0], np.float32)
    m = x.max(axis=1, keepdims=True)
    total = np.exp((x - m).astype(np.float64)).astype(np.float32).sum(axis=1, dtype=np.float32).reshape(-1, 1)
    e = np.exp(x.astype(np.float64)).astype(np.float32)
    return [(e / total).astype(np.float64)]


def _lanes_min_of_max(x):
    """The min over lanes of each lane's max over its columns t, t + THREADS, ... (-inf for a lane with
    no column): a max tree that combines with min."""
    lane = np.arange(x.shape[1]) % THREADS
    per = np.full((x.shape[0], THREADS), -np.inf, np.float32)
    for t in range(min(THREADS, x.shape[1])):
        per[:, t] = x[:, lane == t].max(axis=1)
    return per.min(axis=1)


def _min_combined(case):
    """softmax shifted by :func:`_lanes_min_of_max`; None where that is NaN everywhere (no evidence of this
    mistake more than of any other: a lane with no column makes the shift -inf)."""
    out = _shifted(case, _lanes_min_of_max)
    return None if np.all(np.isnan(out[0])) else out


def _sign_flipped(case):
    """softmax with exp(m - x) for exp(x - m) (m the row max) in the sum and the write, in float32."""
    x = np.asarray(case.args[0], np.float32)
    m = x.max(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        e = np.exp((m - x).astype(np.float64)).astype(np.float32)
        total = e.sum(axis=1, dtype=np.float32).reshape(-1, 1)
        return [(e / total).astype(np.float64)]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("sum loop step", lambda c: _sum_counted(c, lambda j: np.minimum(j + 1, THREADS)),
     f"the row's sum counts column j min(j + 1, {THREADS}) times (column 0 once, column 1 twice, ...): the sum "
     f"loop steps by 1, `range(t, cols)`, so the threads' column ranges overlap: each thread's columns are t, "
     f"t + {THREADS}, t + {2 * THREADS}, ...: step by the block's size, `range(t, cols, {THREADS})`"),
    ("sum loop step", lambda c: _sum_counted(c, lambda j: np.full(j.shape, THREADS)),
     f"the row's sum counts every column {THREADS} times: every thread's sum loop runs over all the columns "
     f"(from 0, step 1): each thread's columns are t, t + {THREADS}, ...: `range(t, cols, {THREADS})`"),
    ("max shift", lambda c: _shifted(c, lambda x: _lanes_max(x, THREADS // 2)),
     f"out is exp(x - m) / sum with m the maximum of lanes 0..{THREADS // 2 - 1}'s columns only: the max tree "
     f"started at s = {THREADS // 4}, so lanes {THREADS // 2}..{THREADS - 1} never entered it, and a larger value "
     f"of theirs overflows exp (inf / inf = NaN): the tree starts at half the block, s = {THREADS // 2}, so the "
     f"shift is the row maximum"),
    ("max shift", lambda c: _shifted(c, lambda x: _lanes_max(x, THREADS // 4)),
     f"out is exp(x - m) / sum with m the maximum of lanes 0..{THREADS // 4 - 1}'s columns only: the max tree "
     f"started at s = {THREADS // 8}, so the other lanes never entered it, and a larger value of theirs overflows "
     f"exp (inf / inf = NaN): the tree starts at half the block, s = {THREADS // 2}, so the shift is the row maximum"),
    ("max shift", _own_max,
     "out is exp(x - m_t) / sum with m_t each thread's own maximum (over its columns), not the row's: the shift "
     "must be one value for the whole row, or the terms are not comparable (and the sum mixes scales): subtract "
     "the row maximum, the block's max of the threads' maxima (cache[0] after the tree, read by every thread)"),
    ("max shift", lambda c: _shifted(c, lambda x: x[:, 0]),
     "out is exp(x - x[r, 0]) / sum: the shift is the row's first element, not the row maximum: exp overflows "
     "float32 (inf / inf = NaN) when the maximum lies far above the first element; subtract the row maximum "
     "(the max over every column of the row)"),
    ("max shift", lambda c: _shifted(c, lambda x: x[:, :THREADS].max(axis=1)),
     f"out is exp(x - m) / sum with m the maximum of the first {THREADS} columns only: a larger value further "
     f"along the row overflows exp; subtract the row maximum: each thread's max over its columns t, t + "
     f"{THREADS}, ..., then the block's max of those"),
    ("max identity", lambda c: _shifted(c, lambda x: np.maximum(x.max(axis=1), 0)),
     "out is exp(x - max(0, row max)) / sum: the max's starting value (its identity) was 0, which wins when a "
     "row is all negative; start the row maximum at -inf"),
    ("max shift", lambda c: _shifted(c, lambda x: np.zeros(x.shape[0])),
     "out is exp(x) / sum(exp(x)) without a shift: exp overflows float32 for large x (inf / inf = NaN); subtract "
     "the row maximum first (softmax(x) = softmax(x - max))"),
    ("numerator shift", _numerator_unshifted,
     "out is exp(x) / sum(exp(x - m)): the sum subtracted the row maximum m but the write did not, so every "
     "element is exp(m) times its softmax (and exp(x) overflows for large x): the write uses exp(x - m) too, "
     "the same shift as the sum"),
    ("shift sign", _sign_flipped,
     "out is exp(m - x) / sum(exp(m - x)): the shift's sign is flipped, so the largest x gets the smallest "
     "weight and exp(m - x) overflows for x far below the maximum: exp(x - m), m the row maximum"),
    ("max combine", _min_combined,
     "out is exp(x - m) / sum with m the smallest of the threads' maxima: the max tree combines with min "
     "(a lane with no column holds -inf, so m can be -inf): the shift is the row maximum, max() at every "
     "step of the tree"),
]
