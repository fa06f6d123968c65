"""Index words for the judge's messages (:mod:`lab.teach.messages`): a launch's dimensions as three
numbers, and the advice for an index out of bounds -- which thread, which axis, and whether the index
is a guard's, a loop bound's, an offset's, a halo cell's or the thread's index within its block -- from
the raw facts of the access (the index, the array's shape, the thread, the launch). Pure functions of
data; nothing here runs student code or prints.

Source: CUDA C++ Programming Guide, "Thread Hierarchy" (the built-in index variables and how a grid
covers an array).
"""
from __future__ import annotations

import math
import ast
import re

import numpy as np

from lab.teach.shared_words import (block_index_past, global_for_block, global_warp_slot, per_warp_slot, shared_below,
                                   shared_tile_past)
from lab.teach.contained import syntax
from kernels.spec import plural


RUNS_PAST = "a loop bound, a stride or an offset runs past the end?"  # an index past the end, no reason seen
OFFSET_ASKED = "or an offset in this index?"  # the first index past an axis: a loop bound's, or an offset's


def ndims(d):
    return 1 if isinstance(d, (int, np.integer)) else len(tuple(d))


def as_dims3(d):
    d = (int(d),) if isinstance(d, (int, np.integer)) else tuple(int(v) for v in d)
    return d + (1,) * (3 - len(d))


def _bare_index(source, line, var) -> bool:
    """Whether ``var`` is a whole index of a subscript at ``line`` of ``source`` (``a[var, ...]``)."""
    text = str(source[int(line) - 1]) if 0 < int(line) <= len(source) else ""
    return bool(re.search(rf"[\[,]\s*{re.escape(var)}\s*[\],]", text))


def _tested_by(source, line, other) -> bool:
    """Whether an ``if``, ``while`` or ``for`` around ``line`` of the file ``source`` (its lines) tests
    array ``other``'s shape (``other.shape``, ``len(other)``, or a name bound from them); True where the text
    cannot be read (no source: the old, unchecked words)."""
    try:
        tree = syntax.parse("\n".join(map(str, source)))
    except (SyntaxError, ValueError, RecursionError, TypeError):
        return True
    marks = (f"{other}.shape", f"len({other})", f"{other}.size")
    bound = {n.id for st in ast.walk(tree) if isinstance(st, ast.Assign) and any(m in ast.unparse(st.value) for m in marks)
             for tg in st.targets for n in ast.walk(tg) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.For)) and node.lineno < int(line) <= (node.end_lineno or 0):
            if isinstance(node, ast.For) and not _bare_index(source, line, ast.unparse(node.target)):
                continue  # a loop whose variable is not itself an index of the access: its range is no guard
            test = ast.unparse(node.iter if isinstance(node, ast.For) else node.test)
            if any(m in test for m in marks) or {n.id for n in ast.walk(syntax.parse(test)) if isinstance(n, ast.Name)} & bound:
                return True
    return False


def other_shape_advice(name, idx, shape, kind, case, names, source=None, line=None) -> str | None:
    """When an out-of-bounds index of array ``name`` lies inside another argument's shape (same number
    of dimensions, two or more; another shape), and a guard or loop bound around the access (``line`` of
    ``source``, where given) tests that array's shape: that test is the evidence (transpose_shared's store
    guarded by A's rows and columns); with no such test around the access, nothing is said."""
    arrays = [(n, tuple(a.shape)) for n, a in zip(names, case.args) if isinstance(a, np.ndarray)]
    arrays += [(n, tuple(s)) for n, (s, _) in zip(names[len(case.args):], case.outputs)]
    for other, oshape in arrays:
        if other == name or len(oshape) != len(idx) or len(idx) < 2 or oshape == tuple(shape):
            continue
        if source and line and not _tested_by(source, line, other):
            continue
        if all(0 <= int(i) < n for i, n in zip(idx, oshape)):
            return (f"the index is inside {other}'s shape {oshape} but outside {name}'s: the guard of this "
                    f"{'store' if kind == 'write' else 'load'} (or the loop's range that makes this index) must test "
                    f"{name}'s shape {tuple(shape)}, not {other}'s")
    return None


