"""The compiled-kernel cache: a second identical ``lab run`` loads its kernels instead of compiling them.

Both compilers have Numba's on-disk cache (``@cuda.jit(cache=True)``; numba-cuda's ``CUDACache``,
numba-cuda-mlir's ``MLIRCache``): an index file per Python function and one data file per compiled
signature, written to ``NUMBA_CACHE_DIR``. An entry is found again by

* the kernel's source file: its path, modification time and size (any edit of that file drops the
  file's index),
* the signature (argument types), the function's bytecode and its closure's values (a factory's
  per-size constants),
* the compiler's "magic tuple": the CUDA runtime version and the device's compute capability
  (numba-cuda-mlir adds the target chip, LTO and launch bounds).

Numba does not notice a change in *another* file that a kernel calls into (a device function of
kernels/warp.py used by kernels/matvec.py). The lab closes that hole with the folder: entries live
in ``<user cache>/kernels/<compiler>-<version>/<sources key>/``, where the sources key hashes every
``.py`` file of the ``kernels`` package, so an edit anywhere in it starts a fresh folder (older ones
are pruned, :data:`KEEP` are kept per compiler).

Generated kernels (source text built at run time and ``exec``'d) have no file, and Numba caches
only functions with one: :func:`exec_generated` writes such a source to a file named by the hash of
its text and compiles it from there, so the same text is the same cache entry in every process.

:func:`caching_jit` wraps a compiler's ``cuda.jit`` (``kernels.compiler`` installs it on a GPU):
every kernel (not device functions) whose source is a file gets ``cache=True``; a cache that cannot
be read or written (a read-only home, a sandbox) is dropped for that kernel, never an error. Off
with ``LAB_KERNEL_CACHE=0``. ``NUMBA_CACHE_DIR`` set by the user
is respected as it is. The simulator compiles nothing and caches nothing.

A miss of a kernel's cache is where the compiler starts compiling in this process. Inside
:func:`no_compile` it raises :class:`WouldCompile` instead (the lab then has a child process compile
it: ``lab.core.compile_child``); elsewhere it writes a crash marker, ``<user cache>/kernels/compiling/
<host>-<pid>.json`` (the kernel, and what ``compiling_for`` names: compiler and rung), removed once the
compile is saved, so that a process killed by a compiler abort is named by the next run
(:func:`crashed_compiles`). With the cache off neither happens.

Source: Numba's documentation, "Notes on Caching" (numba.readthedocs.io, developer/caching.html),
and numba-cuda-mlir 0.6.0's ``numba_cuda_mlir/caching.py``. Nothing here imports a compiler.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import linecache
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
import sys

ENV = "LAB_KERNEL_CACHE"  # "0" / "off" / "no" / "false": no kernel cache
NUMBA_ENV = "NUMBA_CACHE_DIR"
_OURS = "LAB_NUMBA_CACHE_DIR"  # the NUMBA_CACHE_DIR the lab set (a child process recomputes it)
KEEP = 3  # sources-key folders kept per compiler and version
PACKAGE = Path(__file__).resolve().parent

_READY = [False]  # configure() found a folder (or the user's NUMBA_CACHE_DIR): kernels may cache
STATS = {"hits": 0, "misses": 0, "saved": 0, "errors": 0, "kernels": 0,
         "children": 0}  # children: compile or fallback child processes started (lab.core.compile_child)
STATS_ENV = "LAB_KERNEL_CACHE_STATS"  # set: this process writes STATS to stderr at exit (diagnostics)


def _report_stats() -> None:
    sys.stderr.write(f"kernel cache ({os.environ.get(NUMBA_ENV)}): {STATS}\n")


if os.environ.get(STATS_ENV, "0").strip().lower() not in ("", "0", "off", "no", "false"):
    atexit.register(_report_stats)


def enabled() -> bool:
    """Whether the kernel cache is on (``LAB_KERNEL_CACHE`` not 0/off/no/false)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def root() -> Path:
    """``<user cache>/kernels``: platformdirs' user cache dir (or ``$LAB_CACHE_DIR``, as for the tuned cache)."""
    env = os.environ.get("LAB_CACHE_DIR")  # kernels.tuning.CACHE_ENV (not imported: it imports kernels.compiler)
    if env:
        return Path(env) / "kernels"
    try:
        import platformdirs  # lazy: optional (platformdirs: the fallback when it is missing)
    except ImportError:  # a declared dependency; the fallback is its Linux answer
        return Path.home() / ".cache" / "numba-gpu-lab" / "kernels"
    return Path(platformdirs.user_cache_dir("numba-gpu-lab")) / "kernels"


