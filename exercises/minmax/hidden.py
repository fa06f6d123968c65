"""minmax: hidden tests (mixed signs, all positive, all negative; the extremes at the last element
and beyond the first block's reach)."""
import numpy as np

from exercises import Case, and_drawn, dropped_block_hint, randn

THREADS = 64


def _place_extremes(rng, x, lo_at, hi_at):
    """The minimum at ``lo_at`` and the maximum at ``hi_at``, a random distance past the others."""
    x[lo_at] = x.min() - rng.uniform(0.5, 2.0)
    x[hi_at] = x.max() + rng.uniform(0.5, 2.0)
    return x


def cases(rng):
    out = []
    # each identity mistake fails two cases: 0 for the min's identity the one positive element and all
    # positive, 0 for the max's the two all-negative ones
    for name, n, offset, place in and_drawn((("one positive element", 1, 10.0, None), ("mixed signs", 3 * THREADS + 9, 0.2, None),
                                   ("all positive", 100, 10.0, None), ("all negative", 70, -10.0, None),
                                   ("all negative, a block + 1", THREADS + 1, -10.0, None),
                                   ("the minimum at the last element", THREADS + 1, -0.3, "min last"),
                                   ("the maximum at the last element", 2 * THREADS + 31, 0.1, "max last"),
                                   # part of one block, not a power of two: a tree sized by n (or started
                                   # below the block's half) leaves cells out here
                                   ("a few elements, the minimum last", 5, 0.0, "min last"),
                                   ("part of a block, the minimum last", 37, 0.3, "min last")),
                                  lambda: ("mixed signs", int(rng.integers(2, 4 * THREADS)), 0.1, None)):
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


def _identities(case, lo, hi):
    """out when threads past the end load ``lo`` into the min tree and ``hi`` into the max tree."""
    x = np.asarray(case.args[0], np.float64)
    if case.grid * case.block <= x.size:
        return None
    return [np.array([min(x.min(), lo), max(x.max(), hi)])]


def _wrong_operator(case, which):
    """out when the tree of output ``which`` (0: min, 1: max) combines with the other operator (its
    identity kept): per block the other extreme of the block's elements and its identities, then
    the right atomic across blocks."""
    x = np.asarray(case.args[0], np.float64)
    pad = np.full(case.grid * case.block, np.inf if which == 0 else -np.inf)
    pad[:x.size] = x
    per = pad.reshape(case.grid, case.block)
    lo, hi = x.min(), x.max()
    if which == 0:
        return [np.array([per.max(axis=1).min(), hi])]
    return [np.array([lo, per.min(axis=1).max()])]


def _both_slots_updated(case, counts) -> bool:
    """Evidence (lab.teach.diagnose.Mistake.evidence) for a tree that combines with the wrong operator: the
    launch's atomics reached both elements of out (a max sent to out[0], with out[1] never updated, leaves
    out[1] at -inf too, and is no operator's mistake)."""
    outs = [k for k, a in enumerate(counts.get("arrays") or ()) if a[3] and int(a[1]) == 2]
    return bool(outs) and all(int(counts["atomic_elements"][k]) == 2 for k in outs)


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("operator", lambda c: _wrong_operator(c, 1),
     "out[1] is the largest of the blocks' MINIMA (-inf for a block with threads past the end): the max's tree "
     "combines with min: each step of the max tree keeps the larger value, hi[t] = max(hi[t], hi[t + s])", None,
     _both_slots_updated),
    ("operator", lambda c: _wrong_operator(c, 0),
     "out[0] is the smallest of the blocks' MAXIMA (+inf for a block with threads past the end): the min's tree "
     "combines with max: each step of the min tree keeps the smaller value, lo[t] = min(lo[t], lo[t + s])", None,
     _both_slots_updated),
    ("identity", lambda c: _identities(c, -np.inf, np.inf),
     "out is [-inf, inf]: the threads past the end loaded -inf into the min's tree and +inf into the max's: the "
     "identities are swapped: the identity of min is +inf (it never wins a min), of max -inf"),
    ("identity", lambda c: _identities(c, 0.0, 0.0),
     "out is the min and max of x and 0: the threads past the end loaded 0, which wins the min when every value "
     "is positive (the max when every value is negative): use each reduction's identity, +inf for min and -inf "
     "for max"),
]