def extra_thread(own, grid, block, out_shapes):
    """Whether the thread at global coordinates ``own`` is one of the last block's extra threads in a
    thread-per-element launch: past an output's extent along an axis whose threads cover it, rounded
    up to the block (x = the last dimension, y = the one before)."""
    reach, bd = [g * b for g, b in zip(as_dims3(grid), as_dims3(block))], as_dims3(block)
    for shape in out_shapes:
        shape = tuple(shape)
        if math.prod(reach) < math.prod(shape):  # fewer threads than elements (a warp a tile): not thread-per-element
            continue
        for a, d in ((0, len(shape) - 1), (1, len(shape) - 2)):
            if d >= 0 and shape[d] <= reach[a] < shape[d] + bd[a] and own[a] >= shape[d]:
                return True
    return False


# guard_dims' words: a guard that should have stopped the thread (the judge checks the reference's same thread
# does not load that array, else the thread belongs there and the index is what differs)
GUARD_WORDS = ("reached this access: nothing tested its", "and the guard let it through")


def guard_dims(own, out_shapes) -> str | None:
    """Which test of a 2-D guard let a thread through, from where its own (x = column, y = row) sits
    beside a 2-D output's extent: past the rows (or the columns) along one axis only, and below the
    other extent (a guard that compares it with the other dimension's size) or not (a dimension the
    guard does not test). None when no 2-D output has the thread past exactly one of its extents."""
    for shape in out_shapes:
        if len(tuple(shape)) != 2:
            continue
        rows, cols = (int(v) for v in shape)
        r, c = int(own[1]), int(own[0])
        for what, v, n, other, m, k in (("row", r, rows, "column", cols, 0), ("column", c, cols, "row", rows, 1)):
            w = c if what == "row" else r
            if v >= n and w < m:
                if v < m:
                    return (f"this thread's {what} {v} is past the {n} {what}s but below the {m} {other}s, and "
                            f"reached this access: nothing tested its {what} against shape[{k}] = {n} (no guard, or "
                            f"one that compares the {what} with the number of {other}s, {m}): guard both, a {what} "
                            f"below shape[{k}] = {n} and a {other} below shape[{1 - k}] = {m}")
                if v == n:  # the first past the end: a `<=` lets exactly it through, as no test does
                    return (f"this thread's {what} {v} is the number of {what}s itself, and the guard let it through: "
                            f"it tests the {what} with `<=`, or not at all (no guard: guard it): test every dimension "
                            f"with `<` (`if row < shape[0] and col < shape[1]:`)")
                return (f"this thread's {what} {v} is past the {n} {what}s, and the guard let it through: the guard "
                        f"does not test the {what} (no guard: guard it): test every dimension (`if row < shape[0] and "
                        f"col < shape[1]:`)")
    return None


