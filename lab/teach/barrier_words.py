"""Words for a block whose threads passed different numbers of cuda.syncthreads() (the tracer's
``barrier_mismatch``), judge side: the student's statements that made them differ, read from the file's
text (never run): an early ``return`` that stands before a barrier of its function (the threads it ends
never reach that barrier), and a barrier inside an ``if`` (only the threads for which the test holds reach
it). Quoted where found; None where the text shows neither (the judge's general words stay).

Source: CUDA C++ Programming Guide, "Synchronization Functions": __syncthreads() is allowed in
conditional code only if the condition evaluates identically across the entire thread block.
"""
from __future__ import annotations

import ast

from lab.teach.contained import syntax
from lab.teach.messages import quote

GENERIC = ("a barrier inside a branch or after an early return is undefined behaviour and can hang on a GPU; let all "
           "threads reach every barrier")


def _is_barrier_call(node) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "syncthreads"


def _walk(node, ifs, rets, barriers, branched):
    """Each ``return`` and barrier under ``node`` (its function's body, nested functions apart), with the
    innermost ``if`` around it: (line, the if's line, its test, negated in the else branch)."""
    for field, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else [value]:
            if not isinstance(child, ast.AST) or isinstance(child, (ast.FunctionDef, ast.Lambda)):
                continue
            here = ifs
            if isinstance(node, ast.If) and field in ("body", "orelse"):
                test = ast.unparse(node.test)
                here = [(node.lineno, test if field == "body" else f"not ({test})")] + ifs
            if isinstance(child, ast.Return) and here:
                rets.append((child.lineno, *here[0]))
            if isinstance(child, ast.Expr) and _is_barrier_call(child.value):
                barriers.append(child.lineno)
                if here:
                    branched.append((child.lineno, *here[0]))
            _walk(child, here, rets, barriers, branched)


def _causes(tree):
    """(returns, branched): per function, each ``return`` under an ``if`` with a barrier after it in the same
    function: (line, the if's line, its test); each barrier under an ``if``: (line, the if's line, its test)."""
    returns, branched = [], []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        rets, barriers = [], []
        _walk(fn, [], rets, barriers, branched)
        returns += [r for r in rets if any(b > r[0] for b in barriers)]
    return returns, branched


def barrier_words(text: str, source) -> str | None:
    """``text`` (the judge's message for threads that passed different numbers of barriers) with its general
    words replaced by the statements of ``source`` (the student's lines) that make the threads differ: an
    early return before a barrier, a barrier inside an ``if``. None where ``text`` has no general words or
    the file shows neither."""
    if GENERIC not in text or not source:
        return None
    lines = [str(v) for v in source]
    try:
        tree = syntax.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError):
        return None
    returns, branched = _causes(tree)
    said = []
    for ln, if_ln, test in returns[:1]:
        barrier = min((n.lineno for n in ast.walk(tree) if isinstance(n, ast.Expr) and _is_barrier_call(n.value)
                       and n.lineno > ln), default=None)  # the first barrier after the return
        said.append(f"the early return at {quote(lines, ln)} (under `if {test}:` at line {if_ln}) ends the threads it "
                    f"holds before the barrier at {quote(lines, barrier)}: they never reach it while the others wait "
                    f"there (undefined behaviour, a hang on a GPU): do not return before a barrier: let those threads "
                    f"go on with a neutral value (0 for a sum, the identity) and guard only their loads and stores")
    for ln, if_ln, test in branched[:1]:
        said.append(f"the cuda.syncthreads() at {quote(lines, ln)} stands inside `if {test}:` (line {if_ln}): only the "
                    f"threads for which the test holds reach it (undefined behaviour, a hang on a GPU): move the barrier "
                    f"out of the branch, where every thread of the block reaches it")
    if not said:
        return None
    return text.replace(GENERIC, "; and ".join(said))
