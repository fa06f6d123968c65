"""The student's file as source, not a program: the exercise checker reads it as text, takes the
kernels (``@cuda.jit`` functions and ``@cuda.jit(device=True)`` device functions) and ``launch()``
from its syntax tree (``ast``), with their line numbers, and never runs its top level.

* :func:`extract` parses the text and checks it (one :class:`lab.teach.messages.Failed` line naming the
  file's line for each refusal): at the top level only imports of the allow-list (numba's ``cuda``
  and its number types, ``math``, ``numpy``, and the device helpers an exercise hands out,
  :data:`HELPERS` of ``kernels.gemm.mma``; never a kernel of the lab's), module constants
  (numbers, strings, tuples and arithmetic of them, evaluated here by :func:`constant`, never by
  Python), function definitions, docstrings, and an ``if __name__ == "__main__":`` block (ignored);
  the exercise's kernel must be defined in the file. Every function a kernel reaches is held to
  the *device rules* (:class:`_DeviceRules`): no import, class, nested function, ``with``,
  ``try``, ``global``; no name or attribute that starts with ``_``; a module's attributes only from
  its allow-list (:data:`CUDA_ATTRS`, :data:`NUMPY_ATTRS`, ``math``'s public names); other values'
  attributes only :data:`VALUE_ATTRS` (``shape``, ``size``, ``dtype``, ``x`` ...); no store into an
  attribute, nor into a subscript of anything but the function's own arrays; no builtin outside
  :data:`BUILTINS`. A kernel held to these rules reaches no Python object that could touch the
  tracer, the results or the file system, whatever it computes.
* :func:`build` makes, in the process that runs or compiles the kernel, a module holding only what
  the allow-list names (the real ``numba.cuda``, or the simulator's where it is on; ``math``,
  ``numpy``, the helpers), the constants computed by :func:`constant`, and the functions compiled
  from the checked syntax trees with their decorators, defaults and annotations removed, then
  decorated here with ``cuda.jit`` and the decorator's checked options; its builtins are
  :data:`BUILTINS` alone. Executing it defines functions and runs nothing of the student's.
* :class:`Launch` evaluates ``launch()`` by interpreting its syntax tree (:func:`interpret`):
  arithmetic, comparisons, ``if``, ``for`` over ``range``, tuples, calls of a few pure functions
  (``min``, ``max``, ``math.ceil`` ...) and of the file's other plain functions, on the
  arguments the judge gives; bounded steps and integers. What comes back is data the judge checks
  (integers, 1-3 a dimension), never a claim.

Nothing here prints. Source: Python's ``ast`` module; numba-cuda's "Supported Python features in
CUDA Python" (what a kernel may use).
"""
from __future__ import annotations

import ast
import builtins
import linecache
import math
import operator
import os
import types
from dataclasses import dataclass, field

import numpy as np

from lab.teach.messages import Failed

SOURCE_CAP = 1 << 20  # bytes of a student's file read at most
HELPERS = ("to_tf32", "tf32_bits", "mma_tf32", "cp_async16", "cp_async4", "cp_async_commit",
           "cp_async_wait")  # kernels.gemm.mma.HELPERS: the device helpers the tensor-core exercises hand out
HELPER_MODULE = "kernels.gemm.mma"

NUMBA_TYPES = frozenset({
    "b1", "bool_", "boolean", "byte", "c16", "c8", "char", "complex128", "complex64", "double", "f4", "f8",
    "float32", "float64", "i1", "i2", "i4", "i8", "int16", "int32", "int64", "int8", "int_", "intc", "intp",
    "long_", "longlong", "short", "size_t", "ssize_t", "u1", "u2", "u4", "u8", "uchar", "uint", "uint16",
    "uint32", "uint64", "uint8", "uintc", "uintp", "ulong", "ulonglong", "ushort", "void"})
CPU_JITS = frozenset({"jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil"})  # numba's CPU compilers

_VECTOR_TYPES = frozenset(
    [f"{p}{n}" for p in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                         "ulonglong", "float", "double") for n in range(1, 5)]
    + [f"{p}x{n}" for p in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                            "float64") for n in range(1, 5)])
