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
  ``float32(e)`` as ``e``, ``-math.inf``/``float("-inf")``/``-np.inf`` as one constant, ``a * b`` as
  ``b * a``;
* the two sequences are aligned (:mod:`difflib`); the kernels differ in one place when exactly one
  statement stands against one (a replace of one by one), or one statement of the reference is one
  of the student's at another place (a statement moved: into a loop, out of a branch);
* in a replaced statement, the smallest expression that holds every difference (``x[i] ** 2`` for
  ``2 * x[i]``; ``1.0`` for ``0.0``; ``min`` for ``max``), followed into a name's one binding where
  the difference lies there (``i = cuda.grid(1) + 1``).

Anything else (two differences, a statement missing, kernels written otherwise): None, and the
judge's other evidence speaks. The reference's code is quoted: the student sees the one expression
that differs, not the solution.
"""
from __future__ import annotations

import ast
import difflib
import functools
import math

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


class _Kernel:
    """One file's kernel ``name``: its module constants, parameters, names bound once, locals."""

    def __init__(self, text: str, name: str):
        self.tree = ast.parse(text)
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
        self.locals: dict = {}
        order = sorted((getattr(n, "lineno", 0), getattr(n, "col_offset", 0), n.id)
                        for n in ast.walk(self.fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                        and n.id not in self.alias and n.id not in self.params)
        for _, _, n in order:
            self.locals.setdefault(n, len(self.locals))
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
            break
        return node

    def canon(self, node, depth=0):
        """A hashable form of expression ``node``: equal for two expressions that compute the same
        thing up to the renamings in the module docstring."""
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
            if node.id in self.locals:
                return ("v", self.locals[node.id])
            return ("g", node.id)
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
            for ax, g in enumerate(_GRID_FORMS):
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
            return ("call", f if f else c(node.func)) + tuple(c(a) for a in node.args) + tuple(
                (k.arg, c(k.value)) for k in node.keywords)
        if isinstance(node, ast.Slice):
            return ("slice", *(c(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        return ("?", ast.dump(node))

    # --- statements --------------------------------------------------------------------------------
    def statements(self):
        """[(depth, key, node)] of the kernel's body in source order: aliases and docstrings left out."""
        out = []
        alias_stmts = {id(st) for _, st in self.alias.values()}

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
            if f == "cuda.grid" and self._fold(node.args[0]) == 1.0 if node.args else False:
                return ("grid", 0)
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
        if isinstance(node, (ast.If, ast.While)):
            return type(node).__name__, [node.test]
        if isinstance(node, ast.For):
            return "for", [node.target, node.iter]
        return None, None


def _grid_form(ax: str):
    def srt(a, b):
        return tuple(sorted((a, b), key=repr))
    m = ("bin", "Mult", *srt(("a", f"cuda.blockIdx.{ax}"), ("a", f"cuda.blockDim.{ax}")))
    return ("bin", "Add", *srt(m, ("a", f"cuda.threadIdx.{ax}")))


_GRID_FORMS = [_grid_form(ax) for ax in "xyz"]


def _smallest(ks: _Kernel, kr: _Kernel, a, b, depth=0):
    """The smallest pair of sub-expressions (student's, reference's) of ``a`` and ``b`` that holds
    every difference between them (followed into a name's one binding); None when they are the same."""
    if depth > 40:
        return (a, b)
    if not isinstance(a, ast.stmt) and not isinstance(b, ast.stmt) and ks.canon(a) == kr.canon(b):
        return None
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
    if len(diffs) == 1:
        inner = _smallest(ks, kr, *diffs[0], depth + 1) or (ua, ub)
        if isinstance(inner[0], ast.Name) and isinstance(inner[1], ast.Name) and not isinstance(ua, ast.stmt) \
                and _size(ua) <= 8:
            return (ua, ub)  # a name alone says little: `x.shape[0]` where the reference has `y.shape[0]`
        return inner
    return (ua, ub)


def _size(node) -> int:
    return sum(1 for _ in ast.walk(node))


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
    for _, st in k.alias.values():
        if line is not None and st.lineno <= line <= getattr(st, "end_lineno", st.lineno) and st is not stmt:
            if any(n is node for n in ast.walk(st)):
                return st
    return stmt


@functools.lru_cache(maxsize=32)
def one_difference(student: str, reference: str, kernel: str) -> str | None:
    """Where the student's file ``student`` (its text) differs from the reference solution's file
    ``reference`` in kernel ``kernel`` at exactly one place (module docstring): the words naming it
    (the student's line quoted, the expression it has and the one the reference has there); None
    when the kernels differ in more than one place, or nowhere, or a file does not parse."""
    try:
        ks, kr = _Kernel(student, kernel), _Kernel(reference, kernel)
    except (SyntaxError, LookupError, ValueError, RecursionError):
        return None
    try:
        ss, rs = ks.statements(), kr.statements()
    except RecursionError:
        return None
    key_s = [repr((d, k)) for d, k, _ in ss]
    key_r = [repr((d, k)) for d, k, _ in rs]
    ops = [o for o in difflib.SequenceMatcher(None, key_s, key_r, autojunk=False).get_opcodes() if o[0] != "equal"]
    if not ops:
        return None
    if len(ops) == 1 and ops[0][0] == "replace" and ops[0][2] - ops[0][1] == 1 and ops[0][4] - ops[0][3] == 1:
        (ds, _, st_s), (dr, _, st_r) = ss[ops[0][1]], rs[ops[0][3]]
        if ds != dr:
            return None
        pair = _smallest(ks, kr, st_s, st_r)
        if pair is None:
            return None
        a, b = pair
        if isinstance(a, ast.stmt) or isinstance(b, ast.stmt) or _size(a) > _MAX_NODES or _size(b) > _MAX_NODES:
            if type(st_s) is not type(st_r) or not isinstance(st_s, (ast.Assign, ast.AugAssign, ast.Expr)):
                return None
            return (f"your kernel is the reference solution's statement for statement but one: {_line(ks, st_s)} "
                    f"where the reference has `{_src(kr, st_r)}`: that statement is the bug")
        home = _where_bound(ks, st_s, a)
        what = _kind(ks, kr, a, b)
        return (f"your kernel is the reference solution's statement for statement but one: at {_line(ks, home)}, "
                f"`{_src(ks, a)}` where the reference has `{_src(kr, b)}`{what}: that is the bug; the rest computes "
                f"what the reference computes")
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
        if not where or where == mine:
            return None
        return (f"your kernel is the reference solution's statement for statement, but {_line(ks, st_s)} stands "
                f"{mine}, where the reference has it {where}: that statement is in the wrong place (it runs "
                f"{'on every pass of the loop' if 'inside' in mine and 'loop' in mine else 'at another time'})")
    return None


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
