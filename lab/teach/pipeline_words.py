"""Words for a two-buffer cp.async pipeline whose products read a buffer before its copy landed, where
the student's text shows which of the pipeline's rules it breaks: copies issued before the loop but not
committed before it (they join the first iteration's group, which ``cp_async_wait(1)`` may leave in flight),
or a wait that leaves more than one group in flight (with a group committed per tile, tile t's own group is
then among those still in flight). Pure functions of the file's text; None where the text does not say. The
judge reads the student's text and runs none of it.

Source: CUDA C++ Programming Guide, "Asynchronous Data Copies" (the two-stage pipeline); PTX ISA,
"cp.async.commit_group" and "cp.async.wait_group" (wait_group N: at most the N newest groups pending).
"""
from __future__ import annotations

import ast
from lab.teach.contained import syntax

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
        for w in _calls(body[loop], "cp_async_wait"):
            n = w.args[0] if w.args else None
            if isinstance(n, ast.Constant) and isinstance(n.value, int) and n.value >= 2:
                return (f"cp_async_wait({n.value}) at line {w.lineno} returns while {n.value} groups are still in "
                        f"flight: with one group committed per tile, the newest is tile t + 1's and the one before "
                        f"it is tile t's own, which the products then read before it lands: cp_async_wait(1) (only "
                        f"the next tile's group may stay in flight)")
    return None
