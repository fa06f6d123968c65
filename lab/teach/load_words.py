"""Words for a block reduction whose sum holds only the first threads' partials, where the student's trace
and text show why: a thread loaded one element of an input again and again at one line inside a loop (the
load sits inside the tree's loop, so every pass puts the raw element back over the partial sum that the
tree built in its cell). Judge side: the tracer's counts (``load_lines``) and the file's text; runs none of it.

Source: CUDA C++ Programming Guide, "Shared Memory" (the reduction loads each element once, then the
tree combines the cells).
"""
from __future__ import annotations

import ast
from lab.teach.contained import syntax

# the values' guesses (exercises.sum_hints) that this evidence answers: a tree that starts too low, an
# accumulator reset in a loop (a reload can leave the last term's value too)
VALUE_GUESSES = ("does the tree start at half the block", "the accumulator is reset inside the loop")


def reloaded_words(counts, source, inputs) -> str | None:
    """What ``counts`` (:func:`lab.teach.contained.counts.stats_counts`) and ``source`` (the file's lines)
    show: a thread that loaded one element of a kernel input (a name of ``inputs``) two or more times at one
    line, that line inside a ``for`` or ``while`` loop of the text. None otherwise."""
    if not counts or not source:
        return None
    arrays = counts.get("arrays") or []
    try:
        tree = syntax.parse("\n".join(map(str, source)))
    except (SyntaxError, ValueError, RecursionError):
        return None
    for a, _tid, line, loads, lo, hi in sorted(counts.get("load_lines") or (), key=lambda r: (r[1], r[2])):
        if int(loads) < 2 or int(lo) != int(hi) or not 0 <= int(a) < len(arrays):
            continue
        name = arrays[int(a)][0]
        if name not in inputs or arrays[int(a)][3]:
            continue
        loop = next((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
                     and n.lineno < int(line) <= (n.end_lineno or 0)), None)
        if loop is None:
            continue
        code = " ".join(str(source[int(line) - 1]).split()) if 0 < int(line) <= len(source) else ""
        return (f"one thread loaded the same element of {name} {int(loads)} times at line {int(line)}: `{code}`, "
                f"inside the loop at line {loop.lineno}: each pass of the loop loads the raw element again, over the "
                f"partial sum the tree built in its cell: load once, before the loop, and let the loop only combine")
    return None