def negative_advice(idx, b, t, bd, shared, halo=None, shape=None) -> str:
    """What a negative index suggests, from the thread's own index along that axis (its slot in the
    block for a shared array, its global index otherwise; x = the last axis, y = the one before): a
    neighbour a few cells to the left of it is a halo cell, outside the array for the first threads
    (block 0's, for a global array), which needs its own bound check; in a shared tile, an offset
    subtracted where the tile's layout already holds it. ``halo``: whether the reference solution reads
    the array below a thread's own index too (False: no neighbour to the left is part of the lesson: the
    index is off; None: not known)."""
    d = next(k for k, i in enumerate(idx) if i < 0)
    axis = 0 if d == len(idx) - 1 else 1 if d == len(idx) - 2 else None
    tt = tuple(int(v) for v in t) + (0, 0, 0)
    bb = tuple(int(v) for v in b) + (0, 0, 0)
    i = int(idx[d])
    if axis is not None and shared:
        off = i - tt[axis]
        below = shared_below(i, off, tt[axis], bd, shape)
        if below:
            return below
        if -bd[axis] <= off < 0:
            return (f"a negative index: {i} is the thread's own slot {tt[axis]} minus {-off}: a shared array's indices start at 0, and "
                    f"thread {tt[axis]} reaches below it: if the array holds {-off} halo cell{'s' if off < -1 else ''} "
                    f"before the block's own elements, the thread's own element is at slot t + {-off} and its "
                    f"neighbours at t + k (k = 0 .. the window's width - 1): is the halo offset subtracted twice, once "
                    f"when the tile was filled and again here?")
    elif axis is not None:
        own = bb[axis] * bd[axis] + tt[axis]
        off = i - own
        if -bd[axis] <= off < 0 and bb[axis] == 0 and halo is False:
            return (f"a negative index: {i} is this thread's own index {own} minus {-off}, and the reference solution "
                    f"reads this array at no index below a thread's own: the index is off by {-off} (each thread's "
                    f"element is at its own index)")
        if -bd[axis] <= off < 0 and bb[axis] == 0 and halo is None:
            return (f"a negative index: {i} is this thread's own index {own} minus {-off}: an index off by {-off}, or a "
                    f"neighbour {-off} to its left (a left halo cell) read without a bound check (`x[j] if j >= 0 else "
                    f"0.0`, as `j < n` on the right)")
        if -bd[axis] <= off < 0 and bb[axis] == 0:
            return (f"a negative index: {i} is this thread's own index {own} minus {-off}: a neighbour {-off} to its left "
                    f"(a left halo cell), before the start of the array for the first threads of block 0: an access at "
                    f"an offset needs its own bound check, e.g. `x[j] if j >= 0 else 0.0` (as `j < n` on the right)")
    return "a negative index: check your index arithmetic"


