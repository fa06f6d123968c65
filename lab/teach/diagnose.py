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


# --- Differential diagnosis: the reference solution traced on the same case ---------------------------
def reference_run(ex, case):
    """(outputs, trace, writers, grid, block, param names) of the exercise's reference solution run
    in the lab's tracing simulator (:func:`lab.core.simt.run`), on ``case`` (the lab's own code, run by
    the judge: no student code involved); None when the run fails. Called only for a simulator
    check (the student's trace is there to compare with)."""
    try:
        from lab.teach import executor

        mod = executor.load_student(str(ex.solution), ex)
        kernel = getattr(mod, ex.kernel)
        grid, block = executor._launch_config(mod, ex, case)
        outs, trace, writers, error = executor._launch_sim(mod, ex, kernel, case, grid, block, 0,
                                                           np.random.default_rng(0), str(ex.solution))
        if error is not None:
            return None
        return outs, trace, writers, grid, block, executor._param_names(kernel)
    except Exception:  # noqa: BLE001 - no reference run: no differential facts
        return None


def _per_thread(rows, arrays, kind: int) -> dict:
    """{(array name, thread id): count} of one kind (0 load, 2 atomic) from a per_thread table."""
    out: dict = {}
    for kd, a, tid, c in rows:
        if int(kd) == kind:
            key = (arrays[int(a)][0], int(tid))
            out[key] = out.get(key, 0) + int(c)
    return out


def differential(ex, case, k: int, first: tuple, writers, trace, grid, block, names) -> str | None:
    """What the student's launch did differently from the reference solution's on ``case``, around
    the first wrong element ``first`` of output ``k``: who wrote it in each, how many loads of each
    input that thread made in each, and the launch-wide atomics, shared-memory accesses and warp
    shuffles; only facts that differ are named. None without a trace or a reference run.
    ``writers``/``trace``/``grid``/``block``/``names``: the student's (the judge's checked data)."""
    from lab.teach.lessons import _dims3, _thread_id, stats_counts
    from lab.teach.messages import _fmt_idx, _fmt_who, _ndims

    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    if not counts or writers is None:
        return None
    ref = reference_run(ex, case)
    if ref is None:
        return None
    r_outs, r_trace, r_writers, r_grid, r_block, r_names = ref
    shape = tuple(case.outputs[k][0])
    flat = int(np.ravel_multi_index(first, shape)) if shape else 0
    onames = names[len(case.args):] if len(names) > len(case.args) else [f"out{j}" for j in range(len(case.outputs))]
    oname = onames[k] if k < len(onames) else f"out{k}"
    nd = _ndims(grid)
    ws, wr = writers[k].get(flat), r_writers[k].get(flat)
    facts = []
    if case.init is not None:  # an accumulator's first writer is whichever atomic came first: no evidence
        ws = wr = None
    if ws is not None and wr is not None and _dims3(ws[0]) + _dims3(ws[1]) != _dims3(wr[0]) + _dims3(wr[1]):
        facts.append(f"the reference's {_fmt_idx(oname, first)} is written by {_fmt_who(wr, _ndims(r_grid))}, yours by "
                     f"{_fmt_who(ws, nd)}")
    rc = stats_counts(r_trace.stats, r_grid, r_block)
    if ws is not None and wr is not None:
        mine = _per_thread(counts["per_thread"], counts["arrays"], 0)
        theirs = _per_thread(rc["per_thread"], rc["arrays"], 0)
        tid_s = _thread_id(ws, _dims3(grid), _dims3(block))
        tid_r = _thread_id(wr, _dims3(r_grid), _dims3(r_block))
        for j, a in enumerate(case.args):
            if not isinstance(a, np.ndarray) or j >= len(names) or j >= len(r_names):
                continue
            n_s, n_r = mine.get((names[j], tid_s), 0), theirs.get((r_names[j], tid_r), 0)
            if n_s != n_r:
                facts.append(f"its writer made {n_s} load{'s' if n_s != 1 else ''} of {names[j]}, the reference's "
                             f"{n_r}")
    a_s = sum(c for (kd, _, _, c) in counts["per_thread"] if int(kd) == 2)
    a_r = sum(c for (kd, _, _, c) in rc["per_thread"] if int(kd) == 2)
    if a_s != a_r:
        facts.append(f"{a_s} atomic update{'s' if a_s != 1 else ''} in all, the reference {a_r}")
    for key, what in (("shared_accesses", "shared-memory accesses"), ("warp_collectives", "warp shuffles")):
        v_s, v_r = int(counts.get(key, 0)), int(rc.get(key, 0))
        if v_s != v_r:
            facts.append(f"{v_s} {what} in all, the reference {v_r}")
    if not facts:
        return (f"the reference solution, run on this case, wrote {_fmt_idx(oname, first)} from the same thread "
                f"after as many loads of each input, with as many atomics, shared accesses and shuffles: what "
                f"differs is which elements were read or how they were combined")
    return "the reference solution, run on this case: " + "; ".join(facts)
