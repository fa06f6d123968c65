"""block_sum: hidden tests."""
import numpy as np

from exercises import Case, randn

THREADS = 64


def _diagnose(starts):
    def diagnose(outs, refs):
        out, ref = np.asarray(outs[0], np.float64), refs[0]
        bad = np.where(~np.isclose(out, ref, rtol=1e-4, atol=1e-4))[0]
        if len(bad):
            return f"block {bad[0]}'s sum is off by {ref[bad[0]] - out[bad[0]]:.4g}: is a partial missing from its tree?"
        return None
    return diagnose


def cases(rng):
    out = []
    for n in (1, 64, 3 * THREADS + 5, 130):
        x = randn(rng, n, offset=0.5)
        blocks = (n + THREADS - 1) // THREADS
        starts = np.arange(blocks) * THREADS
        x64 = x.astype(np.float64)
        ref = np.add.reduceat(x64, starts)
        tol = 8 * np.finfo(np.float32).eps * np.add.reduceat(np.abs(x64), starts) * np.sqrt(THREADS)
        out.append(Case(f"n={n} ({blocks} blocks)", [x], [((blocks,), np.float32)], [ref], [tol],
                        grid=blocks, block=THREADS, diagnose=_diagnose(starts)))
    return out
