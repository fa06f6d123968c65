"""The reference solution run traced by the judge on a student's case, and single facts read from that
run beside the student's trace (judge side: the lab's own code, built from its source, never student
code):

* :func:`reference_run` and :func:`reference`: the run (outputs, trace, writers, launch), kept per case and
  for the last few cases of an exercise (a judge that checks many files of one exercise runs each case's
  reference once);
* :func:`reference_reads_left`: whether a thread reads a 1-D input left of its own index (a halo cell);
* :func:`unread_cell`: a shared cell read before any store that the reference never reads (an index
  that points at cells nothing fills);
* :func:`atomic_op_fact`: another atomic function than the reference's at an element.

The differential diagnosis built on these runs is :mod:`lab.teach.diagnose`.
"""
from __future__ import annotations

import math
import hashlib
import inspect
import re
import threading

import numpy as np
from lab.core import simt, simulator
from lab.core.blocks import ranges_text
from lab.teach.contained import source
from lab.teach.contained.counts import dims3, stats_counts, who_of, thread_id
from lab.teach.messages import quote, store_line, fmt_who
from lab.teach.shared_words import unstored_cell, excluded_store


def atomic_op_fact(ex, case, k, trace, oname, source=None) -> str | None:
    """Which atomic updated each element of output ``k`` (the function named at the line of its first
    update: the student's trace beside the reference solution's run of ``case``), where the two differ:
    e.g. cuda.atomic.max into the slot the reference updates with cuda.atomic.min (an update that
    never changes an element holding the other's identity). None when no element's differs."""
    if trace is None or not ex.has_solution:
        return None
    ref = reference(ex, case)
    r_trace = ref[1] if ref is not None else None
    r_lines, r_src = getattr(r_trace, "lab_store_lines", None), getattr(r_trace, "lab_source", None)
    if not r_lines or k >= len(r_lines) or not source:
        return None
    op = re.compile(r"cuda\.atomic\.(\w+)\(")

    def op_at(lines, ln):
        m = op.search(str(lines[ln - 1])) if 0 < ln <= len(lines) else None
        return m.group(1) if m else None

    shape = tuple(case.outputs[k][0])
    differ = []
    for flat in range(int(np.prod(shape)) if shape else 1):
        ln = store_line(trace, k, flat)
        mine, theirs = op_at(source, ln), op_at(r_src, int(r_lines[k].get(flat, 0)))
        if mine and theirs and mine != theirs:
            idx = np.unravel_index(flat, shape) if shape else ()
            differ.append((index_text(oname, idx), mine, theirs, quote(source, ln)))
    if not differ:
        return None
    said = "; ".join(f"{e} was updated with cuda.atomic.{m} (at {q}), the reference's with cuda.atomic.{t}"
                     for e, m, t, q in differ[:3])
    swapped = len(differ) == 2 and differ[0][1] == differ[1][2] and differ[0][2] == differ[1][1]
    why = "the two atomics go to each other's slots: swap their indices" if swapped else \
        "another atomic than the one this element needs"
    return f"{said}: {why} (an atomic that cannot change the value an element starts with leaves it as it was)"


DIFFERENTIAL_THREADS = 1 << 14  # the largest launch (threads) the judge re-runs with the reference solution


def index_text(name, idx) -> str:
    return f"{name}[{', '.join(map(str, idx))}]"


def _param_names(kernel) -> list:
    try:
        return list(inspect.signature(getattr(kernel, "py_func", kernel)).parameters)
    except (TypeError, ValueError):
        return []


