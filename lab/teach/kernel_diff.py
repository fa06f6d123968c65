"""The student's kernel beside the reference solution's, statement by statement (the judge reads both
files' text with :mod:`ast`; nothing is run).

Where a failing kernel is, statement for statement, the reference solution's kernel except in one
place, that place is the bug: the kernel computes what the reference computes everywhere else, and
it fails. :func:`one_difference` finds it:

* each kernel's body is read as a sequence of statements (``if``/``while``/``for`` headers included,
  each with its nesting depth), in a canonical form: module constants folded (``THREADS`` -> 64),
  names bound once to an expression (``i = cuda.grid(1)``, ``ty = cuda.threadIdx.y``) replaced by
  that expression (and their statements dropped), other locals numbered in order of first binding
  (``acc``, a loop variable, a shared array: the first, second, ...), parameters by position,
  ``float32(e)`` as ``e``, ``-math.inf``/``float("-inf")``/``-np.inf`` as one constant, ``a * b`` as ``b * a``;
* the two sequences are aligned (:mod:`difflib`); the kernels differ in one place when exactly one
  statement stands against one (a replace of one by one), or one statement of the reference is one
  of the student's at another place (a statement moved: into a loop, out of a branch);
* in a replaced statement, the smallest expression that holds every difference (``x[i] ** 2`` for
  ``2 * x[i]``; ``1.0`` for ``0.0``; ``min`` for ``max``), followed into a name's one binding where the difference
  lies there (``i = cuda.grid(1) + 1``).

Anything else (two differences, a statement missing, kernels written otherwise): None, and the judge's other
evidence speaks. The reference's code is quoted: the student sees the one expression that differs, not the solution.
"""
from __future__ import annotations

import ast
import difflib
import functools
import math

from lab.teach.contained import syntax

_CONST_ATTRS = {("math", "inf"): math.inf, ("np", "inf"): math.inf, ("numpy", "inf"): math.inf,
                ("math", "pi"): math.pi, ("np", "pi"): math.pi, ("numpy", "pi"): math.pi,
                ("math", "e"): math.e, ("np", "nan"): math.nan, ("math", "nan"): math.nan}
_CASTS = {"float32", "float64", "float", "int32", "int64", "int"}  # a cast of a value: the value (for comparison)
_COMMUTE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
_MAX_NODES = 40  # the largest differing expression said as "yours ... where the reference's ..."


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _same_target(a, b) -> bool:
    return ast.dump(a) == ast.dump(b)


def _counter_loop(st, prev) -> bool:
    """``prev``/``st`` are ``v = a`` then ``while <compare of v>: ...; v op= c``, v stored nowhere else in the loop."""
    if not (isinstance(st, ast.While) and not st.orelse and isinstance(prev, ast.Assign) and len(prev.targets) == 1
            and isinstance(prev.targets[0], ast.Name) and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1
            and isinstance(st.test.left, ast.Name) and st.test.left.id == prev.targets[0].id and len(st.body) > 1
            and isinstance(st.body[-1], ast.AugAssign) and isinstance(st.body[-1].target, ast.Name)
            and st.body[-1].target.id == prev.targets[0].id):
        return False
    v = prev.targets[0].id
    return not any(isinstance(n, ast.Name) and n.id == v and isinstance(n.ctx, ast.Store)
                   for b in st.body[:-1] for n in ast.walk(b))


