"""The judge's words (:mod:`lab.teach.checker`): every failing message of a hidden test, from the raw
facts the executor handed back (outputs, the simulator's trace: who wrote what, races, out-of-bounds
accesses, barriers) and compute-sanitizer's reports, in the field's terms (thread, block, warp,
shared memory, coalescing). A message names at most one expected element, never the test's code or
its data. Pure functions of data; nothing here runs student code or prints.

Sources: CUDA C++ Programming Guide, "Thread Hierarchy", "Shared Memory", "Synchronization
Functions" and "Atomic Functions"; compute-sanitizer's documentation (racecheck, memcheck,
synccheck).
"""
from __future__ import annotations

import math
import os
import traceback
import re

import numpy as np

from kernels.spec import plural
from lab.teach.shared_words import loop_bound_words, fused_loop_race
from lab.teach.indices import (GUARD_WORDS, as_dims3, blocks_count_words, equality_guard, ndims, oob_advice,
                               other_shape_advice)
from lab.core import simt
from lab.core.blocks import ranges_text
from lab.teach.contained.counts import dims3, thread_id
from lab.teach.store_words import store_race_words
from lab.teach.writers import many_writers_cause


VALUES, DIAGNOSIS = "values", "diagnosis"  # a failure's kind (a test entry's "kind")


class Failed(Exception):
    """A test failed with a message for the student; ``map``: who wrote each element of the output
    (:func:`writers_map`), for indexing failures in the simulator; ``kind``: :data:`VALUES` when
    the failure is about the output's values (an element wrong, never written, all zeros, its
    initial value, NaN although written), else :data:`DIAGNOSIS` (a finding of the trace, a launch
    that raised, a lesson): :func:`lab.teach.union.merge` tells two backends' verdicts apart by it."""

    def __init__(self, message, map=None, kind=DIAGNOSIS):
        super().__init__(message)
        self.map = map
        self.kind = kind


MAP_ENV = "LAB_CHECK_MAP"  # "1": a failing test's entry carries "map" (the notebook draws it; the CLI never asks)
MAP_LIMIT = 1 << 16  # elements: a larger output's map is not sent


def writers_map(name, writer: dict, shape, grid, block) -> dict | None:
    """Which block and thread first wrote each element of output ``name`` (the simulator's record):
    {"output", "shape", "grid", "block", "block_of", "thread_of"} with linear block and thread ids
    (x fastest, as lab grid's map), -1 where nothing was written. None for a scalar or a large output."""
    size = int(np.prod(shape)) if shape else 1
    if not shape or size > MAP_LIMIT:
        return None
    g = tuple(grid) + (1,) * (3 - len(tuple(grid))) if not isinstance(grid, (int, np.integer)) else (int(grid), 1, 1)
    b = tuple(block) + (1,) * (3 - len(tuple(block))) if not isinstance(block, (int, np.integer)) else (int(block), 1, 1)
    block_of = np.full(size, -1, dtype=np.int64)
    thread_of = np.full(size, -1, dtype=np.int64)
    for flat, (who_b, who_t) in writer.items():
        if 0 <= flat < size:
            wb, wt = tuple(who_b) + (0,) * 3, tuple(who_t) + (0,) * 3
            block_of[flat] = wb[0] + g[0] * (wb[1] + g[1] * wb[2])
            thread_of[flat] = wt[0] + b[0] * (wt[1] + b[1] * wt[2])
    return {"output": name, "shape": list(shape), "grid": [int(x) for x in g], "block": [int(x) for x in b],
            "block_of": block_of.reshape(shape).tolist(), "thread_of": thread_of.reshape(shape).tolist()}


def quote(lines, line, of_file=False) -> str:
    """'line N: `the student's code`' for line ``line`` (1-based) of the student's file, whose text
    ``lines`` the judge read (a list of its lines); 'line N' when the text is not at hand; '' for no line.
    ``of_file``: 'line N of your file: `...`'."""
    try:
        n = int(line)
    except (TypeError, ValueError):
        return ""
    if n < 1:
        return ""
    head = f"line {n} of your file" if of_file else f"line {n}"
    if lines and n <= len(lines):
        code = " ".join(str(lines[n - 1]).split())
        if code:
            return f"{head}: `{code[:120]}{'…' if len(code) > 120 else ''}`"
    return head


def store_line(trace, k, flat) -> int:
    """The line of the first write of element ``flat`` of output ``k`` (the simulator's record; 0 for none)."""
    lines = getattr(trace, "lab_store_lines", None) if trace is not None else None
    if not lines or k >= len(lines) or lines[k] is None or not 0 <= int(flat) < len(lines[k]):
        return 0
    return int(lines[k][int(flat)])


