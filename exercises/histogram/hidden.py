"""histogram: hidden tests (one element, a warp -1, a block +1, many elements a thread; skewed data
with one hot bin, both extreme values 0 and 255, values only in the upper bins)."""
import numpy as np

from exercises import Case, and_drawn

THREADS, BINS, MAX_BLOCKS = 128, 256, 3


def _data(rng, n, kind):
    if kind == "uniform":
        x = rng.integers(0, BINS, n)
    elif kind == "hot bin":  # most elements in one bin (contention), the rest anywhere
        x = np.where(rng.random(n) < 0.7, rng.integers(0, BINS), rng.integers(0, BINS, n))
    else:  # "upper bins": only bins >= THREADS
        x = rng.integers(THREADS, BINS, n)
    if n >= 4:
        x[rng.choice(n, 2, replace=False)] = (0, BINS - 1)
    return x.astype(np.uint8)


def _diagnose(n, launched):
    def diagnose(outs, refs):
        out, ref = np.asarray(outs[0], np.float64), refs[0]
        total = out.sum()
        if 0 < total < n and total <= launched and abs(total - min(n, launched)) < 1:
            return (f"the counts add up to {int(total)} of {n} elements, one per thread of the grid: count "
                    f"every element with a grid-stride loop (i += cuda.gridsize(1))")
        bad = np.where(out != ref)[0]
        if len(bad) and bad[0] >= THREADS and out[bad].sum() != ref[bad].sum():  # counts lost, not moved
            return (f"bins {THREADS}.. are wrong and the lower bins right: with {THREADS} threads and {BINS} "
                    f"bins each thread zeroes and merges two bins (for b in range(t, BINS, THREADS))")
        return None
    return diagnose


def cases(rng):
    out = []
    for n, kind in and_drawn(((1, "uniform"), (31, "upper bins"), (THREADS + 1, "uniform"), (2501, "hot bin")),
                             lambda: (int(rng.integers(2, 800)), "uniform")):
        x = _data(rng, n, kind)
        blocks = min((n + THREADS - 1) // THREADS, MAX_BLOCKS)
        ref = np.bincount(x, minlength=BINS).astype(np.float64)
        out.append(Case(f"n={n}, {kind}, {blocks} block{'s' if blocks > 1 else ''}", [x], [((BINS,), np.int32)],
                        [ref], [0.0], grid=blocks, block=THREADS, init=[np.zeros(BINS)],
                        diagnose=_diagnose(n, blocks * THREADS)))
    return out


def _block_step(case):
    """hist when the grid-stride loop steps by the block's size, not the grid's: block b counts every
    element from b * THREADS on, so element i is counted by blocks 0 .. min(i // THREADS, blocks - 1)."""
    x = np.asarray(case.args[0])
    times = np.minimum(np.arange(x.size) // THREADS, case.grid - 1) + 1
    return [np.bincount(x, weights=times, minlength=BINS).astype(np.float64)]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("grid stride", _block_step,
     "hist counts element i once for every block b with b * blockDim.x <= i: the loop steps by the block's size "
     "(blockDim.x), so every block walks on through the elements of the blocks after it: a grid-stride loop "
     "starts at cuda.grid(1) and steps by the whole grid, cuda.gridsize(1) = gridDim.x * blockDim.x"),
]
