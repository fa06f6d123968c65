"""quantize: hidden tests (parameters from kernels/quantize.py's quantize_params), and values that
land exactly on .5 (round half to even, as np.round and the seed do)."""
import numpy as np

from exercises import Case, clamp_hint, randn
from kernels.quantize import quantize_params

THREADS = 64


def _ties(rng, n):
    """x with x / scale + zero_point exactly k + 0.5 (both in float32 and float64: the scale is a power
    of two), random k in 0..254, a few values clamped at each end; (x, scale, zero_point). The zero point
    is odd: rounding x / scale before adding it (``round(x / scale) + zero_point``) then moves every tie by
    one (half to even sees the other parity); with an even one that mistake passes."""
    scale, zp = 2.0 ** -int(rng.integers(2, 6)), 2 * int(rng.integers(50, 78)) + 1
    k = rng.integers(0, 255, n).astype(np.float64)
    v = k + 0.5
    v[rng.choice(n, 4, replace=False)] = rng.uniform(-40, -1, 4)      # below 0: clamped to 0
    v[rng.choice(n, 4, replace=False)] = rng.uniform(256, 300, 4)     # above 255: clamped to 255
    x = ((v - zp) * scale).astype(np.float32)
    return x, scale, zp


def cases(rng):
    out = []
    for name, n, spread, offset in (("one element", 1, 1.0, 0.0), ("range holds zero", 3 * THREADS + 13, 2.0, 0.3),
                                    ("all positive", 150, 0.5, 5.0), ("all negative", 77, 30.0, -200.0),
                                    ("ties at .5", THREADS + 1, None, None)):
        if spread is None:
            x, scale, zp = _ties(rng, n)
        else:
            x = randn(rng, n, scale=spread, offset=offset)
            scale, zp = quantize_params(x.min(), x.max())
        v = x.astype(np.float64) / scale + zp
        ref = np.round(np.clip(v, 0, 255))
        # exact codes, except within a whisker of a .5 boundary (float32 vs float64 rounding); exact
        # ties (the "ties" case: exactly representable) must round half to even
        exact_tie = np.abs(v - np.floor(v)) == 0.5
        near_half = (np.abs(np.abs(v - np.floor(v)) - 0.5) < 1e-3) & ~exact_tie
        tol = np.where(near_half, 1.0, 0.0)
        out.append(Case(f"{name}, n={n}", [x, float(scale), int(zp)], [((n,), np.uint8)], [ref], [tol],
                        grid=(n + THREADS - 1) // THREADS, block=THREADS,
                        diagnose=lambda outs, refs: clamp_hint(outs[0], refs[0], 0, 255)))
    return out


def _codes(case, v, rounding=np.round, clamp=True):
    return [rounding(np.clip(v, 0, 255)) if clamp else np.mod(rounding(v), 256)]


def _v(case, scale_times=False, zp_sign=1, zp_first=False):
    x, scale, zp = np.asarray(case.args[0], np.float64), case.args[1], case.args[2]
    if zp_first:
        return (x + zp) / scale
    return x * scale + zp_sign * zp if scale_times else x / scale + zp_sign * zp


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("scale direction", lambda c: _codes(c, _v(c, True)),
     "q is round(clamp(x * scale + zero_point)) for every element: the scale is the step between two codes, so x "
     "goes to codes by dividing: divide by the scale, q = round(clamp(x / scale + zero_point, 0, 255))"),
    ("clamp", lambda c: _codes(c, _v(c), clamp=False),
     "q is round(x / scale + zero_point) wrapped modulo 256: values below 0 or above 255 were not clamped; clamp to "
     "[0, 255] before converting to uint8"),
    ("zero point", lambda c: _codes(c, _v(c, zp_first=True)) if c.args[2] else None,
     "q is round(clamp((x + zero_point) / scale)): the zero point was added before dividing, so it was divided by "
     "the scale too; the zero point is a code: add it after dividing, q = round(clamp(x / scale + zero_point, 0, 255))"),
    ("zero point", lambda c: _codes(c, _v(c, zp_sign=-1)) if c.args[2] else None,
     "q is round(clamp(x / scale - zero_point)): the zero point was subtracted; quantizing adds it (the code of "
     "x = 0 is the zero point), q = round(clamp(x / scale + zero_point, 0, 255)); dequantizing subtracts it"),
    ("rounding", lambda c: [np.clip(np.round(np.asarray(c.args[0], np.float64) / c.args[1]) + c.args[2], 0, 255)]
     if c.args[2] % 2 else None,
     "q is round(x / scale) + zero_point: x / scale was rounded before the zero point was added; on a tie (x / scale "
     "+ zero_point exactly k + 0.5) half to even then rounds to the other neighbour when the zero point is odd; add "
     "the zero point first, q = round(clamp(x / scale + zero_point, 0, 255))"),
    ("rounding", lambda c: _codes(c, _v(c), rounding=np.floor),
     "q is the code truncated (floor) instead of rounded to the nearest: converting a float to an integer "
     "truncates; round first (round(v): half to even)"),
]
