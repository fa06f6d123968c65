"""Words for a two-buffer cp.async pipeline whose products read a buffer before its copy landed, where
the student's text shows which of the pipeline's rules it breaks: copies issued before the loop but not
committed before it (they join the first iteration's group, which ``cp_async_wait(1)`` may leave in flight),
a ``cp_async_wait(1)`` before the loop's commit of the next tile's copies (tile t's group is then the
newest, the one it lets stay in flight), or a wait that leaves more than one group in flight (with a group committed per tile, tile t's own group is
then among those still in flight). Pure functions of the file's text; None where the text does not say. The
judge reads the student's text and runs none of it.

Source: CUDA C++ Programming Guide, "Asynchronous Data Copies" (the two-stage pipeline); PTX ISA,
"cp.async.commit_group" and "cp.async.wait_group" (wait_group N: at most the N newest groups pending).
"""
from __future__ import annotations

import ast
from lab.teach.contained import syntax
from lab.teach.messages import quote
from lab.teach.shared_words import int_value, module_constants

# the exercise's words for NaN read from a buffer in flight (exercises/async_pipeline/hidden.py): what the
# text's own evidence replaces
IN_FLIGHT = "a product read a buffer before its copy landed"


def _calls(node, name):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == name]


def async_order_words(text: str) -> str | None:
    """Which pipeline rule the kernel of ``text`` breaks (see the module's doc), or None."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        body = fn.body
        loop = next((i for i, st in enumerate(body) if isinstance(st, (ast.For, ast.While))
                     and _calls(st, "cp_async_wait")), None)
        if loop is None:
            continue
        before = [c for st in body[:loop] for c in _calls(st, "cp_async4")]
        last = max((c.lineno for c in before), default=None)
        commits = [c for st in body[:loop] for c in _calls(st, "cp_async_commit") if last and c.lineno > last]
        if before and not commits:
            first = min(c.lineno for c in before)
            return (f"the copies issued before the loop (line {first}{'' if first == last else f' to {last}'}) are "
                    f"not committed before it: cp_async_commit() closes the copies issued so far into a group, so "
                    f"they join the loop's first group with the next tile's copies, and cp_async_wait(1), which lets "
                    f"the newest group stay in flight, does not wait for them: call cp_async_commit() right after "
                    f"the copies of the first tile, before the loop (line {body[loop].lineno})")
        waits, inner = _calls(body[loop], "cp_async_wait"), _calls(body[loop], "cp_async_commit")
        helpers = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f is not fn
                   and (_calls(f, "cp_async4") or _calls(f, "cp_async16"))}
        copies = [c for c in ast.walk(body[loop]) if isinstance(c, ast.Call)
                  and ast.unparse(c.func).split(".")[-1] in {"cp_async4", "cp_async16", *helpers}]
        n0 = waits[0].args[0] if waits and waits[0].args else None
        if (copies and inner and waits and isinstance(n0, ast.Constant) and n0.value == 1
                and waits[0].lineno < min(c.lineno for c in inner)):
            return (f"cp_async_wait(1) at line {waits[0].lineno} comes before the loop's commit (line "
                    f"{min(c.lineno for c in inner)}) of the next tile's copies: at that wait tile t's group is the "
                    f"newest one committed, and wait(1) lets the newest group stay in flight, so the products read tile "
                    f"t before it lands: issue tile t + 1's copies and commit them first, then cp_async_wait(1), then "
                    f"cuda.syncthreads()")
        for w in waits:
            n = w.args[0] if w.args else None
            if isinstance(n, ast.Constant) and isinstance(n.value, int) and n.value >= 2:
                return (f"cp_async_wait({n.value}) at line {w.lineno} returns while {n.value} groups are still in "
                        f"flight: with one group committed per tile, the newest is tile t + 1's and the one before "
                        f"it is tile t's own, which the products then read before it lands: cp_async_wait(1) (only "
                        f"the next tile's group may stay in flight)")
    return None



# reference.unread_cell's closing words: a shared read at cells the reference never reads on the case
UNREAD_BASE = "(which part of {arr} it reads: a buffer's or a tile's base)"


def _has_mod2(node) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.right, ast.Constant)
               and n.right.value == 2 for n in ast.walk(node))


def other_buffer_words(text: str, arr: str, idx, line: int) -> str | None:
    """Why shared cell ``arr[idx]`` (1-D), read at ``line`` before any store, held nothing, where the file
    ``text`` shows it: the read's index, its names replaced by what they are assigned (those whose value
    picks a buffer, ``... % 2``), is in the second half of ``arr`` for the first tile and thread (0, 0)
    (every other name 0) while the cell lies in that half too: the products read the other buffer than
    the one the first tile was copied into. None otherwise."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    env, size = module_constants(tree), None
    for st in ast.walk(tree):
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id == arr and isinstance(st.value, ast.Call) and st.value.args):
            size = int_value(st.value.args[0], env)
    if not isinstance(size, int) or len(idx) != 1 or not size // 2 <= int(idx[0]) < size:
        return None
    fn = next((f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and f.lineno <= line <= getattr(f, "end_lineno", line)), None)
    read = next((n for n in ast.walk(fn) if isinstance(n, ast.Subscript) and getattr(n, "lineno", 0) == line
                 and isinstance(n.value, ast.Name) and n.value.id == arr), None) if fn is not None else None
    if read is None:
        return None
    assigns: dict = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            assigns.setdefault(st.targets[0].id, []).append(st)
    picked = []  # the assignments that pick the buffer (their value has % 2)

    class Expand(ast.NodeTransformer):
        def __init__(self, depth):
            self.depth = depth

        def visit_Name(self, node):
            got = assigns.get(node.id)
            if self.depth > 2 or got is None or len(got) != 1 or node.id in env:
                return node
            value = Expand(self.depth + 1).visit(syntax.parse(ast.unparse(got[0].value), mode="eval").body)
            if not _has_mod2(value):
                return node
            if _has_mod2(got[0].value):
                picked.append(got[0])
            return value

    expr = Expand(0).visit(syntax.parse(ast.unparse(read.slice), mode="eval").body)
    if not _has_mod2(expr):
        return None
    free = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)} - set(env)
    first = int_value(expr, {**env, **{n: 0 for n in free}})
    half = size // 2
    if not isinstance(first, int) or not half <= first < size:
        return None
    lines = text.splitlines()
    at = quote(lines, picked[0].lineno) if picked else quote(lines, line)
    return (f"{arr}[{int(idx[0])}] lies in buffer 1 ({arr}[{half}..{size - 1}]), which nothing filled: the products "
            f"read the buffer picked at {at}: buffer 1 for the first tile, but the first tile was copied into "
            f"buffer 0: tile t lands in buffer t % 2 and tile t + 1 in the other; read buffer t % 2, the one whose "
            f"copy was waited for")