def oob_advice(idx, shape, who, block, grid=None, out_shapes=(), shared=False, arrays=(), halo=None, loaded=None,
               kind=None):
    """What an out-of-bounds index suggests, from where the thread's own global index (x, y, z) sits
    in it: on its own axis, a missing guard (the last block's extra threads); on the other axis, row
    and column swapped; not there at all, index arithmetic (a loop bound, a stride, an offset), with
    how far it is from the thread's own index, and a bound check on that index (not on the thread's
    own) when the thread is one of the last block's extra threads. ``shared``: a shared array, whose
    slots are the threads' indices in the block. ``arrays``: (name, shape) of the kernel's other arrays: a
    1-D index equal to the thread's own index that lies inside another array's extent is not a missing
    guard (that thread is no extra thread) but the wrong index for this array. ``loaded``: (loads, lowest,
    highest flat index) the thread made of this array at the line that raised: a loop that read index
    0 .. shape[d] - 1 of the axis one at a time and then shape[d] ran one past with its bound. ``kind``:
    "read" or "write" (None: not known)."""
    b, t = tuple(who[0]), tuple(who[1])
    bd = as_dims3(block)
    if min(idx) < 0:
        return negative_advice(idx, b, t, bd, shared, halo, shape)
    if shared:  # a shared array: the thread's own slot is its index in the block
        past = [d for d, (i, n) in enumerate(zip(idx, shape)) if i >= n]
        d = past[0]
        tt = tuple(int(v) for v in t) + (0, 0, 0)
        mine = tt[0] if len(idx) == 1 else (tt[0] if d == len(idx) - 1 else tt[1] if d == len(idx) - 2 else None)
        i, n = int(idx[d]), int(shape[d])
        if mine is None:
            return f"index {i} is past the end ({n}) of this shared array: the index or the array's size is wrong"
        off = i - mine
        if len(idx) == 2:  # a tile: the tree templates are 1-D
            return shared_tile_past(i, n, d, tuple(int(v) for v in shape), mine)
        warps = (per_warp_slot(i, n, mine, bd) or global_warp_slot(i, n, b, mine, bd)) if kind in (None, "write") \
            else None  # a read by lane: its guard
        if warps:
            return warps
        if off == 0:
            return (f"index {i} is this thread's own slot, past the end ({n}) of this shared array: threads whose "
                    f"slot is {n} or more must not access it (e.g. `v = s[t] if t < {n} else 0.0`), or the array "
                    f"is too small")
        if off >= n and off & (off - 1) == 0:
            return (f"index {i} is past the end ({n}) of this shared array, {off:+d} from the thread's own slot "
                    f"{mine}: a tree step with s = {off} reads past the end even for thread 0: the tree's first step "
                    f"is s = {n // 2}, half the array")
        if 0 < off < n and off & (off - 1) == 0 and 2 * mine >= n:
            return (f"index {i} is past the end ({n}) of this shared array, {off:+d} from the thread's own slot "
                    f"{mine}: thread {mine} ran a tree step (s = {off}) that only the threads t < s may run (each "
                    f"adds its partner t + s): `if t < s:` around the step")
        block_threads = bd[0] * bd[1] * bd[2]
        if len(idx) == 1 and mine > 0 and mine // n == i and n != 32 and block_threads <= 32 * n:
            return (f"index {i} is thread {mine}'s index divided by {n} ({mine} // {n}), past the end ({n}) of this "
                    f"shared array: a warp's number is t // 32 (the warp's size, 32 lanes), which stays below {n} for "
                    f"the block's {block_threads} threads: divide by 32, not by {n} (the number of warps)")
        return (f"index {i} is past the end ({n}) of this shared array, {off:+d} from the thread's own slot {mine}: "
                f"the index of this access is wrong (an offset, a halo cell, a warp or lane number), or the "
                f"array's size is")
    own = [int(b[k]) * bd[k] + int(t[k]) if k < min(len(b), len(t)) else 0 for k in range(3)]
    grid_2d = bd[1] > 1 or any(int(v) for v in b[1:2])
    past = [d for d, (i, n) in enumerate(zip(idx, shape)) if i >= n]
    d = past[0]
    fits_t = len(idx) == 2 and idx[1] < shape[0] and idx[0] < shape[1]
    if len(idx) == 2 and fits_t:
        swapped = (idx[0] == own[0] and idx[1] == own[1] and own[0] != own[1]) if grid_2d else (d == 1 and idx[1] == own[0])
        if swapped:
            return "past the end; the index would fit the transposed shape: are row and column swapped?"
    # the thread's own index, past the end: one of the last block's extra threads (for a 2-D array, only when
    # the thread is past the output along an axis: a 1-D launch's x may equal a column index by chance)
    if all(int(idx[k]) in own for k in past) and (len(idx) == 1 or grid is None
                                                  or extra_thread(own, grid, block, out_shapes)):
        if len(idx) == 1 and grid is not None:
            a = own.index(int(idx[0]))  # the axis of the thread's own index this access used
            reach = as_dims3(grid)[a] * bd[a]
            # another 1-D array the grid was sized for (its extent rounded up to blocks) holds this index
            inside = [(n, s) for n, s in arrays if len(s) == 1 and int(idx[0]) < s[0] <= reach < s[0] + bd[a]]
            own_sized = int(shape[0]) <= reach < int(shape[0]) + bd[a]  # the grid fits this array too: an extra thread
            if inside and not own_sized:
                n, s = max(inside, key=lambda a: a[1][0])
                return (f"index {int(idx[0])} is this thread's own global index, inside {n}'s {s[0]} elements (so "
                        f"the thread is no extra thread past the data), but past the end of this array "
                        f"({int(shape[0])}): this array needs another index (one element per block: "
                        f"cuda.blockIdx.x; per row or per column: that index)")
        if len(idx) == 2 and int(idx[d]) < int(shape[1 - d]):  # past its own extent, inside the other's
            what, other = ("row", "column") if d == 0 else ("column", "row")
            return (f"past the end: {what} {int(idx[d])} is past the {int(shape[d])} {what}s but below the "
                    f"{int(shape[1 - d])} {other}s: if a guard should stop this thread, it compares the {what} with "
                    f"the number of {other}s (shape[{1 - d}]): a {what} must be below shape[{d}] = {int(shape[d])}, a "
                    f"{other} below shape[{1 - d}] = {int(shape[1 - d])}; without a guard, guard it")
        dims = guard_dims(own, [shape]) if len(idx) == 2 and grid_2d else None  # its own (x, y) index this array
        if dims:
            return f"past the end (the last block's extra threads): {dims}"
        if all(int(idx[k]) == int(shape[k]) for k in past):  # the first index past the end: `<=` lets exactly it through
            return ("past the end (the last block's extra threads): guard it, e.g. `if i < n:`; if a guard is there, "
                    "it lets index n itself through: `<`, not `<=` (an early return on `i >= n`, not `i > n`)")
        return "past the end (the last block's extra threads): guard it, e.g. `if i < n:`"
    axis = (0 if not grid_2d else None) if len(idx) == 1 else (1 if d == len(idx) - 2 else 0) if len(idx) == 2 else None
    rel = ""
    if axis is not None and own[axis] != int(idx[d]):
        rel = f"; the thread's own index is {own[axis]}, this one {int(idx[d]) - own[axis]:+d} from it"
    if grid is not None and extra_thread(own, grid, block, out_shapes):
        dims = guard_dims(own, [shape] if len(shape) == 2 else out_shapes) if grid_2d else None  # x col, y row
        if dims:
            return f"index {int(idx[d])} is past the end ({int(shape[d])}): {dims}"
        return (f"index {int(idx[d])} is past the end ({int(shape[d])}), at an offset from this thread's own "
                f"index{rel} (the thread is one of the last block's extra threads, past the output, and still made "
                f"this access): if the guard should stop it, it lets it through (`<` not `<=`, the right extent); an "
                f"access at an offset (a halo cell, a neighbour) needs its own bound check on that index, e.g. "
                f"`x[j] if j < n else 0`")
    def within_block():
        """The thread's index within its block where a block's or a global index belongs (None: not that)."""
        tloc, bloc = (tuple(int(v) for v in t) + (0, 0, 0))[:3], (tuple(int(v) for v in b) + (0, 0, 0))[:3]
        for a in range(3):
            if int(idx[d]) == tloc[a] and bloc[a] >= 1 and own[a] != int(idx[d]):
                x = "xyz"[a]
                where = "" if len(idx) == 1 else f" along axis {d}"
                return (f"index {int(idx[d])}{where} is this thread's index within its block (cuda.threadIdx.{x} = "
                        f"{tloc[a]}), the same in every block, past the end ({int(shape[d])}): this index needs the "
                        f"block's index (cuda.blockIdx.{x}: one per block) or the global index (cuda.grid), not "
                        f"cuda.threadIdx.{x} alone")
        return None

    if int(idx[d]) == int(shape[d]) and all(int(i) < int(n) for k, (i, n) in enumerate(zip(idx, shape)) if k != d):
        bigger = [f"shape[{k}] = {int(n)}" for k, n in enumerate(shape) if k != d and int(n) > int(shape[d])]
        which = f" (is it bounded by {bigger[0]}, another axis's size?)" if bigger else ""
        where = f"axis {d}" if len(idx) > 1 else "the array"
        rel1 = rel if len(idx) == 1 else ""
        whole = [int(i) if k != d else 0 for k, i in enumerate(idx)], [int(i) if k != d else int(shape[d]) - 1
                                                                       for k, i in enumerate(idx)]
        if loaded is not None and loaded[0] == int(shape[d]) and \
                (loaded[1], loaded[2]) == tuple(int(np.ravel_multi_index(w, shape)) for w in whole):
            seen = ", ".join(str(v) if k != d else "0" for k, v in enumerate(idx)), \
                ", ".join(str(v) if k != d else str(int(shape[d]) - 1) for k, v in enumerate(idx))
            return (f"index {int(idx[d])} is shape[{d}] itself, the first past the end along {where}: at this line the "
                    f"thread read [{seen[0]}] .. [{seen[1]}] one by one, then this one: a loop bound lets the index "
                    f"run one past the last (the bound must be shape[{d}] = {int(shape[d])}, with `<`){which}")
        by_block = block_index_past(int(idx[d]), int(shape[d]), b, t, own) if len(idx) == 1 else None
        if by_block:  # the block's index into an array with fewer cells than blocks
            return by_block
        local = within_block()  # the thread's index within its block: stronger evidence than a bound's
        if local:
            return local
        return (f"index {int(idx[d])} is shape[{d}] itself, the first past the end along {where}, and is not this "
                f"thread's own element{rel1}: a loop bound that lets this index run one past the last (the bound must "
                f"be shape[{d}] = {int(shape[d])}, with `<`){which}, " + OFFSET_ASKED)
    local = within_block()
    if local:
        return local
    per_block = global_for_block(int(idx[d]), int(shape[d]), b, t, bd, grid)
    if per_block:
        return per_block
    return f"index {int(idx[d])} is past the end ({int(shape[d])}) and is not this thread's own element{rel}: {RUNS_PAST}"