# numba-cuda's device API (CUDA Python: "Thread indexing", "Memory management", "Synchronization and
# atomic operations", "Cooperative groups", "Warp intrinsics", "Integer intrinsics", "Floating point
# intrinsics", "16-bit floating point intrinsics", "Cache hints"): what a kernel may name on ``cuda``
_DIMS = frozenset({"x", "y", "z"})
_ATOMICS = frozenset({"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
                      "compare_and_swap", "cas"})
CUDA_ATTRS: dict = {
    **{k: _DIMS for k in ("threadIdx", "blockIdx", "blockDim", "gridDim")},
    "shared": frozenset({"array"}), "local": frozenset({"array"}), "const": frozenset({"array_like"}),
    "atomic": _ATOMICS, "cg": frozenset({"this_grid"}), "fp16": None,  # None: any public name (all device functions)
    **{k: frozenset() for k in (
        "laneid", "warpsize", "grid", "gridsize", "syncthreads", "syncthreads_count", "syncthreads_and",
        "syncthreads_or", "syncwarp", "threadfence", "threadfence_block", "threadfence_system", "shfl_sync",
        "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync", "eq_sync", "ballot_sync",
        "match_any_sync", "match_all_sync", "activemask", "lanemask_lt", "popc", "brev", "clz", "ffs", "fma",
        "cbrt", "selp", "nanosleep", "ldca", "ldcg", "ldcs", "ldcv", "ldlu", "stcg", "stcs", "stwb", "stwt",
        *NUMBA_TYPES, "float16", *_VECTOR_TYPES)},
}
_NP_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "bool_", "intp", "uintp", "int_", "uint", "intc", "uintc", "half", "single", "double",
             "complex64", "complex128", "byte", "ubyte", "short", "ushort", "longlong", "ulonglong", "long", "ulong")
_NP_CONSTANTS = ("pi", "e", "inf", "nan", "euler_gamma", "newaxis")
# pure array functions: NumPy calls a GPU cannot compile (np.dot ...) reach the offline compile's message;
# in the simulator they compute and touch nothing else
_NP_PURE = ("dot", "vdot", "inner", "outer", "sum", "prod", "min", "max", "amin", "amax", "mean", "std", "var",
            "argmin", "argmax", "all", "any", "cumsum", "cumprod", "sort", "argsort", "where", "clip", "round",
            "around", "isclose", "allclose", "array_equal", "zeros", "ones", "empty", "full", "zeros_like",
            "ones_like", "empty_like", "full_like", "arange", "linspace", "reshape", "ravel", "transpose",
            "count_nonzero", "searchsorted", "finfo", "iinfo", "dtype", "median", "nanmax", "nanmin", "nansum",
            "trace", "diag", "abs", "sign")
NUMPY_ATTRS = frozenset(
    [n for n in dir(np) if not n.startswith("_") and isinstance(getattr(np, n, None), np.ufunc)]
    + [n for n in _NP_TYPES if hasattr(np, n)] + [n for n in _NP_CONSTANTS if hasattr(np, n)]
    + [n for n in _NP_PURE if hasattr(np, n)])
MATH_ATTRS = frozenset(n for n in dir(math) if not n.startswith("_"))
# attributes of values (arrays, scalars, cuda.threadIdx ...): read-only facts, never a method that
# reaches memory (view, ctypes), a file (tofile) or Python's objects (format, __class__)
VALUE_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "itemsize", "strides", "nbytes", "x", "y", "z",
                         "real", "imag", "T", "sync"})
# Python's builtins a kernel may call (numba-cuda types a few of them; the others are pure and reach no
# object: a GPU compile rejects them, the simulator computes them)
BUILTINS = ("abs", "all", "any", "bool", "complex", "divmod", "enumerate", "float", "int", "len", "list", "max",
            "min", "pow", "print", "range", "reversed", "round", "slice", "sorted", "sum", "tuple", "zip", "map",
            "filter", "isinstance", "None", "True", "False", "Ellipsis", "ArithmeticError", "AssertionError",
            "Exception", "IndexError", "KeyError", "OverflowError", "RuntimeError", "TypeError", "ValueError",
            "ZeroDivisionError", "NotImplementedError", "FloatingPointError", "LookupError")
_CUDA_JIT_OPTIONS = frozenset({"device", "fastmath", "lineinfo", "debug", "opt", "inline", "forceinline",
                               "max_registers", "cache"})
