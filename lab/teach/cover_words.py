"""Words for an array with more elements than the block has threads, covered by one statement that a thread
runs once (judge side, from the student's text and the tracer's records, nothing run):

* :func:`cells_per_thread_words`: a shared array filled by ``arr[t + c] = ...`` alone (t the thread's index,
  no loop, no test): the block's threads fill as many cells as there are threads, and a cell past them is
  read before any store (a 256-bin histogram zeroed by 128 threads, one bin each);
* :func:`one_column_words`: an output whose columns from the block's thread count on were never written,
  while every thread stored one element, at a line in no loop (a row per block, columns t, t + 32, ...
  never taken).

Source: CUDA C++ Programming Guide, "Thread Hierarchy"; NVIDIA blog "CUDA Pro Tip: Write Flexible Kernels
with Grid-Stride Loops" (a thread takes elements t, t + blockDim.x, ...).
"""
from __future__ import annotations

import ast
import re

from lab.teach.contained import syntax
from lab.teach.shared_words import int_value, module_constants, store_controls
from lab.teach.messages import quote


def _thread_aliases(tree) -> set:
    """Names bound to cuda.threadIdx.x (``t = cuda.threadIdx.x``; ``t, u = cuda.threadIdx.x, ...``)."""
    names = set()
    for st in ast.walk(tree):
        if not isinstance(st, ast.Assign) or len(st.targets) != 1:
            continue
        tg, v = st.targets[0], st.value
        pairs = (zip(tg.elts, v.elts) if isinstance(tg, ast.Tuple) and isinstance(v, ast.Tuple)
                 and len(tg.elts) == len(v.elts) else [(tg, v)])
        names |= {a.id for a, b in pairs if isinstance(a, ast.Name) and ast.unparse(b) == "cuda.threadIdx.x"}
    return names


def _declared_size(tree, arr: str, env: dict) -> int | None:
    """The cells of ``arr = cuda.shared.array(N, ...)`` where N is an int of the file's constants, else None."""
    for st in ast.walk(tree):
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id == arr and isinstance(st.value, ast.Call) and st.value.args
                and ast.unparse(st.value.func).endswith("shared.array")):
            v = int_value(st.value.args[0], env)
            return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def cells_per_thread_words(text: str, arr: str, idx, threads: int, size: int | None) -> str | None:
    """Why shared cell ``arr[idx]`` (1-D) was read before any store: every statement of the file ``text`` that
    fills ``arr`` is ``arr[t + c] = ...`` (t bound to cuda.threadIdx.x, c a constant) in no loop and under no
    test, so the ``threads`` threads of the block fill ``threads`` cells from c on, and ``idx`` is not one of
    them (``size``: the array's cells, where known, more than the threads). None otherwise."""
    if len(idx) != 1 or not threads or (size is not None and size <= threads):
        return None
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    stores = store_controls(text, arr) or []
    if not stores or any(chain for _, chain in stores):
        return None
    alias, env = _thread_aliases(tree), module_constants(tree)
    size = size if size is not None else _declared_size(tree, arr, env)
    if size is not None and size <= threads:
        return None
    spans = []
    for ln, _ in stores:
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno == ln), None)
        sub = node.targets[0] if node is not None and isinstance(node.targets[0], ast.Subscript) else None
        if sub is None:
            return None
        index = syntax.parse(ast.unparse(sub.slice).replace("cuda.threadIdx.x", "threadIdx_x"), mode="eval").body
        names = {n.id for n in ast.walk(index) if isinstance(n, ast.Name)}
        own = names & (alias | {"threadIdx_x"})
        t = next(iter(own), None) if len(own) == 1 else None
        if t is None or not names <= own | set(env):
            return None
        a, b = int_value(index, {**env, t: 0}), int_value(index, {**env, t: 1})
        if a is None or b is None or b - a != 1:
            return None
        spans.append((a, ln))
    i = int(idx[0])
    if any(a <= i < a + threads for a, _ in spans):
        return None
    lines = text.splitlines()
    where = "; ".join(quote(lines, ln) for _, ln in spans[:2])
    filled = ", ".join(f"{arr}[{a}..{a + threads - 1}]" for a, _ in spans[:2])
    cells = f"{arr} has {size} cells, more" if size else f"{arr} has more cells"
    tail = f"range(t, {size}, {threads})" if size else f"range(t, size, {threads})"
    return (f"{arr}[{i}] was never stored: the stores that fill {arr} ({where}) store one cell a thread, {filled} for "
            f"the block's {threads} threads, but {cells} than the block has threads: let each thread fill several "
            f"cells, t, t + {threads}, ... (a loop, e.g. `for b in {tail}:`)")


