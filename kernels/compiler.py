"""The one place kernels get ``cuda`` and the scalar types they cast with.

Every kernel module writes ``from kernels.compiler import cuda, float64, uint64`` (never
``from numba import cuda``), so the compiler is chosen in one place, once per process, before
anything compiles:

* numba-cuda-mlir, numba-cuda's successor (NVIDIA/numba-cuda issue 902): the same ``@cuda.jit``
  source, typed by a vendored Numba front end and lowered through MLIR. GPU only: it has no
  simulator. The default on a GPU where it is installed (Python >= 3.11, a CUDA 13 driver:
  ``kernels.backend.default_compiler``). When it is chosen nothing here imports ``numba``.
* numba-cuda (``numba.cuda``): the simulator, CUDA 12 machines, machines without numba-cuda-mlir,
  and ``LAB_COMPILER=numba-cuda`` (``lab ... --compiler numba-cuda``).

What the kernels import from here works under both compilers: ``cuda``, the scalar types
(``float32 ... uint64``, and ``uint16`` for bfloat16 bit patterns: each compiler's own type objects,
usable as casts and as shared-array dtypes), ``libdevice`` and ``overload`` (``numba.cuda.extending.overload``
or its MLIR twin), ``types`` (the type module that ``overload`` implementations compare argument types
against), and ``threadfence`` (``cuda.threadfence()``, which numba-cuda-mlir 0.6 types but cannot lower:
there it is the same ``membar.gl`` as one line of inline PTX).

``LAB_COMPILER`` names the compiler; unset, :func:`kernels.backend.default_compiler` decides (``WHY``
says why). On a GPU every kernel's ``cuda.jit`` caches what it compiles on disk
(:mod:`kernels.cache`; off with ``LAB_KERNEL_CACHE=0``).

Importing this module with numba-cuda first settles the backend (``kernels.backend.choose_default``:
the simulator when no GPU is usable and nobody chose). With numba-cuda-mlir a simulator request
(``NUMBA_ENABLE_CUDASIM=1``) is an ImportError.
"""
from __future__ import annotations

import os

from kernels import cache as _cache
from kernels.backend import choose_default, default_compiler, is_simulator

COMPILERS = ("numba-cuda", "numba-cuda-mlir")
COMPILER_ENV = "LAB_COMPILER"
MLIR = "numba-cuda-mlir"

# Rungs that do not run under numba-cuda-mlir, and why: (kernel, variant) -> reason. The runner
# shows them as skipped rows. Empty: all 32 rungs of the 7 kernels compiled and passed their checks
# under numba-cuda-mlir 0.6.0 on an H100, float32 and float64 (docs/benchmarks.md).
UNSUPPORTED: dict[tuple[str, str], str] = {}

COMPILER = os.environ.get(COMPILER_ENV, "")
if COMPILER:
    _inherited = os.environ.get("LAB_COMPILER_WHY", "")  # lab.core.compilers.select's reason
    WHY = _inherited[len(COMPILER) + 2:] if _inherited.startswith(f"{COMPILER}: ") else f"{COMPILER_ENV}={COMPILER}"
else:
    choose_default()  # settle the backend first: the default compiler depends on it
    COMPILER, WHY = default_compiler()
if COMPILER == "numba-cuda":
    choose_default()  # the simulator when no GPU is usable and nobody chose (a no-op once settled)


def _version(dist: str) -> str | None:
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


# Where the compiled kernels are cached (None: off, or the simulator, which compiles nothing)
CACHE_DIR = None if is_simulator() else _cache.configure(
    COMPILER, _version("numba-cuda" if COMPILER == "numba-cuda" else "numba_cuda_mlir"))

if COMPILER == "numba-cuda":
    choose_default()
    SIMULATOR = is_simulator()
    from numba import cuda  # noqa: F401
    from numba import float32, float64, int32, int64, uint8, uint16, uint32, uint64  # noqa: F401
    from numba.cuda import types  # noqa: F401

    if not SIMULATOR:
        from numba.cuda.core import config as _config

        if CACHE_DIR:  # read when the config loaded, which may have been before configure()
            _config.CACHE_DIR = CACHE_DIR
        cuda.jit = _cache.caching_jit(cuda.jit)

    @cuda.jit(device=True)
    def threadfence():
        """``cuda.threadfence()`` (a device function: kernels call it as a global name)."""
        cuda.threadfence()

    if SIMULATOR:  # the simulator has no libdevice or typed overloads; kernels take the Python path
        libdevice = overload = None
    else:
        from numba.cuda import libdevice  # noqa: F401
        from numba.cuda.extending import overload  # noqa: F401
elif COMPILER == MLIR:
    if is_simulator():
        raise ImportError(f"{MLIR} has no CUDA simulator (NUMBA_ENABLE_CUDASIM is set): "
                          f"use {COMPILER_ENV}=numba-cuda for the simulator")
    SIMULATOR = False
    from numba_cuda_mlir import cuda  # noqa: F401
    from numba_cuda_mlir.numba_cuda.core import config as _config

    if CACHE_DIR:
        _config.CACHE_DIR = CACHE_DIR
    cuda.jit = _cache.caching_jit(cuda.jit)
    from numba_cuda_mlir.cuda import libdevice  # noqa: F401
    from numba_cuda_mlir import extending as _extending
    from numba_cuda_mlir.numba_cuda import types  # noqa: F401
    from numba_cuda_mlir.types import float32, float64, int32, int64, uint8, uint16, uint32, uint64  # noqa: F401

    import numba_cuda_mlir.cuda.experimental as _experimental

    @cuda.jit(device=True, forceinline=True)
    def threadfence():
        """``cuda.threadfence()``: this thread's earlier writes are seen by every thread of the GPU before
        its later ones (PTX ``membar.gl``, what numba-cuda and CUDA C++'s ``__threadfence()`` emit)."""
        _experimental.inline_ptx("membar.gl;")

    def overload(func, target="cuda", **kwargs):
        """numba-cuda's ``overload(func, target="cuda")`` on numba-cuda-mlir, which has one target
        and wants the typing registry named (its ``extending.typing_registry`` is the installed one)."""
        kwargs.setdefault("typing_registry", _extending.typing_registry)
        return _extending.overload(func, **kwargs)
else:
    raise ImportError(f"{COMPILER_ENV}={COMPILER!r}: choose one of {', '.join(COMPILERS)}")