class _Merge(ast.NodeTransformer):
    """``if T: v = A`` / ``else: v = B`` (one assignment each, one target), and ``v = B`` followed by
    ``if T: v = A``, read as ``v = A if T else B``: two ways to write one choice."""

    def _body(self, body):
        out = []
        for st in body:
            st = self.visit(st)
            if (isinstance(st, ast.If) and len(st.body) == 1 and isinstance(st.body[0], ast.Assign)
                    and len(st.body[0].targets) == 1):
                a = st.body[0]
                if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.Assign) and len(st.orelse[0].targets) == 1 \
                        and _same_target(a.targets[0], st.orelse[0].targets[0]):
                    st = ast.copy_location(ast.Assign(targets=a.targets, value=ast.copy_location(
                        ast.IfExp(test=st.test, body=a.value, orelse=st.orelse[0].value), a.value)), a)
                elif not st.orelse and out and isinstance(out[-1], ast.Assign) and len(out[-1].targets) == 1 \
                        and _same_target(out[-1].targets[0], a.targets[0]) and isinstance(a.targets[0], ast.Name):
                    prev = out.pop()
                    st = ast.copy_location(ast.Assign(targets=a.targets, value=ast.copy_location(
                        ast.IfExp(test=st.test, body=a.value, orelse=prev.value), a.value)), a)
            counter = _counter_loop(st, out[-1] if out else None)
            if counter and not (isinstance(st.test.ops[0], ast.Lt) and isinstance(st.body[-1].op, ast.Add)):
                # s = a; while test(s): ...; s op= c  (a tree's steps): one loop, its three parts one header
                st.lab_init, st.lab_step = out.pop(), st.body[-1]
                st.body = st.body[:-1]
            if (isinstance(st, ast.While) and not st.orelse and out and isinstance(out[-1], ast.Assign)
                    and len(out[-1].targets) == 1 and isinstance(out[-1].targets[0], ast.Name)
                    and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1 and isinstance(st.test.ops[0], ast.Lt)
                    and isinstance(st.test.left, ast.Name) and st.test.left.id == out[-1].targets[0].id
                    and len(st.body) > 1 and isinstance(st.body[-1], ast.AugAssign) and isinstance(st.body[-1].op, ast.Add)
                    and isinstance(st.body[-1].target, ast.Name) and st.body[-1].target.id == st.test.left.id
                    and not any(isinstance(n, ast.Name) and n.id == st.test.left.id and isinstance(n.ctx, ast.Store)
                                for b in st.body[:-1] for n in ast.walk(b))):
                # j = a; while j < b: ...; j += c  is  for j in range(a, b, c): ...
                start = out.pop()
                rng = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), keywords=[],
                               args=[start.value, st.test.comparators[0], st.body[-1].value])
                st = ast.copy_location(ast.For(target=ast.Name(id=st.test.left.id, ctx=ast.Store()),
                                               iter=ast.copy_location(rng, st.test), body=st.body[:-1], orelse=[],
                                               type_comment=None), st)
            out.append(st)
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse"):
            if isinstance(getattr(node, field, None), list) and all(isinstance(x, ast.stmt) for x in getattr(node, field)):
                setattr(node, field, self._body(getattr(node, field)))
        return node