def reference_run(ex, case):
    """(outputs, trace, writers, grid, block, param names) of the exercise's reference solution run
    in the lab's tracing simulator (:func:`lab.core.simt.run`) on ``case``, its outputs poisoned as
    the student's first run: the lab's own code, built from its source (:func:`lab.teach.contained.source.load`)
    and run by the judge, with no student code involved. None when the run fails. Called only for
    a simulator check (the student's trace is there to compare with)."""
    try:
        simulator.select("sim")  # (the lab's emulated helpers, kernels.gemm.mma's copies and mma, are the simulator's)
        path = str(ex.solution)
        mod = source.load(source.read(path), path, ex.kernel, ex.launch, module_name=f"reference_{ex.name}")
        kernel = getattr(mod, ex.kernel)
        if case.grid is not None:
            grid, block = case.grid, case.block
        else:
            grid, block = getattr(mod, ex.launch)(*case.launch_args)
        names = _param_names(kernel)
        trace, lock = simt.Trace(), threading.RLock()
        args = [simt.traced(a.copy(), names[k], trace, lock) if isinstance(a, np.ndarray) else a
                for k, a in enumerate(case.args)]
        if case.init is not None:
            outs = [np.array(v, dtype=dt).reshape(shape) for v, (shape, dt) in zip(case.init, case.outputs)]
        else:
            outs = [simt.poisoned(shape, dt, 0) for shape, dt in case.outputs]
        onames = names[len(case.args):]
        targs = [simt.traced(o, n, trace, lock, output=True) for o, n in zip(outs, onames)]
        simt.run(kernel, grid, block, args + targs, np.random.default_rng(0), trace=trace, lock=lock)
        writers = [tr._lab_tracker.writer for tr in targs]
        trace.lab_store_lines = [dict(tr._lab_tracker.store_line) for tr in targs]  # flat -> line of the first write
        trace.lab_source = str(source.read(path)).splitlines()
        return outs, trace, writers, grid, block, names
    except Exception:  # noqa: BLE001 - no reference run: no differential facts
        return None


def reference_reads_left(ex, case, arg: int) -> bool | None:
    """Whether the reference solution, run on ``case`` (:func:`reference_run`), has a thread of a 1-D
    launch read 1-D argument ``arg`` below its own global index (a left neighbour, a halo cell): the
    evidence that a negative index is a halo cell to guard, not an index that is off. None when
    it cannot be told (no solution, no run, another shape or launch)."""
    a = case.args[arg] if arg < len(case.args) else None
    if not isinstance(a, np.ndarray) or a.ndim != 1 or not ex.has_solution:
        return None
    ref = reference(ex, case)
    if ref is None:
        return None
    _outs, r_trace, _writers, r_grid, r_block, r_names = ref
    g, b = dims3(r_grid), dims3(r_block)
    if g[1:] != [1, 1] or b[1:] != [1, 1] or math.prod(g) * math.prod(b) > DIFFERENTIAL_THREADS:
        return None
    past_block0 = False
    for tid, (_c, lo, _hi) in load_spans(stats_counts(r_trace.stats, r_grid, r_block), r_names[arg]).items():
        (bx, *_), (tx, *_) = who_of(tid, g, b)
        if lo < bx * b[0] + tx:
            return True
        past_block0 = past_block0 or bx > 0
    return False if past_block0 else None  # block 0 alone: its left neighbours may be guarded away


def load_spans(counts, name) -> dict:
    """{thread id: (loads, lowest, highest flat index)} of array ``name`` that each thread loaded, over
    every line (the tracer's ``load_lines`` table)."""
    arrays = counts.get("arrays") or []
    out: dict = {}
    for a, t, _line, c, lo, hi in (r for r in counts.get("load_lines") or () if len(r) == 6):
        if 0 <= int(a) < len(arrays) and arrays[int(a)][0] == name:
            old = out.get(int(t))
            out[int(t)] = ((int(c), int(lo), int(hi)) if old is None else
                           (old[0] + int(c), min(old[1], int(lo)), max(old[2], int(hi))))
    return out


