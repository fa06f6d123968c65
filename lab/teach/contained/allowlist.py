"""What a student's file may name, for the exercise checker's reading of it as source
(:mod:`lab.teach.contained.source`): the allow-lists of its imports and of a kernel's names and attributes,
the limits of the judge's interpreter, and :class:`Program` (what was taken from a file). Data and
small helpers only; nothing here prints.

Sources: numba-cuda's "Supported Python features in CUDA Python" and its device API (CUDA Python:
"Thread indexing", "Memory management", "Synchronization and atomic operations", "Cooperative
groups", "Warp intrinsics", "Integer intrinsics", "Floating point intrinsics", "Cache hints").
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
import inspect

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
NP_CONSTANTS = ("pi", "e", "inf", "nan", "euler_gamma", "newaxis")
# pure array functions: NumPy calls a GPU cannot compile (np.dot ...) reach the offline compile's message;
# in the simulator they compute and touch nothing else
_NP_PURE = ("dot", "vdot", "inner", "outer", "sum", "prod", "min", "max", "amin", "amax", "mean", "std", "var",
            "argmin", "argmax", "all", "any", "cumsum", "cumprod", "sort", "argsort", "where", "clip", "round",
            "around", "isclose", "allclose", "array_equal", "zeros", "ones", "empty", "full", "zeros_like",
            "ones_like", "empty_like", "full_like", "arange", "linspace", "reshape", "ravel", "transpose",
            "count_nonzero", "searchsorted", "finfo", "iinfo", "dtype", "median", "nanmax", "nanmin", "nansum",
            "trace", "diag", "abs", "sign")
NUMPY_ATTRS = frozenset(  # (numpy's own namespace, not getattr: that would import its lazy submodules, f2py ...)
    [n for n, v in vars(np).items() if not n.startswith("_") and isinstance(v, np.ufunc)]
    + [n for n in _NP_TYPES if hasattr(np, n)] + [n for n in NP_CONSTANTS if hasattr(np, n)]
    + [n for n in _NP_PURE if hasattr(np, n)])
MATH_ATTRS = frozenset(n for n in dir(math) if not n.startswith("_"))


def _positional_before_out(fn) -> int | None:
    """How many positional arguments NumPy's ``fn`` takes before its ``out`` (a ufunc: its inputs;
    a function with an ``out`` parameter: those before it; None: no ``out``). A kernel's call gets at
    most that many, and no ``out=``: numpy would write a whole array past the tracer."""
    if isinstance(fn, np.ufunc):
        return fn.nin
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 0  # no signature to tell: no array argument past the first ... none at all
    names = [p.name for p in params]
    return names.index("out") if "out" in names else None


NUMPY_MAX_ARGS = {n: _positional_before_out(getattr(np, n)) for n in NUMPY_ATTRS if callable(getattr(np, n, None))
                  and not isinstance(getattr(np, n), type)}
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
CUDA_JIT_OPTIONS = frozenset({"device", "fastmath", "lineinfo", "debug", "opt", "inline", "forceinline",
                               "max_registers", "cache"})
ALLOWED_IMPORTS = ("numba's cuda and its number types (from numba import cuda, float32), math, numpy and "
                    f"the device helpers of {HELPER_MODULE} ({', '.join(HELPERS)})")
NOT_RUN = "the checker reads your file as source, it does not run it"
INT_LIMIT = 1 << 64  # |integer| a constant or launch() may compute
LAUNCH_STEPS = 100_000  # syntax-tree nodes launch() may evaluate


def failed_at(base: str, node, text: str) -> Failed:
    line = getattr(node, "lineno", None)
    return Failed(f"{base} line {line}: {text}" if line else f"{base}: {text}")


def source_of(node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node ast cannot unparse: its kind
        text = type(node).__name__
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class Program:
    """What :func:`extract` took from a file: ``path`` (its name: line numbers point into ``text``),
    ``kernel`` (the exercise's kernel), ``imports`` {name: ("cuda" | "math" | "numpy" | "numba" |
    "type", attribute) or ("helper", name) or ("cpu_jit", name)}, ``constants`` {name: value},
    ``functions`` {name: ast.FunctionDef}, ``kinds`` {name: "kernel" | "device" | "plain" | "cpu"},
    ``options`` {name: cuda.jit's keyword options}, ``signatures`` {name: cuda.jit's signatures or
    None}, ``device_code``: the names of the functions a kernel may reach (checked by the device
    rules), ``launch``: the launch function's name or None; ``work``: [steps] the judge's interpreter spent
    computing the constants (bounded as launch()'s)."""

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
    work: list = field(default_factory=lambda: [0])  # the judge's steps spent on the constants (source_eval)


def module_of(prog: Program, node) -> tuple | None:
    """What a name or dotted name refers to among the imports: ("cuda", None), ("numba", None), ... or None."""
    if isinstance(node, ast.Name):
        return prog.imports.get(node.id)
    if isinstance(node, ast.Attribute):
        inner = module_of(prog, node.value)
        if inner == ("numba", None) and node.attr == "cuda":
            return ("cuda", None)
        if inner == ("numba", None) and node.attr in CPU_JITS:
            return ("cpu_jit", node.attr)
        if inner == ("cuda", None) and node.attr == "jit":
            return ("cuda_jit", None)
    return None
