"""warp_reduce: hidden tests (sizes 1, a warp -1 and +1, a block +1, several blocks; one large
value at a random position past the first warp)."""
import numpy as np

from exercises import Case, Hedge, and_drawn, randn

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
            (lanes[b, :, ::2].sum(), "only the even lanes (0, 2, 4, ...) of each warp were added: the warp's "
                                     "shuffle loop stops one step early, its last step (offset 1, lane + 1) never "
                                     "runs: loop while offset > 0 (16, 8, 4, 2, 1)"),
            (lanes[b, ::2, ::2].sum(), "only the even lanes of the even warps were added: both shuffle loops (the "
                                       "warp's and warp 0's over warp_sums) stop one step early, their last step "
                                       "(offset 1) never runs: loop while offset > 0 (16, 8, 4, 2, 1)"),
        ]
        for value, text in candidates:
            if abs(out[b] - value) <= 1e-4 * (1 + abs(value)):
                return f"block {b}: {text}"
        return Hedge(f"block {b}'s sum is {out[b]:.6g}, expected {ref[b]:.6g} (off by {ref[b] - out[b]:.4g}): a warp's "
                     f"or a lane's value missing, or one added more than once?")
    return diagnose


def cases(rng):
    out = []
    for n in and_drawn((1, WARP - 1, WARP + 1, THREADS + 1, 2 * THREADS + 1), lambda: int(rng.integers(2, 3 * THREADS))):
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


def _up(case, levels):
    """partials when lane 0 of each warp gets its own value back at each of the 5 shuffle steps
    (shfl_up_sync): 32 x lane 0's value; warp 0's loop over the warps' sums too (``levels`` 2)."""
    x = np.asarray(case.args[0], np.float64)
    pad = np.zeros(case.grid * THREADS)
    pad[:x.size] = x
    lane0 = pad.reshape(case.grid, THREADS // WARP, WARP)[:, :, 0]
    return [32 * lane0.sum(axis=1) if levels == 1 else 1024 * lane0[:, 0]]


def _extra_steps(loops):
    """Evidence (lab.teach.diagnose.Mistake.evidence) of shuffle loops that start at offset 32: one
    shuffle more per lane than the 5-step tree (16, 8, 4, 2, 1), in the warps' loop (``loops`` 1) or in
    both it and warp 0's (2): the launch's warp collectives, counted per lane, are exactly that many."""
    steps = WARP.bit_length() - 1  # 5

    def shown(case, counts):
        per_block = {(THREADS * (steps + 1) + WARP * steps), (THREADS * steps + WARP * (steps + 1))} if loops == 1 \
            else {(THREADS + WARP) * (steps + 1)}
        return int(counts.get("warp_collectives", -1)) in {case.grid * v for v in per_block}
    return shown


def _slot_of_warp0(case):
    """partials when warp 0's lanes 0..3 all read warp 0's slot (warp_sums[warp], warp = 0 for all of
    them, for warp_sums[lane]): 4 times warp 0's sum."""
    x = np.asarray(case.args[0], np.float64)
    pad = np.zeros(case.grid * THREADS)
    pad[:x.size] = x
    return [(THREADS // WARP) * pad.reshape(case.grid, THREADS // WARP, WARP)[:, 0].sum(axis=1)]


def _own_loads(case, counts) -> bool:
    """Evidence that each thread loaded its own element of x (thread t of block b: x[b*THREADS + t], the
    launch-wide thread id, and nothing else), from the tracer's ``load_lines`` rows ([array, thread id,
    line, loads, lowest, highest flat index]); an input array of x's size, not an output."""
    n = int(np.asarray(case.args[0]).size)
    ins = [k for k, a in enumerate(counts.get("arrays") or ()) if not a[3] and int(a[1]) == n]
    rows = [r for r in counts.get("load_lines") or () if len(r) == 6 and r[0] in ins]
    return bool(rows) and all(int(r[4]) == int(r[5]) == int(r[1]) for r in rows)


def _tree_steps(case, counts):
    """Evidence that both shuffle loops ran the 5-step tree (the reference's count of warp collectives)
    over the block's own elements (:func:`_own_loads`: warps that all loaded warp 0's elements give
    the same partials)."""
    return (int(counts.get("warp_collectives", -1)) == case.grid * (THREADS + WARP) * (WARP.bit_length() - 1)
            and _own_loads(case, counts))


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message[, access, evidence])
MISTAKES = [
    ("shuffle direction", lambda c: _up(c, levels=1),
     "every partial is 32 times lane 0's own value (each warp's lane 0 doubled its own value 5 times): "
     "cuda.shfl_up_sync takes the value of lane - offset, so lane 0 gets its own value back at every step; the "
     "tree that brings the warp's sum to lane 0 takes lane + offset: cuda.shfl_down_sync"),
    ("shuffle direction", lambda c: _up(c, levels=2),
     "every partial is 1024 times the first lane's value: both shuffle loops use cuda.shfl_up_sync, which takes "
     "the value of lane - offset, so lane 0 gets its own value back at every step and doubles it; the tree that "
     "brings the sum to lane 0 takes lane + offset: cuda.shfl_down_sync"),
    ("shuffle offset", lambda c: [2 * np.asarray(c.refs[0])],
     "every partial is exactly 2 times its block's sum: one shuffle step added each lane's own value again (a "
     "shfl_down_sync by 32, the warp's width, returns the lane's own value): the offsets run 16, 8, 4, 2, 1 "
     "(offset = 16 while offset > 0, halved each step)", None, _extra_steps(1)),
    ("shuffle offset", lambda c: [4 * np.asarray(c.refs[0])],
     "every partial is exactly 4 times its block's sum: both shuffle loops (the warp's and warp 0's over "
     "warp_sums) start at offset 32, the warp's width, where shfl_down_sync returns the lane's own value, so each "
     "loop doubles its sum: the offsets run 16, 8, 4, 2, 1 (offset = 16 while offset > 0, halved each step)", None,
     _extra_steps(2)),
    ("warp slots", _slot_of_warp0,
     "every partial is 4 times warp 0's sum, after shuffle trees of the right 5 steps: warp 0's lanes 0..3 all "
     "read the same slot (warp_sums[warp], and warp is 0 for all of them): lane l must read warp l's sum, "
     "warp_sums[lane] (0.0 for lanes past the number of warps)", None, _tree_steps),
]
