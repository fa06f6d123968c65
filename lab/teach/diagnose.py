"""Diagnoses from evidence, judge side: which mistake of an exercise's lesson the student's
outputs are, and what the student's trace did differently from the reference solution's.

* :class:`Mistake` and :func:`mistake_message`: each exercise declares, in its hidden.py
  (``MISTAKES``, next to the cases it judges), the mistakes its lesson is about (softmax: the max
  shift; min/max: the identities; scans: the offset and the steps; quantize: the scale's direction,
  the clamp, the rounding; mma: the k loop), each with the outputs that mistake produces on a case
  (computed here, in NumPy, from the case's inputs) and the lesson's message. A mistake is named only
  when the student's outputs equal its outputs (within the case's tolerance, NaN where it has NaN)
  and differ from the reference: the evidence is the student's own values, never a guess.
* :func:`repeated_atomic`: every thread of a block adding the block's one value (the trace's atomics).
  (The student's launch() over several sizes is :mod:`lab.teach.launches`; the reference solution's
  run, and single facts read from it, :mod:`lab.teach.reference`.)
* :func:`differential`: where no hint fits a wrong value, the reference solution (the lab's own code)
  run traced by the judge on the same case, and what the student's launch did differently around
  the first wrong element (its writer, that thread's loads of each input, atomics, shared-memory
  accesses, warp shuffles), or that none of that differs.

Nothing here runs student code: the outputs and counts are data the judge read back and checked
(:mod:`lab.teach.contained.channel`), launch() is the judge's interpretation of the file's text.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple
import re

import numpy as np

from lab.teach.reference import DIFFERENTIAL_THREADS, block_step, index_text, load_spans, reference, shared_reads_fact, store_target_fact, oob_block_axis
from lab.teach.contained.counts import dims3, who_of, stats_counts, thread_id
from lab.teach.messages import quote, store_line


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
    evidence: Callable | None = None  # (case, counts: the tracer's raw counts and "uninit") -> the trace shows its cause


def mistake_for_access(mistakes, case, name, idx, who) -> str | None:
    """The message of the first of ``mistakes`` whose access for thread ``who`` is the out-of-bounds
    access ``name[idx]`` the simulator saw (None when none is)."""
    for m in mistakes or ():
        m = Mistake(*m)
        if m.access is None:
            continue
        try:
            arr, at = m.access(case, who)
            with np.errstate(all="ignore"):
                alt = m.outputs(case)
        except Exception:  # noqa: BLE001
            continue
        if alt is not None and len(alt) == len(case.refs) and all(_same(r, a, 0.0) for r, a in zip(case.refs, alt)):
            continue  # the mistake does not show on this case: its access is the right one here
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


def mistake_message(mistakes, case, outs, counts=None) -> str | None:
    """The message of the one of ``mistakes`` whose outputs on ``case`` are the student's ``outs`` and
    are not the reference's (None when none is, or when two mistakes of other concepts or words give
    those same outputs on this case: the case cannot tell them apart). ``counts``: the tracer's raw
    counts of the student's launch (simulator): a mistake that declares ``evidence`` is named only
    where they show its cause (other bugs can give the same values)."""
    found = []
    for m in mistakes or ():
        m = Mistake(*m)  # hidden.py declares plain (concept, outputs, message) tuples
        if m.evidence is not None and counts is not None:
            try:
                if not m.evidence(case, counts):
                    continue
            except Exception:  # noqa: BLE001 - evidence that cannot be read: not shown
                continue
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
            found.append(m)
    if len({(m.concept, m.message) for m in found}) > 1 and len({m.concept for m in found}) > 1:
        return None  # e.g. a max shifted by the first element and a max identity of 0, both NaN alike here
    return found[0].message if found else None


def exercise_mistakes(ex) -> list:
    """The exercise's declared mistakes (``MISTAKES`` of its hidden.py), or []."""
    try:
        return list(getattr(ex.hidden(), "MISTAKES", ()) or ())
    except Exception:  # noqa: BLE001
        return []