def store_in_source(lines, name) -> int:
    """The first line of the student's file (its text ``lines``, as the judge read it) that stores into
    array ``name`` (``name[...] =``, ``+=`` and the like, or a cuda.atomic call on it); 0 for none. The
    judge's reading of the text, for a kernel that stored nothing: whether a store is there at all."""
    pat = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\[[^\]]*\]\s*(?:[-+*/]|//)?=(?!=)|"
                     rf"cuda\.atomic\.\w+\(\s*{re.escape(name)}\s*,")
    for n, text in enumerate(lines or (), 1):
        if pat.search(str(text).split("#", 1)[0]):
            return n
    return 0


def one_store_line(trace, k) -> int:
    """The line at which every written element of output ``k`` was first written, when it is one line; else 0."""
    lines = getattr(trace, "lab_store_lines", None) if trace is not None else None
    if not lines or k >= len(lines) or lines[k] is None:
        return 0
    seen = np.unique(lines[k][lines[k] > 0])
    return int(seen[0]) if len(seen) == 1 else 0


def error_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def where_raised(e, path):
    """' (your line N)' for the deepest frame of the student's file in e's traceback."""
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fr.filename) == os.path.abspath(path):
            line = fr.lineno
    return f" (line {line} of your file)" if line else ""


def fmt_who(who, nd):
    b, t = who
    b, t = tuple(b)[:nd], tuple(t)[:nd]
    f = (lambda v: str(v[0])) if nd == 1 else (lambda v: "(" + ", ".join(map(str, v)) + ")")
    return f"thread {f(t)} of block {f(b)}"


def _fmt_t(t, nd):
    t = tuple(t)[:nd]
    return str(t[0]) if nd == 1 else "(" + ", ".join(map(str, t)) + ")"


def fmt_idx(name, idx):
    return f"{name}[{', '.join(map(str, idx))}]"


def _ranges(flat_idx):
    """'1024..5465' style text for sorted flat indices (at most 3 runs)."""
    return ranges_text(flat_idx, most=3)


def kernel_error_message(error: dict, trace, grid, block, case, names=(), source=None, lesson=None,
                         halo=None) -> str:
    """The message for a simulator launch that raised (the executor's raw facts ``error``: {"kind":
    "kernel", "type", "text", "one_line", "who", "line"} or {"kind": "launch", "text"}): a barrier
    that not every thread reached, a race or an out-of-bounds access that came first, else the
    exception at the student's line. ``names``: the kernel's array arguments (an out-of-bounds
    array not among them is a shared array); ``source``: the lines of the student's file, quoted at
    the line that raised; ``lesson``: the exercise's mistake whose access is the out-of-bounds one
    (:func:`lab.teach.diagnose.mistake_for_access`), said instead of what the index suggests; ``halo``:
    whether the reference solution reads the out-of-bounds array below a thread's own index (for a
    negative index; :func:`lab.teach.reference.reference_reads_left`)."""
    if error.get("kind") == "launch":
        return f"bad launch configuration: {error.get('text')}"
    nd = ndims(grid)
    one_line = str(error.get("one_line"))
    if error.get("type") == "WarpError" and "reached the same cuda.syncthreads()" in str(error.get("text")):
        who = error.get("who") or ((0,), (0,))
        return f"{str(error.get('text')).strip()} (block {fmt_who(who, nd).split(' of block ')[1]})"
    if trace.shared_rmw or trace.races:  # the race came first; what it then raised is its consequence
        return race_text(trace, grid, block, source) + f" (the kernel then raised {one_line})"
    if trace.oob:
        name, idx, shape, who, kind = trace.oob[0]
        shared = name not in set(names)  # a shared array: not one of the kernel's arguments
        arrays = [(n, tuple(a.shape)) for n, a in zip(names, case.args) if isinstance(a, np.ndarray)]
        arrays += [(n, tuple(s)) for n, (s, _) in zip(list(names)[len(case.args):], case.outputs)]
        advice = oob_advice(idx, shape, who, block, grid, [s for s, _ in case.outputs], shared=shared,
                             arrays=[(n, s) for n, s in arrays if n != name], halo=halo,
                             loaded=_loaded_at(trace, name, who, grid, block, error.get("line")), kind=kind)
        if advice.endswith("guard it, e.g. `if i < n:`") and error.get("line"):  # is a guard there, testing equality?
            advice = equality_guard(source, error.get("line"), quote) or advice
        elif any(g in advice for g in GUARD_WORDS) and error.get("line"):  # a 2-D guard: `>` for `>=` in the text?
            advice = equality_guard(source, error.get("line"), quote, order=True) or advice
        if (shared and "a tree step with s =" in advice) or (len(idx) == 1 and min(idx) < 0):  # a loop's bound?
            advice = loop_bound_words(source, error.get("line"), name, int(idx[0]), shape[0]) or advice
        if not shared and "swapped" not in advice:
            advice = other_shape_advice(name, idx, shape, kind, case, names, source, error.get("line")) or advice
        if lesson:
            advice = lesson
        at = quote(source, error.get("line"))
        return (f"out of bounds: {fmt_who(who, nd)} {'wrote' if kind == 'write' else 'read'} "
                f"{fmt_idx(name, idx)}, outside its shape {tuple(shape)}{f', at {at}' if at else ''}; {advice}")
    advice, kind, text = "", error.get("type"), str(error.get("text"))
    if kind == "OverflowError" and "math range" in text:
        advice = ": a float overflowed (exp of a large number? subtract the maximum first)"
    elif kind == "OverflowError" and "out of bounds for" in text:
        advice = ": the value does not fit the output's dtype (clamp before converting?)"
        m = re.search(r"integer (-?\d+) out of bounds for (u?int\d+)", text)
        if m:
            v, info = int(m.group(1)), np.iinfo(np.dtype(m.group(2)))
            if v == info.max + 1:  # no clamp, or a clamp to max + 1 (the one event cannot tell them apart)
                advice = (f": {v} does not fit {m.group(2)} ({info.min}..{info.max}), one past the largest value: clamp "
                          f"to {info.min}..{info.max} before converting (a clamp whose upper bound is {v} lets {v} "
                          f"through: the bound must be {info.max})")
    elif kind == "ValueError" and "NaN" in text:
        advice = ": a NaN was converted to an integer (a value read before it was written?)"
    at = quote(source, error.get("line"), of_file=True)
    where = f" ({at})" if at else ""
    who = error.get("who") or ((0,), (0,))
    return f"your kernel raised {one_line} in {fmt_who(who, nd)}{where}{advice}"