class _Kernel:
    """One file's kernel ``name``: its module constants, parameters, names bound once, locals."""

    def __init__(self, text: str, name: str):
        self.tree = syntax.parse(text)
        self.lines = text.splitlines()
        self.consts: dict = {}
        self.fn = None
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                v = self._fold(node.value)
                if v is not None:
                    self.consts[node.targets[0].id] = v
            if isinstance(node, ast.FunctionDef) and node.name == name:
                self.fn = node
        if self.fn is None:
            raise LookupError(name)
        self.fn = _Merge().visit(self.fn)
        self.block: tuple = ()  # the launch's block size (cuda.blockDim is that number)
        self._forms = None
        self.shapes: list = []  # the case's shape of each array parameter, by position (() for a scalar)
        self.shared: dict = {}  # name of a shared or local array -> its number, in order of declaration
        self.common: set | None = None  # local names the other kernel has too (set by the caller)
        self.params = {a.arg: k for k, a in enumerate(self.fn.args.args)}
        binds: dict = {}
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(n, ast.Name):
                            binds.setdefault(n.id, []).append(node)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                binds.setdefault(node.target.id, []).extend([node, node])
            elif isinstance(node, ast.For):
                for n in ast.walk(node.target):
                    if isinstance(n, ast.Name):
                        binds.setdefault(n.id, []).extend([node, node])
            elif isinstance(node, ast.While) and hasattr(node, "lab_init"):  # a counter loop's variable
                binds.setdefault(node.lab_init.targets[0].id, []).extend([node.lab_init, node.lab_step])
        self.alias: dict = {}  # name -> (the expression it stands for, its statement)
        for name_, nodes in binds.items():
            if len(nodes) != 1 or name_ in self.params:
                continue
            st = nodes[0]
            if len(st.targets) != 1:
                continue
            t = st.targets[0]
            if isinstance(t, ast.Name):
                if _dotted(getattr(st.value, "func", None)) in ("cuda.shared.array", "cuda.local.array"):
                    continue  # an array: a local of its own (two tiles of one shape are two arrays)
                self.alias[name_] = (st.value, st)
            elif isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(st.value.elts) == len(t.elts):
                for n, v in zip(t.elts, st.value.elts):
                    if isinstance(n, ast.Name) and n.id == name_:
                        self.alias[name_] = (v, st)
            elif isinstance(t, ast.Tuple):  # row, col = cuda.grid(2)
                for k, n in enumerate(t.elts):
                    if isinstance(n, ast.Name) and n.id == name_:
                        self.alias[name_] = (ast.Subscript(value=st.value, slice=ast.Constant(k)), st)
        # a local bound several times whose last binding is a plain assignment at the kernel's top level
        # (total = cache[0] after the sum): after that line, the name stands for that expression
        self.late: dict = {}
        top = {id(st) for st in self.fn.body}
        for name_, nodes in binds.items():
            if name_ in self.alias or name_ in self.params or len(nodes) < 2:
                continue
            last = max(nodes, key=lambda n: (n.lineno, n.col_offset))
            if (isinstance(last, ast.Assign) and id(last) in top and len(last.targets) == 1
                    and isinstance(last.targets[0], ast.Name)
                    and not any(isinstance(n, ast.Name) and n.id == name_ for n in ast.walk(last.value))):
                self.late[name_] = (last.value, last)
        self.locals: dict = {}
        order = sorted((min(getattr(b, "lineno", 0) for b in nodes), 0, n) for n, nodes in binds.items()
                       if n not in self.alias and n not in self.params)
        for _, _, n in order:
            self.locals.setdefault(n, len(self.locals))
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                    _dotted(getattr(node.value, "func", None)) in ("cuda.shared.array", "cuda.local.array"):
                self.shared.setdefault(node.targets[0].id, len(self.shared))
        self._memo: dict = {}

    # --- canonical forms ---------------------------------------------------------------------------
    def _fold(self, node):
        """The number ``node`` stands for (a literal, -literal, math.inf, float('inf'), a module constant,
        arithmetic of those), or None."""
        try:
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return float(node.value)
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                v = self._fold(node.operand)
                return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
            if isinstance(node, ast.Attribute):
                d = _dotted(node)
                if d and tuple(d.split(".")[-2:]) in _CONST_ATTRS and d.count(".") == 1:
                    return _CONST_ATTRS[tuple(d.split("."))]
            if isinstance(node, ast.Name) and node.id in getattr(self, "consts", {}):
                return self.consts[node.id]
            if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
                f = _dotted(node.func) or ""
                if f.split(".")[-1] in _CASTS:
                    a = node.args[0]
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        return float(a.value)
                    return self._fold(a)
            if isinstance(node, ast.BinOp):
                a, b = self._fold(node.left), self._fold(node.right)
                if a is None or b is None:
                    return None
                op = type(node.op)
                if op is ast.Add:
                    return a + b
                if op is ast.Sub:
                    return a - b
                if op is ast.Mult:
                    return a * b
                if op is ast.Div and b:
                    return a / b
                if op is ast.FloorDiv and b:
                    return float(a // b)
                if op is ast.Mod and b:
                    return float(a % b)
        except (ValueError, OverflowError, TypeError):
            return None
        return None

    def grid_forms(self) -> list:
        if self._forms is None:
            self._forms = [_grid_form(ax, self.block[k] if self.block else None) for k, ax in enumerate("xyz")]
        return self._forms

    def _size_of(self, node):
        """The value on this case of ``p.shape[k]``, ``p.size``, ``len(p)`` or ``p.shape[k]`` via a name, for
        a parameter ``p`` whose shape the case gives (:attr:`shapes`), else None."""
        def shape_of(n):
            n = self.unwrap(n)
            if isinstance(n, ast.Name) and self.params.get(n.id) is not None and self.params[n.id] < len(self.shapes):
                return self.shapes[self.params[n.id]]
            return None

        node = self.unwrap(node)
        if isinstance(node, ast.Attribute) and node.attr == "size":
            sh = shape_of(node.value)
            return None if sh is None else float(math.prod(sh))
        if isinstance(node, ast.Call) and _dotted(node.func) == "len" and len(node.args) == 1:
            sh = shape_of(node.args[0])
            return None if not sh else float(sh[0])
        if isinstance(node, ast.Subscript) and isinstance(self.unwrap(node.value), ast.Attribute):
            at = self.unwrap(node.value)
            k = self._fold(node.slice)
            sh = shape_of(at.value) if at.attr == "shape" else None
            if sh is not None and k is not None and -len(sh) <= int(k) < len(sh):
                return float(sh[int(k)])
        return None

    def unwrap(self, node, depth=0):
        """``node`` with casts taken off and a name bound once replaced by its expression."""
        while depth < 20:
            depth += 1
            if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                    (_dotted(node.func) or "").split(".")[-1] in _CASTS and self._fold(node) is None:
                node = node.args[0]
                continue
            if isinstance(node, ast.Name) and node.id in self.alias:
                node = self.alias[node.id][0]
                continue
            if isinstance(node, ast.Name) and node.id in self.late and isinstance(node.ctx, ast.Load) and \
                    getattr(node, "lineno", 0) > getattr(self.late[node.id][1], "end_lineno", 10 ** 9):
                node = self.late[node.id][0]
                continue
            break
        return node

    def canon(self, node, depth=0):
        """A hashable form of expression ``node``: equal for two expressions that compute the same
        thing up to the renamings in the module docstring. :class:`TooLong` past :data:`CANON_STEPS`
        calls for one kernel (a local rebound from itself in a row of ``if`` statements expands into a
        tree that doubles with every binding: the judge must answer, so no words instead)."""
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps > CANON_STEPS:
            raise TooLong(f"more than {CANON_STEPS} steps")
        if depth > 60:
            return ("deep",)
        v = self._fold(node)
        if v is not None:
            return ("k", "nan" if v != v else v)
        node = self.unwrap(node)
        v = self._fold(node)
        if v is not None:
            return ("k", "nan" if v != v else v)
        c = lambda n: self.canon(n, depth + 1)  # noqa: E731
        if isinstance(node, ast.Name):
            if node.id in self.params:
                return ("p", self.params[node.id])
            if node.id in self.shared:
                return ("arr", self.shared[node.id])
            if node.id in self.locals:  # a local of both kernels by its name; the others alike
                return ("v", node.id) if self.common is None or node.id in self.common else ("v", "?")
            return ("g", node.id)
        size = self._size_of(node)
        if size is not None:
            return ("k", size)  # an array's extent: its value on this case (x.size, len(x), out.shape[0] alike)
        if isinstance(node, ast.Attribute) and self.block and _dotted(node) in _BLOCK_DIMS:
            return ("k", float(self.block[_BLOCK_DIMS.index(_dotted(node))]))  # this launch's block size
        if isinstance(node, ast.Attribute):
            d = _dotted(node)
            if d and d.split(".")[0] not in self.params and d.split(".")[0] not in self.locals \
                    and d.split(".")[0] not in self.alias:
                return ("a", d)
            return ("attr", c(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            f = self.unwrap(node.value)
            if isinstance(f, ast.Call) and _dotted(f.func) == "cuda.grid" and self._fold(node.slice) is not None:
                return ("grid", int(self._fold(node.slice)))  # row, col = cuda.grid(2): x is element 0
            return ("sub", c(node.value), c(node.slice))
        if isinstance(node, ast.Index):  # (Python < 3.9)
            return c(node.value)
        if isinstance(node, ast.Tuple):
            return ("tup",) + tuple(c(e) for e in node.elts)
        if isinstance(node, ast.BinOp):
            a, b = c(node.left), c(node.right)
            if isinstance(node.op, _COMMUTE):
                a, b = sorted((a, b), key=repr)
            form = ("bin", type(node.op).__name__, a, b)
            for ax, g in enumerate(self.grid_forms()):
                if form == g:
                    return ("grid", ax)  # blockIdx.x * blockDim.x + threadIdx.x is cuda.grid(1)
            return form
        if isinstance(node, ast.UnaryOp):
            return ("un", type(node.op).__name__, c(node.operand))
        if isinstance(node, ast.BoolOp):
            return ("bool", type(node.op).__name__) + tuple(c(e) for e in node.values)
        if isinstance(node, ast.Compare):
            return ("cmp", c(node.left)) + tuple((type(o).__name__, c(e)) for o, e in zip(node.ops, node.comparators))
        if isinstance(node, ast.IfExp):
            return ("ifx", c(node.test), c(node.body), c(node.orelse))
        if isinstance(node, ast.Call):
            f = _dotted(node.func)
            if f == "cuda.grid" and self._fold(node.args[0]) == 1.0 if node.args else False:
                return ("grid", 0)
            if f == "range" and 1 <= len(node.args) <= 3 and not node.keywords:  # range(n) is range(0, n, 1)
                a = [c(x) for x in node.args]
                a = [("k", 0.0), a[0], ("k", 1.0)] if len(a) == 1 else a + [("k", 1.0)] if len(a) == 2 else a
                return ("call", "range", *a)
            return ("call", f if f else c(node.func)) + tuple(c(a) for a in node.args) + tuple(
                (k.arg, c(k.value)) for k in node.keywords)
        if isinstance(node, ast.Slice):
            return ("slice", *(c(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        return ("?", ast.dump(node))

    # --- statements --------------------------------------------------------------------------------
    def statements(self):
        """[(depth, key, node)] of the kernel's body in source order: aliases and docstrings left out."""
        out = []
        alias_stmts = {id(st) for _, st in self.alias.values()} | {id(st) for _, st in self.late.values()}

        def walk(body, depth):
            for st in body:
                if id(st) in alias_stmts:
                    continue
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                    continue  # a docstring
                if isinstance(st, ast.Pass):
                    continue
                if isinstance(st, ast.If):
                    out.append((depth, ("if", self.canon(st.test)), st))
                    walk(st.body, depth + 1)
                    if st.orelse:
                        out.append((depth, ("else",), st))
                        walk(st.orelse, depth + 1)
                elif isinstance(st, ast.While) and hasattr(st, "lab_init"):
                    out.append((depth, ("loop", self.canon(st.lab_init.value), self.canon(st.test),
                                        type(st.lab_step.op).__name__, self.canon(st.lab_step.value)), st))
                    walk(st.body, depth + 1)
                elif isinstance(st, ast.While):
                    out.append((depth, ("while", self.canon(st.test)), st))
                    walk(st.body, depth + 1)
                elif isinstance(st, ast.For):
                    out.append((depth, ("for", self.canon(st.target), self.canon(st.iter)), st))
                    walk(st.body, depth + 1)
                elif isinstance(st, ast.Assign):
                    out.append((depth, ("=",) + tuple(self.canon(t) for t in st.targets) + (self.canon(st.value),), st))
                elif isinstance(st, ast.AugAssign):
                    out.append((depth, ("op=", type(st.op).__name__, self.canon(st.target), self.canon(st.value)), st))
                elif isinstance(st, ast.Expr):
                    out.append((depth, ("expr", self.canon(st.value)), st))
                elif isinstance(st, ast.Return):
                    out.append((depth, ("return",), st))
                else:
                    out.append((depth, ("stmt", type(st).__name__, ast.dump(st)), st))

        walk(self.fn.body, 1)
        return out

    def children(self, node):
        """The sub-expressions of ``node`` in the order :meth:`canon` reads them, with what must match
        besides them (an operator, an attribute, a called function)."""
        if isinstance(node, ast.BinOp):
            return type(node.op).__name__, [node.left, node.right]
        if isinstance(node, ast.UnaryOp):
            return type(node.op).__name__, [node.operand]
        if isinstance(node, ast.Subscript):
            return "sub", [node.value, node.slice]
        if isinstance(node, ast.Tuple):
            return ("tup", len(node.elts)), list(node.elts)
        if isinstance(node, ast.BoolOp):
            return (type(node.op).__name__, len(node.values)), list(node.values)
        if isinstance(node, ast.Compare):
            return ("cmp", tuple(type(o).__name__ for o in node.ops)), [node.left, *node.comparators]
        if isinstance(node, ast.IfExp):
            return "ifx", [node.test, node.body, node.orelse]
        if isinstance(node, ast.Call):
            f = _dotted(node.func)
            return ("call", f, len(node.args), tuple(k.arg for k in node.keywords)), (
                [node.func] if f is None else []) + list(node.args) + [k.value for k in node.keywords]
        if isinstance(node, ast.Attribute):
            return ("attr", node.attr), [node.value]
        if isinstance(node, ast.Assign):
            return ("=", len(node.targets)), [*node.targets, node.value]
        if isinstance(node, ast.AugAssign):
            return ("op=", type(node.op).__name__), [node.target, node.value]
        if isinstance(node, ast.Expr):
            return "expr", [node.value]
        if isinstance(node, ast.While) and hasattr(node, "lab_init"):
            return ("loop", type(node.lab_step.op).__name__), [node.lab_init.value, node.test, node.lab_step.value]
        if isinstance(node, (ast.If, ast.While)):
            return type(node).__name__, [node.test]
        if isinstance(node, ast.For):
            return "for", [node.target, node.iter]
        return None, None


_BLOCK_DIMS = ["cuda.blockDim.x", "cuda.blockDim.y", "cuda.blockDim.z"]


def _grid_form(ax: str, size=None):
    def srt(a, b):
        return tuple(sorted((a, b), key=repr))
    dim = ("a", f"cuda.blockDim.{ax}") if size is None else ("k", float(size))
    m = ("bin", "Mult", *srt(("a", f"cuda.blockIdx.{ax}"), dim))
    return ("bin", "Add", *srt(m, ("a", f"cuda.threadIdx.{ax}")))




def _other_name(ks: _Kernel, kr: _Kernel, a, b) -> bool:
    """``a`` and ``b`` are names, and the reference has a name like ``a`` (bound to what the student
    binds it to, or a local or parameter of that name): the student used another variable here, one
    that is right where it stands elsewhere (``N`` where the reference has ``K``)."""
    if not (isinstance(a, ast.Name) and isinstance(b, ast.Name)) or a.id == b.id:
        return False
    if a.id in ks.alias and a.id in kr.alias:
        return ks.canon(ks.alias[a.id][0]) == kr.canon(kr.alias[a.id][0])
    return a.id not in ks.alias and (a.id in kr.locals or a.id in kr.params or a.id in kr.shared)


def _smallest(ks: _Kernel, kr: _Kernel, a, b, depth=0):
    """The smallest pair of sub-expressions (student's, reference's) of ``a`` and ``b`` that holds
    every difference between them (followed into a name's one binding); None when they are the same."""
    if depth > 40:
        return (a, b)
    if not isinstance(a, ast.stmt) and not isinstance(b, ast.stmt) and ks.canon(a) == kr.canon(b):
        return None
    if _other_name(ks, kr, a, b):
        return (a, b)
    ua = a if isinstance(a, ast.stmt) else ks.unwrap(a)
    ub = b if isinstance(b, ast.stmt) else kr.unwrap(b)
    if (ks._fold(ua) is not None) or (kr._fold(ub) is not None):
        return (a, b)
    ta, ca = ks.children(ua)
    tb, cb = kr.children(ub)
    if ta is None or ta != tb or len(ca) != len(cb):
        both_bound = isinstance(a, ast.Name) and a is not ua and isinstance(b, ast.Name) and b is not ub
        return (ua, ub) if both_bound else (a, b)  # (a name bound once on both sides: the binding differs)
    if isinstance(ua, ast.BinOp) and isinstance(ua.op, _COMMUTE):
        same = sum(ks.canon(x) == kr.canon(y) for x, y in zip(ca, cb))
        swapped = sum(ks.canon(x) == kr.canon(y) for x, y in zip(ca, reversed(cb)))
        if swapped > same:
            cb = list(reversed(cb))
    diffs = [(x, y) for x, y in zip(ca, cb) if ks.canon(x) != kr.canon(y)]
    inner = None
    if len(diffs) == 1:
        inner = _smallest(ks, kr, *diffs[0], depth + 1)
    elif diffs:  # several places, one difference: a name's binding used at each (ka for k_a in a test and an index)
        inners = [_smallest(ks, kr, x, y, depth + 1) for x, y in diffs]
        if all(p is not None for p in inners) and len({(id(p[0]), id(p[1])) for p in inners}) == 1:
            inner = inners[0]
    if inner is None:
        return (ua, ub)
    small = all(_size(n) < 3 and ks._fold(n) is None and kr._fold(n) is None for n in inner)
    bound = isinstance(ua, ast.Compare) and ks._fold(inner[0]) is not None and kr._fold(inner[1]) is not None
    if (small or bound) and not isinstance(ua, ast.stmt) and _size(ua) <= 12:  # (a bound: `step > 1`, not `1`)
        return (ua, ub)  # a name alone says little: `x.shape[0]` where the reference has `y.shape[0]`
    return inner


def _size(node) -> int:
    return sum(1 for n in ast.walk(node) if not isinstance(n, ast.expr_context))


def _src(k: _Kernel, node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"
    return " ".join(text.split())


def _line(k: _Kernel, node) -> str:
    n = getattr(node, "lineno", 0)
    code = " ".join(k.lines[n - 1].split()) if 0 < n <= len(k.lines) else ""
    return f"line {n}: `{code[:120]}`" if code else f"line {n}"


def _where_bound(k: _Kernel, stmt, node) -> ast.AST:
    """The statement that holds ``node``: ``stmt``, or a name's one binding that ``node`` came from."""
    line = getattr(node, "lineno", None)
    for _, st in list(k.alias.values()) + list(k.late.values()):
        if line is not None and st.lineno <= line <= getattr(st, "end_lineno", st.lineno) and st is not stmt:
            if any(n is node for n in ast.walk(st)):
                return st
    return stmt


CANON_STEPS = 200_000  # canonical-form calls a kernel may take (the solutions and every test mutant: well under)


class TooLong(Exception):
    """The comparison would take too long (:meth:`_Kernel.canon`): :func:`one_difference` says nothing."""


def aligned(student: str, reference: str, kernel: str, shapes: tuple = (), block: tuple = ()):
    """(student's kernel, reference's, their statements, the alignment's opcodes other than "equal")
    for :func:`one_difference`; None when a file does not parse or has no such kernel."""
    try:
        ks, kr = _Kernel(student, kernel), _Kernel(reference, kernel)
    except (SyntaxError, LookupError, ValueError, RecursionError):
        return None
    ks.shapes = kr.shapes = list(shapes)
    ks.block = kr.block = tuple(block)
    ks.common = kr.common = set(ks.locals) & set(kr.locals)
    try:
        ss, rs = ks.statements(), kr.statements()
    except RecursionError:
        return None
    key_s = [repr((d, k)) for d, k, _ in ss]
    key_r = [repr((d, k)) for d, k, _ in rs]
    ops = [o for o in difflib.SequenceMatcher(None, key_s, key_r, autojunk=False).get_opcodes() if o[0] != "equal"]
    return ks, kr, ss, rs, ops


@functools.lru_cache(maxsize=32)
def one_difference(student: str, reference: str, kernel: str, shapes: tuple = (), block: tuple = ()) -> str | None:
    """Where the student's file ``student`` (its text) differs from the reference solution's file
    ``reference`` in kernel ``kernel`` at exactly one place (module docstring): the words naming it
    (the student's line quoted, the expression it has and the one the reference has there); ``shapes``:
    each parameter's shape on the failing case (an array's extents compare by their values there);
    ``block``: the launch's block size (``cuda.blockDim.x`` is its first number); None
    when the kernels differ in more than one place, or nowhere, or a file does not parse."""
    try:
        return _one_difference(student, reference, kernel, shapes, block)
    except (TooLong, RecursionError):
        return None


def _one_difference(student: str, reference: str, kernel: str, shapes: tuple, block: tuple) -> str | None:
    found = aligned(student, reference, kernel, shapes, block)
    if found is None:
        return None
    ks, kr, ss, rs, ops = found
    if not ops:
        return None
    if all(o[0] == "replace" and o[2] - o[1] == o[4] - o[3] for o in ops) and sum(o[2] - o[1] for o in ops) <= 6:
        pairs = [(ss[i], rs[o[3] + i - o[1]]) for o in ops for i in range(o[1], o[2])]
        if any(a[0] != b[0] for a, b in pairs):
            return None
        found = [_smallest(ks, kr, a[2], b[2]) for a, b in pairs]
        if any(f is None for f in found) or len({(id(f[0]), id(f[1])) for f in found}) != 1:
            return None  # (several statements differ: one place only where they all differ by one name's binding)
        if len(pairs) > 1 and not any(f[0] in _bound_exprs(ks) for f in found[:1]):
            return None
        (ds, _, st_s), (dr, _, st_r) = pairs[0]
        pair = found[0]
        a, b = pair
        if hasattr(st_s, "lab_init") and hasattr(st_r, "lab_init") and (a is st_s or b is st_r):
            return (f"your kernel is the reference solution's statement for statement but one loop: yours steps "
                    f"{_loop_words(ks, st_s)} (lines {st_s.lab_init.lineno}-{st_s.lab_step.lineno}), the reference's "
                    f"{_loop_words(kr, st_r)}: that loop's start, test or step is the bug")
        if isinstance(a, ast.stmt) or isinstance(b, ast.stmt) or _size(a) > _MAX_NODES or _size(b) > _MAX_NODES:
            simple = (ast.Assign, ast.AugAssign, ast.Expr)
            if not isinstance(st_s, simple) or not isinstance(st_r, simple) or _size(st_s) > _MAX_NODES:
                return None
            return (f"your kernel is the reference solution's statement for statement but one: {_line(ks, st_s)} "
                    f"where the reference has `{_src(kr, st_r)}`: that statement is the bug")
        home = a if getattr(a, "lineno", None) else _where_bound(ks, st_s, a)  # (the if's line for its test)
        what = _kind(ks, kr, a, b)
        return (f"your kernel is the reference solution's statement for statement but one: at {_line(ks, home)}, "
                f"`{_src(ks, a)}`{_bindings(ks, kr, a, b)} where the reference has `{_src(kr, b)}`"
                f"{_bindings(kr, ks, b, a, 'its ')}{what}: that is the bug; the rest computes what the reference computes")
    if len(ops) == 2 and {ops[0][0], ops[1][0]} == {"delete", "insert"}:
        de = next(o for o in ops if o[0] == "delete")
        ins = next(o for o in ops if o[0] == "insert")
        if de[2] - de[1] != 1 or ins[4] - ins[3] != 1:
            return None
        ds, ks_key, st_s = ss[de[1]]
        dr, kr_key, st_r = rs[ins[3]]
        if ks_key != kr_key or isinstance(st_s, (ast.If, ast.While, ast.For)):
            return None  # a header moved takes its body along: not one statement
        # where the reference's copy stands: after which of its statements, inside which block
        where = _placement(kr, rs, ins[3], dr)
        mine = _placement(ks, ss, de[1], ds)
        if not where:
            return None
        if _header(ss, de[1], ds) == _header(rs, ins[3], dr):  # the same loop or branch: the order in it
            before_s, before_r = (_src(ks, ss[de[1] - 1][2]) if de[1] else None), (_src(kr, rs[ins[3] - 1][2]) if ins[3] else None)
            if before_s is None or before_r is None or before_s == before_r:
                return None
            return (f"your kernel is the reference solution's statement for statement, but {_line(ks, st_s)} stands right "
                    f"after `{before_s.splitlines()[0]}`, where the reference has it right after `{before_r.splitlines()[0]}` "
                    f"in the same place ({mine}): that statement is in the wrong order (it runs before or after the wrong step)")
        if where == mine:
            return None
        return (f"your kernel is the reference solution's statement for statement, but {_line(ks, st_s)} stands "
                f"{mine}, where the reference has it {where}: that statement is in the wrong place (it runs "
                f"{'on every pass of the loop' if 'inside' in mine and 'loop' in mine else 'at another time'})")
    return None


def _loop_words(k: _Kernel, st) -> str:
    """'`s = 1`, `while s < WARP:`, `s *= 2`': a counter loop's start, test and step."""
    return f"`{_src(k, st.lab_init)}`, `while {_src(k, st.test)}:`, `{_src(k, st.lab_step)}`"


def _bound_exprs(k: _Kernel) -> list:
    """Every node inside a name's one binding (an alias's expression)."""
    return [n for v, _ in list(k.alias.values()) + list(k.late.values()) for n in ast.walk(v)]


def _bindings(k: _Kernel, other: _Kernel, node, other_node, whose="") -> str:
    """' (v = `...`)' for the names in ``node`` bound once in kernel ``k`` that the other side's
    expression ``other_node`` names too, bound otherwise (one name, two meanings), or for ``node``
    itself when it is such a name."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in k.alias}
    theirs = {n.id for n in ast.walk(other_node) if isinstance(n, ast.Name)}
    said = [n for n in sorted(names) if (isinstance(node, ast.Name) and node.id == n) or
            (n in theirs and n in other.alias and k.canon(k.alias[n][0]) != other.canon(other.alias[n][0]))]
    if not said:
        return ""
    return " (" + ", ".join(f"{whose}{n} = `{_src(k, k.alias[n][0])}`" for n in said[:2]) + ")"


def _header(seq, i: int, depth: int):
    """(depth, canonical key) of the loop or branch header enclosing statement ``i`` of ``seq`` (None at top level)."""
    return next(((d, repr(key)) for d, key, _ in seq[i - 1::-1][:i] if d < depth and key[0] in ("for", "while", "if",
                                                                                                 "else")), None)


def _placement(k: _Kernel, seq, i: int, depth: int) -> str:
    """Where statement ``i`` of ``seq`` stands: inside which loop or branch (its nearest enclosing header)."""
    for j in range(i - 1, -1, -1):
        d, key, st = seq[j]
        if d < depth and key[0] in ("for", "while", "if", "else"):
            what = {"for": "loop", "while": "loop", "if": "branch", "else": "branch"}[key[0]]
            return f"inside the {what} at {_line(k, st)}"
    return "at the kernel's top level (outside every loop and branch)"


def _kind(ks, kr, a, b) -> str:
    """A few words on what kind of difference ``a`` (student's) against ``b`` (the reference's) is."""
    fa, fb = ks._fold(ks.unwrap(a)), kr._fold(kr.unwrap(b))
    if fa is not None and fb is not None:
        if math.isinf(fa) or math.isinf(fb):
            return " (the starting value or identity: each reduction starts from the value that never wins it)"
        return ""
    ua, ub = ks.unwrap(a), kr.unwrap(b)
    if isinstance(ua, ast.BinOp) and isinstance(ub, ast.BinOp) and type(ua.op) is not type(ub.op) and \
            ks.canon(ua.left) == kr.canon(ub.left) and ks.canon(ua.right) == kr.canon(ub.right):
        return " (the operator)"
    if isinstance(ua, ast.Call) and isinstance(ub, ast.Call) and _dotted(ua.func) != _dotted(ub.func) and \
            [ks.canon(x) for x in ua.args] == [kr.canon(y) for y in ub.args]:
        return " (the function called)"
    return ""
