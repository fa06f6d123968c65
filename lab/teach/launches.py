"""The student's launch() (interpreted by the judge, :mod:`lab.teach.contained.source`, never run)
evaluated for several sizes: :func:`launch_mismatch` names a launch whose blocks were counted for
another block size than the one it returns, from launch() itself; :func:`launch_line` quotes the line
that divides a size. Judge side: nothing here runs student code.
"""
from __future__ import annotations

import ast

import numpy as np

from kernels.spec import plural
from lab.teach.contained.executor import ROUNDED_DOWN
from lab.teach.messages import quote

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


def launch_line(launch, k: int) -> str:
    """'line N: `code`': the one line of the interpreted launch() (:class:`lab.teach.source_eval.Launch`)
    that divides its ``k``-th parameter (a floor or true division whose dividend uses it), or ''."""
    prog, name = getattr(launch, "prog", None), getattr(launch, "name", None)
    fn = getattr(prog, "functions", {}).get(name) if prog is not None else None
    if fn is None:
        return ""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if k >= len(params):
        return ""
    lines = {n.lineno for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Div))
             and any(isinstance(m, ast.Name) and m.id == params[k] for m in ast.walk(n.left))}
    return quote(str(prog.text).splitlines(), lines.pop()) if len(lines) == 1 else ""


def launch_mismatch(launch, name: str, args: tuple, shape: tuple) -> str | None:
    """Why the launch ``launch(*args)`` (the student's launch(), as the judge interprets it) has fewer
    threads than elements along an axis, from launch() itself: the sizes along that axis varied
    (the first ``len(shape)`` arguments of launch() are the output's shape, rows first), the number
    of blocks it returns fitted to ceil(size / D), and D compared with the threads a block it returns
    along that axis. None when the blocks were counted for the block size it returns (plain
    rounding down is :func:`lab.teach.messages.unwritten_message`'s), or when nothing fits."""
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
        swept = _sweep(launch, args, k, axis, dims)
        if swept is None:
            return None
        sizes, blocks, threads = swept
        if len(set(blocks)) == 1 and nd > 1:  # the blocks along this axis ignore its size: counted from another?
            return _other_size(launch, name, args, shape, axis, k, dims, g, b)
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
        where = launch_line(launch, k)
        where = f" at {where}" if where else ""
        axis_words = "" if nd == 1 else f" along {_AXES[axis]}"
        return (f"your launch() divides {what} by {d}{where}, blocks{axis_words} = {how} for every size tried, but its "
                f"blocks have {t} threads{axis_words}: {call} gives {plural(g[axis], 'block')} x {t} = {g[axis] * t} threads "
                f"for {elements} {what if nd > 1 else 'elements'}; divide by the block's own size{axis_words} "
                f"(x = columns by block[0], y = rows by block[1])" if nd > 1 else
                f"your launch() divides n by {d}{where}, blocks = {how} for every n tried, but its blocks have {t} threads "
                f"a block: {call} gives {plural(g[axis], 'block')} x {t} = {g[axis] * t} threads for {elements} elements; "
                f"count the blocks with the block size you return: (n + threads - 1) // threads")
    return None


def _sweep(launch, args, k, axis, dims):
    """(sizes, blocks along ``axis``, {threads a block along it}) of launch() with its ``k``-th argument
    varied over sizes around powers of two (the others as in ``args``); None when a call fails."""
    sizes, blocks, threads = [], [], set()
    for s in sorted({1, 2, 3, 100, 1000, int(args[k])} | {p + d for p in (32, 64, 128, 256, 512, 1024, 2048)
                                                         for d in (-1, 0, 1)}):
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
    return sizes, blocks, threads


