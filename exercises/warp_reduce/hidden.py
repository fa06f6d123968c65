"""warp_reduce: hidden tests (sizes 1, a warp -1 and +1, a block +1, several blocks; one large
value at a random position past the first warp)."""
import numpy as np

from exercises import Case, randn

THREADS = 128
WARP = 32


def _diagnose(x64, blocks):
    """Name the piece of a block's sum that is missing: the upper lanes of each warp (shuffles that
    start at offset 8), or the other warps' sums (warp 0 alone)."""
    pad = np.zeros(blocks * THREADS)
    pad[:len(x64)] = x64
    lanes = pad.reshape(blocks, THREADS // WARP, WARP)

    def diagnose(outs, refs):
        out, ref = np.asarray(outs[0], np.float64), refs[0]
        bad = np.where(~np.isclose(out, ref, rtol=1e-4, atol=1e-4))[0]
        if not len(bad):
            return None
        b = bad[0]
        candidates = [
            (lanes[b, :, :WARP // 2].sum(), "only lanes 0..15 of each warp were added: the first shuffle "
                                            "offset is 16 (half a warp), then 8, 4, 2, 1"),
            (lanes[b, 0].sum(), "the sum holds warp 0's values only: does lane 0 of every warp post its sum "
                                "to warp_sums, and does warp 0 add them all up?"),
            (lanes[b, :, 0].sum(), "only lane 0's own values arrived: shfl_down_sync moves values towards "
                                   "lane 0, shfl_up_sync away from it"),
        ]
        for value, text in candidates:
            if abs(out[b] - value) <= 1e-4 * (1 + abs(value)):
                return f"block {b}: {text}"
        return (f"block {b}'s sum is {out[b]:.6g}, expected {ref[b]:.6g} (off by {ref[b] - out[b]:.4g}): a warp's or a "
                f"lane's value missing, or one added more than once?")
    return diagnose


def cases(rng):
    out = []
    for n in (1, WARP - 1, WARP + 1, THREADS + 1, 2 * THREADS + 1):
        x = randn(rng, n, offset=0.5)
        if n > WARP:  # one large value where a lane past the first warp (or past lane 15) holds it
            x[rng.integers(WARP // 2, n)] = np.float32(rng.choice([-1, 1]) * rng.uniform(500, 1000))
        blocks = (n + THREADS - 1) // THREADS
        starts = np.arange(blocks) * THREADS
        x64 = x.astype(np.float64)
        ref = np.add.reduceat(x64, starts)
        tol = 8 * np.finfo(np.float32).eps * np.add.reduceat(np.abs(x64), starts) * np.sqrt(THREADS)
        out.append(Case(f"n={n} ({blocks} block{'s' if blocks > 1 else ''})", [x], [((blocks,), np.float32)],
                        [ref], [tol], grid=blocks, block=THREADS, diagnose=_diagnose(x64, blocks)))
    return out


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("shuffle offset", lambda c: [2 * np.asarray(c.refs[0])],
     "every partial is exactly 2 times its block's sum: one shuffle step added each lane's own value again (a "
     "shfl_down_sync by 32, the warp's width, returns the lane's own value): the offsets run 16, 8, 4, 2, 1 "
     "(offset = 16 while offset > 0, halved each step)"),
    ("shuffle offset", lambda c: [4 * np.asarray(c.refs[0])],
     "every partial is exactly 4 times its block's sum: both shuffle loops (the warp's and warp 0's over "
     "warp_sums) start at offset 32, the warp's width, where shfl_down_sync returns the lane's own value, so each "
     "loop doubles its sum: the offsets run 16, 8, 4, 2, 1 (offset = 16 while offset > 0, halved each step)"),
]
