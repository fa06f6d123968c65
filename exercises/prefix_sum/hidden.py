"""prefix_sum: hidden tests (one element, a warp -1 and +1, a block +1, many blocks; mixed signs,
all positive, and large values whose sums pass 2**24: a float32 shared buffer or accumulator rounds
them)."""
import numpy as np

from exercises import Case, and_drawn

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
        if np.array_equal(out, ref - x) and len(x) > 1 and np.any(x[:-1]):  # one element: any lost x[0] is 0
            return "every out[i] misses x[i]: this is the exclusive scan; the inclusive one adds x[i] too"
        d = ref[i] - out[i]
        if b > 0 and d == offsets[b]:
            return f"block {b} starts again from 0: add the block offset, the sum of block_sums[0:{b}]"
        if d == -sums[b]:
            before = f"block_sums[0:{b}]" if b else "none for block 0, so its offset is 0"
            return (f"block {b}'s elements are off by exactly block {b}'s own total: the offset is the sum of "
                    f"the blocks before it ({before})")
        if b > 1 and d == offsets[b - 1] and offsets[b - 1] != 0:
            return (f"block {b}'s offset is block {b - 1}'s total alone (block_sums[{b - 1}]): it misses "
                    f"{'block 0' if b == 2 else f'blocks 0..{b - 2}'}: the offset is the sum of every block before it, block_sums[0:{b}] (a loop over "
                    f"k < b)")
        if b > 0 and d == sums[b - 1]:
            return f"block {b} misses block {b - 1}'s total: the offset sums block_sums[0:{b}], all {b} of them"
        return f"the first wrong element is out[{i}], in block {b} at thread {i - starts[b]}"
    return diagnose


def _float32_hint(diagnose):
    """``diagnose``, preceded by a hint for sums past 2**24 that come out rounded to a float32 value
    (a float32 shared buffer, offset or accumulator where the data is int32)."""
    def hint(outs, refs):
        out = np.asarray(outs[0], np.int64)
        ref = np.asarray(refs[0], np.float64)
        bad = out != ref
        if bad.any():
            # the first wrong sum is past 2**24 and off by a float32 rounding step (later ones may be off
            # by several: the rounding errors add up along the scan, and negative values can bring a sum
            # back under 2**24 with the error carried)
            i = int(np.argmax(bad))
            if abs(ref[i]) > 2 ** 24 and abs(out[i] - ref[i]) <= np.spacing(np.float32(abs(ref[i]))) * 2:
                return (f"out[{i}] = {out[i]}, expected {int(ref[i])}: the first wrong sum is past 2**24 = 16777216 "
                        f"and off by a float32 rounding step: is temp, offset or an accumulator float32? float32 "
                        f"holds every integer only up to 2**24: keep them int32, as x")
        return diagnose(outs, refs)
    return hint


