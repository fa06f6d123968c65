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

The allow-lists live in :mod:`lab.teach.contained.allowlist`, the device rules in
:mod:`lab.teach.contained.source_rules`, the interpreter of constants and ``launch()`` in
:mod:`lab.teach.contained.source_eval` (their public names are reachable from here).

Nothing here prints. Source: Python's ``ast`` module; numba-cuda's "Supported Python features in
CUDA Python" (what a kernel may use).
"""
from __future__ import annotations

import ast
import builtins
import linecache
import math
import os
import types
import inspect
import pickle

import numpy as np

from lab.teach.contained.allowlist import (ALLOWED_IMPORTS, CUDA_JIT_OPTIONS, BUILTINS, CPU_JITS, HELPER_MODULE,
                                           HELPERS, MATH_ATTRS, NOT_RUN, NUMBA_TYPES, NUMPY_ATTRS, SOURCE_CAP, Program,
                                           failed_at, module_of, source_of)
from lab.teach.messages import Failed
from lab.teach.contained.source_eval import Launch, LaunchRules, constant
from lab.teach.contained.source_rules import reach
from lab.teach.contained import syntax


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
        return data.decode("utf-8-sig")  # (a byte-order mark, as Python's own import takes it)
    except UnicodeDecodeError as e:
        raise Failed(f"{base} is not UTF-8 text (byte {e.start}): save it as UTF-8") from None


def extract(text: str, path, kernel: str, launch: str | None = None) -> Program:
    """The :class:`Program` of ``text`` (the student's file ``path``) for an exercise whose kernel is
    named ``kernel`` and whose launch function, if it has one, ``launch``. Failed, naming the line,
    for a SyntaxError, an import outside the allow-list, top-level code that is not an import, a
    constant, a function or the ``__main__`` block, a missing or undecorated kernel, a missing launch
    function, and a function a kernel reaches that breaks the device rules."""
    base = os.path.basename(str(path))
    try:
        tree = syntax.parse(text, filename=str(path))
    except SyntaxError as e:
        where = f" line {e.lineno}" if e.lineno else ""  # a file with null bytes has no line to name
        raise Failed(f"{base}{where}: SyntaxError: {e.msg}") from None
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
    prog.device_code = reach(prog, base)
    if launch:
        LaunchRules(prog, base).check(launch)
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
    raise failed_at(base, node, f"{what.get(type(node), 'a statement')} at the top level ({source_of(node)}): {NOT_RUN}: "
                            f"only imports, constants (NAME = 32), functions and an if __name__ == \"__main__\": "
                            f"block may be there")


def _is_main(test) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _bind(prog: Program, name: str, node, base: str) -> None:
    """``name`` is bound again: forget what it was (Python's last binding wins), refusing dunder names."""
    if name.startswith("__") and name.endswith("__"):
        raise failed_at(base, node, f"{name} cannot be set in a kernel's file")
    for table in (prog.imports, prog.constants, prog.functions, prog.kinds, prog.options, prog.signatures):
        table.pop(name, None)


def _imports(prog: Program, node, base: str) -> None:
    refused = failed_at(base, node, f"{source_of(node)}: only {ALLOWED_IMPORTS} may be imported ({NOT_RUN})")
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
            raise failed_at(base, node, f"{source_of(node)}: import names one by one, not * ({NOT_RUN})")
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
        return failed_at(base, node, f"{source_of(node)}: {what} is the lab's code, not yours: the kernel must be your own "
                                 f"code in {base} (only the device helpers of {HELPER_MODULE} may be imported)")
    return None


def _assignment(prog: Program, node, base: str) -> None:
    if isinstance(node, ast.AugAssign):
        if not isinstance(node.target, ast.Name) or node.target.id not in prog.constants:
            raise failed_at(base, node, f"{source_of(node)}: a constant can be changed only after it is set ({NOT_RUN})")
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
                    raise failed_at(base, node, f"{source_of(node)}: the values do not unpack into {len(t.elts)} names")
                for e, v in zip(t.elts, value):
                    _bind(prog, e.id, node, base)
                    prog.constants[e.id] = v
            return
        raise failed_at(base, node, f"{source_of(node)}: only names can be set at the top level ({NOT_RUN})")
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
        raise failed_at(base, node, f"{node.name} has {len(node.decorator_list)} decorators: only one @cuda.jit(...)")
    for dec in node.decorator_list:
        kind, options, sigs = _decorator(prog, dec, base)
    prog.functions[node.name] = node
    prog.kinds[node.name] = kind
    prog.options[node.name] = options
    prog.signatures[node.name] = sigs


def _decorator(prog: Program, dec, base: str) -> tuple:
    call = dec if isinstance(dec, ast.Call) else None
    target = module_of(prog, call.func if call else dec)
    if target is not None and target[0] == "cpu_jit":
        return "cpu", {}, None
    if target != ("cuda_jit", None):
        raise failed_at(base, dec, f"@{source_of(dec)}: the checker reads only @cuda.jit and @cuda.jit(device=True) "
                               f"(from numba import cuda)")
    options, sigs = {}, None
    if call is not None:
        if len(call.args) > 1:
            raise failed_at(base, dec, f"@{source_of(dec)}: at most one signature")
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
                raise failed_at(base, dec, f"@{source_of(dec)}: a signature must be a string (\"void(float32[:])\") here")
            for sig in sigs:
                if not _signature_ok(sig):  # numba evaluates a signature string as Python (sigutils)
                    raise failed_at(base, dec, f"@{source_of(dec)}: {sig[:60]!r} is not a signature of number types and "
                                           f"arrays (e.g. \"void(float32[:], float32[:, ::1])\")")
        for kw in call.keywords:
            if kw.arg not in CUDA_JIT_OPTIONS:
                raise failed_at(base, dec, f"@{source_of(dec)}: option {kw.arg} is not one the checker takes "
                                       f"({', '.join(sorted(CUDA_JIT_OPTIONS))})")
            try:
                value = ast.literal_eval(kw.value)
            except ValueError:
                raise failed_at(base, dec, f"@{source_of(dec)}: {kw.arg}= must be a constant") from None
            if not isinstance(value, (bool, int, str)) or isinstance(value, str) and len(value) > 32:
                raise failed_at(base, dec, f"@{source_of(dec)}: {kw.arg}= must be a bool, an int or a short string")
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
        tree = syntax.parse(sig, mode="eval")
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


# --- Building the kernel's module ------------------------------------------------------------------------------
def _strip(fn: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``fn`` without decorators, annotations or type comments (nothing evaluated when its
    ``def`` runs but the constant defaults the device rules allowed). The copy is a pickle round trip of the
    checked tree (bytes made here from its own nodes, never read from anywhere): the same nodes and line
    numbers as ``copy.deepcopy`` gives, about six times faster (every check builds its module)."""
    fn = pickle.loads(pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))  # noqa: S301 - our own bytes
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


_INT64 = "lab int64"  # int64_checked's name in a simulated kernel's module (a space: no name of the file's can be it)
_WRAPS = (ast.Add, ast.Sub, ast.Mult, ast.LShift, ast.Pow, ast.FloorDiv)


def int64_checked(value):
    """``value``, unless it is a Python int outside int64: OverflowError. The simulator runs a kernel's
    integer arithmetic with Python's unbounded ints, where a GPU wraps at 64 bits (numba types them
    int64): a kernel whose result depends on that wrap (``(tid + 2**62) * 2 > 0`` holds only in the
    simulator) would pass here what does something else on a GPU."""
    if value.__class__ is int and not -(1 << 63) <= value < (1 << 63):
        raise OverflowError(f"the integer {value} does not fit in 64 bits: on a GPU it wraps around silently "
                            f"(another value), in the simulator it stops here")
    return value


class _Int64Checks(ast.NodeTransformer):
    """A simulated kernel's arithmetic as numba types it on a GPU: every +, -, *, <<, ** and // (and
    augmented assignments to names, ``-x``) through :func:`int64_checked`; every number literal a
    NumPy scalar of numba's type for it (``literals``: {name: value} for the module; int64, uint64
    past it, float64), so that ``float32(1.0) + 1e-8`` is float64 as on a GPU, not float32 (NumPy's
    promotion of a Python float), and an int64 wraps as on a GPU. The line numbers stay."""

    def __init__(self):
        self.literals: dict = {}

    def visit_Constant(self, node):
        v = node.value
        if v.__class__ is int:
            number = np.int64(v) if -(1 << 63) <= v < (1 << 63) else np.uint64(v) if 0 <= v < (1 << 64) else None
        elif v.__class__ is float:
            number = np.float64(v)
        else:
            return node
        if number is None:
            return node
        name = f"lab literal {len(self.literals)}"  # (a space: no name of the file's, nor a local, can shadow it)
        self.literals[name] = number
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, _WRAPS):
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=_INT64, ctx=ast.Load()), args=[node], keywords=[]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.USub):
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=_INT64, ctx=ast.Load()), args=[node], keywords=[]), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, _WRAPS) or not isinstance(node.target, ast.Name):
            return node  # (a store into an array: NumPy refuses an int past its dtype itself)
        value = ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op, right=node.value)
        call = ast.Call(func=ast.Name(id=_INT64, ctx=ast.Load()), args=[ast.copy_location(value, node)], keywords=[])
        return ast.copy_location(ast.Assign(targets=[node.target], value=ast.copy_location(call, node)), node)


def _helpers():
    from kernels.gemm import mma  # lazy: backend chosen first (numba)

    out = {}
    for name in HELPERS:
        value = getattr(mma, name)
        out[name] = mma.for_numba_cuda(value) or value  # a student's kernel is numba-cuda's (lab.teach.contained.executor)
    return out


def build(prog: Program, module_name: str | None = None) -> types.ModuleType:
    """A module holding the file's kernels and the device functions they reach, built from the checked
    syntax trees (:func:`extract`) in this process: ``numba.cuda`` is this process's (the
    simulator's where NUMBA_ENABLE_CUDASIM is on, else the real one), decorated here with
    ``cuda.jit`` and the options the file gave; the module's globals are the allow-list's objects,
    the constants and these functions; its builtins :data:`BUILTINS`. The file's line numbers stay
    (its text is what :mod:`linecache` gives for ``prog.path``). Nothing of the file runs: its
    ``def`` statements define functions."""
    import numba  # lazy: backend chosen first (numba)
    from numba import cuda  # lazy: backend chosen first (numba)

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
    if cuda.jit.__module__.startswith("numba.cuda.simulator"):  # Python runs the kernel here: numba's numbers
        g[_INT64] = int64_checked
        checks = _Int64Checks()
        body = [ast.fix_missing_locations(checks.visit(fn)) for fn in body]
        g.update(checks.literals)
    code = syntax.compile_tree(ast.Module(body=body, type_ignores=[]), prog.path, "exec", dont_inherit=True)
    exec(code, g)  # noqa: S102 - def statements of checked syntax trees only: functions are defined, none runs
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
