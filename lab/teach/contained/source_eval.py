"""The judge's interpreter for a student's file (:mod:`lab.teach.contained.source`): module constants computed
from their syntax trees (:func:`constant`), and ``launch()`` evaluated by walking its syntax tree
(:class:`Launch`, :func:`interpret`; what it may hold checked first by :class:`LaunchRules`).
Nothing of the file runs as Python; values are bounded (:data:`lab.teach.contained.source.INT_LIMIT`, steps
:data:`lab.teach.contained.source.LAUNCH_STEPS`). Nothing here prints.
"""
from __future__ import annotations

import ast
import math
import operator
import os

import numpy as np

from lab.teach.messages import Failed
from lab.teach.contained.allowlist import (NP_CONSTANTS, INT_LIMIT, LAUNCH_STEPS, MATH_ATTRS, NOT_RUN, Program, failed_at,
                              module_of, source_of)


# --- Module constants -----------------------------------------------------------------------------------------
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
           ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_PURE_BUILTINS = {"abs": abs, "min": min, "max": max, "int": int, "float": float, "bool": bool, "round": round,
                  "len": len, "divmod": divmod, "tuple": tuple, "sum": sum}


class LaunchLimit(ArithmeticError):
    """A value or a step count past what the checker evaluates (:data:`INT_LIMIT`, :data:`LAUNCH_STEPS`)."""


def _bounded(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, np.integer)) and abs(int(v)) >= INT_LIMIT:
        raise LaunchLimit(f"a number past {INT_LIMIT.bit_length() - 1} bits")
    if isinstance(v, (tuple, list)) and len(v) > 64:
        raise LaunchLimit("a tuple of more than 64 values")
    if isinstance(v, str) and len(v) > 1000:
        raise LaunchLimit("a string of more than 1000 characters")
    return v


VALUE_WEIGHT = 4096  # values a tuple handed to a comparison, an operator or a call may hold, nested ones counted
_COSTLY_MATH = frozenset({"factorial", "comb", "perm"})  # math's functions whose time grows with their arguments'
COSTLY_ARG_LIMIT = 1000  # ... values: at most this here
ROUND_DIGITS = 400  # |ndigits| of round() (round(5, -10**12) computes 10**(10**12) first)


def _weigh(v) -> int:
    """How many values ``v`` holds, nested tuples and lists counted in full (an array by its size): the
    work a comparison, a format or a call of it may cost, whatever repetitions share underneath
    ((A,) * 64 nested six deep is 64**6 values to compare). LaunchLimit past :data:`VALUE_WEIGHT`."""
    n, todo = 0, [v]
    while todo:
        x = todo.pop()
        n += 1
        if isinstance(x, (tuple, list)):
            todo.extend(x)
        elif isinstance(x, np.ndarray):
            n += int(x.size)
        if n > VALUE_WEIGHT:
            raise LaunchLimit(f"a value of more than {VALUE_WEIGHT} numbers (nested tuples counted in full)")
    return n


def _charge(work: list, *values) -> None:
    """Count the values of ``values`` (:func:`_weigh`) as steps of ``work`` ([steps so far]): LaunchLimit
    past :data:`LAUNCH_STEPS`."""
    work[0] += sum(_weigh(v) for v in values)
    if work[0] > LAUNCH_STEPS:
        raise LaunchLimit(f"more than {LAUNCH_STEPS} steps")


def _checked_call(name: str, fn, args, kwargs, work: list):
    """``fn(*args, **kwargs)`` (a pure builtin, math or NumPy function called ``name``), its arguments
    already counted as steps of ``work`` (:func:`_charge`), once they are known to cost bounded time:
    math's functions get numbers or flat tuples of numbers (math.prod of (A, 64, 64, ...) repeats a
    tuple past any bound), and factorial, comb and perm at most :data:`COSTLY_ARG_LIMIT`; round() at
    most :data:`ROUND_DIGITS` digits. LaunchLimit (or TypeError) otherwise."""
    if fn is round and len(args) > 1 and isinstance(args[1], (int, np.integer)) and abs(int(args[1])) > ROUND_DIGITS:
        raise LaunchLimit(f"round() to more than {ROUND_DIGITS} digits")
    if getattr(fn, "__module__", None) == "math":
        for a in (*args, *kwargs.values()):
            items = a if isinstance(a, (tuple, list)) else (a,)
            if not all(isinstance(x, (int, float, np.integer, np.floating)) for x in items):
                raise TypeError(f"math.{name}() takes numbers here")
            if name in _COSTLY_MATH and any(abs(x) > COSTLY_ARG_LIMIT for x in items):
                raise LaunchLimit(f"math.{name}() of more than {COSTLY_ARG_LIMIT}")
    return _bounded(fn(*args, **kwargs))