def equality_guard(source, line, quote, order=False) -> str | None:
    """The words for an access past the end at ``line`` of the student's file (``source``: its lines) whose
    kernel does test its index, but for equality: an ``if`` before that line compares a name the access's
    index uses with ``==`` or ``!=`` (``if i == n: return``): it stops the one thread whose index is n, not
    the threads past it. ``quote``: (lines, line) -> the quoted line. None when no such test is found (or
    the file does not parse)."""
    try:
        tree = syntax.parse("\n".join(map(str, source or ())))
        line = int(line)
    except (SyntaxError, TypeError, ValueError):
        return None
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.lineno <= line <= n.end_lineno), None)
    if fn is None:
        return None
    used = {n.id for s in ast.walk(fn) if isinstance(s, ast.Subscript) and s.lineno <= line <= s.end_lineno
            for n in ast.walk(s.slice) if isinstance(n, ast.Name)}
    for st in ast.walk(fn):
        if not (isinstance(st, (ast.If, ast.While)) and st.lineno < line):
            continue
        for c in (n for n in ast.walk(st.test) if isinstance(n, ast.Compare) and len(n.ops) == 1):
            names = {n.id for side in (c.left, *c.comparators) for n in ast.walk(side) if isinstance(n, ast.Name)}
            if order and isinstance(c.ops[0], (ast.Gt, ast.LtE)) and names & used and "- 1" not in ast.unparse(c):
                keep = ">" if isinstance(c.ops[0], ast.Gt) else "<="
                return (f"your guard at {quote(source, c.lineno)} tests `{ast.unparse(c)}`: `{keep}` lets through the "
                        f"index equal to the bound, the first one past the end: {'`>=` (return when the index is at or past the bound)' if keep == '>' else '`<` (work only below the bound)'}")
            if isinstance(c.ops[0], (ast.Eq, ast.NotEq)) and names & used:
                return (f"past the end (the last block's extra threads), and your guard at {quote(source, c.lineno)} tests "
                        f"equality: it stops (or lets through) the one thread whose index is exactly the bound, while "
                        f"the threads past it go on: compare with an order test, `if i >= n: return` (or do the work "
                        f"under `if i < n:`)")
    return None


def blocks_count_words(blocks: int, tpb: int, total: int) -> str:
    """What a 1-D launch of ``blocks`` blocks of ``tpb`` threads, fewer threads than ``total`` elements, is
    evidence of: the count rounded down (``total // tpb``, or fewer blocks by one), or a count that is no
    rounding of total / tpb at all (a division of something else)."""
    launched = blocks * tpb
    head = f": your launch has {plural(launched, 'thread')} for {plural(total, 'element')}"
    if blocks >= total // tpb - 1:
        return head + ": round the number of blocks up (ceiling division)"
    return (head + f" ({plural(blocks, 'block')} of {tpb}), fewer than even {total} // {tpb} = {total // tpb}, the "
            f"count rounded down: the block count divides something else than the elements by the threads a block: "
            f"divide n by the threads a block and round the number of blocks up: ({total} + {tpb} - 1) // {tpb} = "
            f"{-(-total // tpb)}")

