"""block_sum: hidden tests."""
import numpy as np

from exercises import Case, Hedge, and_drawn, randn, sum_hints
from kernels.spec import plural

THREADS = 64


def _diagnose(x64, blocks):
    terms = np.zeros(blocks * THREADS)
    terms[:x64.size] = x64
    terms = terms.reshape(blocks, THREADS)  # block b's terms, thread t's at [b, t]

    def diagnose(outs, refs):
        out, ref = np.asarray(outs[0], np.float64), refs[0]
        hint = sum_hints(out, ref, terms, lanes=THREADS, what="block's sum")
        if hint:
            return hint
        bad = np.where(~np.isclose(out, ref, rtol=1e-4, atol=1e-4))[0]
        if len(bad) and np.count_nonzero(terms[bad[0]]) == 1 and out[bad[0]] == 0:  # one element, and it is gone
            b = int(bad[0])
            t = int(np.flatnonzero(terms[b])[0])
            return (f"block {b}'s one element x[{b * THREADS + t}] = {terms[b, t]:.6g} came out as 0: it was lost on "
                    f"its way through the block (never stored into the shared array, read back from another cell, "
                    f"or stored into an integer cell that dropped its fraction)")
        if len(bad):
            return Hedge(f"block {bad[0]}'s sum is off by {ref[bad[0]] - out[bad[0]]:.4g}: a partial missing from its "
                         f"tree, or one added twice?")
        return None
    return diagnose


def cases(rng):
    out = []
    for n in and_drawn((1, THREADS, THREADS + 1, 3 * THREADS + 5, 130), lambda: int(rng.integers(2, 4 * THREADS))):
        x = randn(rng, n, offset=0.5)
        blocks = (n + THREADS - 1) // THREADS
        starts = np.arange(blocks) * THREADS
        x64 = x.astype(np.float64)
        ref = np.add.reduceat(x64, starts)
        tol = 8 * np.finfo(np.float32).eps * np.add.reduceat(np.abs(x64), starts) * np.sqrt(THREADS)
        out.append(Case(f"n={n} ({plural(blocks, 'block')})", [x], [((blocks,), np.float32)], [ref], [tol],
                        grid=blocks, block=THREADS, diagnose=_diagnose(x64, blocks)))
    return out


def _tree(case, grow, interleaved):
    """partials when each block's tree runs the steps s = 1, 2, 4, .. (``grow``) or THREADS // 2, .., 1,
    each thread t adding cache[t + s] when t < s or (``interleaved``) when t % (2 s) == 0."""
    x = np.asarray(case.args[0], np.float64)
    blocks = case.grid
    pad = np.zeros(blocks * THREADS)
    pad[:x.size] = x
    out = []
    for c in pad.reshape(blocks, THREADS):
        c = c.copy()
        steps = [1 << k for k in range(THREADS.bit_length() - 1)]
        for s in (steps if grow else steps[::-1]):
            t = np.arange(THREADS - s)
            t = t[(t % (2 * s) == 0)] if interleaved else t[t < s]
            c[t] = c[t] + c[t + s]
        out.append(c[0])
    return [np.array(out)]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message); growing steps with
# `t < s` and halving steps with `t % (2 s) == 0` give the same sums (cache[0] + cache[1] + cache[2] + cache[4] + ..)
MISTAKES = [
    ("step order", lambda c: _tree(c, grow=True, interleaved=False),
     "each partial is cache[0] + cache[1] + cache[2] + cache[4] + ... + cache[THREADS // 2] only: the tree's step "
     "order and its thread test do not match: halving steps (s = THREADS // 2, ..., 2, 1) go with `if t < s` (the "
     "lower half adds the upper half), growing steps (s = 1, 2, 4, ...) with `if t % (2 * s) == 0`"),
]