def _other_size(launch, name, args, shape, axis, k, dims, g, b) -> str | None:
    """The words for a launch whose blocks along ``axis`` (which must cover dimension ``k``) do not change
    with that dimension's size but follow another dimension's, ceil(that size / D), for every size
    tried; None when no other one fits."""
    nd = len(shape)
    words = ["rows", "cols"] if nd == 2 else [f"dimension {j}" for j in range(nd)]
    for j in range(nd):
        if j == k:
            continue
        swept = _sweep(launch, args, j, axis, dims)
        if swept is None or len(set(swept[1])) == 1 or len(swept[2]) != 1:
            continue
        fit = _fit(swept[0], swept[1])
        if fit is None:
            continue
        d, form = fit
        how = f"ceil({words[j]} / {d})" if form == "ceil" else f"{words[j]} // {d} + 1"
        where = launch_line(launch, j)
        call = f"{name}({', '.join(str(v) for v in args)})"
        back = _sweep(launch, args, k, 1 - axis, dims) if nd == 2 else None  # the other axis from this size?
        if back is not None and len(set(back[1])) > 1:
            return (f"your launch() counts the blocks along {_AXES[axis]} from {words[j]}"
                    f"{f' at {where}' if where else ''} (blocks along {_AXES[axis]} = {how} for every size tried) and "
                    f"those along {_AXES[1 - axis]} from {words[k]}: the grid's x and y swapped: {call} gives "
                    f"{plural(g[axis], 'block')} x {b[axis]} = {g[axis] * b[axis]} threads along {_AXES[axis]} for "
                    f"{int(shape[k])} {words[k]}; x = column (blocks from cols by block[0]), y = row (from rows by "
                    f"block[1])")
        return (f"your launch() counts the blocks along {_AXES[axis]} from {words[j]}{f' at {where}' if where else ''}: "
                f"blocks along {_AXES[axis]} = {how} for every size tried, whatever the {words[k]}; but the grid's "
                f"{_AXES[axis]} runs along the {words[k]}: {call} gives {plural(g[axis], 'block')} x {b[axis]} = "
                f"{g[axis] * b[axis]} threads along {_AXES[axis]} for {int(shape[k])} {words[k]}: count them from "
                f"{words[k]} (x = columns by block[0], y = rows by block[1])")
    return None


FLOAT_SHAPE = "return (blocks per grid, threads per block), each an int or a tuple of 1-3 ints"


def float_blocks_words(launch, case, text: str) -> str | None:
    """``text`` (launch_config's Failed for a launch() that returned something else than ints) with the cause
    where launch() itself shows it: a float in what it returned for ``case``, and the true divisions (``/``)
    of launch()'s text, quoted: Python's ``/`` gives a float even where the sizes divide. None otherwise."""
    if FLOAT_SHAPE not in text:
        return None
    try:
        got = launch(*case.launch_args)
        flat = [v for part in got for v in (part if isinstance(part, (tuple, list)) else (part,))]
    except Exception:  # noqa: BLE001 - already judged: the words stay as they are
        return None
    floats = [v for v in flat if isinstance(v, (float, np.floating))]
    prog, name = getattr(launch, "prog", None), getattr(launch, "name", None)
    fn = getattr(prog, "functions", {}).get(name) if prog is not None else None
    if not floats or fn is None:
        return None
    lines = sorted({n.lineno for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)})
    if not lines:
        return None
    src = str(prog.text).splitlines()
    return (f"{text}: {floats[0]!r} is a float: `/` is Python's true division, a float even where the sizes divide "
            f"(at {'; '.join(quote(src, ln) for ln in lines[:2])}); a number of blocks is an int: count them with "
            f"floor division, rounding up: (n + threads - 1) // threads")


def zero_blocks_line(launch, case, text: str) -> str:
    """``text`` (:func:`lab.teach.contained.executor.launch_config`'s Failed for a grid with a 0) with
    the line of launch() that counts the blocks along the axis that got none (:func:`launch_line`: the
    one line dividing that size), where that line is found; else ``text``. launch()'s first parameters
    are the output's extents, rows first: grid x counts the last one."""
    if ROUNDED_DOWN not in text:
        return float_blocks_words(launch, case, text) or text
    try:
        grid, _ = launch(*case.launch_args)
        g = [int(grid)] if isinstance(grid, (int, np.integer)) else [int(v) for v in grid]
    except Exception:  # noqa: BLE001 - already judged: the words stay as they are
        return text
    nd = len(case.outputs[0][0]) if case.outputs else 1
    lines = {launch_line(launch, nd - 1 - axis) for axis, v in enumerate(g) if v < 1 and nd - 1 - axis >= 0}
    lines.discard("")
    return text + (f" ({lines.pop()})" if len(lines) == 1 else "")