def _binop(op, a, b, work: list | None = None):
    if isinstance(a, (tuple, list, str)) or isinstance(b, (tuple, list, str)):
        _charge(work if work is not None else [0], a, b)  # ("%s" % (A,): a format of all A holds)
    if isinstance(op, ast.Pow) and isinstance(b, (int, np.integer)) and abs(int(b)) > 128:
        raise LaunchLimit("an exponent past 128")
    if isinstance(op, (ast.LShift, ast.RShift)) and isinstance(b, (int, np.integer)) and abs(int(b)) > 64:
        raise LaunchLimit("a shift past 64")
    if isinstance(op, ast.Mult) and (isinstance(a, (str, tuple, list)) or isinstance(b, (str, tuple, list))):
        n = b if isinstance(a, (str, tuple, list)) else a
        if not isinstance(n, int) or n > 64:
            raise LaunchLimit("a repetition past 64")
    return _bounded(_BINOPS[type(op)](a, b))


def _np_type(name: str):
    """The NumPy scalar type of numba's or NumPy's number type ``name`` (float32 ...), or None."""
    alias = {"b1": "bool_", "boolean": "bool_", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16",
             "i4": "int32", "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
             "c8": "complex64", "c16": "complex128", "byte": "uint8", "char": "int8", "uchar": "uint8",
             "long_": "int64", "size_t": "uint64", "ssize_t": "int64", "void": None}
    name = alias.get(name, name)
    t = getattr(np, name, None) if name else None
    return t if isinstance(t, type) and issubclass(t, np.generic) and t not in (np.object_, np.str_, np.bytes_) else None


def constant(node, prog: Program, base: str, where=None):
    """The value of a module constant's expression ``node``, computed here (numbers, strings,
    tuples, arithmetic, comparisons, earlier constants, ``math``'s and NumPy's constants and pure
    functions, number-type casts such as ``float32(0.5)``, small ``np.array`` literals); never by
    running the file. Failed (naming the line) for anything else."""
    where = where or node

    def bad(what):
        return failed_at(base, where, f"{source_of(where)}: {what}: a module-level value must be a constant (numbers, "
                                  f"tuples, arithmetic of other constants) ({NOT_RUN})")

    def ev(n):
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (int, float, complex, str, bool, type(None))):
                return _bounded(n.value)
            raise bad(f"{type(n.value).__name__} values")
        if isinstance(n, (ast.Tuple, ast.List)):
            return _bounded(tuple(ev(e) for e in n.elts))
        if isinstance(n, ast.Name):
            if n.id in prog.constants:
                return prog.constants[n.id]
            raise bad(f"{n.id} is not a constant set above")
        if isinstance(n, ast.UnaryOp):
            return _bounded(_UNOPS[type(n.op)](ev(n.operand)))
        if isinstance(n, ast.BinOp):
            return _binop(n.op, ev(n.left), ev(n.right), prog.work)
        if isinstance(n, ast.BoolOp):
            values = [ev(v) for v in n.values]
            out = values[0]
            for v in values[1:]:
                out = (out and v) if isinstance(n.op, ast.And) else (out or v)
            return out
        if isinstance(n, ast.Compare):
            left = ev(n.left)
            for op, right in zip(n.ops, n.comparators):
                if type(op) not in _CMPOPS:
                    raise bad(type(op).__name__)
                r = ev(right)
                _charge(prog.work, left, r)
                if not _CMPOPS[type(op)](left, r):
                    return False
                left = r
            return True
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        if isinstance(n, ast.Attribute):
            mod = module_of(prog, n.value)
            if mod == ("math", None) and n.attr in MATH_ATTRS and not callable(getattr(math, n.attr)):
                return getattr(math, n.attr)
            if mod == ("numpy", None) and n.attr in NP_CONSTANTS and n.attr != "newaxis":
                return float(getattr(np, n.attr))
            raise bad(source_of(n))
        if isinstance(n, ast.Call):
            return call(n)
        raise bad(type(n).__name__)

    def number_type(n):
        """NumPy's scalar type that ``n`` names (np.float32, float32 from numba ...), or None."""
        if isinstance(n, ast.Attribute) and module_of(prog, n.value) in (("numpy", None), ("numba", None),
                                                                           ("cuda", None)):
            return _np_type(n.attr)
        imp = prog.imports.get(n.id) if isinstance(n, ast.Name) else None
        return _np_type(imp[1]) if imp and imp[0] in ("type", "numpy") else None

    def call(n):
        fn = n.func
        args = [ev(a) for a in n.args]
        kwargs = {k.arg: (number_type(k.value) or ev(k.value)) if k.arg == "dtype" else ev(k.value)
                  for k in n.keywords if k.arg}
        if any(k.arg is None for k in n.keywords):
            raise bad("**")
        _charge(prog.work, *args, *kwargs.values())
        if isinstance(fn, ast.Name) and fn.id in _PURE_BUILTINS and fn.id not in prog.imports and not kwargs:
            return _checked_call(fn.id, _PURE_BUILTINS[fn.id], args, {}, prog.work)
        mod = module_of(prog, fn.value) if isinstance(fn, ast.Attribute) else None
        imp = prog.imports.get(fn.id) if isinstance(fn, ast.Name) else None
        cast = number_type(fn)
        if cast is not None and len(args) == 1 and not kwargs:
            return cast(args[0])
        math_fn = fn.attr if mod == ("math", None) else (imp[1] if imp and imp[0] == "math" else None)
        if math_fn and math_fn in MATH_ATTRS and callable(getattr(math, math_fn)) and not kwargs:
            return _checked_call(math_fn, getattr(math, math_fn), args, {}, prog.work)
        if mod == ("numpy", None) and fn.attr == "array" and len(args) == 1 and set(kwargs) <= {"dtype"}:
            dtype = kwargs.get("dtype")
            arr = np.array(args[0], dtype=dtype)
            if arr.dtype.kind not in "biufc" or arr.size > 4096:
                raise bad("an array of numbers, at most 4096 of them")
            arr.flags.writeable = False
            return arr
        raise bad(f"calling {source_of(fn)}")

    try:
        return ev(node)
    except Failed:
        raise
    except (ArithmeticError, ValueError, TypeError, RecursionError, KeyError) as e:
        raise bad(f"{type(e).__name__}: {e}") from None