_UNWRITTEN = re.compile(r"\((column|row)s (\d+)\.\. all unwritten although [^)]*\)")


def one_column_words(text: str, source, counts, oname: str, k: int, line: int, shape, block) -> str | None:
    """``text`` (the judge's words for an output whose last columns were never written: "columns 32.. all
    unwritten although ...") with the cause the trace and the text show: every thread stored at most one
    element of output ``oname`` (the ``stored`` table of ``counts``), the unwritten columns start at the
    block's threads along x, and the store (``line``) is in no loop of the file: thread t takes column t
    only. None where any of that does not hold."""
    m = _UNWRITTEN.search(text)
    if not m or m.group(1) != "column" or not counts or not source or not line or len(shape) != 2:
        return None
    bx = int(block if isinstance(block, int) else tuple(block)[0])
    start, cols = int(m.group(2)), int(shape[1])
    names = [a[0] for a in counts.get("arrays") or ()]
    if start != bx or cols <= bx or oname not in names:
        return None
    a = names.index(oname)
    stored = [int(c) for arr, _t, c in counts.get("stored") or () if int(arr) == a]
    if not stored or max(stored) != 1:
        return None
    lines = [str(v) for v in source]
    chains = [chain for ln, chain in (store_controls("\n".join(lines), oname) or ()) if ln == line]
    if not chains or any(c[0] == "loop" for c in chains[0]):
        return None
    rest = text[m.end():]
    said = f" (every element of {oname} was stored at "  # the checker's own quote of this line: said here already
    rest = rest[:rest.index(said)] if said in rest else rest
    return text[:m.start()] + (
        f"(columns {start}.. all unwritten: each thread stored one element of {oname}, thread t column t, at "
        f"{quote(lines, line)}, which stands in no loop: {oname} has {cols} columns for a block of {bx} threads, so "
        f"thread t must take columns t, t + {bx}, t + {2 * bx}, ...: put the store (and what it computes) in a loop, "
        f"e.g. `for j in range(t, {oname}.shape[1], {bx}):`)") + rest


def own_element_words(source, line: int, oname: str, xname: str) -> str | None:
    """Why each element of output ``oname`` misses input ``xname``'s own element (the values showed it), from
    the line ``line`` that stored them: its value subtracts ``xname[...]``, or reads a cell at ``name - 1``
    (the one before the thread's own). None where the line shows neither."""
    lines = [str(v) for v in source or ()]
    if not 0 < line <= len(lines):
        return None
    try:
        tree = syntax.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError):
        return None
    st = next((n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign)) and n.lineno == line), None)
    if st is None:
        return None
    how = None
    for n in ast.walk(st.value):
        if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and isinstance(n.right, ast.Subscript)
                and isinstance(n.right.value, ast.Name) and n.right.value.id == xname):
            how = f"subtracts {ast.unparse(n.right)}"
        elif (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.BinOp) and isinstance(n.slice.op, ast.Sub)
              and isinstance(n.slice.left, ast.Name) and isinstance(n.slice.right, ast.Constant)
              and n.slice.right.value == 1):
            how = f"reads {ast.unparse(n)}, the cell before the thread's own"
        if how:
            break
    if how is None:
        return None
    return (f"every element of {oname} is the expected value minus {xname}'s own element: the store at "
            f"{quote(lines, line)} {how}: that is the exclusive scan (element i holds the elements before i only); "
            f"the inclusive scan keeps element i's own value: store the scan's own cell (plus the block's offset)")
