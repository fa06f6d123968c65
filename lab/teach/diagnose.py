"""Diagnoses from evidence, judge side (issue 41): which mistake of an exercise's lesson the student's
outputs are, and what the student's own launch() does over several sizes.

* :class:`Mistake` and :func:`mistake_message`: each exercise declares, in its hidden.py
  (``MISTAKES``, next to the cases it judges), the mistakes its lesson is about (softmax: the max
  shift; min/max: the identities; scans: the offset and the steps; quantize: the scale's direction,
  the clamp, the rounding; mma: the k loop), each with the outputs that mistake produces on a case
  (computed here, in NumPy, from the case's inputs) and the lesson's message. A mistake is named only
  when the student's outputs equal its outputs (within the case's tolerance, NaN where it has NaN)
  and differ from the reference: the evidence is the student's own values, never a guess.
* :func:`launch_mismatch`: the student's launch() (interpreted by the judge, :mod:`lab.teach.source`,
  never run) evaluated for several sizes along an axis whose threads fall short of the elements:
  the block size its block count was computed for, against the block size it returns.

Nothing here runs student code: the outputs are data the judge read back, launch() is the judge's
interpretation of the file's text.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from kernels.spec import plural


class Mistake(NamedTuple):
    """One mistake an exercise's lesson is about.

    concept: the lesson's concept ("max shift", "identity", ...), for reports.
    outputs: case -> the outputs (a list of arrays, the case's output shapes) that this mistake gives
      on ``case``, or None where it cannot be told apart there (computed in the precision the
      kernel works in, so an overflow shows as it does in the kernel).
    message: what the student reads: the mistake named, the concept, the fix.
    """

    concept: str
    outputs: Callable
    message: str
    access: Callable | None = None  # (case, who: (block, thread)) -> (array, index) this mistake accesses


def mistake_for_access(mistakes, case, name, idx, who) -> str | None:
    """The message of the first of ``mistakes`` whose access for thread ``who`` is the out-of-bounds
    access ``name[idx]`` the simulator saw (None when none is)."""
    for m in mistakes or ():
        m = Mistake(*m)
        if m.access is None:
            continue
        try:
            arr, at = m.access(case, who)
        except Exception:  # noqa: BLE001
            continue
        if arr == name and tuple(int(v) for v in at) == tuple(int(v) for v in idx):
            return m.message
    return None


def _same(out, alt, tol) -> bool:
    out = np.asarray(out, np.float64)
    alt = np.asarray(alt, np.float64)
    if out.shape != alt.shape:
        return False
    nan_o, nan_a = np.isnan(out), np.isnan(alt)
    if not np.array_equal(nan_o, nan_a):
        return False
    ok = ~nan_o
    o, a = out[ok], alt[ok]
    inf = np.isinf(o) | np.isinf(a)
    if not np.array_equal(o[inf], a[inf]):
        return False
    t = np.broadcast_to(np.asarray(tol, np.float64), out.shape)[ok][~inf]
    fin_o, fin_a = o[~inf], a[~inf]
    return bool(np.all(np.abs(fin_o - fin_a) <= t + 1e-5 * np.abs(fin_a) + 1e-12))


def mistake_message(mistakes, case, outs) -> str | None:
    """The message of the first of ``mistakes`` whose outputs on ``case`` are the student's ``outs``
    and are not the reference's (None when none is)."""
    for m in mistakes or ():
        m = Mistake(*m)  # hidden.py declares plain (concept, outputs, message) tuples
        try:
            with np.errstate(all="ignore"):
                alt = m.outputs(case)
        except Exception:  # noqa: BLE001 - a declaration that does not apply to this case
            continue
        if alt is None or len(alt) != len(outs):
            continue
        tols = case.tols
        if all(_same(r, a, 0.0) for r, a in zip(case.refs, alt)):
            continue  # the mistake does not show on this case
        if all(_same(o, a, t) for o, a, t in zip(outs, alt, tols)):
            return m.message
    return None


def exercise_mistakes(ex) -> list:
    """The exercise's declared mistakes (``MISTAKES`` of its hidden.py), or []."""
    try:
        return list(getattr(ex.hidden(), "MISTAKES", ()) or ())
    except Exception:  # noqa: BLE001
        return []


# --- launch() over several sizes -----------------------------------------------------------------------
_AXES = ("x", "y", "z")


def _fit(sizes, blocks) -> tuple[int, str] | None:
    """(D, form): the block size D that ``blocks`` were computed for from ``sizes``, by ceil(size / D)
    or size // D + 1, for every size; None when neither form fits one D."""
    for d in range(1, 2049):
        if all(b == -(-s // d) for s, b in zip(sizes, blocks)):
            return d, "ceil"
    for d in range(1, 2049):
        if all(b == s // d + 1 for s, b in zip(sizes, blocks)):
            return d, "floor+1"
    return None


def launch_mismatch(launch, name: str, args: tuple, shape: tuple) -> str | None:
    """Why the launch ``launch(*args)`` (the student's launch(), as the judge interprets it) has fewer
    threads than elements along an axis, from launch() itself: the sizes along that axis varied
    (the first ``len(shape)`` arguments of launch() are the output's shape, rows first), the number
    of blocks it returns fitted to ceil(size / D), and D compared with the threads a block it returns
    along that axis. None when the blocks were counted for the block size it returns (plain
    rounding down is :func:`lab.teach.messages._unwritten_message`'s), or when nothing fits."""
    def dims(v):
        return [int(v)] if isinstance(v, (int, np.integer)) else [int(u) for u in v]

    try:
        grid, block = launch(*args)
        g, b = dims(grid), dims(block)
    except Exception:  # noqa: BLE001
        return None
    nd = len(shape)
    for axis in range(min(nd, len(g), len(b))):
        k = nd - 1 - axis  # x = the last dimension (columns), y = rows
        elements = int(shape[k])
        if g[axis] * b[axis] >= elements:
            continue
        sizes, blocks, threads = [], [], set()
        base = int(args[k])
        for s in sorted({1, 2, 3, 100, 1000, base} | {p + d for p in (32, 64, 128, 256, 512, 1024, 2048) for d in (-1, 0, 1)}):
            a = list(args)
            a[k] = s
            try:
                gg, bb = launch(*a)
                gg, bb = dims(gg), dims(bb)
            except Exception:  # noqa: BLE001
                return None
            if axis >= len(gg) or axis >= len(bb):
                return None
            sizes.append(s)
            blocks.append(gg[axis])
            threads.add(bb[axis])
        fit = _fit(sizes, blocks)
        if fit is None or len(threads) != 1:
            return None
        d, form = fit
        t = b[axis]
        if d == t:
            return None
        what = ("n" if nd == 1 else ("rows" if k == 0 else "cols")) if nd <= 2 else f"dimension {k}"
        how = f"ceil({what} / {d})" if form == "ceil" else f"{what} // {d} + 1"
        call = f"{name}({', '.join(str(v) for v in args)})"
        axis_words = "" if nd == 1 else f" along {_AXES[axis]}"
        return (f"your launch() divides {what} by {d} (blocks{axis_words} = {how} for every size tried), but its "
                f"blocks have {t} threads{axis_words}: {call} gives {plural(g[axis], 'block')} x {t} = {g[axis] * t} threads "
                f"for {elements} {what if nd > 1 else 'elements'}; divide by the block's own size{axis_words} "
                f"(x = columns by block[0], y = rows by block[1])" if nd > 1 else
                f"your launch() divides n by {d} (blocks = {how} for every n tried), but its blocks have {t} threads "
                f"a block: {call} gives {plural(g[axis], 'block')} x {t} = {g[axis] * t} threads for {elements} elements; "
                f"count the blocks with the block size you return: (n + threads - 1) // threads")
    return None


def tree_step_race(races, race_lines, block) -> tuple[int, str] | None:
    """(k, lesson) for the first of a launch's shared-memory ``races`` (with their ``race_lines``)
    that is the evidence of a reduction or scan step run by the wrong threads, else None. The
    evidence, in a 1-D block: at one line, a thread wrote its own slot (index = its thread index)
    while another read that slot; a tree (``a[t] += a[t + s]``, the reader below the writer) whose
    writer is in the upper half of the block, where no thread of a halving tree ever adds (a missing
    barrier between steps has only lower-half writers); a scan step (``a[t] += a[t - s]``, the
    reader above the writer) that reads and writes at one line, with no barrier between the two."""
    dims = list(block) if isinstance(block, (tuple, list)) else [int(block)]
    if math.prod(dims[1:]) != 1:
        return None
    tpb = int(dims[0])
    for k, race in enumerate(races):
        lines = race_lines[k] if k < len(race_lines) else (None, None)
        if not lines[0] or lines[0] != lines[1]:
            continue
        who, did, arr, idx, other, other_did = race
        if len(idx) != 1 or len(who) < 2 or not other:
            continue
        me, them = int(tuple(who[1])[0]), int(tuple(other)[0])
        if did == "wrote" and other_did == "read":
            writer, reader = me, them
        elif did == "read" and other_did == "wrote":
            writer, reader = them, me
        else:
            continue
        if int(idx[0]) != writer or writer == reader:
            continue
        s = abs(writer - reader)
        if reader < writer and 2 * writer >= tpb:
            return k, (f"in a tree step every thread adds, thread {writer} too (the upper half of the block): it "
                       f"overwrote its own {arr}[{writer}] at line {lines[0]} while thread {reader} read it to add into "
                       f"{arr}[{reader}] (step s = {s}): only the lower half adds at each step: `if t < s:` around "
                       f"the add")
        if reader > writer:
            return k, (f"in a scan step thread {writer} overwrote its own {arr}[{writer}] at line {lines[0]} while "
                       f"thread {reader} read it as its neighbour (t - {s}) at the same line: read the neighbour into "
                       f"a register, cuda.syncthreads(), then add and store")
    return None