# --- launch(): an interpreter -----------------------------------------------------------------------------------
class LaunchRules(ast.NodeVisitor):
    """What :func:`interpret` evaluates, checked before any test: the constructs it knows, names it can
    resolve, calls it can make. Failed naming the line of the first construct it does not know."""

    STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.If, ast.For, ast.While, ast.Pass,
             ast.Expr, ast.Break, ast.Continue, ast.Assert)
    EXPRS = (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
             ast.IfExp, ast.Subscript, ast.Call, ast.Attribute, ast.Slice, ast.Starred)

    def __init__(self, prog: Program, base: str):
        self.prog, self.base, self.seen = prog, base, set()

    def check(self, name: str):
        if name in self.seen:
            return
        self.seen.add(name)
        fn = self.prog.functions[name]
        for d in fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]:
            if not isinstance(d, ast.Constant):
                self.refuse(d, f"the default {source_of(d)} is not a constant")
        if fn.args.vararg or fn.args.kwarg:
            self.refuse(fn, "*args and **kwargs")
        for stmt in fn.body:
            self.visit(stmt)

    def refuse(self, node, what):
        raise failed_at(self.base, node, f"{what} in {self.prog.launch}(): the checker evaluates launch() itself "
                                     f"(arithmetic on its arguments, if, for over range, min, max, math.ceil ...) "
                                     f"and that is not among it")

    def generic_visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(node, self.STMTS):
            self.refuse(node, f"{type(node).__name__.lower()} ({source_of(node)})")
        if isinstance(node, ast.expr) and not isinstance(node, self.EXPRS):
            self.refuse(node, f"{source_of(node)}")
        super().generic_visit(node)

    def visit_Name(self, node):
        if node.id.startswith("_"):
            self.refuse(node, f"the name {node.id}")

    def visit_Attribute(self, node):
        mod = module_of(self.prog, node.value)
        if not (mod == ("math", None) and node.attr in _LAUNCH_MATH or
                mod == ("numpy", None) and node.attr in _LAUNCH_NUMPY):
            self.refuse(node, source_of(node))

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name) and f.id in self.prog.functions:
            if self.prog.kinds[f.id] != "plain":
                self.refuse(node, f"calling {f.id}")
            self.check(f.id)
        elif not (isinstance(f, ast.Name) and f.id in _LAUNCH_BUILTINS and f.id not in self.prog.imports
                  or isinstance(f, ast.Name) and (self.prog.imports.get(f.id) or ("",))[0] == "math"
                  and self.prog.imports[f.id][1] in _LAUNCH_MATH
                  or isinstance(f, ast.Attribute)):
            self.refuse(node, f"calling {source_of(f)}")
        for n in [*node.args, *[k.value for k in node.keywords]]:
            self.visit(n)
        if isinstance(f, ast.Attribute):
            self.visit(f)

    def visit_For(self, node):
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            self.refuse(node, f"for over {source_of(it)} (only over range(...))")
        self.generic_visit(node)