_ALLOWED_IMPORTS = ("numba's cuda and its number types (from numba import cuda, float32), math, numpy and "
                    f"the device helpers of {HELPER_MODULE} ({', '.join(HELPERS)})")
NOT_RUN = "the checker reads your file as source, it does not run it"
INT_LIMIT = 1 << 64  # |integer| a constant or launch() may compute
LAUNCH_STEPS = 100_000  # syntax-tree nodes launch() may evaluate


def _fail(base: str, node, text: str) -> Failed:
    line = getattr(node, "lineno", None)
    return Failed(f"{base} line {line}: {text}" if line else f"{base}: {text}")


def _src(node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node ast cannot unparse: its kind
        text = type(node).__name__
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


# --- Reading ---------------------------------------------------------------------------------------------
def read(path) -> str:
    """The text of the student's file ``path`` (UTF-8, at most :data:`SOURCE_CAP` bytes), read once.
    Failed (one line) when it is larger or not text."""
    base = os.path.basename(str(path))
    with open(path, "rb") as f:
        data = f.read(SOURCE_CAP + 1)
    if len(data) > SOURCE_CAP:
        raise Failed(f"{base} is larger than {SOURCE_CAP >> 10} KiB: not a kernel's source file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failed(f"{base} is not UTF-8 text (byte {e.start}): save it as UTF-8") from None


# --- The program taken from the text ------------------------------------------------------------------------
@dataclass
class Program:
    """What :func:`extract` took from a file: ``path`` (its name: line numbers point into ``text``),
    ``kernel`` (the exercise's kernel), ``imports`` {name: ("cuda" | "math" | "numpy" | "numba" |
    "type", attribute) or ("helper", name) or ("cpu_jit", name)}, ``constants`` {name: value},
    ``functions`` {name: ast.FunctionDef}, ``kinds`` {name: "kernel" | "device" | "plain" | "cpu"},
    ``options`` {name: cuda.jit's keyword options}, ``signatures`` {name: cuda.jit's signatures or
    None}, ``device_code``: the names of the functions a kernel may reach (checked by the device
    rules), ``launch``: the launch function's name or None."""

    path: str
    text: str
    kernel: str
    launch: str | None = None
    imports: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    signatures: dict = field(default_factory=dict)
    device_code: list = field(default_factory=list)


def extract(text: str, path, kernel: str, launch: str | None = None) -> Program:
    """The :class:`Program` of ``text`` (the student's file ``path``) for an exercise whose kernel is
    named ``kernel`` and whose launch function, if it has one, ``launch``. Failed, naming the line,
    for a SyntaxError, an import outside the allow-list, top-level code that is not an import, a
    constant, a function or the ``__main__`` block, a missing or undecorated kernel, a missing launch
    function, and a function a kernel reaches that breaks the device rules."""
    base = os.path.basename(str(path))
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise Failed(f"{base} line {e.lineno}: SyntaxError: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, nesting too deep
        raise Failed(f"{base}: not Python source that the checker can read ({type(e).__name__})") from None
    prog = Program(path=str(path), text=text, kernel=kernel, launch=launch)
    for node in tree.body:
        _top_level(prog, node, base)
    kind = prog.kinds.get(kernel)
    if kind is None:
        raise Failed(f"{base} has no kernel named {kernel!r}")
    problem = {"plain": "not a CUDA kernel: decorate it with @cuda.jit",
               "device": "a device function (@cuda.jit(device=True)), not a kernel: decorate it with @cuda.jit "
                         "(device functions are called from kernels, not launched)",
               "cpu": "not a CUDA kernel (compiled for the CPU): decorate it with @cuda.jit, not @numba.jit"}.get(kind)
    if problem:
        raise Failed(f"{kernel} is {problem}")
    if launch and prog.kinds.get(launch) != "plain":
        raise Failed(f"{base} has no function {launch}(...) for the launch configuration")
    prog.device_code = _reach(prog, base)
    if launch:
        _LaunchRules(prog, base).check(launch)
    return prog


def _top_level(prog: Program, node, base: str) -> None:
    """One statement of the module: recorded, ignored (a docstring, the __main__ block) or refused."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return  # a docstring or a string
    if isinstance(node, ast.Pass):
        return
    if isinstance(node, ast.If) and _is_main(node.test):
        return  # ``if __name__ == "__main__":``: the file's own demo, never run by the checker
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        _imports(prog, node, base)
        return
    if isinstance(node, ast.FunctionDef):
        _function(prog, node, base)
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        _assignment(prog, node, base)
        return
    what = {ast.Expr: "a statement", ast.ClassDef: "a class", ast.AsyncFunctionDef: "an async function",
            ast.For: "a loop", ast.While: "a loop", ast.If: "an if", ast.With: "a with", ast.Try: "a try",
            ast.Raise: "a raise", ast.Assert: "an assert", ast.Delete: "a del", ast.Global: "a global"}
    raise _fail(base, node, f"{what.get(type(node), 'a statement')} at the top level ({_src(node)}): {NOT_RUN}: "
                            f"only imports, constants (NAME = 32), functions and an if __name__ == \"__main__\": "
                            f"block may be there")


def _is_main(test) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _bind(prog: Program, name: str, node, base: str) -> None:
    """``name`` is bound again: forget what it was (Python's last binding wins), refusing dunder names."""
    if name.startswith("__") and name.endswith("__"):
        raise _fail(base, node, f"{name} cannot be set in a kernel's file")
    for table in (prog.imports, prog.constants, prog.functions, prog.kinds, prog.options, prog.signatures):
        table.pop(name, None)


def _imports(prog: Program, node, base: str) -> None:
    refused = _fail(base, node, f"{_src(node)}: only {_ALLOWED_IMPORTS} may be imported ({NOT_RUN})")
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name in ("math", "numpy", "numba"):
                bound, what = a.asname or a.name, (a.name, None)
            elif a.name == "numba.cuda" and a.asname:
                bound, what = a.asname, ("cuda", None)
            else:
                raise _lab_kernel(base, node, a.name) or refused
            _bind(prog, bound, node, base)
            prog.imports[bound] = what
        return
    if node.level or node.module is None:
        raise refused
    if node.module == "__future__":
        return
    for a in node.names:
        if a.name == "*":
            raise _fail(base, node, f"{_src(node)}: import names one by one, not * ({NOT_RUN})")
        bound = a.asname or a.name
        if node.module == "numba" and a.name == "cuda":
            what = ("cuda", None)
        elif node.module == "numba" and a.name in NUMBA_TYPES:
            what = ("type", a.name)
        elif node.module == "numba" and a.name in CPU_JITS:
            what = ("cpu_jit", a.name)
        elif node.module == "math" and a.name in MATH_ATTRS:
            what = ("math", a.name)
        elif node.module == "numpy" and a.name in NUMPY_ATTRS:
            what = ("numpy", a.name)
        elif node.module == HELPER_MODULE and a.name in HELPERS:
            what = ("helper", a.name)
        else:
            raise _lab_kernel(base, node, node.module, a.name) or refused
        _bind(prog, bound, node, base)
        prog.imports[bound] = what


def _lab_kernel(base, node, module: str, name: str = "") -> Failed | None:
    if module.split(".")[0] in ("kernels", "exercises", "lab"):
        what = f"{module}.{name}" if name else module
        return _fail(base, node, f"{_src(node)}: {what} is the lab's code, not yours: the kernel must be your own "
                                 f"code in {base} (only the device helpers of {HELPER_MODULE} may be imported)")
    return None


def _assignment(prog: Program, node, base: str) -> None:
    if isinstance(node, ast.AugAssign):
        if not isinstance(node.target, ast.Name) or node.target.id not in prog.constants:
            raise _fail(base, node, f"{_src(node)}: a constant can be changed only after it is set ({NOT_RUN})")
        name = node.target.id
        value = constant(ast.BinOp(left=ast.Name(id=name, ctx=ast.Load()), op=node.op, right=node.value),
                         prog, base, node)
        prog.constants[name] = value
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is None:  # ``x: int``: nothing bound
        return
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    if len(names) != len(targets):
        if all(isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts) for t in targets):
            value = constant(node.value, prog, base, node)
            for t in targets:
                if not isinstance(value, tuple) or len(value) != len(t.elts):
                    raise _fail(base, node, f"{_src(node)}: the values do not unpack into {len(t.elts)} names")
                for e, v in zip(t.elts, value):
                    _bind(prog, e.id, node, base)
                    prog.constants[e.id] = v
            return
        raise _fail(base, node, f"{_src(node)}: only names can be set at the top level ({NOT_RUN})")
    if all(n.startswith("__") and n.endswith("__") for n in names):  # __all__, __version__: metadata, not used
        return
    value = constant(node.value, prog, base, node)
    for n in names:
        _bind(prog, n, node, base)
        prog.constants[n] = value


def _function(prog: Program, node: ast.FunctionDef, base: str) -> None:
    _bind(prog, node.name, node, base)
    kind, options, sigs = "plain", {}, None
    if len(node.decorator_list) > 1:
        raise _fail(base, node, f"{node.name} has {len(node.decorator_list)} decorators: only one @cuda.jit(...)")
    for dec in node.decorator_list:
        kind, options, sigs = _decorator(prog, dec, base)
    prog.functions[node.name] = node
    prog.kinds[node.name] = kind
    prog.options[node.name] = options
    prog.signatures[node.name] = sigs


def _module_of(prog: Program, node) -> tuple | None:
    """What a name or dotted name refers to among the imports: ("cuda", None), ("numba", None), ... or None."""
    if isinstance(node, ast.Name):
        return prog.imports.get(node.id)
    if isinstance(node, ast.Attribute):
        inner = _module_of(prog, node.value)
        if inner == ("numba", None) and node.attr == "cuda":
            return ("cuda", None)
        if inner == ("numba", None) and node.attr in CPU_JITS:
            return ("cpu_jit", node.attr)
        if inner == ("cuda", None) and node.attr == "jit":
            return ("cuda_jit", None)
    return None


def _decorator(prog: Program, dec, base: str) -> tuple:
    call = dec if isinstance(dec, ast.Call) else None
    target = _module_of(prog, call.func if call else dec)
    if target is not None and target[0] == "cpu_jit":
        return "cpu", {}, None
    if target != ("cuda_jit", None):
        raise _fail(base, dec, f"@{_src(dec)}: the checker reads only @cuda.jit and @cuda.jit(device=True) "
                               f"(from numba import cuda)")
    options, sigs = {}, None
    if call is not None:
        if len(call.args) > 1:
            raise _fail(base, dec, f"@{_src(dec)}: at most one signature")
        if call.args:
            try:
                value = ast.literal_eval(call.args[0])
            except ValueError:
                value = None
            if isinstance(value, str):
                sigs = [value]
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
                sigs = list(value)
            else:
                raise _fail(base, dec, f"@{_src(dec)}: a signature must be a string (\"void(float32[:])\") here")
            for sig in sigs:
                if not _signature_ok(sig):  # numba evaluates a signature string as Python (sigutils)
                    raise _fail(base, dec, f"@{_src(dec)}: {sig[:60]!r} is not a signature of number types and "
                                           f"arrays (e.g. \"void(float32[:], float32[:, ::1])\")")
        for kw in call.keywords:
            if kw.arg not in _CUDA_JIT_OPTIONS:
                raise _fail(base, dec, f"@{_src(dec)}: option {kw.arg} is not one the checker takes "
                                       f"({', '.join(sorted(_CUDA_JIT_OPTIONS))})")
            try:
                value = ast.literal_eval(kw.value)
            except ValueError:
                raise _fail(base, dec, f"@{_src(dec)}: {kw.arg}= must be a constant") from None
            if not isinstance(value, (bool, int, str)) or isinstance(value, str) and len(value) > 32:
                raise _fail(base, dec, f"@{_src(dec)}: {kw.arg}= must be a bool, an int or a short string")
            if kw.arg != "cache":  # a cache would be written next to the file: nothing to keep here
                options[kw.arg] = value
    kind = "device" if options.pop("device", False) else "kernel"
    return kind, options, sigs


def _signature_ok(sig: str) -> bool:
    """Whether ``sig`` is a signature made of numba's number types, arrays of them (``float32[:, ::1]``)
    and ``void(...)``: numba-cuda evaluates the string as Python (``numba.core.sigutils``), so
    nothing else may be in it."""
    if len(sig) > 500:
        return False
    try:
        tree = ast.parse(sig, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return False
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            if n.id not in NUMBA_TYPES:
                return False
        elif isinstance(n, ast.Call):
            if not isinstance(n.func, ast.Name) or n.keywords:
                return False
        elif isinstance(n, ast.Constant):
            if not isinstance(n.value, int) or isinstance(n.value, bool) or n.value != 1:
                return False
        elif not isinstance(n, (ast.Expression, ast.Subscript, ast.Slice, ast.Tuple, ast.Load)):
            return False
    return True


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


def _binop(op, a, b):
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
        return _fail(base, where, f"{_src(where)}: {what}: a module-level value must be a constant (numbers, "
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
            return _binop(n.op, ev(n.left), ev(n.right))
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
                if not _CMPOPS[type(op)](left, r):
                    return False
                left = r
            return True
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        if isinstance(n, ast.Attribute):
            mod = _module_of(prog, n.value)
            if mod == ("math", None) and n.attr in MATH_ATTRS and not callable(getattr(math, n.attr)):
                return getattr(math, n.attr)
            if mod == ("numpy", None) and n.attr in _NP_CONSTANTS and n.attr != "newaxis":
                return float(getattr(np, n.attr))
            raise bad(_src(n))
        if isinstance(n, ast.Call):
            return call(n)
        raise bad(type(n).__name__)

    def number_type(n):
        """NumPy's scalar type that ``n`` names (np.float32, float32 from numba ...), or None."""
        if isinstance(n, ast.Attribute) and _module_of(prog, n.value) in (("numpy", None), ("numba", None),
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
        if isinstance(fn, ast.Name) and fn.id in _PURE_BUILTINS and fn.id not in prog.imports and not kwargs:
            return _bounded(_PURE_BUILTINS[fn.id](*args))
        mod = _module_of(prog, fn.value) if isinstance(fn, ast.Attribute) else None
        imp = prog.imports.get(fn.id) if isinstance(fn, ast.Name) else None
        cast = number_type(fn)
        if cast is not None and len(args) == 1 and not kwargs:
            return cast(args[0])
        math_fn = fn.attr if mod == ("math", None) else (imp[1] if imp and imp[0] == "math" else None)
        if math_fn and math_fn in MATH_ATTRS and callable(getattr(math, math_fn)) and not kwargs:
            return _bounded(getattr(math, math_fn)(*args))
        if mod == ("numpy", None) and fn.attr == "array" and len(args) == 1 and set(kwargs) <= {"dtype"}:
            dtype = kwargs.get("dtype")
            arr = np.array(args[0], dtype=dtype)
            if arr.dtype.kind not in "biufc" or arr.size > 4096:
                raise bad("an array of numbers, at most 4096 of them")
            arr.flags.writeable = False
            return arr
        raise bad(f"calling {_src(fn)}")

    try:
        return ev(node)
    except Failed:
        raise
    except (ArithmeticError, ValueError, TypeError, RecursionError, KeyError) as e:
        raise bad(f"{type(e).__name__}: {e}") from None


# --- The device rules ---------------------------------------------------------------------------------------------
_FORBIDDEN_NODES = {ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "global",
                    ast.Nonlocal: "nonlocal", ast.ClassDef: "a class", ast.FunctionDef: "a function inside a function",
                    ast.AsyncFunctionDef: "an async function", ast.Lambda: "a lambda", ast.With: "with",
                    ast.AsyncWith: "async with", ast.Try: "try", ast.Yield: "yield", ast.YieldFrom: "yield from",
                    ast.Await: "await", ast.AsyncFor: "async for"}
if hasattr(ast, "TryStar"):
    _FORBIDDEN_NODES[ast.TryStar] = "try"


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
        raise _fail(self.base, node, f"{what}, in {self.fn.name}: a kernel may use only device code (numba's "
                                     f"CUDA Python: cuda.*, math, numpy's math, its arrays and device functions)")

    def check(self):
        a = self.fn.args
        for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
            if not isinstance(d, ast.Constant):
                self.refuse(d, f"the default {_src(d)} is not a constant")
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
            self._name(arg, arg.arg)
        for stmt in self.fn.body:
            self.visit(stmt)

    def generic_visit(self, node):
        what = _FORBIDDEN_NODES.get(type(node))
        if what:
            self.refuse(node, f"{what} ({_src(node)})")
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
            self.refuse(node, f"setting an attribute ({_src(node)})")
        owner = self._owner(node.value)
        if owner is None:  # a value (an array, a scalar, cuda.threadIdx ...)
            if node.attr not in VALUE_ATTRS:
                self.refuse(node, f".{node.attr} ({_src(node)}): of a value, a kernel may read only "
                                  f"{', '.join(sorted(VALUE_ATTRS))}")
        else:
            kind, allowed = owner
            if allowed is not None and node.attr not in allowed:
                self.refuse(node, f"{_src(node)} is not {kind}'s device API")
        self.visit(node.value)  # cuda.threadIdx of cuda.threadIdx.x, the array of a.shape ...

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if not (isinstance(base, ast.Name) and base.id in self.locals):
                self.refuse(node, f"storing into {_src(base)} (only into the kernel's own arrays and locals)")
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
                self.refuse(node, f"del {_src(t)}")
        self.generic_visit(node)


def _reach(prog: Program, base: str) -> list:
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


# --- Building the kernel's module ------------------------------------------------------------------------------
def _strip(fn: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``fn`` without decorators, annotations or type comments (nothing evaluated when its
    ``def`` runs but the constant defaults the device rules allowed)."""
    import copy

    fn = copy.deepcopy(fn)
    fn.decorator_list = []
    fn.returns = None
    fn.type_comment = None
    a = fn.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
        arg.annotation = None
        arg.type_comment = None
    for n in ast.walk(fn):
        if isinstance(n, ast.AnnAssign):
            n.annotation = ast.Constant(value=None)
    if hasattr(fn, "type_params"):
        fn.type_params = []
    return fn


def _helpers():
    from kernels.gemm import mma

    out = {}
    for name in HELPERS:
        value = getattr(mma, name)
        out[name] = mma.for_numba_cuda(value) or value  # a student's kernel is numba-cuda's (lab.teach.executor)
    return out


def build(prog: Program, module_name: str | None = None) -> types.ModuleType:
    """A module holding the file's kernels and the device functions they reach, built from the checked
    syntax trees (:func:`extract`) in this process: ``numba.cuda`` is this process's (the
    simulator's where NUMBA_ENABLE_CUDASIM is on, else the real one), decorated here with
    ``cuda.jit`` and the options the file gave; the module's globals are the allow-list's objects,
    the constants and these functions; its builtins :data:`BUILTINS`. The file's line numbers stay
    (its text is what :mod:`linecache` gives for ``prog.path``). Nothing of the file runs: its
    ``def`` statements define functions."""
    import numba
    from numba import cuda

    base = os.path.basename(prog.path)
    name = module_name or f"student_{os.path.splitext(base)[0]}"
    lines = prog.text.splitlines(keepends=True)
    linecache.cache[prog.path] = (len(prog.text), None, lines, prog.path)  # the text checked, not the file now
    mod = types.ModuleType(name)
    g = mod.__dict__
    g["__builtins__"] = {n: getattr(builtins, n) for n in BUILTINS if hasattr(builtins, n)}
    g["__file__"] = prog.path
    helpers = None
    for alias, (kind, attr) in prog.imports.items():
        if kind == "cuda":
            g[alias] = cuda
        elif kind == "math":
            g[alias] = math if attr is None else getattr(math, attr)
        elif kind == "numpy":
            g[alias] = np if attr is None else getattr(np, attr)
        elif kind == "numba":
            g[alias] = numba
        elif kind == "type":
            g[alias] = getattr(numba, attr)
        elif kind == "helper":
            helpers = helpers or _helpers()
            g[alias] = helpers[attr]
        # cpu_jit: only a decorator's name, which the kernel never reaches
    g.update(prog.constants)
    body = [_strip(prog.functions[n]) for n in prog.device_code]
    code = compile(ast.Module(body=body, type_ignores=[]), prog.path, "exec", dont_inherit=True)
    exec(code, g)  # noqa: S102 - def statements of checked syntax trees only: functions are defined, none runs
    import inspect

    params = inspect.signature(cuda.jit).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for n in prog.device_code:
        kind = prog.kinds[n]
        if kind not in ("kernel", "device"):
            continue  # a plain helper a kernel calls: left as it is (a GPU compile names it; the simulator runs it)
        # the options this process's cuda.jit takes (the simulator's takes fewer: lineinfo ... mean nothing there)
        options = {k: v for k, v in (prog.options.get(n) or {}).items() if takes_any or k in params}
        sigs = prog.signatures.get(n)
        jit = cuda.jit(sigs[0] if sigs and len(sigs) == 1 else sigs, device=kind == "device", **options) if sigs \
            else cuda.jit(device=kind == "device", **options)
        g[n] = jit(g[n])
    return mod


def load(text: str, path, kernel: str, launch: str | None = None, module_name: str | None = None):
    """:func:`build` of :func:`extract`, with ``launch`` (when given) as a :class:`Launch` on the module."""
    prog = extract(text, path, kernel, launch)
    mod = build(prog, module_name)
    if launch:
        setattr(mod, launch, Launch(prog, launch))
    return mod


# --- launch(): an interpreter -----------------------------------------------------------------------------------
class _LaunchRules(ast.NodeVisitor):
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
                self.refuse(d, f"the default {_src(d)} is not a constant")
        if fn.args.vararg or fn.args.kwarg:
            self.refuse(fn, "*args and **kwargs")
        for stmt in fn.body:
            self.visit(stmt)

    def refuse(self, node, what):
        raise _fail(self.base, node, f"{what} in {self.prog.launch}(): the checker evaluates launch() itself "
                                     f"(arithmetic on its arguments, if, for over range, min, max, math.ceil ...) "
                                     f"and that is not among it")

    def generic_visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(node, self.STMTS):
            self.refuse(node, f"{type(node).__name__.lower()} ({_src(node)})")
        if isinstance(node, ast.expr) and not isinstance(node, self.EXPRS):
            self.refuse(node, f"{_src(node)}")
        super().generic_visit(node)

    def visit_Name(self, node):
        if node.id.startswith("_"):
            self.refuse(node, f"the name {node.id}")

    def visit_Attribute(self, node):
        mod = _module_of(self.prog, node.value)
        if not (mod == ("math", None) and node.attr in _LAUNCH_MATH or
                mod == ("numpy", None) and node.attr in _LAUNCH_NUMPY):
            self.refuse(node, _src(node))

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
            self.refuse(node, f"calling {_src(f)}")
        for n in [*node.args, *[k.value for k in node.keywords]]:
            self.visit(n)
        if isinstance(f, ast.Attribute):
            self.visit(f)

    def visit_For(self, node):
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            self.refuse(node, f"for over {_src(it)} (only over range(...))")
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
    syntax tree (checked by :class:`_LaunchRules`): ints, floats, bools and tuples of them only.
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
            return _binop(n.op, ev(n.left), ev(n.right))
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
            mod = _module_of(prog, n.value)
            if mod == ("math", None) and n.attr in _LAUNCH_MATH:
                return getattr(math, n.attr)
            if mod == ("numpy", None) and n.attr in _LAUNCH_NUMPY:
                return getattr(np, n.attr)
            raise TypeError(f"{_src(n)} is not evaluated here")
        if isinstance(n, ast.Call):
            f = n.func
            args_ = []
            for a in n.args:
                if isinstance(a, ast.Starred):
                    args_.extend(ev(a.value))
                else:
                    args_.append(ev(a))
            kwargs = {k.arg: ev(k.value) for k in n.keywords if k.arg}
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
                    return tuple(r)
            elif isinstance(f, ast.Name) and (prog.imports.get(f.id) or ("",))[0] == "math":
                fn_ = getattr(math, prog.imports[f.id][1])
            else:
                fn_ = ev(f)
            if not callable(fn_):
                raise TypeError(f"{_src(f)} is not callable")
            for a in args_:
                if isinstance(a, (tuple, list)) and len(a) > 64:
                    raise LaunchLimit("a tuple of more than 64 values")
            return _bounded(fn_(*args_, **kwargs))
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
            raise TypeError(f"assigning to {_src(target)}")

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
                    raise TypeError(f"assigning to {_src(s.target)}")
                env[s.target.id] = _binop(s.op, ev(ast.Name(id=s.target.id, ctx=ast.Load())), ev(s.value))
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