def sources_key(package: Path | str = PACKAGE) -> str:
    """16 hex digits of SHA-256 over every ``.py`` file under ``package`` (relative path and bytes,
    in sorted order): the same sources give the same key on every machine, any edit another."""
    h = hashlib.sha256()
    base = Path(package)
    for path in sorted(base.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(path.relative_to(base).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def directory(compiler: str, version: str | None, key: str | None = None) -> Path:
    """The cache folder of ``compiler`` at ``version`` for the current kernel sources."""
    return root() / f"{compiler}-{version or 'unknown'}" / (key or sources_key())


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP` most recently used sources-key folders beside ``folder``."""
    try:
        siblings = sorted((p for p in folder.parent.iterdir() if p.is_dir() and p != folder),
                          key=lambda p: p.stat().st_mtime, reverse=True)
        for old in siblings[KEEP - 1:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass


def configure(compiler: str, version: str | None) -> str | None:
    """Point ``NUMBA_CACHE_DIR`` at this compiler's folder before the compiler is imported; returns
    the folder in use (None when the cache is off or its folder cannot be made). A value the user
    set is kept; one the lab set for another compiler (inherited by a child process) is replaced."""
    _READY[0] = False
    if not enabled():
        return None
    current = os.environ.get(NUMBA_ENV)
    if current and current != os.environ.get(_OURS):
        _READY[0] = True
        return current
    folder = directory(compiler, version)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)
    except OSError:  # no cache here; a folder inherited from a parent lab process is not used either
        if current:
            os.environ.pop(NUMBA_ENV, None)
            os.environ.pop(_OURS, None)
        return None
    _prune(folder)
    os.environ[NUMBA_ENV] = os.environ[_OURS] = str(folder)
    _READY[0] = True
    return str(folder)


def location() -> str | None:
    """The folder the compilers cache into in this process (None when off or not configured)."""
    return os.environ.get(NUMBA_ENV) if enabled() and _READY[0] else None


def usage(path: Path | str | None = None) -> tuple[Path, int, int]:
    """(folder, bytes, files) of the kernel cache under ``path`` (default :func:`root`)."""
    base = Path(path) if path is not None else root()
    total = count = 0
    if base.is_dir():
        for dirpath, _, files in os.walk(base):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(dirpath, name))
                    count += 1
                except OSError:
                    pass
    return base, total, count


# --- generated kernels -------------------------------------------------------------------------
def source_file(source: str, tag: str = "generated") -> str:
    """The path of a file holding ``source``, named by its hash under ``<root>/generated`` (written
    once, atomically, never rewritten: its modification time is then a stable part of Numba's key).
    Falls back to a pseudo-file name registered in ``linecache`` when nothing can be written."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    name = f"{''.join(c if c.isalnum() else '_' for c in tag)}_{digest}.py"
    if enabled():
        folder = root() / "generated"
        path = folder / name
        try:
            if not path.is_file() or path.read_text() != source:
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(source)
                os.replace(tmp, path)
            return str(path)
        except OSError:
            pass
    fake = f"<lab-generated {name}>"
    linecache.cache[fake] = (len(source), None, source.splitlines(True), fake)
    return fake


def exec_generated(source: str, namespace: dict, tag: str = "generated") -> dict:
    """``exec`` generated kernel ``source`` in ``namespace`` as if it were a module file
    (:func:`source_file`), so its ``@cuda.jit`` kernels are cacheable under a key that depends only
    on the text; returns ``namespace``."""
    exec(compile(source, source_file(source, tag), "exec"), namespace)  # noqa: S102 (the lab's own generated source)
    return namespace


# --- cache=True for every kernel -------------------------------------------------------------------
# files whose compiled kernels are never cached: the exercises' reference solutions and hidden tests
# (a cache entry holds their code as a kernel; Numba's in-tree cache would write it to __pycache__
# beside them, where a student reads it)
UNCACHED_NAMES = ("solution.py", "hidden.py")


def cacheable(func) -> bool:
    """Whether Numba can cache ``func``: a Python function whose source is a file on disk, other than
    one of :data:`UNCACHED_NAMES`."""
    code = getattr(func, "__code__", None)
    return (code is not None and os.path.isfile(code.co_filename)
            and os.path.basename(code.co_filename) not in UNCACHED_NAMES)


def _guard(disp):
    """Make ``disp``'s disk cache fail-safe: a load or save that raises counts an error, and the
    kernel then compiles (or stays compiled) as without a cache. A miss is where the compiler is
    about to compile in this process: inside :func:`no_compile` it raises :class:`WouldCompile`
    instead; elsewhere it writes the crash marker (:func:`crashed_compiles`), which the save after
    the compile removes."""
    cache = getattr(disp, "_cache", None)
    if cache is None or type(cache).__name__ == "NullCache" or getattr(cache, "_lab_guarded", False):
        return disp
    load, save = cache.load_overload, cache.save_overload

    def load_overload(*args, **kwargs):
        try:
            found = load(*args, **kwargs)
        except Exception:
            STATS["errors"] += 1
            found = None
        else:
            STATS["hits" if found is not None else "misses"] += 1
        if found is None:
            _missed(disp, args[0] if args else None)
        return found

    def save_overload(*args, **kwargs):
        try:
            save(*args, **kwargs)
            STATS["saved"] += 1
        except Exception:
            STATS["errors"] += 1
        finally:
            clear_marker()

    cache.load_overload, cache.save_overload, cache._lab_guarded = load_overload, save_overload, True
    STATS["kernels"] += 1
    return disp


def _decorate(jit, func, args: tuple, kwargs: dict, bare: bool):
    """``jit(func, *args, **kwargs)`` (``bare``) or ``jit(*args, **kwargs)(func)``, with ``cache=True``
    when ``func`` is cacheable; without it when the cache cannot be set up."""
    def build(**extra):
        opts = dict(kwargs, **extra)
        return jit(func, *args, **opts) if bare else jit(*args, **opts)(func)

    if not cacheable(func):
        return build()
    try:
        disp = build(cache=True)
    except Exception:  # no usable cache folder (Numba: "cannot cache function ..."): compile without
        STATS["errors"] += 1
        return build()
    return _guard(disp)


def caching_jit(jit):
    """``jit`` (a compiler's ``cuda.jit``) that adds ``cache=True`` to kernels from source files,
    checked at each decoration (``LAB_KERNEL_CACHE``, and :func:`configure` found a folder). Device functions and calls that name
    ``cache`` themselves pass through unchanged."""
    if getattr(jit, "_lab_caching", False):
        return jit

    @functools.wraps(jit)
    def wrapper(*args, **kwargs):
        if not (enabled() and _READY[0]) or kwargs.get("device") or "cache" in kwargs:
            return jit(*args, **kwargs)
        if args and hasattr(args[0], "__code__"):  # @cuda.jit, cuda.jit(func, **options)
            return _decorate(jit, args[0], args[1:], kwargs, bare=True)
        return lambda func: _decorate(jit, func, args, kwargs, bare=False)  # @cuda.jit(sig, **options)

    wrapper._lab_caching = True
    wrapper.__wrapped__ = jit
    return wrapper


# --- compiles that a crash can interrupt: the probe and the crash marker ---------------------------
# A compiler that aborts (numba-cuda-mlir 0.6.0 once did, in mlir_optimization.optimize, after many
# compiles in one pytest worker: docs/upstream-numba-cuda-mlir-abort.md) takes its process down with
# it. The lab (lab.core.compile_child) therefore asks first whether a call would compile
# (:func:`no_compile`) and has a child process compile what would; a compile that still happens in
# a process leaves a marker file while it runs, so that the next lab process can say what killed it.
class WouldCompile(RuntimeError):
    """Raised by a cached kernel's lookup inside :func:`no_compile` when the kernel is not in the
    cache: this process was about to compile it. Nothing was compiled or changed."""


_PROBE = [0, False]  # [depth of no_compile(), whether a WouldCompile was raised in the outermost one]
_CONTEXT: dict = {}  # what is being compiled for (compiling_for): written into the crash marker
MISS_HOOKS: list = []  # callables run at a miss outside no_compile (the compile child's test-only abort)
MARKERS = "compiling"  # <root>/compiling/<host>-<pid>.json while this process compiles a kernel


@contextlib.contextmanager
def no_compile():
    """Inside: a kernel that would compile (a miss of its disk cache) raises :class:`WouldCompile`
    instead; kernels in the cache (or already in memory) load and run. :func:`would_have_compiled`
    says, inside the block, whether one was raised (also when a compiler wrapped it in its own error)."""
    if _PROBE[0] == 0:
        _PROBE[1] = False
    _PROBE[0] += 1
    try:
        yield
    finally:
        _PROBE[0] -= 1


@contextlib.contextmanager
def compile_allowed(what: str):
    """Inside a :func:`no_compile` block, let ``what`` -- one of the lab's own helper kernels (the
    timer's blocking kernel and L2 flush, lab.core.timing), never a rung -- compile in this process
    (its crash marker names it); the block's probe is as before on the way out."""
    depth = _PROBE[0]
    _PROBE[0] = 0
    try:
        with compiling_for(rung=what):
            yield
    finally:
        _PROBE[0] = depth


def would_have_compiled() -> bool:
    """Whether the :func:`no_compile` block this code runs in stopped a compile (False outside one)."""
    return _PROBE[0] > 0 and _PROBE[1]


@contextlib.contextmanager
def compiling_for(**context):
    """Name what a compile inside is for (``compiler``, ``rung``: "softmax/group_rows (float64, ...)")
    in the crash marker; the marker is removed on the way out, however the block ends."""
    saved = dict(_CONTEXT)
    _CONTEXT.clear()
    _CONTEXT.update(context)
    try:
        yield
    finally:
        _CONTEXT.clear()
        _CONTEXT.update(saved)
        clear_marker()


def _missed(disp, sig) -> None:
    func = getattr(disp, "py_func", None)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(disp).__name__
    if _PROBE[0]:
        _PROBE[1] = True
        raise WouldCompile(f"{name} is not in the kernel cache: calling it would compile it")
    _mark({"kernel": name, "signature": str(sig) if sig is not None else None})
    for hook in list(MISS_HOOKS):
        hook()


def marker_path(pid: int | None = None) -> Path:
    """The crash marker of process ``pid`` (default: this one) on this host."""
    return root() / MARKERS / f"{socket.gethostname()}-{pid or os.getpid()}.json"


_ATEXIT = [False]


def _mark(facts: dict) -> None:
    """Write this process's crash marker (atomically; never an error): it is compiling now."""
    doc = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
           "compiler": _CONTEXT.get("compiler") or os.environ.get("LAB_COMPILER") or None,
           "rung": _CONTEXT.get("rung"), **facts}
    path = marker_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    except OSError:
        return
    if not _ATEXIT[0]:  # a compile that raised leaves no marker behind at a normal exit
        atexit.register(clear_marker)
        _ATEXIT[0] = True


def clear_marker(pid: int | None = None) -> None:
    """Remove the crash marker of process ``pid`` (default: this one), if any."""
    try:
        marker_path(pid).unlink()
    except OSError:
        pass


def read_marker(pid: int | None = None) -> dict | None:
    """The crash marker of process ``pid`` on this host (None when there is none)."""
    try:
        return json.loads(marker_path(pid).read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


def crashed_compiles(forget: bool = True) -> list[dict]:
    """Crash markers left on this host by processes that are gone: each one died while it compiled
    (a compiler abort or segfault, or a kill). Each dict: pid, host, started (epoch s), compiler,
    rung (or None outside ``lab run``), kernel (the Python function), signature. ``forget``: remove
    them once read (each is reported once)."""
    folder = root() / MARKERS
    prefix = socket.gethostname() + "-"
    found = []
    try:
        paths = sorted(folder.glob(prefix + "*.json"))
    except OSError:
        return found
    for path in paths:
        try:
            pid = int(path.stem[len(prefix):])
        except ValueError:
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            doc = {"pid": pid}
        found.append(doc)
        if forget:
            with contextlib.suppress(OSError):
                path.unlink()
    return found