def repeated_atomic(counts, oname, grid, block, m, at="") -> str | None:
    """Why every wrong element of output ``oname`` is ``m`` times its value, from the tracer's counts of
    the launch (``counts``, :func:`lab.teach.contained.counts.stats_counts`): in every block that
    updated ``oname`` atomically, exactly ``m`` threads did, once each (the block's one value added by
    each of its threads), or one thread did, ``m`` times (the atomic inside a loop). ``at``: the
    atomic's quoted line. None when the counts show no such thing."""
    if not counts or m < 2:
        return None
    arrays = [a[0] for a in counts.get("arrays") or ()]
    if oname not in arrays:
        return None
    k = arrays.index(oname)
    per = math.prod(dims3(block))
    by_block: dict = {}
    for kd, a, tid, c in counts.get("per_thread") or ():
        if int(kd) == 2 and int(a) == k:
            by_block.setdefault(int(tid) // per, []).append(int(c))
    if by_block and all(v == [m] for v in by_block.values()):  # one thread a block, m times: a loop around it
        return (f"every wrong element is {m:g} times the expected value, and in each block one thread ran the atomic "
                f"on {oname}{f' at {at}' if at else ''} {m} times: the block's value was added {m} times where once "
                f"is right: the atomic sits inside a loop (it runs at every step): move it after the loop, where the "
                f"block's value is final")
    if not by_block or any(len(v) != m or set(v) != {1} for v in by_block.values()):
        return None
    who = "every thread" if m == per else f"{m} threads"
    return (f"every wrong element is {m:g} times the expected value, and {who} of each block ran the atomic on "
            f"{oname}{f' at {at}' if at else ''}, once each ({m} atomic updates a block): the block's one value is "
            f"added by each of its threads: let one thread do the block's atomic (`if cuda.threadIdx.x == 0:`)")


# --- Differential diagnosis: the reference solution traced on the same case ---------------------------
def _ndims(d) -> int:
    return 1 if isinstance(d, (int, np.integer)) else len(tuple(d))


def _fmt_who(who, nd) -> str:
    """'thread T of block B' as lab.teach.messages words it (not imported: messages imports this module)."""
    b, t = tuple(who[0])[:nd], tuple(who[1])[:nd]
    f = (lambda v: str(v[0])) if nd == 1 else (lambda v: "(" + ", ".join(map(str, v)) + ")")
    return f"thread {f(t)} of block {f(b)}"


def _per_thread(rows, arrays, kind: int) -> dict:
    """{(array name, thread id): count} of one kind (0 load, 2 atomic) from a per_thread table."""
    out: dict = {}
    for kd, a, tid, c in rows:
        if int(kd) == kind:
            key = (arrays[int(a)][0], int(tid))
            out[key] = out.get(key, 0) + int(c)
    return out


def _load_lines(counts, tid: int) -> dict:
    """{array name: {line: loads}} of thread ``tid`` (the tracer's ``load_lines`` table)."""
    arrays = counts.get("arrays") or []
    out: dict = {}
    for a, t, line, c, *_ in counts.get("load_lines") or ():
        if int(t) == tid and int(line) > 0 and 0 <= int(a) < len(arrays):
            d = out.setdefault(arrays[int(a)][0], {})
            d[int(line)] = d.get(int(line), 0) + int(c)
    return out


def _load_span(counts, tid: int) -> dict:
    """{array name: (lowest, highest) flat index} that thread ``tid`` loaded (the ``load_lines`` table)."""
    arrays = counts.get("arrays") or []
    out: dict = {}
    for a, t, _line, _c, lo, hi in (r for r in counts.get("load_lines") or () if len(r) == 6):
        if int(t) == tid and 0 <= int(a) < len(arrays):
            name = arrays[int(a)][0]
            old = out.get(name)
            out[name] = (int(lo), int(hi)) if old is None else (min(old[0], int(lo)), max(old[1], int(hi)))
    return out


def _span_text(name, span, shape) -> str:
    """'x[3]' or 'x[0..63]' (multi-dimensional indices for a shaped array)."""
    def one(f):
        return index_text(name, np.unravel_index(int(f), shape) if len(shape) > 1 else (int(f),))

    return one(span[0]) if span[0] == span[1] else f"{one(span[0])}..{one(span[1])[len(name):]}"


_AXIS = "xyz"


def _index_label(ds, whos, bd, refs=None, steps=None) -> tuple | None:
    """What the differences ``ds`` (student's index minus the reference's, along one axis of an array,
    one per observation) are, as a function of the thread that made each (``whos``: its block and
    thread coordinates, 3 each; ``bd``: the block's size): ("same",), ("local", a) (minus blockIdx.a *
    blockDim.a: the index within the block where the reference uses the global one, seen in block 0
    and in another block), ("swap", a, b) (threadIdx.a - threadIdx.b: one thread axis for the other,
    seen nonzero), ("tforb", a) (threadIdx.a - blockIdx.a: the thread's index where the block's belongs,
    seen in a block other than 0), ("bswap", a, b, c) (c * (blockIdx.a - blockIdx.b): one block axis for the other, seen
    nonzero), ("const", c); None when none fits every observation. ``refs``: the reference's index of each
    observation (:func:`lab.teach.reference.block_step`); ``steps``: {block axis: the reference's step per block along it},
    from its whole run (a block axis seen in one value only is then told by the reference's own steps)."""
    if all(d == 0 for d in ds):
        return ("same",)
    for a in range(3):
        want = [-(w[0][a] * bd[a]) for w in whos]
        if all(d == v for d, v in zip(ds, want)) and any(v == 0 for v in want) and any(v != 0 for v in want):
            return ("local", a)
    for a in range(3):  # blockIdx.a times another number than blockDim.a
        ks = {d // w[0][a] for d, w in zip(ds, whos) if w[0][a] and d % w[0][a] == 0}
        if (len(ks) == 1 and all(d == 0 for d, w in zip(ds, whos) if not w[0][a])
                and all(w[0][a] == 0 or d % w[0][a] == 0 for d, w in zip(ds, whos)) and any(w[0][a] for w in whos)):
            k = ks.pop()
            if steps and steps.get(a) == 0 and k in [v for b, v in steps.items() if b != a]:  # another axis's step
                return ("bswap", a, next(b for b, v in steps.items() if b != a and v == k), k, "one-sided")
            if not any(w[0][a] == 0 for w in whos) and not steps:
                continue  # block 0 never seen along a: no evidence of the index's form there
            if not all(len({w[1][x] for w in whos if w[0][a]}) > 1 for x in range(3) if bd[x] > 1):
                continue  # the moved blocks' threads not seen varied along each axis: a thread-index term unruled out
            step = block_step(refs, whos, a) if refs is not None else None
            step = (steps or {}).get(a) if step is None else step
            step = bd[a] if step is None else step  # the reference's own step per block, else the block's size
            if k and k + step > 0:
                return ("bstride", a, k + step) if step == bd[a] else ("bstride", a, k + step, step)
    for a, b in ((0, 1), (1, 0)):  # (a block with threads along both axes: a 1-D block has no y to swap)
        want = [w[1][a] - w[1][b] for w in whos]
        if bd[a] > 1 and bd[b] > 1 and all(d == v for d, v in zip(ds, want)) and any(v != 0 for v in want):
            return ("swap", a, b)
    for a in range(3):  # threadIdx.a - blockIdx.a: the thread's index where the block's belongs (one per block)
        want = [w[1][a] - w[0][a] for w in whos]
        if (all(d == v for d, v in zip(ds, want)) and any(w[0][a] for w in whos) and len({w[1][a] for w in whos}) > 1
                and any(v != 0 for v in want)):
            return ("tforb", a)
    for a, b in ((0, 1), (1, 0)):  # c * (blockIdx.a - blockIdx.b): the block's a for its b
        moved = [(d, w[0][a] - w[0][b]) for d, w in zip(ds, whos)]
        ks = {d // m for d, m in moved if m and d % m == 0}
        if (len(ks) == 1 and any(w[0][a] for w in whos) and any(w[0][b] for w in whos)  # both block axes seen and all(d == 0 for d, m in moved if not m) and all(not m or d % m == 0 for d, m in moved)
                and any(m for _, m in moved) and any(not m for _, m in moved)):  # seen moved and unmoved
            k = ks.pop()
            if k > 0:
                return ("bswap", a, b, k)
    if len(set(ds)) == 1:
        return ("const", ds[0])
    return None


def index_fact(case, counts, rc, grid, block, r_grid, r_block, names, r_names, source=None, raw=False):
    """The launch-wide evidence of a wrong load index: for an input array, every thread's loads (lowest
    and highest index, :func:`load_spans`) beside the same thread's in the reference solution's run of
    the same launch, and, per axis of the array, the difference as a function of the thread
    (:func:`_index_label`): the index within the block where the reference uses the global index
    (blockIdx * blockDim missing), threadIdx.x where it uses threadIdx.y (or the reverse), or one
    constant shift. (text, kind) naming it, the student's line quoted, or None (the launches differ,
    no thread loads differently, or the differences follow no such rule). ``raw``: without a rule, the
    first thread whose loads differ, in words (kind "raw"); ("", "same") when every thread of the launch
    loaded the same elements of every input as the reference's."""
    g, b = dims3(grid), dims3(block)
    if g != dims3(r_grid) or b != dims3(r_block):
        return None
    nd = _ndims(grid)
    first_raw, all_same = None, True
    for j, a in enumerate(case.args):
        if not isinstance(a, np.ndarray) or j >= len(names) or j >= len(r_names) or a.size == 0:
            continue
        S, R = load_spans(counts, names[j]), load_spans(rc, r_names[j])
        all_same = all_same and S == R
        common = sorted(t for t in S if t in R)
        diff = [t for t in common if S[t][1:] != R[t][1:]]
        if not diff:
            continue
        shape = tuple(a.shape)
        whos, per_axis, ref_axis = [], [[] for _ in shape], [[] for _ in shape]
        counts_equal = all(S[t][0] == R[t][0] for t in common)  # a constant shift is an offset only then
        for t in common:
            who = who_of(t, g, b)
            # the lowest index each loaded; the highest too where both made as many loads (a guard that
            # skips a load in one run and not the other moves only the highest)
            for end, (fs, fr) in enumerate(zip(S[t][1:] if S[t][0] == R[t][0] else S[t][1:2], R[t][1:])):
                if not (0 <= fs < a.size and 0 <= fr < a.size):
                    continue
                us, ur = np.unravel_index(fs, shape), np.unravel_index(fr, shape)
                whos.append(who)
                for ax in range(len(shape)):
                    per_axis[ax].append(int(us[ax]) - int(ur[ax]))
                    ref_axis[ax].append((int(ur[ax]), end))
        r_obs = [(np.unravel_index(v[1], shape), who_of(tr, g, b)) for tr, v in R.items() if 0 <= v[1] < a.size]
        r_steps = [{x: block_step([(int(u[ax]), 0) for u, _ in r_obs], [w for _, w in r_obs], x) for x in range(2)
                    if g[x] > 1} for ax in range(len(shape))]  # the reference's own step per block, whole run
        labels = [_index_label(ds, whos, b, rs, {x: v for x, v in st.items() if v is not None})
                  for ds, rs, st in zip(per_axis, ref_axis, r_steps)]
        if raw and first_raw is None:
            t = diff[0]
            lines = sorted({int(r[2]) for r in counts.get("load_lines") or () if len(r) == 6 and int(r[1]) == t
                            and 0 <= int(r[0]) < len(counts["arrays"]) and counts["arrays"][int(r[0])][0] == names[j]
                            and int(r[2]) > 0})
            at = ", ".join(quote(source, ln) for ln in lines[:2])

            def span(v, name=names[j], shape=tuple(a.shape)):
                return _span_text(name, (v[1], v[2]), shape)

            first_raw = (f"{_fmt_who(who_of(t, g, b), nd)} read {span(S[t])}{f' (at {at})' if at else ''}, the same "
                         f"thread of the reference solution {span(R[t])}: the index of {names[j]} differs from the "
                         f"reference's there (which element each thread reads)", "raw")
        if any(lb is None for lb in labels) or all(lb[0] == "same" for lb in labels):
            continue
        t = diff[0]
        for cand in diff:  # an example thread outside block 0 where that tells more
            if any(who_of(cand, g, b)[0]):
                t = cand
                break
        who = who_of(t, g, b)
        lines = sorted({int(r[2]) for r in counts.get("load_lines") or () if len(r) == 6 and int(r[1]) == t
                        and 0 <= int(r[0]) < len(counts["arrays"]) and counts["arrays"][int(r[0])][0] == names[j]
                        and int(r[2]) > 0})
        at = ", ".join(quote(source, ln) for ln in lines[:2])
        at = f" (at {at})" if at else ""

        def idx(f, name=names[j], shape=shape):
            return index_text(name, np.unravel_index(f, shape) if len(shape) > 1 else (f,))

        seen = (f"{_fmt_who(who, nd)} read {idx(S[t][1])}{at}, the same thread of the reference solution "
                f"{idx(R[t][1])}")
        axes = [ax for ax, lb in enumerate(labels) if lb[0] != "same"]
        where = "" if len(shape) == 1 else f" along axis {axes[0]} ({'rows' if axes[0] == len(shape) - 2 else 'columns' if axes[0] == len(shape) - 1 else 'its index ' + str(axes[0])})"
        lb = labels[axes[0]]
        if lb[0] == "local":
            x = _AXIS[lb[1]]
            return (f"{seen}: {names[j]}'s index{where} is the thread's index within its block (cuda.threadIdx.{x}), the "
                    f"same in every block, where it needs the global index cuda.blockIdx.{x} * cuda.blockDim.{x} + "
                    f"cuda.threadIdx.{x} (cuda.grid): every block reads block 0's elements", "local")
        if lb[0] == "bstride" and len(lb) == 4:  # the reference steps by another number than the block's size
            x = _AXIS[lb[1]]
            return (f"{seen}: {names[j]}'s index{where} moves by {lb[2]} from one block to the next along {x} "
                    f"(cuda.blockIdx.{x} * {lb[2]}), the reference's by {lb[3]} (cuda.blockIdx.{x} * {lb[3]}, the "
                    f"extent each block covers, not the {b[lb[1]]} threads a block has along {x}): blocks overlap or "
                    f"leave gaps", "bstride")
        if lb[0] == "bstride":
            x = _AXIS[lb[1]]
            return (f"{seen}: {names[j]}'s index{where} multiplies cuda.blockIdx.{x} by {lb[2]}, but your blocks have "
                    f"{b[lb[1]]} threads along {x}: blocks overlap or leave gaps: multiply by the block's size, "
                    f"cuda.blockDim.{x} (or use cuda.grid)", "bstride")
        if lb[0] == "swap":
            x, y = _AXIS[lb[1]], _AXIS[lb[2]]
            return (f"{seen}: {names[j]}'s index{where} uses cuda.threadIdx.{x} where it needs cuda.threadIdx.{y}: "
                    f"x and y swapped in this index (each thread must load the element its own (x, y) position "
                    f"stands for)", "swap")
        if lb[0] == "tforb":
            x = _AXIS[lb[1]]
            return (f"{seen}: {names[j]}'s index{where} is this thread's index within its block (cuda.threadIdx.{x}) "
                    f"where the reference's is the block's, cuda.blockIdx.{x} (one {('row' if where else 'element')} "
                    f"per block, shared by its threads)", "tforb")
        if lb[0] == "bswap" and len(lb) == 5:  # only blocks with blockIdx.y 0 seen: the reference's steps tell
            x, y = _AXIS[lb[1]], _AXIS[lb[2]]
            return (f"{seen}: in the reference solution's run {names[j]}'s index{where} moves by {lb[3]} per "
                    f"cuda.blockIdx.{y} and not with cuda.blockIdx.{x}; yours moves by {lb[3]} per cuda.blockIdx.{x}: "
                    f"the block's x and y are exchanged in this index (the grid's x counts along the columns, its y "
                    f"along the rows)", "bswap")
        if lb[0] == "bswap":
            x, y = _AXIS[lb[1]], _AXIS[lb[2]]
            return (f"{seen}: {names[j]}'s index{where} is {lb[3]} * cuda.blockIdx.{x} where the reference's is "
                    f"{lb[3]} * cuda.blockIdx.{y}: the block's x and y are exchanged in this index (the grid's x "
                    f"counts along the columns, its y along the rows)", "bswap")
        if lb[0] == "const" and len(axes) == 1 and counts_equal:
            c = lb[1]
            return (f"{seen}: every index of {names[j]}{where} that a thread read is {abs(c)} "
                    f"{'before' if c < 0 else 'past'} the reference's: an offset {'missing' if c < 0 else 'added'} in "
                    f"this index?", "const")
        return first_raw
    if first_raw is not None:
        return first_raw
    return ("", "same") if raw and all_same else None


def _line_loads(counts, name) -> dict:
    """{line: {thread id: (lowest, highest, loads)}} of array ``name``'s loads (the ``load_lines`` table)."""
    arrays = [a[0] for a in counts.get("arrays") or ()]
    out: dict = {}
    if name in arrays:
        k = arrays.index(name)
        for a, t, line, c, lo, hi in (r for r in counts.get("load_lines") or () if len(r) == 6):
            if int(a) == k and int(line) > 0:
                out.setdefault(int(line), {})[int(t)] = (int(lo), int(hi), int(c))
    return out


def register_fact(case, counts, rc, grid, block, names, r_names, source, r_source) -> str | None:
    """A register loaded with another element than the reference's register of the same name: for an
    input, each line of the student's file that assigns a load to a name (``a1 = A[...]``) beside the
    reference solution's line that assigns the same name, compared thread by thread (which element
    each thread loaded there); where they differ, the thread, both elements, and which register of
    the reference's loads this line's elements (two registers swapped). None when the launches differ
    or every such line loads what the reference's does."""
    g, b = dims3(grid), dims3(block)
    if not source or not r_source:
        return None
    lhs = re.compile(r"^\s*([A-Za-z_]\w*)\s*=[^=]")

    def name_at(lines, ln):
        m = lhs.match(str(lines[ln - 1])) if 0 < ln <= len(lines) else None
        return m.group(1) if m else None

    for j, a in enumerate(case.args):
        if not isinstance(a, np.ndarray) or j >= len(names) or j >= len(r_names):
            continue
        S, R = _line_loads(counts, names[j]), _line_loads(rc, r_names[j])
        r_by_name = {name_at(r_source, ln): ln for ln in R if name_at(r_source, ln)}
        for ln in sorted(S):
            reg = name_at(source, ln)
            lr = r_by_name.get(reg)
            if lr is None or S[ln] == R[lr]:
                continue
            diff = [t for t in sorted(S[ln]) if t in R[lr] and S[ln][t][:2] != R[lr][t][:2]]
            if not diff:
                continue
            t = diff[0]
            shape = tuple(a.shape)
            got = _span_text(names[j], S[ln][t][:2], shape)
            want = _span_text(names[j], R[lr][t][:2], shape)
            same = [r for r, m in r_by_name.items() if r != reg and R[m] == S[ln]]
            mine = {name_at(source, m): m for m in S if name_at(source, m)}  # the student's line of each register
            swapped = bool(same) and same[0] in mine and S[mine[same[0]]] == R[lr]

            def code(m):
                return "`" + " ".join(str(r_source[m - 1]).split()) + "`"

            also = (f"; every thread's {reg} holds what the reference's {same[0]} holds ({code(r_by_name[same[0]])})"
                    + (f", and its {same[0]} what the reference's {reg} holds: {reg} and {same[0]} are exchanged"
                       if swapped else f": a second copy of {same[0]}'s element")) if same else ""
            return (f"{_fmt_who(who_of(t, g, b), _ndims(grid))} loaded {got} into {reg} at {quote(source, ln)}, where "
                    f"the reference's {reg} holds {want} ({code(lr)}){also}: each register must hold the element "
                    f"the layout gives it")
    return None


def repeated_reads_hint(ex, case, trace, grid, block, names, source, times) -> str | None:
    """:func:`shared_reads_fact` for a value ``times`` times the expected one: an element read by that many
    threads where the reference's launch has one reader (the reference solution's run of ``case``)."""
    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    if not counts or not ex.has_solution or math.prod(dims3(grid)) * math.prod(dims3(block)) > DIFFERENTIAL_THREADS:
        return None
    ref = reference(ex, case)
    if ref is None:
        return None
    rc = stats_counts(ref[1].stats, ref[3], ref[4])
    fact = shared_reads_fact(case, counts, rc, grid, block, ref[3], ref[4], names, ref[5], source, times=times)
    return None if fact is None else f"every wrong element is {times} times the expected value, and {fact}"


def load_index_hint(ex, case, trace, grid, block, names, source=None) -> str | None:
    """:func:`index_fact` for the student's launch ``trace`` beside the reference solution's run of
    ``case``, as a hint ("the reference solution, run on this case: ..."), or None (no trace, a launch
    too large to re-run, no solution, no rule)."""
    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    if not counts or not ex.has_solution:
        return None
    if math.prod(dims3(grid)) * math.prod(dims3(block)) > DIFFERENTIAL_THREADS:
        return None
    ref = reference(ex, case)
    if ref is None:
        return None
    _outs, r_trace, _writers, r_grid, r_block, r_names = ref
    rc = stats_counts(r_trace.stats, r_grid, r_block)
    found = index_fact(case, counts, rc, grid, block, r_grid, r_block, names, r_names, source)
    if found is None:
        shared = shared_reads_fact(case, counts, rc, grid, block, r_grid, r_block, names, r_names, source)
        if shared:
            return "the reference solution, run on this case: " + shared
    if found is None and dims3(grid) == dims3(r_grid) and dims3(block) == dims3(r_block):
        reg = register_fact(case, counts, rc, grid, block, names, r_names, source,
                            getattr(ref[1], "lab_source", None))
        if reg is None:  # a shared cell filled from another element than the reference's
            reg = store_target_fact(case, counts, rc, grid, block, names, r_names, source, getattr(ref[1], "lab_source", None),
                                    none_too=False)  # (a thread kept out of a load: the values' hints may say why)
        return None if reg is None else "the reference solution, run on this case: " + reg
    return None if found is None else "the reference solution, run on this case: " + found[0]


def oob_index_rule(ex, case, last, grid, block, names, source=None, loads=True) -> str | None:
    """Why an out-of-bounds access's index is wrong where the access alone says nothing sure: the launch's
    access itself beside the reference's same thread where it shows the block's axes exchanged
    (:func:`lab.teach.reference.oob_block_axis`, a sure rule), else the launch's loads beside the reference
    solution's (:func:`load_index_hint`, with ``loads``); None when neither tells."""
    rule = None
    if last is not None and last.oob and last.oob[0][0] in names:  # the access's own sure rule first
        rule = oob_block_axis(ex, case, names.index(last.oob[0][0]), last.oob[0][1], last.oob[0][3], grid, block)
    return rule or (load_index_hint(ex, case, last, grid, block, names, source) if loads else None)


def differential(ex, case, k: int, first: tuple, writers, trace, grid, block, names, source=None) -> str | None:
    """What the student's launch did differently from the reference solution's on ``case``, around
    the first wrong element ``first`` of output ``k``: who wrote it in each, how many loads of each
    input that thread made in each, and the launch-wide atomics, shared-memory accesses and warp
    shuffles; only facts that differ are named, each load quoted at the student's line that made it
    (``source``: the lines of the student's file). None without a trace or a reference run.
    ``writers``/``trace``/``grid``/``block``/``names``: the student's (the judge's checked data)."""
    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    if not counts or writers is None:
        return None
    threads = math.prod(dims3(grid)) * math.prod(dims3(block))
    if threads > DIFFERENTIAL_THREADS:  # the reference's simulated run would cost more than the hint is worth
        return None
    if not ex.has_solution:  # a course that ships the solutions to teachers only (LAB_SOLUTIONS)
        return "no comparison with the reference solution's run: it is not installed here"
    ref = reference(ex, case)
    if ref is None:
        return None
    r_outs, r_trace, r_writers, r_grid, r_block, r_names = ref
    shape = tuple(case.outputs[k][0])
    flat = int(np.ravel_multi_index(first, shape)) if shape else 0
    onames = names[len(case.args):] if len(names) > len(case.args) else [f"out{j}" for j in range(len(case.outputs))]
    oname = onames[k] if k < len(onames) else f"out{k}"
    nd = _ndims(grid)
    ws, wr = writers[k].get(flat), r_writers[k].get(flat)
    rc = stats_counts(r_trace.stats, r_grid, r_block)
    found = index_fact(case, counts, rc, grid, block, r_grid, r_block, names, r_names, source, raw=True)
    if found is not None and found[1] not in ("same", "raw"):
        return "the reference solution, run on this case: " + found[0]
    same_loads = found is not None and found[1] == "same"  # every thread loaded what the reference's did
    other_loads = found[0] if found is not None and found[1] == "raw" else ""  # a thread that loaded otherwise
    facts = []
    if case.init is not None:  # an accumulator's first writer is whichever atomic came first: no evidence
        ws = wr = None
    if ws is not None and wr is not None and dims3(ws[0]) + dims3(ws[1]) != dims3(wr[0]) + dims3(wr[1]):
        facts.append(f"the reference's {index_text(oname, first)} is written by {_fmt_who(wr, _ndims(r_grid))}, yours by "
                     f"{_fmt_who(ws, nd)}")
    lines_s: dict = {}
    if ws is not None and wr is not None:
        mine = _per_thread(counts["per_thread"], counts["arrays"], 0)
        theirs = _per_thread(rc["per_thread"], rc["arrays"], 0)
        tid_s = thread_id(ws, dims3(grid), dims3(block))
        tid_r = thread_id(wr, dims3(r_grid), dims3(r_block))
        lines_s = _load_lines(counts, tid_s)
        span_s, span_r = _load_span(counts, tid_s), _load_span(rc, tid_r)
        for j, a in enumerate(case.args):
            if not isinstance(a, np.ndarray) or j >= len(names) or j >= len(r_names):
                continue
            n_s, n_r = mine.get((names[j], tid_s), 0), theirs.get((r_names[j], tid_r), 0)
            at = "; ".join(f"{c} at {quote(source, ln)}" for ln, c in sorted(lines_s.get(names[j], {}).items()))
            if n_s != n_r:
                ss, sr = span_s.get(names[j]), span_r.get(r_names[j])
                step = ""
                if ss is not None and sr is not None and n_s > 1 and n_r > 1 and len(lines_s.get(names[j], {})) == 1:
                    q_s, m_s = divmod(ss[1] - ss[0], n_s - 1)
                    q_r, m_r = divmod(sr[1] - sr[0], n_r - 1)
                    if not m_s and not m_r and q_s != q_r and q_s > 0 and q_r > 0:
                        step = (f": its loads lie {q_s} element{'s' if q_s != 1 else ''} apart, the reference's {q_r} "
                                f"apart: the loop steps by {q_s} where it should step by {q_r} (each of the threads "
                                f"that share the work takes one element in every {q_r})")
                facts.append(f"its writer made {n_s} load{'s' if n_s != 1 else ''} of {names[j]}"
                             f"{f' ({at})' if at else ''}, the reference's {n_r}{step}")
                continue
            ss, sr = span_s.get(names[j]), span_r.get(r_names[j])
            if ss is not None and sr is not None and ss != sr:
                shape = tuple(a.shape)
                where = ", ".join(quote(source, ln) for ln in sorted(lines_s.get(names[j], {})))
                facts.append(f"its writer read {_span_text(names[j], ss, shape)}{f' (at {where})' if where else ''}, the "
                             f"reference's {_span_text(names[j], sr, shape)}")
    a_s = sum(c for (kd, _, _, c) in counts["per_thread"] if int(kd) == 2)
    a_r = sum(c for (kd, _, _, c) in rc["per_thread"] if int(kd) == 2)
    if a_s != a_r:
        facts.append(f"{a_s} atomic update{'s' if a_s != 1 else ''} in all, the reference {a_r}")
    for key, what in (("shared_accesses", "shared-memory accesses"), ("warp_collectives", "warp shuffles")):
        v_s, v_r = int(counts.get(key, 0)), int(rc.get(key, 0))
        if v_s != v_r:
            facts.append(f"{v_s} {what} in all, the reference {v_r}")
    if not facts:
        loads = sorted({ln for d in lines_s.values() for ln in d})
        look = [quote(source, ln) for ln in loads[:3]]
        st = quote(source, store_line(trace, k, flat))
        if st and st not in look:
            look.append(st)
        where = f" ({'; '.join(look)})" if look else ""
        if same_loads:
            return (f"the reference solution, run on this case, wrote {index_text(oname, first)} from the same thread, "
                    f"and every thread of the launch read the same elements of each input as the reference's, with "
                    f"as many atomics, shared accesses and shuffles: what differs is how the values were combined "
                    f"(the arithmetic, or which shared cells were added){where}")
        if other_loads:
            return (f"the reference solution, run on this case, wrote {index_text(oname, first)} from the same thread "
                    f"after as many loads of each input, with as many atomics, shared accesses and shuffles, but not "
                    f"every thread read the same elements: {other_loads}")
        return (f"the reference solution, run on this case, wrote {index_text(oname, first)} from the same thread "
                f"after as many loads of each input, with as many atomics, shared accesses and shuffles: what "
                f"differs is which elements were read or how they were combined{where}")
    return "the reference solution, run on this case: " + "; ".join(facts)