_LAUNCH_BUILTINS = {"abs": abs, "min": min, "max": max, "int": int, "float": float, "bool": bool, "round": round,
                    "len": len, "divmod": divmod, "tuple": tuple, "range": range, "sum": sum, "list": list}
_LAUNCH_MATH = frozenset({"ceil", "floor", "sqrt", "log2", "log", "isqrt", "prod", "gcd", "lcm", "trunc", "pi",
                          "inf", "e"})
_LAUNCH_NUMPY = frozenset({"int32", "int64", "uint32", "uint64", "intp", "ceil", "floor"})


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Launch:
    """``launch(*args)`` of the student's file, evaluated by :func:`interpret` (no Python of the file
    runs). Calling it raises what the evaluation raised (ZeroDivisionError ...), or LaunchLimit."""

    def __init__(self, prog: Program, name: str):
        self.prog, self.name = prog, name

    def __call__(self, *args):
        return interpret(self.prog, self.name, args)

    def __repr__(self):
        return f"<launch {self.name} of {os.path.basename(self.prog.path)}, interpreted>"


def interpret(prog: Program, name: str, args, steps: list | None = None, depth: int = 0):
    """The value of the file's plain function ``name`` called with ``args``, computed by walking its
    syntax tree (checked by :class:`LaunchRules`): ints, floats, bools and tuples of them only.
    Raises the error the computation raises (ZeroDivisionError, TypeError ...) or LaunchLimit past
    :data:`LAUNCH_STEPS` nodes, :data:`INT_LIMIT` or a call depth of 16."""
    steps = steps if steps is not None else [0]
    if depth > 16:
        raise LaunchLimit("calls nested deeper than 16")
    fn = prog.functions[name]
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    defaults = [d.value for d in fn.args.defaults]
    if len(args) > len(params) or len(args) < len(params) - len(defaults):
        raise TypeError(f"{name}() takes {len(params)} arguments ({len(args)} given)")
    env = dict(zip(params, list(args) + defaults[len(defaults) - (len(params) - len(args)):]))
    for v in env.values():
        if not isinstance(v, (int, float, bool, tuple, np.integer, np.floating)):
            raise TypeError(f"{name}() got an argument of type {type(v).__name__}")

    def tick():
        steps[0] += 1
        if steps[0] > LAUNCH_STEPS:
            raise LaunchLimit(f"more than {LAUNCH_STEPS} steps")

    def ev(n):
        tick()
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (int, float, bool, str, type(None))):
                return n.value
            raise TypeError(f"a {type(n.value).__name__} constant")
        if isinstance(n, ast.Name):
            if n.id in env:
                return env[n.id]
            if n.id in prog.constants:
                return prog.constants[n.id]
            raise NameError(f"name {n.id!r} is not defined")
        if isinstance(n, (ast.Tuple, ast.List)):
            out = []
            for e in n.elts:
                if isinstance(e, ast.Starred):
                    out.extend(ev(e.value))
                else:
                    out.append(ev(e))
            return _bounded(tuple(out))
        if isinstance(n, ast.BinOp):
            return _binop(n.op, ev(n.left), ev(n.right), steps)
        if isinstance(n, ast.UnaryOp):
            return _bounded(_UNOPS[type(n.op)](ev(n.operand)))
        if isinstance(n, ast.BoolOp):
            out = None
            for v in n.values:
                out = ev(v)
                if (not out) if isinstance(n.op, ast.And) else out:
                    return out
            return out
        if isinstance(n, ast.Compare):
            left = ev(n.left)
            for op, right in zip(n.ops, n.comparators):
                r = ev(right)
                if type(op) not in _CMPOPS:
                    raise TypeError(f"the comparison {type(op).__name__}")
                _charge(steps, left, r)
                if not _CMPOPS[type(op)](left, r):
                    return False
                left = r
            return True
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        if isinstance(n, ast.Subscript):
            value = ev(n.value)
            if not isinstance(value, tuple):
                raise TypeError(f"{type(value).__name__} is not subscriptable here")
            if isinstance(n.slice, ast.Slice):
                s = n.slice
                return value[slice(*(None if x is None else ev(x) for x in (s.lower, s.upper, s.step)))]
            return value[ev(n.slice)]
        if isinstance(n, ast.Attribute):
            mod = module_of(prog, n.value)
            if mod == ("math", None) and n.attr in _LAUNCH_MATH:
                return getattr(math, n.attr)
            if mod == ("numpy", None) and n.attr in _LAUNCH_NUMPY:
                return getattr(np, n.attr)
            raise TypeError(f"{source_of(n)} is not evaluated here")
        if isinstance(n, ast.Call):
            f = n.func
            args_ = []
            for a in n.args:
                if isinstance(a, ast.Starred):
                    args_.extend(ev(a.value))
                else:
                    args_.append(ev(a))
            kwargs = {k.arg: ev(k.value) for k in n.keywords if k.arg}
            _charge(steps, *args_, *kwargs.values())
            if isinstance(f, ast.Name) and f.id in prog.functions and prog.kinds.get(f.id) == "plain":
                if kwargs:
                    raise TypeError("keyword arguments to the file's functions")
                return interpret(prog, f.id, args_, steps, depth + 1)
            if isinstance(f, ast.Name) and f.id in _LAUNCH_BUILTINS and f.id not in prog.imports:
                fn_ = _LAUNCH_BUILTINS[f.id]
                if fn_ is range:
                    r = range(*args_)
                    if len(r) > LAUNCH_STEPS:
                        raise LaunchLimit(f"a range of more than {LAUNCH_STEPS}")
                    steps[0] += len(r)  # its values are made now, each a step: the memory they hold is bounded
                    if steps[0] > LAUNCH_STEPS:
                        raise LaunchLimit(f"more than {LAUNCH_STEPS} steps (a range's values count)")
                    return tuple(r)
            elif isinstance(f, ast.Name) and (prog.imports.get(f.id) or ("",))[0] == "math":
                fn_ = getattr(math, prog.imports[f.id][1])
            else:
                fn_ = ev(f)
            if not callable(fn_):
                raise TypeError(f"{source_of(f)} is not callable")
            for a in args_:
                if isinstance(a, (tuple, list)) and len(a) > 64:
                    raise LaunchLimit("a tuple of more than 64 values")
            return _checked_call(getattr(fn_, "__name__", source_of(f)), fn_, args_, kwargs, steps)
        raise TypeError(f"{type(n).__name__} is not evaluated here")

    def assign(target, value):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = tuple(value)
            if len(value) != len(target.elts):
                raise ValueError(f"not {len(target.elts)} values to unpack (got {len(value)})")
            for t, v in zip(target.elts, value):
                assign(t, v)
        else:
            raise TypeError(f"assigning to {source_of(target)}")

    def run(body):
        for s in body:
            tick()
            if isinstance(s, ast.Return):
                raise _Return(None if s.value is None else ev(s.value))
            if isinstance(s, ast.Assign):
                v = ev(s.value)
                for t in s.targets:
                    assign(t, v)
            elif isinstance(s, ast.AnnAssign):
                if s.value is not None:
                    assign(s.target, ev(s.value))
            elif isinstance(s, ast.AugAssign):
                if not isinstance(s.target, ast.Name):
                    raise TypeError(f"assigning to {source_of(s.target)}")
                env[s.target.id] = _binop(s.op, ev(ast.Name(id=s.target.id, ctx=ast.Load())), ev(s.value), steps)
            elif isinstance(s, ast.If):
                run(s.body if ev(s.test) else s.orelse)
            elif isinstance(s, ast.For):
                broke = False
                for v in ev(s.iter):
                    assign(s.target, v)
                    try:
                        run(s.body)
                    except _Break:
                        broke = True
                        break
                    except _Continue:
                        continue
                if not broke:
                    run(s.orelse)
            elif isinstance(s, ast.While):
                broke = False
                while ev(s.test):
                    try:
                        run(s.body)
                    except _Break:
                        broke = True
                        break
                    except _Continue:
                        continue
                if not broke:
                    run(s.orelse)
            elif isinstance(s, ast.Break):
                raise _Break()
            elif isinstance(s, ast.Continue):
                raise _Continue()
            elif isinstance(s, ast.Assert):
                if not ev(s.test):
                    raise AssertionError(ev(s.msg) if s.msg is not None else "")
            elif isinstance(s, ast.Expr):
                ev(s.value)
            # Pass: nothing

    try:
        run(fn.body)
    except _Return as r:
        return r.value
    return None