def block_step(refs, whos, a) -> int | None:
    """How far the reference's index (``refs``: (index, which end of the thread's loads), one per
    observation ``whos``) moves per block along block
    axis ``a``: the one step that every pair of observations by the same thread of blocks differing only
    along ``a`` shows; None when no pair shows one, or pairs disagree."""
    seen: dict = {}
    steps = set()
    for (r, end), w in zip(refs, whos):  # (index, 0 for a thread's lowest or 1 for its highest)
        key = (tuple(w[1]), tuple(v for k, v in enumerate(w[0]) if k != a), end)
        for r2, b2 in seen.get(key, ()):
            if b2 != w[0][a] and (r - r2) % (w[0][a] - b2) == 0:
                steps.add((r - r2) // (w[0][a] - b2))
        seen.setdefault(key, []).append((r, w[0][a]))
    return steps.pop() if len(steps) == 1 else None


def reference_loads(ex, case, arg: int, who, grid, block) -> bool:
    """Whether the reference solution's run of ``case``, launched as the student's (``grid``, ``block``), has
    thread ``who`` = (block, thread) load argument ``arg`` at all (a thread the reference puts to work on
    that array: no guard should stop it there); False where the launches differ."""
    if not getattr(ex, "has_solution", False) or arg < 0:
        return False
    ref = reference(ex, case)
    if ref is None or arg >= len(ref[5]) or dims3(ref[3]) != dims3(grid) or dims3(ref[4]) != dims3(block):
        return False
    rc = stats_counts(ref[1].stats, ref[3], ref[4])
    return thread_id(who, dims3(ref[3]), dims3(ref[4])) in load_spans(rc, ref[5][arg])


def unread_cell(ex, case, arr, idx) -> str | None:
    """Where a shared cell ``arr[idx]`` that the student's kernel read before any thread stored it lies
    beside the reference solution's reads of that shared array on ``case`` (same name): None when the
    reference reads that cell too (a fill missing, not an index), or cannot tell; else the range of
    cells the reference reads, said: the read's index points at cells nothing fills on this case."""
    cells = _reference_cells(ex, case, arr)
    if not cells:
        return None
    flat = int(idx[0]) if len(idx) == 1 else None
    if flat is None or flat in cells:
        return None
    return (f"the reference solution, run on this case, never reads {arr}[{flat}]: it reads {arr}"
            f"[{ranges_text(sorted(cells), most=3)}] only, the cells this case fills: this read's index points at "
            f"cells that nothing stores on this case (which part of {arr} it reads: a buffer's or a tile's base)")


def reads_cell(ex, case, arr, idx) -> bool | None:
    """Whether the reference solution, run on ``case``, reads its shared array ``arr`` (same name) at
    the 1-D index ``idx``; None when that cannot be told (no solution, no such array there, an index
    of more than one dimension)."""
    cells = _reference_cells(ex, case, arr) if len(idx) == 1 else None
    return None if not cells else int(idx[0]) in cells


def _reference_cells(ex, case, arr):
    """The flat indices of shared array ``arr`` the reference solution read on ``case`` (None: unknown)."""
    if not ex.has_solution:
        return None
    ref = reference(ex, case)
    return getattr(getattr(ref[1], "stats", None), "shared_cells", {}).get(arr) if ref is not None else None


def unstored_words(ex, case, trace, source) -> str | None:
    """:func:`lab.teach.shared_words.unstored_cell` for the first shared cell the student's trace saw
    read before any thread of its block stored it (``trace.uninit``), from the student's source lines
    ``source``, with whether the reference solution reads that cell too (:func:`reads_cell`)."""
    if trace is None or not trace.uninit or not source:
        return None
    arr, idx, _who, _line = trace.uninit[0]
    try:
        reads = reads_cell(ex, case, arr, tuple(idx))
    except Exception:  # noqa: BLE001 - the reference's run is extra evidence, not the verdict
        reads = None
    text = "\n".join(map(str, source))
    bx = case.block if isinstance(case.block, (int, np.integer)) else (tuple(case.block)[0] if case.block else None)
    return unstored_cell(text, arr, tuple(idx), reads) or excluded_store(text, arr, tuple(idx), bx)


_REFERENCE_RUNS: dict = {}  # (exercise, case, its inputs' digest) -> reference_run's result, the last few


_REFERENCE_KEEP = 16


def _case_key(ex, case) -> tuple:
    """What decides a reference run of ``case``: the exercise, the case's name, launch and inputs (a digest)."""
    h = hashlib.blake2b(digest_size=16)
    for a in list(case.args) + list(case.init or ()):
        v = np.ascontiguousarray(a) if isinstance(a, np.ndarray) else np.asarray(a)
        h.update(str((v.dtype.str, v.shape)).encode())
        h.update(v.tobytes())
    return (ex.name, str(case.name), repr((case.grid, case.block, getattr(case, "launch_args", None))),
            repr(case.outputs), h.hexdigest())


def reference(ex, case):
    """:func:`reference_run` of ``case``, once per case (kept on the case, and the last few runs kept by the
    case's exercise, name, launch and inputs: a judge that checks many files of one exercise with the
    same cases, a class's submissions or the lab's mutants, runs the reference once)."""
    if not hasattr(case, "lab_reference_run"):
        key = _case_key(ex, case)
        if key not in _REFERENCE_RUNS:
            while len(_REFERENCE_RUNS) >= _REFERENCE_KEEP:
                _REFERENCE_RUNS.pop(next(iter(_REFERENCE_RUNS)))
            _REFERENCE_RUNS[key] = reference_run(ex, case)
        case.lab_reference_run = _REFERENCE_RUNS[key]
    return case.lab_reference_run


def store_target_fact(case, counts, rc, grid, block, names, r_names, source, r_source, none_too=True) -> str | None:
    """An input's element stored into a shared cell other than the reference solution's: each line of the
    student's file that stores a load into a subscripted target (``tile[t + THREADS + R] = x[right] ...``)
    beside the reference's one line with the same target (its text, spaces aside), compared thread by
    thread over the launch (the ``load_lines`` tables: which element each thread loaded there). The first
    thread that loaded another element than the reference's same thread, else one that loaded none where
    the reference's loads one (only with ``none_too``: a test that kept the thread out may be what
    differs): the thread, both elements, both lines. None where every such line loads what the
    reference's does, or the launches differ."""
    g, b = dims3(grid), dims3(block)
    if not source or not r_source:
        return None
    lhs = re.compile(r"^\s*([A-Za-z_]\w*\s*\[[^=]*\])\s*=[^=]")

    def target(lines, ln):
        m = lhs.match(str(lines[ln - 1])) if 0 < ln <= len(lines) else None
        return "".join(m.group(1).split()) if m else None

    def by_line(cn, name):
        arrays = [a[0] for a in cn.get("arrays") or ()]
        out: dict = {}
        for a, t, ln, _c, lo, hi in (r for r in cn.get("load_lines") or () if len(r) == 6):
            if 0 <= int(a) < len(arrays) and arrays[int(a)] == name and int(ln) > 0:
                out.setdefault(int(ln), {})[int(t)] = (int(lo), int(hi))
        return out

    nd = 1 if isinstance(grid, (int, np.integer)) else len(tuple(grid))
    for j, a in enumerate(case.args):
        if not isinstance(a, np.ndarray) or a.ndim != 1 or j >= len(names) or j >= len(r_names):
            continue
        S, R = by_line(counts, names[j]), by_line(rc, r_names[j])
        r_by_target: dict = {}
        for lr in R:
            r_by_target.setdefault(target(r_source, lr), []).append(lr)
        for ln in range(1, len(source) + 1):  # a line with no load at all counts too (its test kept every thread out)
            tgt = target(source, ln)
            lrs = r_by_target.get(tgt) if tgt else None
            if not lrs or len(lrs) != 1 or (ln not in S and names[j] not in str(source[ln - 1])):
                continue
            if sum(target(source, m) == tgt and f"{names[j]}[" in str(source[m - 1]) for m in range(1, len(source) + 1)) != 1:
                continue  # the student loads into that target at several lines: no one line stands for the reference's
            mine, theirs = S.get(ln, {}), R[lrs[0]]
            other = [t for t in sorted(theirs) if t in mine and mine[t] != theirs[t]]
            none = [t for t in sorted(theirs) if t not in mine] if none_too else []
            if not other and not none:
                continue
            t = (other or none)[0]
            w3 = who_of(t, g, b)
            who = fmt_who(w3, nd)
            own = w3[0][0] * b[0] + w3[1][0] if nd == 1 else None
            halo = (f" (one of the halo cells: {names[j]}[{theirs[t][0]}] is not the thread's own element {names[j]}[{own}])"
                    if own is not None and theirs[t][0] == theirs[t][1] != own else "")
            r_code = "`" + " ".join(str(r_source[lrs[0] - 1]).split()) + "`"
            want = f"{names[j]}[{theirs[t][0]}]" if theirs[t][0] == theirs[t][1] else \
                f"{names[j]}[{theirs[t][0]}..{theirs[t][1]}]"
            if other:
                got = f"{names[j]}[{mine[t][0]}]" if mine[t][0] == mine[t][1] else f"{names[j]}[{mine[t][0]}..{mine[t][1]}]"
                d = mine[t][0] - theirs[t][0]
                return (f"{who} stored {got} into {tgt} at {quote(source, ln)}, where the reference solution's same "
                        f"thread stores {want} into that cell{halo} ({r_code}): the index of {names[j]} there is "
                        f"{d:+d} from the reference's")
            return (f"{who} loaded no element of {names[j]} at {quote(source, ln)}, where the reference solution's "
                    f"same thread stores {want} into {tgt}{halo} ({r_code}): the index of {names[j]} stored into that cell "
                    f"(or the test around the load) differs from the reference's")
    return None


def hedge_fact(ex, case, k, first, writers, trace, grid, block, names, source=None) -> str | None:
    """Where a value hint can only ask (a hedge: "a partial missing, or one added twice?"), what the
    student's trace and the reference solution's run of ``case`` (same launch) say about the first wrong
    element ``first`` of output ``k``: stored by several threads where the reference's one thread stores
    each element (the later stores overwrite the finished value), else the elements its writer's block
    read beside those the reference's same block reads (another block's elements taken in, or its own
    left out). None where neither differs, or the launches or loads cannot be compared."""
    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    if not counts or writers is None or not ex.has_solution:
        return None
    g, b = dims3(grid), dims3(block)
    if math.prod(g) * math.prod(b) > DIFFERENTIAL_THREADS:
        return None
    ref = reference(ex, case)
    if ref is None or dims3(ref[3]) != g or dims3(ref[4]) != b:
        return None
    rc = stats_counts(ref[1].stats, ref[3], ref[4])
    cell = store_target_fact(case, counts, rc, grid, block, names, ref[5], source, getattr(ref[1], "lab_source", None))
    if cell:
        return "the reference solution, run on this case: " + cell
    nd = 1 if isinstance(grid, (int, np.integer)) else len(tuple(grid))
    shape = tuple(case.outputs[k][0])
    flat = int(np.ravel_multi_index(first, shape)) if shape else 0
    oname = names[len(case.args) + k] if len(names) > len(case.args) + k else f"out{k}"
    r_oname = ref[5][len(case.args) + k] if len(ref[5]) > len(case.args) + k else None
    others = (getattr(trace, "lab_others", None) or [{}] * (k + 1))[k].get(flat) or []
    r_arrays = [a[0] for a in rc.get("arrays") or ()]
    if others and r_oname in r_arrays:
        ka = r_arrays.index(r_oname)
        stored = sum(int(n) for a, _t, n in rc.get("stored") or () if int(a) == ka)
        if stored and stored == len(ref[2][k]) and ref[2][k].get(flat) is not None:  # one writer an element there
            whos = [writers[k][flat], *sorted(others, key=lambda w: (tuple(w[0]), tuple(w[1])))]
            said = ", ".join(fmt_who(w, nd) for w in whos[:3]) + (", …" if len(whos) > 3 else "")
            at = quote(source, store_line(trace, k, flat))
            return (f"{index_text(oname, first)} was stored by {len(whos)} threads ({said}{f', at {at}' if at else ''}); "
                    f"the reference solution stores each element of {oname} from one thread ("
                    f"{fmt_who(ref[2][k][flat], nd)} for this one): the other threads' stores overwrite the finished "
                    f"value (whichever comes last wins): let one thread store it, the one that holds the result")
    blk = thread_id(writers[k][flat], g, b) // math.prod(b)

    def block_elems(cn, name):
        arrays = [a[0] for a in cn.get("arrays") or ()]
        got, lines, exact = {}, {}, True  # element -> the block's threads that read it
        for a, t, ln, _c, lo, hi in (r for r in cn.get("load_lines") or () if len(r) == 6):
            if 0 <= int(a) < len(arrays) and arrays[int(a)] == name and int(t) // math.prod(b) == blk:
                exact = exact and int(lo) == int(hi)
                got.setdefault(int(lo), set()).add(int(t))
                lines.setdefault((int(lo), int(t)), int(ln))
        return got, lines, exact

    bw = fmt_who(writers[k][flat], nd).split(" of ")[-1]
    for j, a in enumerate(case.args):
        if not isinstance(a, np.ndarray) or a.ndim != 1 or j >= len(names) or j >= len(ref[5]):
            continue
        readers, where, e1 = block_elems(counts, names[j])
        r_readers, _w, e2 = block_elems(rc, ref[5][j])
        mine, theirs = set(readers), set(r_readers)
        if not (e1 and e2 and theirs):
            continue
        if mine == theirs:  # the same elements: one read by more of the block's threads than in the reference?
            twice = [f for f in sorted(mine) if len(readers[f]) > 1 and len(r_readers[f]) == 1]
            if not twice:
                continue
            ts = sorted(readers[twice[0]])
            said = ", ".join(f"{fmt_who(who_of(t, g, b), nd)} at {quote(source, where[(twice[0], t)])}" for t in ts[:2])
            return (f"{names[j]}[{twice[0]}] was read by {len(ts)} threads of {bw} ({said}), where the reference "
                    f"solution's {bw} reads each of its elements once: an element read twice enters "
                    f"{index_text(oname, first)} twice")
        extra, lost = sorted(mine - theirs), sorted(theirs - mine)
        said = []
        if extra:
            t = min(readers[extra[0]])
            ln = where[(extra[0], t)]
            said.append(f"{bw}'s threads read {names[j]}[{ranges_text(extra, most=3)}] ({fmt_who(who_of(t, g, b), nd)} "
                        f"read {names[j]}[{extra[0]}] at {quote(source, ln)}), which the reference solution's {bw} never "
                        f"reads")
        if lost:
            lo, hi = blk * math.prod(b), (blk + 1) * math.prod(b) - 1  # a 1-D launch's own elements of the block
            outside = nd == 1 and all(f < lo or f > hi for f in lost)
            said.append(f"{bw} never read {names[j]}[{ranges_text(lost, most=3)}], which the reference solution's {bw} "
                        f"reads" + (f" (outside the block's own {names[j]}[{lo}..{hi}]: halo cells)" if outside else ""))
        return (f"the reference solution's {bw} reads {names[j]}[{ranges_text(sorted(theirs), most=3)}]; "
                + "; ".join(said) + f": {index_text(oname, first)} is made of other elements than the reference's")
    return None


def _readers(counts, name) -> tuple:
    """({flat index: {thread id: {line}}} of array ``name``'s elements that a thread loaded alone on a
    line (the ``load_lines`` rows whose lowest and highest index agree), whether every row was one)."""
    arrays = [a[0] for a in counts.get("arrays") or ()]
    out: dict = {}
    exact = True
    for a, t, line, _c, lo, hi in (r for r in counts.get("load_lines") or () if len(r) == 6):
        if 0 <= int(a) < len(arrays) and arrays[int(a)] == name:
            if int(lo) != int(hi):
                exact = False
                continue
            out.setdefault(int(lo), {}).setdefault(int(t), set()).add(int(line))
    return out, exact


def shared_reads_fact(case, counts, rc, grid, block, r_grid, r_block, names, r_names, source=None,
                      times=None) -> str | None:
    """Several threads of the student's launch loaded one element of an input that one thread alone
    loads in the reference solution's run of the same launch (the ``load_lines`` tables): their index
    does not tell them apart. Named with ``times`` (every wrong value that many times the expected: the
    element counted once per reader) where that many threads read it, else only where some element the
    reference reads was read by no thread (what the repeats crowd out). Same lane of several warps of a
    block: the index is the lane (threadIdx.x % 32) where it needs the thread's own index; the same
    thread of several blocks: the block's offset is missing. None otherwise, or for other launches."""
    g, b = dims3(grid), dims3(block)
    if g != dims3(r_grid) or b != dims3(r_block):
        return None
    nd = 1 if isinstance(grid, (int, np.integer)) else len(tuple(grid))
    for j, a in enumerate(case.args):
        if not isinstance(a, np.ndarray) or j >= len(names) or j >= len(r_names) or a.size == 0:
            continue
        S, _ = _readers(counts, names[j])
        R, exact = _readers(rc, r_names[j])
        if not exact or not R:
            continue  # the reference's readers of an element are known only where each load row is one element
        missed = sorted(f for f in R if f not in S and 0 <= f < a.size)
        if times is None and not missed:
            continue
        for f in sorted(S):
            ts = sorted(S[f])
            if len(R.get(f, ())) != 1 or len(ts) < 2 or (times is not None and len(ts) != times):
                continue
            whos = [who_of(t, g, b) for t in ts]
            blocks = {tuple(w[0]) for w in whos}
            tidx = [tuple(w[1]) for w in whos]
            lines = sorted({ln for t in ts for ln in S[f][t] if ln > 0})
            at = ", ".join(quote(source, ln) for ln in lines[:2])
            shape = tuple(a.shape)
            el = index_text(names[j], np.unravel_index(f, shape) if len(shape) > 1 else (f,))
            r_who = fmt_who(who_of(next(iter(R[f])), g, b), nd)
            if len(blocks) == 1:
                f3 = (lambda v: str(v[0])) if nd == 1 else (lambda v: "(" + ", ".join(map(str, v[:nd])) + ")")
                who = f"threads {', '.join(f3(v) for v in tidx[:6])}{', …' if len(tidx) > 6 else ''} of block " \
                      f"{f3(next(iter(blocks)))}"
            else:
                who = ", ".join(fmt_who(w, nd) for w in whos[:4]) + (", …" if len(whos) > 4 else "")
            lanes = {t[0] % 32 for t in tidx}
            warps = {(t[0] + b[0] * (t[1] + b[1] * t[2])) // 32 for t in tidx}
            if len(blocks) == 1 and len(lanes) == 1 and len(warps) == len(tidx) and b[1] == b[2] == 1:
                why = ("the index is the same in every warp: it is the lane (cuda.threadIdx.x % 32) where each "
                       "thread needs its own element (its index in the block, cuda.threadIdx.x, plus the block's "
                       "offset: cuda.grid(1)): every warp reads warp 0's elements")
            elif len(set(tidx)) == 1 and len(blocks) == len(tidx):
                why = "the index is the same in every block: the block's offset (cuda.blockIdx * cuda.blockDim) is missing"
            elif len({frozenset(S[f][t]) for t in ts}) > 1:  # different loads reach it: they overlap
                why = ("the threads reach it through different loads, whose elements overlap: each element needs "
                       "one reader")
            else:
                why = "the index does not tell these threads apart: each element needs one reader"
            lost = f", and {names[j]}[{ranges_text(missed, most=3)}] by none" if missed and len(shape) == 1 else ""
            return (f"{el} was read by {len(ts)} threads ({who}{f', at {at}' if at else ''}), in the reference "
                    f"solution by {r_who} alone{lost}: {why}")
    return None


def oob_block_axis(ex, case, arg: int, idx, who, grid, block) -> str | None:
    """An out-of-bounds access ``idx`` of argument ``arg`` by ``who`` = (block, thread), beside the reference
    solution's run of ``case`` launched as the student's: along one axis only it lies past the same thread's
    lowest index in the reference by k * (blockIdx.a - blockIdx.b), where the reference's index (over its
    whole run) does not move with blockIdx.a and moves by k per blockIdx.b: a and b exchanged in this index.
    None otherwise (other launches, another offset, the reference's steps not that)."""
    if not getattr(ex, "has_solution", False) or arg < 0 or arg >= len(case.args):
        return None
    ref = reference(ex, case)
    g, b = dims3(grid), dims3(block)
    if ref is None or arg >= len(ref[5]) or dims3(ref[3]) != g or dims3(ref[4]) != b:
        return None
    shape = tuple(np.shape(case.args[arg]))
    spans = load_spans(stats_counts(ref[1].stats, ref[3], ref[4]), ref[5][arg])
    tid = thread_id(who, g, b)
    if tid not in spans or len(shape) != len(idx) or len(shape) < 2:
        return None
    obs = [(np.unravel_index(v[1], shape), who_of(t, g, b)) for t, v in spans.items()]
    mine = np.unravel_index(spans[tid][1], shape)
    d = [int(i) - int(r) for i, r in zip(idx, mine)]
    if sum(v != 0 for v in d) != 1:
        return None
    ax = next(k for k, v in enumerate(d) if v)
    steps = {x: block_step([(int(u[ax]), 0) for u, _ in obs], [w for _, w in obs], x) for x in range(2)}
    blk = tuple(who[0]) + (0, 0)
    for a, o in ((0, 1), (1, 0)):
        k = steps.get(o)
        if steps.get(a) == 0 and k and blk[a] != blk[o] and d[ax] == k * (blk[a] - blk[o]):
            x, y = "xy"[a], "xy"[o]
            return (f"index {int(idx[ax])} along axis {ax} is {d[ax]} = {k} * (cuda.blockIdx.{x} - cuda.blockIdx.{y}) = "
                    f"{k} * ({blk[a]} - {blk[o]}) past the same thread's in the reference solution's run "
                    f"({int(mine[ax])}), whose index along that axis moves "
                    f"by {k} per cuda.blockIdx.{y} and not with cuda.blockIdx.{x}: the block's x and y are exchanged in "
                    f"this index (the grid's x counts along the columns, its y along the rows)")
    return None
