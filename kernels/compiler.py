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
from kernels.backend import choose_default, default_compiler, installed_version, is_simulator

# What kernels import from here: the compiler's own objects, bound below once the compiler is chosen
# (so imported inside the branch that chooses it, not at the top).
__all__ = ["COMPILERS", "COMPILER_ENV", "MLIR", "UNSUPPORTED", "COMPILER", "WHY", "CACHE_DIR", "SIMULATOR", "cuda",
           "types", "float32", "float64", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "libdevice",
           "overload", "threadfence", "bound", "launch_hooked", "native_launcher"]

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
_PLAIN_CALL = None  # numba-cuda-mlir's _ArgMarshaller.__call__ (bound())
_UNHOOKED = None  # (configured-launch class, its own __call__): launch_hooked()
if COMPILER == "numba-cuda":
    choose_default()  # the simulator when no GPU is usable and nobody chose (a no-op once settled)


# Where the compiled kernels are cached (None: off, or the simulator, which compiles nothing)
CACHE_DIR = None if is_simulator() else _cache.configure(
    COMPILER, installed_version("numba-cuda" if COMPILER == "numba-cuda" else "numba_cuda_mlir"))

_PLAIN_CALL = None  # numba-cuda-mlir's _ArgMarshaller.__call__ (bound())
if COMPILER == "numba-cuda":
    choose_default()
    SIMULATOR = is_simulator()
    from numba import cuda
    from numba import float32, float64, int32, int64, uint8, uint16, uint32, uint64
    from numba.cuda import types

    if not SIMULATOR:
        from numba.cuda.core import config as _config
        from numba.cuda.dispatcher import _LaunchConfiguration as _Configured

        _UNHOOKED = (_Configured, _Configured.__call__)  # launch_hooked(): before any hook wraps it

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
        from numba.cuda import libdevice
        from numba.cuda.extending import overload
elif COMPILER == MLIR:
    if is_simulator():
        raise ImportError(f"{MLIR} has no CUDA simulator (NUMBA_ENABLE_CUDASIM is set): "
                          f"use {COMPILER_ENV}=numba-cuda for the simulator")
    SIMULATOR = False
    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.numba_cuda.core import config as _config

    if CACHE_DIR:
        _config.CACHE_DIR = CACHE_DIR
    cuda.jit = _cache.caching_jit(cuda.jit)
    from numba_cuda_mlir.cuda import libdevice
    from numba_cuda_mlir import extending as _extending
    from numba_cuda_mlir.numba_cuda import types
    from numba_cuda_mlir.types import float32, float64, int32, int64, uint8, uint16, uint32, uint64

    import numba_cuda_mlir.cuda.experimental as _experimental
    from numba_cuda_mlir import descriptor as _descriptor

    # the configured launcher's own __call__, taken before any launch hook (lab.core.resources) wraps it
    _PLAIN_CALL = vars(getattr(_descriptor, "_ArgMarshaller", object)).get("__call__")
    if _PLAIN_CALL is not None:
        _UNHOOKED = (_descriptor._ArgMarshaller, _PLAIN_CALL)

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


def bound(configured, args: tuple):
    """``configured(*args)`` (a configured kernel, ``kernel[grid, block]``) as a zero-argument call, for
    a launch repeated with the same argument objects (a timed rung's call, the timer's L2 flush).

    Under numba-cuda-mlir the first call takes the usual path (types the arguments, compiles or
    loads, launches, and caches the argument types); from the second on, the calls go to the configured launcher's
    launch with those cached types (``_ArgMarshaller._launch``, what its own cached path calls after
    re-checking each array's dtype, layout and flags: ~1 s of a second ``lab run matvec``'s 46,604
    launches on the H200, under cProfile). Only when the cache holds exactly these arguments (device
    arrays, no extensions, no launch lock) and no launch hook is installed; otherwise, and under
    numba-cuda, every call is the plain call. The same kernel is launched with the same arguments
    either way."""
    if COMPILER != MLIR:
        return lambda: configured(*args)
    if _PLAIN_CALL is None:
        return lambda: configured(*args)
    fast = []  # [] before the first call; [None] after it; [launch] from the second call on

    def call():
        if not fast:  # a closure called once (a torch op's launch) pays nothing for the fast path
            fast.append(None)
            return configured(*args)
        if fast[0] is None:
            fast[0] = _cached_launch(configured, args) or (lambda: configured(*args))
        return fast[0]()

    return call


