"""Python's syntax trees made one thread at a time in a process: :func:`parse` (``ast.parse``) and
:func:`compile_tree` (``compile`` of a tree) behind one process-wide lock.

CPython 3.11's conversion between its C syntax tree and ``ast`` objects keeps its recursion depth in
per-interpreter state, not per thread: two threads converting at once (the grader checks a class's
submissions in threads, each reading its student's file) can fail one of them with "SystemError: AST
constructor recursion depth mismatch (before=27, after=25)", which graded an honest submission 0
("the grader could not run it"). Sources: CPython's bug tracker, "Error in AST recursion depth tracking"
(python/cpython on GitHub); Python's ``ast`` module documentation. Every ``ast.parse`` of the lab's judge
and contained code goes through here.
"""
from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source, *args, **kwargs) -> ast.AST:
    """``ast.parse(source, *args, **kwargs)``, one thread at a time (SyntaxError, ValueError and
    RecursionError as ast.parse raises them)."""
    with _LOCK:
        return ast.parse(source, *args, **kwargs)


def compile_tree(tree: ast.AST, filename: str, mode: str, **kwargs):
    """``compile(tree, filename, mode, **kwargs)`` of a syntax tree (its ``ast`` objects converted back:
    the same per-interpreter depth state), one thread at a time."""
    with _LOCK:
        return compile(tree, filename, mode, **kwargs)