def _loads_at(trace, who, grid, block, line) -> int:
    """The global loads thread ``who`` made at ``line`` (the tracer's load_lines; 0 without them)."""
    counts = getattr(trace, "lab_counts", None)
    if not counts or not line:
        return 0
    tid = thread_id(who, dims3(grid), dims3(block))
    return sum(int(r[3]) for r in counts.get("load_lines") or () if len(r) == 6 and int(r[1]) == tid
               and int(r[2]) == int(line))


def _loaded_at(trace, name, who, grid, block, line):
    """(loads, lowest, highest flat index) that thread ``who`` made of array ``name`` at ``line`` before
    the access that raised there (the tracer's load_lines), or None."""
    counts = getattr(trace, "lab_counts", None)
    if not counts or not line:
        return None
    arrays = [a[0] for a in counts.get("arrays") or ()]
    if name not in arrays:
        return None
    k, tid = arrays.index(name), thread_id(who, dims3(grid), dims3(block))
    rows = [r for r in counts.get("load_lines") or () if len(r) == 6 and int(r[0]) == k and int(r[1]) == tid
            and int(r[2]) == int(line)]
    return (int(rows[0][3]), int(rows[0][4]), int(rows[0][5])) if len(rows) == 1 else None


def race_text(trace, grid, block, source=None):
    """The message for ``trace``'s first shared-memory problem: a lost update (two threads read,
    changed and wrote the same element in one barrier phase: an atomic is the fix) before a race."""
    if getattr(trace, "shared_rmw", None):
        return shared_rmw_message(trace, 0, grid, block, source)
    return race_message(trace, 0, grid, block, source)


def shared_rmw_message(trace, k, grid, block, source=None):
    """The ``k``-th lost update in shared memory: two threads of a block both read and then wrote one
    element (``s[j] += 1``) in the same barrier phase."""
    arr, idx, who, other, line = trace.shared_rmw[k]
    nd, tnd = ndims(grid), ndims(block)
    at = f" at {quote(source, line)}" if line else ""
    return (f"race: {fmt_who(who, nd if nd == tnd else 3)} and thread {_fmt_t(other, tnd)} of the same block both "
            f"read, changed and wrote {fmt_idx(arr, idx)}{at} in the same phase: one update is lost (a "
            f"read-modify-write such as `+=` is not atomic); use cuda.atomic.add({arr}, index, value) for an update "
            f"that several threads make to one element")


def tree_step_race(races, race_lines, block, source=None) -> tuple[int, str] | None:
    """(k, lesson) for the first of a launch's shared-memory ``races`` (with their ``race_lines``)
    that is the evidence of a reduction or scan step run by the wrong threads, else None. The
    evidence, in a 1-D block: at one line, a thread wrote its own slot (index = its thread index)
    while another read that slot; a tree (``a[t] += a[t + s]``, the reader below the writer) whose
    writer is in the upper half of the block, where no thread of a halving tree ever adds (a missing
    barrier between steps has only lower-half writers); a scan step (``a[t] += a[t - s]``, the
    reader above the writer) that reads and writes at one line, with no barrier between the two.
    ``source``: the lines of the student's file (the line is quoted)."""
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
                       f"overwrote its own {arr}[{writer}] at {quote(source, lines[0])} while thread {reader} read it to add into "
                       f"{arr}[{reader}] (step s = {s}): only the lower half adds at each step: `if t < s:` around "
                       f"the add")
        if reader > writer:
            return k, (f"in a scan step thread {writer} overwrote its own {arr}[{writer}] at {quote(source, lines[0])} while "
                       f"thread {reader} read it as its neighbour (t - {s}) at the same line: read the neighbour into "
                       f"a register, cuda.syncthreads(), then add and store")
    return None


