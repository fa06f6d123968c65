"""Words for a shared-memory access out of bounds whose own evidence names the cause (used by
:func:`lab.teach.indices.oob_advice`): a 2-D tile declared smaller than the block fills, a per-warp
array indexed by the lane, and a step's partner below slot 0 in an array with no halo. Pure functions
of the access (index, the array's shape, the thread's slot, the block's shape); None where the
evidence does not single the cause out.

Source: CUDA C++ Programming Guide, "Shared Memory" and "Warp Shuffle Functions" (a warp is 32
threads: warp t // 32, lane t % 32).
"""
from __future__ import annotations

import math
import ast
import operator as op
from lab.teach.contained import syntax

WARP = 32


def shared_tile_past(i: int, n: int, d: int, shape: tuple, mine: int) -> str:
    """A 2-D shared tile indexed past its extent ``n`` along axis ``d`` (no tree step: a tree halves a
    1-D array): the tile is smaller than the block's indices along that axis, or the index is off."""
    return (f"index {i} along axis {d} is past the end ({n}) of this shared tile, declared {shape}, "
            f"{i - mine:+d} from the thread's own slot {mine}: " + TILE_CHOICE)


# what shared_tile_past says where the evidence of the access alone cannot tell the two apart (the judge
# resolves it with the reference solution's reads of its own tile: lab.teach.values.tile_extent_fact)
TILE_CHOICE = ("the index runs past the tile (a loop over the tile's cells: its bound?), or the tile is declared "
               "smaller than the block fills")


def per_warp_slot(i: int, n: int, mine: int, bd) -> str | None:
    """A 1-D shared array with one slot per warp of the block (``n`` = threads / 32) indexed ``i`` by a
    thread whose lane (slot % 32) is ``i`` and whose warp (slot // 32) is not: lane and warp swapped."""
    threads = math.prod(bd)
    if n < 1 or n * WARP != threads or i != mine % WARP or i == mine // WARP or i < n:
        return None
    return (f"index {i} is thread {mine}'s lane ({mine} % 32), past the end ({n}) of this shared array, which "
            f"has one slot per warp of the block's {threads} threads: a warp's slot is its warp number "
            f"t // 32 (here {mine // WARP}) and the lane is t % 32: are warp and lane swapped?")


def global_warp_slot(i: int, n: int, b, mine: int, bd) -> str | None:
    """A 1-D shared array with one slot per warp of the block (``n`` = threads / 32) indexed ``i`` by the
    thread's warp counted across the grid ((block * threads + slot) // 32) in a block past the first: a
    per-warp array belongs to one block, its slots are the block's warps, slot // 32."""
    threads = math.prod(bd)
    b0 = int(tuple(b)[0]) if b is not None else 0
    if n < 1 or n * WARP != threads or b0 < 1 or i != (b0 * threads + mine) // WARP or i < n:
        return None
    return (f"index {i} is thread {mine}'s warp counted across the whole grid ((blockIdx.x * {threads} + {mine}) // 32, "
            f"in block {b0}), past the end ({n}) of this shared array, which has one slot per warp of the block: each "
            f"block has its own copy, and its slots are the block's warps, the thread's index in the block // 32 "
            f"(here {mine // WARP}): number the warp from cuda.threadIdx.x, not from cuda.grid(1)")


def shared_below(i: int, off: int, mine: int, bd, shape) -> str | None:
    """A 1-D shared array with a cell per thread of the block (no halo cells: its size is the block's)
    read ``-off`` cells below the thread's own slot, past slot 0: a step's partner t - s that only the
    threads t >= s have."""
    if shape is None or len(shape) != 1 or int(shape[0]) != math.prod(bd) or off >= 0 or i >= 0:
        return None
    s = -off
    return (f"a negative index: {i} is thread {mine}'s own slot minus {s}, and this shared array has one cell per "
            f"thread (no halo cells): a step that reads the partner t - {s} must be skipped by the threads t < {s}, "
            f"whose partner would be below slot 0 (`if t >= {s}:` around the read, or add 0 for them)")


