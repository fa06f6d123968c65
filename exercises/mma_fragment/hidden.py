"""mma_fragment: hidden tests (one tile, several tiles down and across, long K), a tolerance for TF32
inputs, and a hint naming the fragment register whose elements landed in the wrong place."""
import numpy as np

from exercises import Case, and_drawn, randn
from kernels.gemm.mma import c_index, rounded_inputs_tolerance


def _diagnose(A, B):
    # judged as the check judges: against the exact product, within the tolerance of TF32 inputs, so the
    # hints hold for rounded inputs (mma.sync on a GPU) and unrounded ones (an emulation that multiplies
    # in float32, as numba-cuda's twin of mma_tf32 does)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    tol = rounded_inputs_tolerance(A, B, 10)

    def diagnose(outs, refs):
        out = np.asarray(outs[0], np.float64)
        bad = ~(np.abs(out - exact) <= tol)  # NaN (never written) counts as bad
        if not bad.any():
            return None
        if np.isnan(out).any():
            return "some elements of C were never written: each lane stores c0..c3 at four places"
        k = A.shape[1]
        if k > 8:
            last = A[:, k - 8:].astype(np.float64) @ B[k - 8:].astype(np.float64)
            if (np.abs(out - last) <= rounded_inputs_tolerance(A[:, k - 8:], B[k - 8:], 10)).all():
                return ("C holds only the last k-step's product (A[:, K-8:] @ B[K-8:, :]): keep c0..c3 as running "
                        "sums over every k-step: set them to 0 once, before the K loop, and pass them to every mma_tf32")
        # which registers of the C fragment hold wrong values (over every tile)
        wrong = sorted({i for lane in range(32) for i in range(4)
                        if bad[c_index(lane, i)[0]::16, c_index(lane, i)[1]::8].any()})
        rows_ok = (np.abs(np.sort(out, axis=None) - np.sort(exact, axis=None)) <= np.max(tol)).all()
        where = f"registers c{', c'.join(map(str, wrong))} of the C fragment" if wrong else "C"
        if rows_ok:
            return (f"C holds the right values in the wrong places ({where}): c0 and c1 go to columns 2q and "
                    f"2q + 1 of row g, c2 and c3 to the same columns of row g + 8")
        return (f"wrong values in {where}: check which element of A each a_i holds (a1: row g + 8, a2: column "
                f"q + 4) and that B's fragment is b0 = B[k0 + q, c0 + g], b1 = B[k0 + q + 4, c0 + g]")
    return diagnose


def cases(rng):
    out = []
    for m, n, k in and_drawn(((16, 8, 8), (32, 24, 16), (48, 16, 40)),
                             lambda: (16 * int(rng.integers(1, 5)), 8 * int(rng.integers(1, 5)), 8 * int(rng.integers(1, 7))),
                             key=lambda mnk: mnk):
        A, B = randn(rng, (m, k)), randn(rng, (k, n))
        ref = A.astype(np.float64) @ B.astype(np.float64)
        out.append(Case(f"M={m} N={n} K={k} ({(m // 16) * (n // 8)} warp tiles)", [A, B],
                        [((m, n), np.float32)], [ref], [rounded_inputs_tolerance(A, B, 10)],
                        grid=(n // 8, m // 16), block=32, diagnose=_diagnose(A, B)))
    return out


def _short_k(case):
    A, B = (np.asarray(a, np.float64) for a in case.args[:2])
    k = A.shape[1] - 8
    return [A[:, :k] @ B[:k, :]]


def _row_base(case, step):
    """C when block y's tile starts at row ``step * blockIdx.y`` (16 rows a tile): the rows the tiles
    cover hold A @ B, the others are never written (NaN); None where a tile would reach past A."""
    A, B = (np.asarray(a, np.float64) for a in case.args[:2])
    gy = case.grid[1]
    if step * (gy - 1) + 16 > A.shape[0]:
        return None
    out = np.full((A.shape[0], B.shape[1]), np.nan)
    for by in range(gy):
        out[step * by:step * by + 16] = (A @ B)[step * by:step * by + 16]
    return [out]


def _col_base_access(case, who, step):
    """("B", index): the first B element lane ``who`` reads when block x's tile starts at column
    ``step * blockIdx.x`` (b0 = B[q, c0 + g] at k0 = 0)."""
    bx, lane = int(tuple(who[0])[0]), int(tuple(who[1])[0])
    return "B", (lane % 4, step * bx + lane // 4)


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("tile base", lambda c: _row_base(c, 8),
     "C's rows from 8 * (blocks along y) + 8 on are never written and the tiles of blocks y and y + 1 overlap by 8 "
     "rows: the tile's row base is 8 * blockIdx.y, but a tile has 16 rows: r0 = 16 * blockIdx.y (and the column "
     "base c0 = 8 * blockIdx.x: a tile has 8 columns)"),
    ("tile base", lambda c: None,
     "the tile's column base is 16 * blockIdx.x, but a tile has 8 columns: c0 = 8 * blockIdx.x (and the row base "
     "r0 = 16 * blockIdx.y: a tile has 16 rows)",
     lambda c, who: _col_base_access(c, who, 16)),
    ("k loop", _short_k,
     "C is A @ B without the last k-step (columns K - 8 .. K - 1 of A never multiplied): the k loop stops one "
     "step early; range(0, K, 8) runs every k-step of 8"),
]
