"""prefix_sum: hidden tests (one element, a warp -1 and +1, a block +1, many blocks; mixed signs,
large magnitudes at random positions, all positive)."""
import numpy as np

from exercises import Case

THREADS = 64


def _diagnose(x, sums):
    starts = np.arange(len(sums)) * THREADS
    offsets = np.concatenate([[0], np.cumsum(sums)[:-1]])

    def diagnose(outs, refs):
        out = np.asarray(outs[0], np.int64)
        ref = np.asarray(refs[0], np.int64)
        bad = np.where(out != ref)[0]
        if not len(bad):
            return None
        i = bad[0]
        b = i // THREADS
        if np.array_equal(out, ref - x):
            return "every out[i] misses x[i]: this is the exclusive scan; the inclusive one adds x[i] too"
        d = ref[i] - out[i]
        if b > 0 and d == offsets[b]:
            return f"block {b} starts again from 0: add the block offset, the sum of block_sums[0:{b}]"
        if d == -sums[b]:
            before = f"block_sums[0:{b}]" if b else "none for block 0, so its offset is 0"
            return (f"block {b}'s elements are off by exactly block {b}'s own total: the offset is the sum of "
                    f"the blocks before it ({before})")
        if b > 0 and d == sums[b - 1]:
            return f"block {b} misses block {b - 1}'s total: the offset sums block_sums[0:{b}], all {b} of them"
        return f"the first wrong element is out[{i}], in block {b} at thread {i - starts[b]}"
    return diagnose


def cases(rng):
    out = []
    for n, kind in ((1, "one element"), (31, "mixed signs"), (33, "all positive"), (THREADS + 1, "mixed signs"),
                    (2 * THREADS + 19, "large values")):
        if kind == "all positive":
            x = rng.integers(1, 1000, n)
        else:
            x = rng.integers(-1000, 1000, n)
        if kind == "large values":  # a few magnitudes of a million (the total stays far from 2**31)
            x[rng.choice(n, 4, replace=False)] = rng.choice([-1, 1], 4) * rng.integers(500_000, 1_000_000, 4)
        x = x.astype(np.int32)
        blocks = (n + THREADS - 1) // THREADS
        sums = np.add.reduceat(x.astype(np.int64), np.arange(blocks) * THREADS)
        ref = np.cumsum(x.astype(np.int64)).astype(np.float64)
        out.append(Case(f"n={n}, {kind}, {blocks} block{'s' if blocks > 1 else ''}",
                        [x, sums.astype(np.int32)], [((n,), np.int32)], [ref], [0.0],
                        grid=blocks, block=THREADS, diagnose=_diagnose(x.astype(np.int64), sums)))
    return out
