"""The device rules (:mod:`lab.teach.contained.source`): what a kernel, and every function of the file it
reaches, may hold, checked on its syntax tree before anything builds or runs it (see
:mod:`lab.teach.contained.source`'s docstring). Failed, naming the file's line, for the first thing a kernel
may not use. Nothing here prints.
"""
from __future__ import annotations

import ast
import builtins

from lab.teach.contained.allowlist import (BUILTINS, CUDA_ATTRS, MATH_ATTRS, NUMBA_TYPES, NUMPY_ATTRS, NUMPY_MAX_ARGS,
                                 VALUE_ATTRS, Program,
                              failed_at, source_of)


# --- The device rules ---------------------------------------------------------------------------------------------
_FORBIDDEN_NODES = {ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "global",
                    ast.Nonlocal: "nonlocal", ast.ClassDef: "a class", ast.FunctionDef: "a function inside a function",
                    ast.AsyncFunctionDef: "an async function", ast.Lambda: "a lambda", ast.With: "with",
                    ast.AsyncWith: "async with", ast.Try: "try", ast.Yield: "yield", ast.YieldFrom: "yield from",
                    ast.Await: "await", ast.AsyncFor: "async for"}
if hasattr(ast, "TryStar"):
    _FORBIDDEN_NODES[ast.TryStar] = "try"
# a match statement's class patterns read attributes by name (case int(__class__=c)), past the rules on
# ast.Attribute, and numba-cuda compiles no match statement: not device code
_FORBIDDEN_NODES[ast.Match] = "a match statement"