def _cached_launch(configured, args: tuple):
    """The launch of ``configured(*args)`` with the argument types its last call cached (see :func:`bound`),
    or None where that is not certain."""
    try:
        from numba_cuda_mlir import descriptor as D  # lazy: backend chosen first (numba_cuda_mlir)

        if (type(configured) is not D._ArgMarshaller or configured._extensions or configured._callbacks
                or getattr(configured._dispatcher, "_launch_lock", None) is not None
                or not all(isinstance(a, D.DeviceNDArrayBase) for a in args)):
            return None
        key = tuple(type(a) for a in args)
        cached = configured._sig_cache.get(key)
        if cached is None:
            return None
        argtypes, plain = cached
        if not plain:
            found = [types_ for types_, checks in configured._array_sig_cache.get(key, ())
                     if all(D._array_cache_key(args[i], types_[i]) == want for i, want in checks)]
            if len(found) != 1:
                return None
            argtypes = found[0]
        launch, cls = configured._launch, D._ArgMarshaller
        # while a launch hook wraps __call__ (lab.core.resources), every call goes through it
        return lambda: launch(argtypes, args) if cls.__call__ is _PLAIN_CALL else configured(*args)
    except Exception:  # another numba-cuda-mlir version: the plain call
        return None


def launch_hooked() -> bool:
    """True while a launch hook (lab.core.resources.launch_hook) wraps the configured launch's
    ``__call__``, or where that cannot be told (the simulator, another compiler version): callers that
    launch past ``__call__`` (:func:`native_launcher`, torch_bridge's FastKernel) then take the plain
    call, so that the hook sees every launch."""
    if _UNHOOKED is None:
        return True
    cls, plain = _UNHOOKED
    return cls.__call__ is not plain


def native_launcher(configured):
    """numba-cuda-mlir: the native launcher a configured kernel (``kernel[grid, block]``, configured
    without a stream) ends in after its first call (the C++ ``LaunchConfiguration`` that
    ``_ArgMarshaller._launch`` calls), or None where calling it directly is not the same launch:
    numba-cuda, another numba-cuda-mlir version, a configuration with a stream, extensions, callbacks,
    launch-config planners or literal arguments, or a free-threaded launch lock.

    The native launcher takes torch tensors, CuPy arrays and device arrays directly (the pointer,
    shape and strides read in C++: torch's through DLPack) and looks the compiled kernel up by the
    arguments' dtypes and ranks; with a torch tensor among the arguments and no stream configured, it
    launches on torch's current stream (numba-cuda-mlir 0.6.0, ``cext/launcher/kernel.cpp``). What it
    skips is the Python marshaller: argument typing, the signature caches, copies of host arrays
    (never wanted here) and the thread-local compile state, which only a compile reads: call
    ``configured`` once first so that the kernel for these dtypes and ranks is compiled."""
    if COMPILER != MLIR or _UNHOOKED is None:
        return None
    try:
        from numba_cuda_mlir import descriptor as D  # lazy: backend chosen first (numba_cuda_mlir)

        disp = configured._dispatcher
        if (type(configured) is not D._ArgMarshaller or configured._extensions or configured._callbacks
                or configured._launch_stream is not None or configured._launch_config is not None
                or getattr(disp, "_launch_lock", None) is not None or disp is None
                or getattr(disp, "_requires_launch_config", False) or getattr(disp, "_literal_arg_positions", ())
                or D._planner_registry.has_planners):
            return None
        return configured._launcher
    except Exception:  # another numba-cuda-mlir version: the plain call
        return None