def race_message(trace, k, grid, block, source=None):
    """The ``k``-th shared-memory race of ``trace``: both threads, the element and the lines of both
    accesses (lines of the kernel's file only: simt records None for an access from elsewhere). For
    the first race, a race among the trace's that is the evidence of a tree or scan step run by the
    wrong threads (:func:`tree_step_race`) is named instead, with its lesson."""
    step = tree_step_race(trace.races, getattr(trace, "race_lines", []), block, source) if k == 0 else None
    if step:
        k = step[0]
    who, did, arr, idx, other, other_did = trace.races[k]
    lines = trace.race_lines[k] if k < len(getattr(trace, "race_lines", [])) else (None, None)
    nd, tnd = ndims(grid), ndims(block)
    at = f" at {quote(source, lines[0])}" if lines[0] else ""
    other_at = f" at {quote(source, lines[1])}" if lines[1] else ""
    text = (f"race: {fmt_who(who, nd if nd == tnd else 3)} {did} {fmt_idx(arr, idx)}{at}, which thread "
            f"{_fmt_t(other, tnd)} of the same block {other_did}{other_at}")
    if step:
        return f"{text}: {step[1]}"
    wrote_at = lines[0] if did == "wrote" else lines[1] if other_did in ("wrote", "also wrote") else None
    code = str(source[int(wrote_at) - 1]) if source and wrote_at and 0 < int(wrote_at) <= len(source) else ""
    if "cp_async_wait" in code:  # the copy lands at the wait: a wait after the barrier lands it after others read
        return (text + ": the asynchronous copy's data lands in shared memory at cp_async_wait, and no "
                "cuda.syncthreads() stands between this wait and the other thread's read: wait first, then "
                "cuda.syncthreads(), then read (a barrier before the wait does not publish what lands after it)")
    bd = list(block) if isinstance(block, (tuple, list)) else [int(block)]
    me, them = (tuple(int(v) for v in tuple(who[1])) + (0, 0))[:2], (tuple(int(v) for v in tuple(other)) + (0, 0))[:2]
    if (did == "wrote" and other_did == "also wrote" and lines[0] and lines[0] == lines[1] and len(bd) >= 2
            and bd[1] > 1 and me[0] == them[0] and 0 < abs(me[1] - them[1]) < bd[1]
            and _loads_at(trace, who, grid, block, lines[0]) > 1):  # the store's line ran in a loop
        # one column of threads, rows ty apart by less than the block's height, storing one cell at one line
        d = abs(me[1] - them[1])
        return (text + f" in the same phase: the two threads are one column of the block, {d} row{'s' if d > 1 else ''} "
                f"apart (threadIdx.y {min(me[1], them[1])} and {max(me[1], them[1])}), less than the block's height "
                f"{bd[1]}, and stored one cell at one line: a loop that adds j to threadIdx.y steps by less than the "
                f"block's height, so the rows of one thread overlap the next thread's (and rows past the last j are "
                f"never stored): step j by the block's height, j = 0, {bd[1]}, {2 * bd[1]}, ... (`range(0, TILE, {bd[1]})`)")
    if did == "wrote" and other_did == "also wrote":
        why = store_race_words("\n".join(map(str, source or ())), arr, idx, lines, who, (who[0], other), block)
        if why:
            return f"{text} in the same phase: {why}"
        return (text + " in the same phase (no cuda.syncthreads() between): two threads store to one element; if each "
                "element should have one writer, an index is wrong (a halo cell or an offset that lands on a "
                "neighbour's element?)")
    read_at = lines[1] if did == "wrote" else lines[0]
    if wrote_at and read_at and "read" in (did, other_did):
        unstored = any(u[0] == arr and u[3] == read_at for u in getattr(trace, "uninit", None) or ())  # read unstored
        fused = fused_loop_race(source, int(wrote_at), int(read_at), arr, unstored)
        if fused:
            return f"{text} in the same phase: {fused}"
    return (text + " with no cuda.syncthreads() between the two accesses; add one between writing shared memory "
            "and reading what other threads wrote (and before overwriting what they still read)")