def _large(rng, n):
    """int64 values of random magnitude up to ~12 million, mostly positive: the running sums and
    each block's scan pass 2**24 (16.8 million, where float32 stops holding every integer) within
    a few elements and end between 2**24 and 2**31 (no int32 overflow); odd values, so a float32
    sum rounds (half of them lie between two float32 values)."""
    x = rng.integers(1_000_000, 12_000_000, n) | 1
    x[rng.choice(n, max(1, n // 8), replace=False)] *= -1
    limit = 2 ** 31 - 1
    while np.abs(np.cumsum(x)).max() > limit * 0.9:  # keep every partial sum well inside int32
        x //= 2
        x |= 1
    return x


def cases(rng):
    out = []
    # two cases of three blocks or more: an offset that takes only the previous block's total (or any
    # rule that is right for two blocks) fails at more than one size
    for n, kind in and_drawn(((1, "one element"), (31, "mixed signs"), (33, "all positive"), (THREADS + 1, "mixed signs"),
                              (2 * THREADS + 19, "large values"), (3 * THREADS + 7, "mixed signs")),
                             lambda: (int(rng.integers(2, 4 * THREADS)), "mixed signs")):
        if kind == "all positive":
            x = rng.integers(1, 1000, n)
        else:
            x = rng.integers(-1000, 1000, n)
        if kind == "large values":  # sums past 2**24: a float32 buffer or accumulator rounds them
            x = _large(rng, n)
        x = x.astype(np.int32)
        blocks = (n + THREADS - 1) // THREADS
        sums = np.add.reduceat(x.astype(np.int64), np.arange(blocks) * THREADS)
        ref = np.cumsum(x.astype(np.int64)).astype(np.float64)
        out.append(Case(f"n={n}, {kind}, {blocks} block{'s' if blocks > 1 else ''}",
                        [x, sums.astype(np.int32)], [((n,), np.int32)], [ref], [0.0],
                        grid=blocks, block=THREADS, diagnose=_float32_hint(_diagnose(x.astype(np.int64), sums))))
    return out


def _block_scan(case, last_step=THREADS // 2, strict=False, offsets=1, own=False):
    """out of a Hillis-Steele block scan with steps s = 1, 2, .., ``last_step``, the neighbour read for
    t > s (``strict``) or t >= s, and each block's offset added ``offsets`` times (``own``: the offset
    sums block_sums[0..b], the block's own sum too)."""
    x, sums = np.asarray(case.args[0], np.int64), np.asarray(case.args[1], np.int64)
    out = np.empty_like(x)
    for b in range(len(sums)):
        temp = np.zeros(THREADS, np.int64)
        part = x[b * THREADS:(b + 1) * THREADS]
        temp[:part.size] = part
        s = 1
        while s <= last_step:
            t = np.arange(THREADS)
            take = (t > s) if strict else (t >= s)
            temp = temp + np.where(take, np.roll(temp, s), 0)
            s *= 2
        out[b * THREADS:b * THREADS + part.size] = temp[:part.size] + offsets * sums[:b + 1 if own else b].sum()
    return [out.astype(np.float64)]


def _assigned_scan(case):
    """out of a block scan whose steps store the neighbour instead of adding it (temp[t] = temp[t - s]):
    each element is x[i - 63] of its block (0 for the first 63 threads), plus the block's offset; None
    where that is also the exclusive scan's result (one element a block: 0 either way)."""
    x, sums = np.asarray(case.args[0], np.int64), np.asarray(case.args[1], np.int64)
    shift = THREADS - 1  # 1 + 2 + ... + THREADS / 2
    out = np.empty_like(x)
    for b in range(len(sums)):
        part = x[b * THREADS:(b + 1) * THREADS]
        temp = np.zeros(THREADS, np.int64)
        temp[shift:] = np.pad(part, (0, THREADS - part.size))[:THREADS - shift]
        out[b * THREADS:b * THREADS + part.size] = temp[:part.size] + sums[:b].sum()
    excl = np.concatenate([[0], np.cumsum(x)[:-1]])
    return None if np.array_equal(out, excl) else [out.astype(np.float64)]


# the mistakes this lesson is about (lab.teach.diagnose): (concept, outputs on a case, message)
MISTAKES = [
    ("offset twice", lambda c: _block_scan(c, offsets=2),
     "every element of block b is off by exactly its offset sum(block_sums[0:b]): the block's offset was added "
     "twice (into temp and again at the store, or to the scan and to the result); add it once"),
    ("offset", lambda c: _block_scan(c, own=True),
     "every element of block b is off by exactly block_sums[b], the block's own total: the offset summed "
     "block_sums[0..b] (range(b + 1)); a block's offset is the sum of the blocks BEFORE it, block_sums[0:b] "
     "(0 for block 0)"),
    ("scan steps", lambda c: _block_scan(c, last_step=THREADS // 4),
     "out is a block scan whose last step is s = 16: element t misses x[t - 63 .. t - 32]: the scan's steps "
     "must go on while s < THREADS (s = 1, 2, 4, ..., 32), each element's window doubles at every step"),
    ("scan steps", lambda c: _block_scan(c, strict=True),
     "out is a scan step that reads the neighbour temp[t - s] only for t > s: thread t = s skips temp[0] at every "
     "step; the test is t >= s (every thread with a neighbour s to its left adds it)"),
    ("scan steps", _assigned_scan,
     "out is a block scan whose steps store the neighbour instead of adding it: temp[t] = temp[t - s] replaces the "
     "running sum, so after the steps 1, 2, .., 32 each element holds x[t - 63] alone: add it, temp[t] = temp[t] + "
     "temp[t - s] (the neighbour read into a register before the barrier)"),
]
