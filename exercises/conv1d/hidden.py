"""conv1d: hidden tests (sizes 1, shorter than the halo, a warp -1 and +1, a block +1, several blocks;
asymmetric weights; large values right at the blocks' edges)."""
import numpy as np

from exercises import Case, Hedge, and_drawn, randn

THREADS, R = 64, 3
K = 2 * R + 1


def _windows(v, n):
    padded = np.concatenate([np.zeros(R), v, np.zeros(R)])
    return np.lib.stride_tricks.sliding_window_view(padded, K)[:n]


def _diagnose(x64, w64, n):
    win = _windows(x64, n)
    edge = (np.arange(n) % THREADS < R) | (np.arange(n) % THREADS >= THREADS - R)

    def diagnose(outs, refs):
        out, ref = np.asarray(outs[0], np.float64), refs[0]
        bad = ~np.isclose(out, ref, rtol=1e-4, atol=1e-4)
        if not bad.any():
            return None
        if np.allclose(out, win @ w64[::-1], rtol=1e-4, atol=1e-4):
            return "y matches the flipped filter: y[i] = sum_k w[k] * x[i + k - R], with w not reversed"
        if (bad & ~edge).sum() == 0 and (~edge).any():  # some output away from the edges, and right
            return Hedge(f"only outputs within {R} of a block's edge are wrong: are the halo cells loaded "
                         f"(tile[t] = x[i - R] and tile[t + THREADS + R] = x[i + THREADS] for t < R)?")
        return None
    return diagnose


def cases(rng):
    out = []
    # n % THREADS < R: a right halo cell at n
    for n in and_drawn((1, 2, 31, THREADS + 1, 2 * THREADS + 17, 3 * THREADS + 2),
                       lambda: int(rng.integers(3, 4 * THREADS))):
        x = randn(rng, n)
        if n > THREADS:  # large values at the blocks' edges, where the halo cells are needed
            edges = [j for j in range(n) if j % THREADS in (0, THREADS - 1)]
            x[edges] = randn(rng, len(edges), scale=100.0)
        w = randn(rng, K, offset=0.2)
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        win = _windows(x64, n)
        ref = win @ w64
        tol = 8 * np.finfo(np.float32).eps * (np.abs(win) @ np.abs(w64)) * K + 1e-30
        out.append(Case(f"n={n}", [x, w], [((n,), np.float32)], [ref], [tol], grid=(n + THREADS - 1) // THREADS,
                        block=THREADS, diagnose=_diagnose(x64, w64, n)))
    return out


def _right_halo(case, who):
    """("x", (index,)) of the right halo cell that thread ``who`` (block, thread) loads (threads t < R)."""
    b, t = int(tuple(who[0])[0]), int(tuple(who[1])[0])
    return ("x", (b * THREADS + t + THREADS,)) if t < R else (None, ())


def _no_halo(case):
    """y when no thread stores the halo cells: a window that reaches one (within R of its block's edge)
    reads a tile cell nobody wrote (NaN in the simulator), the others are right."""
    n = case.outputs[0][0][0]
    t = np.arange(n) % THREADS
    out = np.array(case.refs[0], np.float64)
    out[(t < R) | (t >= THREADS - R)] = np.nan
    return [out]


def _halo_cell_unread(case, counts):
    """Evidence (lab.teach.diagnose.Mistake.evidence) for the halo mistake: the first shared cell the
    simulator saw read before any thread stored it (counts' ``uninit``, when there is one) is a halo
    cell of the tile (below R or from THREADS + R on), not a block's own cell (t + R)."""
    seen = counts.get("uninit") or []
    if not seen:
        return True
    idx = tuple(seen[0][1])
    return len(idx) == 1 and (int(idx[0]) < R or int(idx[0]) >= THREADS + R)


def _left_halo(case, who):
    """("x", (index,)) of the left halo cell that thread ``who`` (block, thread) loads (threads t < R)."""
    b, t = int(tuple(who[0])[0]), int(tuple(who[1])[0])
    return ("x", (b * THREADS + t - R,)) if t < R else (None, ())


def _own_past_end(case):
    """y when the threads past the end of x store nothing into their own tile cell (tile[t + R]): an
    output whose window reaches a cell j >= n inside its own block reads a cell nobody wrote (NaN in
    the simulator); None where no window does."""
    n = case.outputs[0][0][0]
    i = np.arange(n)
    end = (i // THREADS + 1) * THREADS  # the block's own cells end there
    reach = np.minimum(i + R, end - 1) >= n
    if not reach.any():
        return None
    out = np.array(case.refs[0], np.float64)
    out[reach] = np.nan
    return [out]


def _own_cell_unread(case, counts):
    """Evidence for :func:`_own_past_end`: the first shared cell read before any thread stored it is a
    block's own cell (R .. THREADS + R - 1) whose thread lies past the end of x."""
    seen = counts.get("uninit") or []
    if not seen:
        return False
    idx, who = tuple(seen[0][1]), seen[0][2]
    if len(idx) != 1 or not R <= int(idx[0]) < THREADS + R:
        return False
    b = int(tuple(who[0])[0])
    return b * THREADS + int(idx[0]) - R >= case.outputs[0][0][0]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message[, the access
# of a thread: (array, index)])
MISTAKES = [
    ("halo", _no_halo,
     f"y is NaN exactly where the window reaches past the block's own {THREADS} elements (outputs within R = {R} "
     f"of a block's edge) and right elsewhere: the halo cells of the tile were never stored: threads t < R also "
     f"load the left halo, tile[t] = x[i - R] (0 before x's start), and the right one, tile[t + THREADS + R] = "
     f"x[i + THREADS] (0 past x's end)", None, _halo_cell_unread),
    ("halo guard", lambda c: None,
     "this is a right halo cell, x[i + THREADS] (at an offset from the thread's own element) loaded by a thread "
     "t < R, past the end of x: load it only when "
     "right < n and put 0 in the tile otherwise (`x[right] if right < n else 0`; x is 0 outside)",
     _right_halo),
    ("halo guard", lambda c: None,
     "this is a left halo cell, x[i - R] (at an offset from the thread's own element) loaded by a thread t < R, "
     "before the start of x for block 0: load it only when left >= 0 and put 0 in the tile otherwise "
     "(`x[left] if left >= 0 else 0`; x is 0 outside)",
     _left_halo),
    ("tile fill", _own_past_end,
     "y is NaN where the window reaches the tile cells of threads past the end of x: those threads stored nothing "
     "into their own cell, tile[t + R], which a neighbour's window reads: every thread stores its cell, 0.0 when "
     "i >= n (`tile[t + R] = x[i] if i < n else 0.0`)", None, _own_cell_unread),
]