class _DeviceRules(ast.NodeVisitor):
    """The device rules on one function's syntax tree (see the module's docstring). Collects the
    file's functions it calls (``calls``)."""

    def __init__(self, prog: Program, base: str, fn: ast.FunctionDef):
        self.prog, self.base, self.fn = prog, base, fn
        self.params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        if fn.args.vararg:
            self.params.add(fn.args.vararg.arg)
        if fn.args.kwarg:
            self.params.add(fn.args.kwarg.arg)
        self.locals = set(self.params)
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
        self.calls: set = set()

    def refuse(self, node, what):
        raise failed_at(self.base, node, f"{what}, in {self.fn.name}: a kernel may use only device code (numba's "
                                     f"CUDA Python: cuda.*, math, numpy's math, its arrays and device functions)")

    def check(self):
        a = self.fn.args
        for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
            if not isinstance(d, ast.Constant):
                self.refuse(d, f"the default {source_of(d)} is not a constant")
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
            self._name(arg, arg.arg)
        for stmt in self.fn.body:
            self.visit(stmt)

    def generic_visit(self, node):
        what = _FORBIDDEN_NODES.get(type(node))
        if what:
            self.refuse(node, f"{what} ({source_of(node)})")
        super().generic_visit(node)

    def _name(self, node, name):
        if name.startswith("__"):
            self.refuse(node, f"the name {name} (names that start with __ are Python's internals)")

    def visit_Name(self, node):
        self._name(node, node.id)
        name = node.id
        if name in self.locals:
            return
        if name in self.prog.functions:
            if self.prog.kinds[name] in ("kernel", "cpu"):
                self.refuse(node, f"{name} is not a device function (@cuda.jit(device=True)): a kernel cannot "
                                  f"call it")
            self.calls.add(name)
        elif name not in self.prog.imports and name not in self.prog.constants and name not in BUILTINS \
                and hasattr(builtins, name):
            self.refuse(node, f"Python's {name} (a kernel may call only {', '.join(BUILTINS[:24])} of Python's "
                              f"builtins)")
        # a name of the imports, the constants or BUILTINS is in the kernel's module; any other name is
        # undefined where the kernel runs (its module holds nothing else): a NameError there

    def visit_Attribute(self, node):
        if node.attr.startswith("_"):
            self.refuse(node, f"the attribute .{node.attr} (names that start with _ are Python's internals)")
        if not isinstance(node.ctx, ast.Load):
            self.refuse(node, f"setting an attribute ({source_of(node)})")
        owner = self._owner(node.value)
        if owner is None:  # a value (an array, a scalar, cuda.threadIdx ...)
            if node.attr not in VALUE_ATTRS:
                self.refuse(node, f".{node.attr} ({source_of(node)}): of a value, a kernel may read only "
                                  f"{', '.join(sorted(VALUE_ATTRS))}")
        else:
            kind, allowed = owner
            if allowed is not None and node.attr not in allowed:
                self.refuse(node, f"{source_of(node)} is not {kind}'s device API")
        self.visit(node.value)  # cuda.threadIdx of cuda.threadIdx.x, the array of a.shape ...

    def visit_Call(self, node):
        f = node.func
        name = None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in self.locals \
                and self.prog.imports.get(f.value.id) == ("numpy", None):
            name = f.attr
        elif isinstance(f, ast.Name) and f.id not in self.locals and (self.prog.imports.get(f.id) or ("",))[0] == "numpy":
            name = self.prog.imports[f.id][1]
        if name in NUMPY_MAX_ARGS:  # no whole-array write by numpy (out=, a ufunc's output argument)
            most = NUMPY_MAX_ARGS[name]
            if any(k.arg in ("out", None) for k in node.keywords) or \
                    most is not None and (len(node.args) > most or any(isinstance(a, ast.Starred) for a in node.args)):
                self.refuse(node, f"{source_of(node)}: numpy writing into an array (out): a kernel's threads store "
                                  f"their elements themselves")
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if not (isinstance(base, ast.Name) and base.id in self.locals):
                self.refuse(node, f"storing into {source_of(base)} (only into the kernel's own arrays and locals)")
        self.generic_visit(node)

    def _owner(self, value):
        """(module's name, its allowed attributes or None for any public one) when ``value`` is a module
        alias or a name on ``cuda`` that has attributes of its own; None for a value."""
        if isinstance(value, ast.Name) and value.id not in self.locals:
            imp = self.prog.imports.get(value.id)
            if imp is None:
                if value.id in self.prog.functions or value.id in self.prog.constants:
                    return None if value.id in self.prog.constants else ("a function", frozenset())
                return None
            kind, attr = imp
            if kind == "cuda":
                return ("cuda", frozenset(CUDA_ATTRS))
            if kind == "math" and attr is None:
                return ("math", MATH_ATTRS)
            if kind == "numpy" and attr is None:
                return ("numpy", NUMPY_ATTRS)
            if kind == "numba":
                return ("numba", NUMBA_TYPES | {"cuda"})
            return (value.id, frozenset())  # a helper, a type, a function: no attribute
        if isinstance(value, ast.Attribute):
            parent = self._owner(value.value)
            if parent is not None and parent[0] == "cuda":
                sub = CUDA_ATTRS.get(value.attr, frozenset())
                if sub:
                    return (f"cuda.{value.attr}", sub)
                if value.attr == "fp16":
                    return ("cuda.fp16", None)
                return None
            if parent is not None and parent[0] == "numba" and value.attr == "cuda":
                return ("cuda", frozenset(CUDA_ATTRS))
        return None

    def visit_Delete(self, node):
        for t in node.targets:
            if not isinstance(t, ast.Name):
                self.refuse(node, f"del {source_of(t)}")
        self.generic_visit(node)


def reach(prog: Program, base: str) -> list:
    """The file's kernels and the functions they call, each checked by the device rules, in order of
    definition."""
    todo = [n for n, k in prog.kinds.items() if k == "kernel" or n == prog.kernel]
    seen: list = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        rules = _DeviceRules(prog, base, prog.functions[name])
        rules.check()
        todo += sorted(rules.calls - set(seen))
    order = list(prog.functions)
    return sorted(seen, key=order.index)