def unwritten_message(name, unwritten, grid, block, checker_grid=False, stored_at=""):
    """Which elements of output ``name`` were never written, and what that pattern is evidence of:
    "round the number of blocks up" only when the student's own grid (``checker_grid`` False) has
    fewer threads than elements along that axis; x and y swapped only when the unwritten band starts
    where the other axis's threads end; a guard against the wrong extent when it starts at the other
    dimension's size; otherwise what was observed and where. ``stored_at``: the quoted line of the
    student's file that stores into ``name`` (the judge's reading of the text), or '': where nothing was
    written, the store exists and the guard let no thread reach it."""
    idx = np.argwhere(unwritten)
    count, total = len(idx), unwritten.size
    whose = "the checker's grid" if checker_grid else "your launch"
    if unwritten.ndim == 1:
        flat = idx[:, 0]
        text = f"{name} elements {_ranges(flat)} ({count} of {total}) never written"
        u = int(flat[0])
        tail = count == total - u  # everything from u on
        tpb = math.prod(block if not isinstance(block, (int, np.integer)) else (block,))
        launched = tpb * math.prod(grid if not isinstance(grid, (int, np.integer)) else (grid,))
        if count == total and stored_at and launched >= total:
            if total == 1:  # the only element is the last one: a guard that stops one short drops it
                return text + (f": your kernel stores into {name} ({stored_at}) and thread 0 of block 0 ran, but "
                               f"no thread reached the store: the guard (or an early return) drops the last index, "
                               f"n - 1 (here the only one): it stops one short, or thread 0's index is not 0 (an index "
                               f"shifted past it, e.g. cuda.grid(1) + 1): i is cuda.grid(1) itself, and keep every "
                               f"i < n (`if i < n:`, or return only when `i >= n`)")
            return text + (f": your kernel stores into {name} ({stored_at}) and its launch has "
                           f"{plural(launched, 'thread')} for {plural(total, 'element')}, but no thread reached the "
                           f"store: the guard (or an early return) lets none through")
        if count == total:
            return text + ": nothing was written: does your kernel store into " + name + "?"
        if tail and u == tpb and launched > u:
            return text + ": is blockIdx.x * blockDim.x in your index?"
        if tail and u >= launched and not checker_grid:
            return text + blocks_count_words(launched // tpb, tpb, total)
        if tail and u >= launched:
            return text + (f": the checker's grid has {plural(launched, 'thread')} for {plural(total, 'element')}: "
                           f"does each thread write more than its one element, or is the index scaled?")
        if tail and count == 1:
            return text + ": off by one in the guard (`i < n`, not `i < n - 1`)?"
        if tail:
            return text + (f": {whose} has {plural(launched, 'thread')} for {plural(total, 'element')}, so the "
                           f"threads of the last {count} elements exist: the guard (or the index) stops {count} "
                           f"elements short of n")
        return text + f" ({whose} has {plural(launched, 'thread')}; the first unwritten is {name}[{u}])"
    first = tuple(int(v) for v in idx[0])
    rows = np.where(unwritten.all(axis=tuple(range(1, unwritten.ndim))))[0]
    cols = np.where(unwritten.all(axis=0))[0] if unwritten.ndim == 2 else []
    text = f"{count} of {total} elements of {name} never written, the first {fmt_idx(name, first)}"
    if count == total:
        return text + ": nothing was written: does your kernel store into " + name + "?"
    if unwritten.ndim != 2:
        return text
    # the launch's coverage, x = column and y = row (the exercises' mapping), before any grid hint
    reach = [g * b for g, b in zip(as_dims3(grid), as_dims3(block))]  # threads along x, y
    n_rows, n_cols = unwritten.shape
    need = {"column": (0, n_cols), "row": (1, n_rows)}
    for what, run in (("row", rows), ("column", cols)):
        a, size = need[what]
        if len(run) and run[-1] == size - 1 and len(run) == size - run[0]:
            start = int(run[0])
            other = 1 - a
            if reach[a] < size and not checker_grid:  # the student's grid really stops short
                g, b = as_dims3(grid)[a], as_dims3(block)[a]
                if reach[a] >= unwritten.shape[a] and reach[other] >= size:  # it would fit with x and y swapped
                    return text + (f" ({what}s {start}.. all unwritten: your grid has {reach[0]} threads along x and "
                                   f"{reach[1]} along y for {n_cols} columns x {n_rows} rows: it would cover the "
                                   f"matrix the other way round: are the grid's x and y swapped? x = column (from "
                                   f"the number of columns), y = row)")
                return text + (f" ({what}s {start}.. all unwritten: your grid has {plural(g, 'block')} of {b} threads "
                               f"along {'xy'[a]}, {reach[a]} threads for {size} {what}s: round the number of "
                               f"blocks up (x = column, y = row)")
            if start == reach[other] and reach[other] < size:
                return text + (f" ({what}s {start}.. all unwritten, and {start} is the number of threads along "
                               f"{'xy'[other]}: the grid covers the matrix, but the {what} index comes from the {'xy'[other]} axis: are x and y "
                               f"swapped in your indices? x = column, y = row)")
            if start == unwritten.shape[a] and start < size:
                dim = "rows" if a == 0 else "columns"
                return text + (f" ({what}s {start}.. all unwritten, and {start} is the number of {dim}: does the "
                               f"guard compare the {what} with the number of {dim}? a {what} must be below "
                               f"{size}, shape[{1 if a == 0 else 0}])")
            return text + (f" ({what}s {start}.. all unwritten although {whose} has {reach[0]} x {reach[1]} threads "
                           f"for {n_cols} columns x {n_rows} rows: the guard, a loop bound or the index stops "
                           f"short of {size} {what}s)")
    parts = []
    if len(rows):
        parts.append(f"rows {_ranges(rows)} entirely")
    if len(cols):
        parts.append(f"columns {_ranges(cols)} entirely")
    return text + (f" (unwritten: {', '.join(parts)})" if parts else
                   f" ({whose} has {reach[0]} x {reach[1]} threads for {n_cols} columns x {n_rows} rows)")


def block_stride_hint(writer: dict, shape, grid, block) -> str | None:
    """For a 1-D output written by a 1-D launch: when every writer (block b >= 1, thread t) of element
    f has f = b * K + t for one K other than the block's size, the index multiplies blockIdx.x by K:
    the text naming it, else None (the evidence: the writers the simulator recorded)."""
    if len(tuple(shape)) == 2:
        return _block_stride_2d(writer, shape, grid, block)
    if len(tuple(shape)) != 1 or ndims(grid) != 1 or math.prod(as_dims3(block)[1:]) != 1:
        return None
    bx = as_dims3(block)[0]
    roles = [int(f) == int(tuple(t)[0]) * bx + int(tuple(b)[0]) for f, (b, t) in list(writer.items())[:4096]]
    if len(roles) > 2 and all(roles) and any(int(tuple(b)[0]) != int(f) // bx for f, (b, _t) in writer.items()):
        return ("every element was written by thread t of block b at t * blockDim.x + b: the roles of threadIdx.x and "
                "blockIdx.x are swapped in the index: i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x (or "
                "cuda.grid(1))")
    ks = set()
    for f, (b, t) in list(writer.items())[:4096]:
        b0, t0 = int(tuple(b)[0]), int(tuple(t)[0])
        if b0 >= 1:
            k, r = divmod(int(f) - t0, b0)
            ks.add(k if r == 0 else None)
            if len(ks) > 1:
                return None
    if len(ks) != 1 or None in ks:
        return None
    k = ks.pop()
    if k == bx or k <= 0:
        return None
    return (f"every element was written by thread t of block b at b * {k} + t, but your blocks have {bx} threads: "
            f"the index multiplies blockIdx.x by {k}, not by the block's size: use cuda.blockDim.x (or cuda.grid(1))")


def _block_stride_2d(writer: dict, shape, grid, block) -> str | None:
    """For a 2-D output written by a 2-D launch: when every writer (block (bx, by), thread (tx, ty)) of
    element (r, c) has r = by * K + ty (or c = bx * K + tx) for one K other than the block's height (width)
    along that axis, seen in a block other than the first, the index multiplies blockIdx by K: the text
    naming it, else None."""
    if ndims(grid) < 2:
        return None
    bd = as_dims3(block)
    cols = int(tuple(shape)[1])
    for axis, what, dim in ((1, "row", "height"), (0, "column", "width")):
        ks, seen = set(), 0
        for f, (b, t) in list(writer.items())[:4096]:
            r, c = divmod(int(f), cols)
            v = r if axis == 1 else c
            bb, tt = (tuple(b) + (0, 0))[axis], (tuple(t) + (0, 0))[axis]
            if bb >= 1:
                k, rem = divmod(v - int(tt), int(bb))
                ks.add(k if rem == 0 else None)
                seen += 1
                if len(ks) > 1:
                    break
        if seen and len(ks) == 1 and None not in ks:
            k = ks.pop()
            if k > 0 and k != bd[axis]:
                x = "xy"[axis]
                return (f"every element was written by the thread whose {what} index is blockIdx.{x} * {k} + "
                        f"threadIdx.{x}, but your blocks have {bd[axis]} threads along {x}: the {what} index multiplies "
                        f"blockIdx.{x} by {k}, not by the block's {dim}: use cuda.blockDim.{x} (or cuda.grid(2))")
    return None


def many_writers_message(name, shape, writer, others, grid, block, at="", counts=None):
    """:func:`lab.teach.writers.many_writers_cause` where the evidence names the cause, else
    :func:`_many_writers_text`; then the store's line ``at`` (' at line N: `code`') when known."""
    cause = many_writers_cause(name, shape, writer, others, grid, block, counts)
    text = cause or _many_writers_text(name, shape, writer, others, grid, block)
    text += f" (the store: {at.strip().removeprefix('at ')})" if at else ""
    return _Cause(text) if cause else text


class _Cause(str):
    """A message whose cause the evidence named (no further guess is appended to it)."""

    cause = True


# the guess for an element written once by every block, where no writer evidence names the index's fault
EVERY_BLOCK_REPEATS = (": every block repeats the whole loop; use the block's offset (cuda.blockIdx.x * cuda.blockDim.x, "
                       "or cuda.grid(1)) so that each block does its own part")


def _many_writers_text(name, shape, writer, others, grid, block):
    """'out[0] was written by 12 threads, one per block: ...' for the first element that more than
    one thread wrote (mapping exercises: each output element has exactly one writer)."""
    flat = min(others)
    idx = tuple(int(v) for v in np.unravel_index(flat, tuple(shape))) if shape else (0,)
    who = [writer[flat], *sorted(others[flat])]
    blocks = {tuple(w[0]) for w in who}
    nblocks = math.prod(as_dims3(grid))
    nd = ndims(grid)
    n = len(who)
    text = f"{fmt_idx(name, idx)} was written by {n} threads"
    if len(blocks) == n and n == nblocks > 1:
        return text + ", one per block" + EVERY_BLOCK_REPEATS
    if len(blocks) == 1:
        return (text + f" of {fmt_who(who[0], nd).split(' of ')[1]} ({fmt_who(who[0], nd).split(' of ')[0]}, "
                f"{fmt_who(who[1], nd).split(' of ')[0]}, ...): each output element must be written by exactly "
                f"one thread: does every thread loop over all the elements?")
    return (text + f" ({fmt_who(who[0], nd)}, {fmt_who(who[1], nd)}, ...): each output element must be "
            f"written by exactly one thread")


def store_and_atomic_message(trace, onames, case, nd, source=None):
    """The message for :func:`store_and_atomic`'s first finding (``trace.lab_store_atomic``): blocks
    run in any order, so the store can wipe out updates made before it."""
    for k, found in enumerate(getattr(trace, "lab_store_atomic", None) or []):
        if not found:
            continue
        flat, who, line = found
        shape = tuple(case.outputs[k][0])
        idx = tuple(int(v) for v in np.unravel_index(int(flat), shape)) if shape else (0,)
        at = f" at {quote(source, line)}" if line else ""
        if case.init is not None:
            init = np.asarray(case.init[k], np.float64).ravel()
            before = (f"{onames[k]} already holds its start value ({init[int(flat)]:g}) before the launch: remove the "
                      f"store (initialise outside the kernel)")
        else:
            before = "initialise it before the launch (on the host or in a kernel launched first)"
        return (f"{fmt_idx(onames[k], idx)} is set with a plain store by {fmt_who(who, nd)}{at} while other threads "
                f"update it with cuda.atomic: blocks run in any order, so the store can wipe out updates made before "
                f"it; {before}")
    return None


def transposed_hint(out64, ref, bad):
    """The transposed-position hint, only when the output matches the transposed reference: every
    wrong element whose transposed position exists holds that position's value (and most do)."""
    if ref.ndim != 2 or ref.size < 2:
        return None
    idx = np.argwhere(bad)
    fits = (idx[:, 1] < ref.shape[0]) & (idx[:, 0] < ref.shape[1])
    if fits.sum() < max(2, len(idx) // 2):
        return None
    i, j = idx[fits, 0], idx[fits, 1]
    want = ref[j, i]
    if np.all(np.abs(out64[i, j] - want) <= 1e-5 * (1 + np.abs(want))):
        return "it holds the value of the transposed position: row and column swapped?"
    return None


def scaled_hint(out64, ref, bad):
    """'every wrong element is 64 times the expected value' when all wrong elements are one integer
    multiple (2..4096) of the reference (a value added once per thread or block)."""
    if not bad.any():
        return None
    o, r = out64[bad], ref[bad]
    if not np.all(np.isfinite(o)) or np.any(np.abs(r) < 1e-6):
        return None
    k = o / r
    m = float(np.round(k[0]))
    if 2 <= m <= 4096 and np.all(np.abs(k - m) <= max(2e-3, 1e-5 * m)):  # (1e-3 * m let 1361.5 pass as 1362)
        return (f"every wrong element is {m:g} times the expected value: is it added {m:g} times (once per "
                f"thread of a block, once per block or per warp) instead of once?")
    return None


def own_partial_cause(source, line) -> str:
    """Why a reduction's stored value is thread 0's own partial alone, from the store's line (``line`` of the
    student's file, the tracer's record): a bare name stored (the thread's own accumulator) or a cell
    stored that the tree never added the others' partials into."""
    text = str(source[line - 1]).split("#", 1)[0] if source and 0 < line <= len(source) else ""
    m = re.match(r"\s*[A-Za-z_]\w*\s*\[[^\]]*\]\s*=\s*([A-Za-z_]\w*)\s*$", text)
    if m:
        return (f": the store at {quote(source, line)} writes {m.group(1)}, the thread's own value, not the reduced "
                f"value the tree leaves in shared memory (cell 0, read after the tree's last barrier)")
    if text.strip():
        return (f": the cell stored at {quote(source, line)} never received the others' partials: at each tree step "
                f"thread t < s adds cell t + s into its own cell t (cache[t] += cache[t + s]), so the sum ends in "
                f"cell 0")
    return ""


def offset_hint(out64, ref, bad):
    """'every wrong element is the expected value + 1' when all wrong elements differ from the reference
    by one constant (to within 1e-4 of its size; a single wrong element only by a multiple of 1/4, which
    an error made of the data is not): a constant term of the formula that differs."""
    o, r = out64[bad], ref[bad]
    if not bad.any() or not np.all(np.isfinite(o)) or not np.all(np.isfinite(r)):
        return None
    d = o - r
    c = float(np.median(d))
    if c == 0 or not np.all(np.abs(d - c) <= 1e-4 * abs(c) + 1e-6):
        return None
    n = int(bad.sum())
    if n == 1 and abs(c * 4 - round(c * 4)) > 1e-6 * max(1.0, abs(float(r[0]))) * 4:
        return None  # one element: a constant only where it is a round number (a data-made error is not)
    return (f"{'every wrong element is' if n > 1 else 'the wrong element is'} the expected value {'+' if c > 0 else '-'} "
            f"{abs(c):.6g} exactly: the formula adds a constant the statement's does not (check its constant terms "
            f"and where its parentheses put them)")


def poison_hint(out64, ref, bad, dtype):
    """A hint when the wrong elements are NaN (floats) or off by whole multiples of the simulator's
    integer poison: a value read before it was written (shared memory never zeroed or filled)."""
    o, r = out64[bad], ref[bad]
    if np.dtype(dtype).kind == "f":
        if np.isnan(o).any() and np.isfinite(r).all():
            return ("it is NaN: a value read before it was written? (shared memory not filled for every "
                    "element the block reads, e.g. threads past the end not storing 0; an accumulator not set)")
        return None
    poison = float(np.asarray(simt.poisoned((), dtype))[()])
    if poison == 0:
        return None
    k = (o - r) / poison
    if np.all(np.abs(k - np.round(k)) < 1e-9) and np.all(np.round(k) != 0):
        return (f"each wrong element is off by a multiple of {int(poison)}, the value the simulator fills fresh shared "
                f"memory with: shared memory never zeroed (set every element, then cuda.syncthreads(), before adding "
                f"to it)?")
    return None


def _who(thread, block):
    """'thread 40 of block 3' (1-D) or 'thread (1, 2) of block (0, 1)' from a report's 3-D ids."""
    if thread is None or block is None:
        return "a thread"
    nd = 3 if thread[2] or block[2] else 2 if thread[1] or block[1] else 1
    return fmt_who((block, thread), nd)


def sanitizer_message(r, hazards: int = 0) -> str:
    """One diagnosing line for compute-sanitizer report ``r`` (a lab.core.sanitizer.Report) in the
    student's file, in the style of the simulator's race, out-of-bounds and barrier messages."""
    at = f"line {r.line} of your file" if r.line else "your kernel (no line info)"
    tool = f"compute-sanitizer {r.tool} on the GPU"
    if r.kind.startswith("Race ("):
        first, second = (w.strip().lower() for w in r.kind[6:-1].split("/"))
        other = f"line {r.others[0].rsplit(':', 1)[-1]}" if r.others else "another line"
        count = f"; {hazards or r.count} hazards" if (hazards or r.count) > 1 else ""
        return (f"race ({tool}{count}): a {first} at {at} and a {second} at {other} by another thread of the same "
                f"block, with no cuda.syncthreads() between the two accesses; add one between writing shared memory "
                f"and reading what other threads wrote (and before overwriting what they still read)")
    if r.tool == "memcheck" and "Invalid" in r.kind:
        did = "wrote" if "write" in r.kind.lower() else "read"
        return (f"out of bounds ({tool}): {_who(r.thread, r.block)} {did} outside an array at {at} ({r.kind}); "
                f"guard it, e.g. `if i < n:`")
    if r.tool == "synccheck":
        return (f"barrier ({tool}): {r.kind} at {at} ({_who(r.thread, r.block)}): not every thread of the block "
                f"reached the same cuda.syncthreads() calls; let all threads reach every barrier")
    return f"{r.tool} ({tool}): {r.kind} at {at} ({_who(r.thread, r.block)})"