def warp_slot_store(me: int, them: int, idx, arr: str, bd) -> str | None:
    """Two lanes of one warp (1-D block slots ``me``, ``them``) storing, at one line and in one phase,
    the shared cell ``arr[idx]`` whose index is their warp's number: every lane stores the warp's slot."""
    if math.prod(bd[1:]) != 1 or len(idx) != 1 or me // WARP != them // WARP or int(idx[0]) != me // WARP:
        return None
    w = me // WARP
    return (f"lanes {me % WARP} and {them % WARP} of warp {w} both stored the warp's slot {arr}[{w}]: every lane of "
            f"the warp stores it, in any order: only one lane stores the warp's value (the lane that holds the "
            f"warp's sum, e.g. `if lane == 0:` after shfl_down_sync)")


def block_index_past(i: int, n: int, b, t, own) -> str | None:
    """A global array indexed ``i`` past its end ``n`` where ``i`` is the thread's block index along an
    axis (and not its thread index nor its global index there): one cell per block, in an array that
    has fewer cells than blocks (one for the whole grid when ``n`` is 1)."""
    bl, tl = (tuple(int(v) for v in b) + (0, 0, 0))[:3], (tuple(int(v) for v in t) + (0, 0, 0))[:3]
    for a in range(3):
        if bl[a] >= 1 and i == bl[a] and i != tl[a] and i != own[a]:
            x = "xyz"[a]
            whole = ("it has one element for the whole grid: every block adds into index 0 (e.g. "
                     "`cuda.atomic.add(out, 0, value)`)" if n == 1 else
                     f"it has {n} cells, fewer than the blocks: a cell a block needs one for every block, or "
                     f"this index is not the block's")
            return (f"index {i} is this thread's block index (cuda.blockIdx.{x} = {i}), past the end ({n}) of this "
                    f"array: {whole}")
    return None


def global_for_block(i: int, n: int, b, t, bd, grid) -> str | None:
    """An index past its axis's ``n`` cells that is the thread's global index (1-D launch) where the
    axis has one cell per block of the launch (``n`` = the number of blocks): the index of a
    block-per-row mapping is the block's, not the thread's global one."""
    if grid is None:
        return None
    g = [int(v) for v in grid] if hasattr(grid, "__len__") else [int(grid)]
    if math.prod(g) != g[0] or math.prod(bd) != bd[0] or n != g[0] or n < 2:
        return None
    b0, t0 = int(tuple(b)[0]), int(tuple(t)[0])
    if i != b0 * bd[0] + t0 or i == b0:
        return None
    # in block 0 the global index is the thread's index within its block too: say both (either is the mistake)
    what = (f"this thread's index within its block (cuda.threadIdx.x = {t0}), which in block 0 is also this thread's "
            f"global index (cuda.grid(1) = {b0} * {bd[0]} + {t0})" if b0 == 0 else
            f"this thread's global index (cuda.grid(1) = {b0} * {bd[0]} + {t0})")
    return (f"index {i} is {what}, past the {n} cells "
            f"of this axis, one per block of the launch's {n} blocks: each block takes one of them: the index is "
            f"the block's, cuda.blockIdx.x (= {b0} here), and the threads of the block share its work")


def store_controls(text: str, arr: str) -> list | None:
    """Each statement of the file ``text`` that fills ``arr[...]`` (a plain or annotated store: an
    update such as ``+=`` needs a value there already): (its line, the ``if`` and loop headers around
    it in its function, innermost first: ("if", the test's source, negated in the else branch) or
    ("loop", "for ... in ..." / "while ...")). None when the file does not parse."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found = []

    def visit(node, chain):
        for field, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, ast.AST):
                    continue
                here = chain
                if isinstance(node, ast.If) and field in ("body", "orelse"):
                    test = ast.unparse(node.test)
                    here = [("if", test if field == "body" else f"not ({test})")] + chain
                elif isinstance(node, ast.For) and field == "body":
                    here = [("loop", f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}")] + chain
                elif isinstance(node, ast.While) and field == "body":
                    here = [("loop", f"while {ast.unparse(node.test)}")] + chain
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    here = []
                targets = (child.targets if isinstance(child, ast.Assign) else
                           [child.target] if isinstance(child, ast.AnnAssign) else [])
                for t in targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == arr:
                        found.append((child.lineno, here))
                visit(child, here)

    visit(tree, [])
    return found


def unstored_cell(text: str, arr: str, idx, reference_reads: bool | None = None) -> str | None:
    """Why shared cell ``arr[idx]``, read by a thread of the block before any thread stored it, held no
    value, from the student's file ``text``: every statement filling ``arr`` (:func:`store_controls`)
    runs under an ``if`` (the cell's thread did not meet it) or in a loop (no step reached the cell);
    the conditions and loops are quoted. None where a fill runs unconditionally, or there is none, or
    the file does not parse. ``reference_reads``: whether the reference solution reads that cell too
    on this case (then the cell needs a value, not the read another index).

    Source: CUDA C++ Programming Guide, "Shared Memory": shared memory is not initialised; a block
    reads only what its threads stored."""
    stores = store_controls(text, arr)
    if not stores or any(not chain for _, chain in stores):
        return None
    tests = list(dict.fromkeys(c[1] for _, chain in stores for c in chain[:1] if c[0] == "if"))
    loops = list(dict.fromkeys(c[1] for _, chain in stores for c in chain if c[0] == "loop"))
    where = ", ".join(f"line {ln}" for ln in sorted({ln for ln, _ in stores})[:3])
    cell = f"{arr}[{', '.join(str(int(v)) for v in idx)}]"
    runs = " and ".join(([f"only where {' or '.join(f'`{t}`' for t in tests[:2])} holds"] if tests else [])
                        + ([f"inside `{loops[0]}`"] if loops else []))
    fixes = (["store a value there too (an else branch storing 0, the identity, for the cells past the data)",
              "correct the condition"] if tests else []) + (["make the loop reach every cell the block reads (its "
                                                              "start, bound and step)"] if loops else [])
    also = f"the reference solution reads {cell} too, so it must hold a value: " if reference_reads else ""
    return (f"{cell} was never stored before it was read: each store filling {arr} ({where}) runs {runs}, and none "
            f"stored this cell; {also}{', or '.join(fixes)}")


def _is_barrier(st) -> bool:
    return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and ast.unparse(st.value.func).endswith("syncthreads"))


def fused_loop_race(source, write_line: int, read_line: int, arr: str, unstored: bool = True) -> str | None:
    """Why a shared cell is read and stored in one barrier phase where a barrier stands between the
    store's line and the read's line: both are statements of one loop's body (``source``: the lines of the
    student's file, parsed with :mod:`ast`), the store before a cuda.syncthreads() of that body and the
    read after it. Each pass's barrier orders that pass's stores before that pass's reads only: a read
    that takes a cell stored at a later pass of the loop meets no barrier between the two. ``unstored``:
    the read found the cell not yet stored (the tracer's uninitialised read): the reads need cells of later
    passes, so the loop must be split; else the next pass's store overwrites a cell still being read: a
    barrier must close the body. None when the lines are not so (another loop, no barrier in the body
    between them, a file that does not parse)."""
    try:
        tree = syntax.parse("\n".join(map(str, source or ())))
    except SyntaxError:
        return None
    for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))):
        body = loop.body

        def at(line, body=body):
            return next((k for k, st in enumerate(body) if st.lineno <= line <= st.end_lineno), None)

        w, r = at(int(write_line)), at(int(read_line))
        bars = [k for k, st in enumerate(body) if _is_barrier(st)]
        if w is None or r is None or not any(w < k < r for k in bars):
            continue
        if any(n.lineno <= min(write_line, read_line) and n.end_lineno >= max(write_line, read_line)
               for st in body[w:r + 1] for n in ast.walk(st) if isinstance(n, (ast.For, ast.While))):
            continue  # an inner loop holds them: the innermost loop answers
        bar = body[next(k for k in bars if w < k < r)]
        if not unstored:
            return (f"the cuda.syncthreads() at line {bar.lineno} inside the loop at line {loop.lineno} orders each "
                    f"pass's stores before its reads, but nothing orders one pass's reads of {arr} before the next "
                    f"pass's stores: another thread stored this cell for the next pass while it was still being read: "
                    f"end the loop's body with a second cuda.syncthreads() (after the reads, before the next pass "
                    f"stores)")
        return (f"the cuda.syncthreads() at line {bar.lineno} is inside the loop at line {loop.lineno} that both "
                f"stores {arr} and reads it: each pass's barrier orders that pass's stores before that pass's reads "
                f"only, and this read takes a cell that another thread stores at a later pass of the loop (no "
                f"barrier between the two): store every cell the reads need first: one loop that fills {arr}, then "
                f"one cuda.syncthreads(), then a second loop that reads it")
    return None


def int_value(node, env):
    """The int (or bool) value of expression ``node`` over the names of ``env`` (+ - * // % and
    comparisons, and/or/not); None for anything else. The judge reads the student's text, runs none of it."""
    bins = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.FloorDiv: op.floordiv, ast.Mod: op.mod}
    cmps = {ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge, ast.Eq: op.eq, ast.NotEq: op.ne}
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in bins:
        a, b = int_value(node.left, env), int_value(node.right, env)
        if a is None or b is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0):
            return None
        return bins[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        a = int_value(node.operand, env)
        return None if a is None else (-a if isinstance(node.op, ast.USub) else not a)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in cmps:
        a, b = int_value(node.left, env), int_value(node.comparators[0], env)
        return None if a is None or b is None else cmps[type(node.ops[0])](a, b)
    if isinstance(node, ast.BoolOp):
        vals = [int_value(v, env) for v in node.values]
        return None if any(v is None for v in vals) else (all(vals) if isinstance(node.op, ast.And) else any(vals))
    return None


def module_constants(tree) -> dict:
    """{name: int} of the module's top-level ``NAME = <int expression>`` assignments, in order, each over the
    ones before it (:func:`int_value`): ``THREADS = 128``, ``BINS = 2 * THREADS``."""
    env = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            v = int_value(st.value, env)
            if isinstance(v, int) and not isinstance(v, bool):
                env[st.targets[0].id] = v
    return env


def excluded_store(text: str, arr: str, idx, threads: int | None = None) -> str | None:
    """Why shared cell ``arr[idx]`` (1-D) held no value when read, where a store of the file ``text`` would
    fill it from one thread but that thread's own test keeps it out: a store ``arr[t + c] = ...`` under one
    ``if`` whose test reads only the thread's index ``t`` (a name bound to cuda.threadIdx.x) and module
    constants; thread idx - c fails the test. A test that compares with ``>`` (``<``) exactly that thread's
    index is the off-by-one of ``>=`` (``<=``). ``threads``: the block's threads along x, where known (a
    thread index past them stores nothing). None otherwise."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    if len(idx) != 1:
        return None
    env = module_constants(tree)
    alias = {st.targets[0].id for st in ast.walk(tree) if isinstance(st, ast.Assign) and len(st.targets) == 1
             and isinstance(st.targets[0], ast.Name) and ast.unparse(st.value) == "cuda.threadIdx.x"}
    lines = text.splitlines()
    for ln, chain in store_controls(text, arr) or ():
        if len(chain) != 1 or chain[0][0] != "if" or chain[0][1].startswith("not ("):
            continue
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno == ln), None)
        test = syntax.parse(chain[0][1], mode="eval").body
        sub = node.targets[0] if node is not None and isinstance(node.targets[0], ast.Subscript) else None
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        if sub is None or not names or not names <= alias | set(env):
            continue
        for t in alias:
            a, b = int_value(sub.slice, {**env, t: 0}), int_value(sub.slice, {**env, t: 1})
            if a is None or b is None or b - a != 1 or t not in names:
                continue
            who = int(idx[0]) - a
            if who < 0 or (threads is not None and who >= threads) or int_value(test, {**env, t: who}) is not False:
                continue
            edge = ""
            if isinstance(test, ast.Compare) and isinstance(test.ops[0], (ast.Gt, ast.Lt)) and \
                    ast.unparse(test.left) == t and int_value(test.comparators[0], env) == who:
                edge = (f": `{'>' if isinstance(test.ops[0], ast.Gt) else '<'}` leaves out {t} = {who} itself "
                        f"(`{'>=' if isinstance(test.ops[0], ast.Gt) else '<='}` lets it through)")
            code = " ".join(lines[ln - 1].split()) if ln <= len(lines) else ""
            return (f"{arr}[{int(idx[0])}] was never stored before it was read: the store that fills it, line {ln}: "
                    f"`{code}`, would be made by thread {t} = {who}, but its test `{chain[0][1]}` is false for "
                    f"{t} = {who}{edge}: the block leaves this cell empty")
    return None


def loop_bound_words(source, line, arr: str, i: int, n: int) -> str | None:
    """Why shared ``arr`` was accessed at ``i``, past its end ``n``, at ``line`` of the file ``source`` (its
    lines), where the text shows a loop and no tree step: the subscript is the bare variable of a ``for ...
    in range(start, stop, step)`` around the line, whose bound lets it reach ``i`` (or, for ``i`` < 0, whose
    start is negative). None otherwise (a subscript with an offset, ``s[t + s]``, is a tree's partner).
    Used for any array: a shared one past its size, any one below 0."""
    try:
        tree = syntax.parse("\n".join(map(str, source or ())))
        line = int(line)
    except (SyntaxError, TypeError, ValueError, RecursionError):
        return None
    subs = [s for s in ast.walk(tree) if isinstance(s, ast.Subscript) and ast.unparse(s.value) == arr
            and s.lineno == line and isinstance(s.slice, ast.Name)]
    for s in subs:
        var = s.slice.id
        for loop in ast.walk(tree):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and loop.target.id == var
                    and loop.lineno < line <= loop.end_lineno and isinstance(loop.iter, ast.Call)
                    and ast.unparse(loop.iter.func) == "range" and len(loop.iter.args) >= 2):
                continue
            start = ast.unparse(loop.iter.args[0])
            if i < 0 and not start.startswith("-"):
                continue  # a negative index that the loop's start does not explain
            if i < 0:  # a loop from a negative start: the index counts from the end (Python) or before the array
                shifted = f"{var} + {start[1:]}" if start.startswith("-") else f"{var} - ({start})"
                return (f"a negative index: {arr}[{var}] takes {var} from the loop at line {loop.lineno}, `for {var} in "
                        f"{ast.unparse(loop.iter)}`, which starts at {start} ({i} here): an index below 0 is outside "
                        f"the array on a GPU (Python counts it from the end): shift the index by the start, "
                        f"{arr}[{shifted}], or loop from 0")
            stop = ast.unparse(loop.iter.args[1])
            return (f"index {i} is past the end ({n}) of this shared array, and {arr}[{var}] takes {var} from the loop "
                    f"at line {loop.lineno}, `for {var} in {ast.unparse(loop.iter)}`: its bound {stop} lets {var} reach "
                    f"{i}: the loop over {arr}'s cells stops below its size, {n}")
    return None
