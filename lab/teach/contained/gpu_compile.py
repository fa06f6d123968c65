"""Does the student's kernel compile for a real GPU? The simulator runs a kernel as plain Python, so
``np.dot`` inside a kernel, ``sum()`` over a generator or a call to an undecorated helper pass there
and fail on a GPU. This compiles the kernel offline (numba-cuda's ``cuda.compile_ptx``: typing,
lowering and NVVM, no GPU needed) for compute capability :data:`CC` with the argument types of the
hidden tests, and turns the compiler's error into one line at the student's line:
``does not compile for a GPU: np.dot is not supported in a CUDA kernel (line 7)``.

In a process that runs the simulator (``NUMBA_ENABLE_CUDASIM=1``) ``numba.cuda`` *is* the simulator,
so the compile runs in a child process without it (``python -m lab.teach.contained.gpu_compile``), like
``lab occupancy``'s offline compile (:mod:`lab.core.resources`), from the file's source
(:func:`compile_source`: the kernel built from its checked syntax tree, the file never imported).
Results are cached per source,
argument types and numba-cuda version; only the compiler's verdicts (compiled, or an error in the
student's code) are: a compile that could not run (no NVVM, out of memory, a killed or timed-out
process) is tried again at the next check. Without NVVM/NVRTC (``pip install 'numba-gpu-lab[occupancy]'``)
the check is skipped with a note saying so. ``LAB_GPU_COMPILE=0`` turns it off.

Source: Numba for CUDA GPUs, "Supported Python features in CUDA Python" (numba-cuda docs).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import linecache
from importlib import metadata
from importlib.metadata import PackageNotFoundError

import numpy as np
from kernels.tuning import cache_dir
from lab.core import session
from lab.core.files import write_atomic
from lab.core.isolation import lockdown
from lab.core.session import child_env
from lab.teach.contained import source
from lab.teach.contained.source import read
from lab.teach.messages import Failed

CC = (7, 5)  # Turing (Colab's T4): the oldest target the lab's students meet
ENABLE_HINT = "pip install 'numba-gpu-lab[occupancy]' (numba-cuda[cu13]: NVVM and NVRTC)"
ENV = "LAB_GPU_COMPILE"


def enabled() -> bool:
    return os.environ.get(ENV, "1") not in ("0", "", "no", "off")


def arg_types(case) -> list:
    """The kernel's argument types for hidden test ``case`` as JSON-able descriptors:
    ``["array", dtype, ndim, layout]`` (outputs are C-contiguous device arrays) or ``["scalar", name]``
    (a Python float is float64 and an int int64, as Numba types them at a launch)."""
    out = []
    for a in case.args:
        if isinstance(a, np.ndarray):
            out.append(["array", a.dtype.str, a.ndim, "C" if a.flags.c_contiguous else "A"])
        elif isinstance(a, (bool, np.bool_)):
            out.append(["scalar", "boolean"])
        elif isinstance(a, np.generic):
            out.append(["scalar", np.dtype(type(a)).name])
        elif isinstance(a, int):
            out.append(["scalar", "int64"])
        elif isinstance(a, float):
            out.append(["scalar", "float64"])
        else:
            out.append(["scalar", "float64"])
    for shape, dt in case.outputs:
        out.append(["array", np.dtype(dt).str, max(len(tuple(shape)), 1), "C"])
    return out


def _numba_sig(desc):
    from numba import types  # lazy: backend chosen first (numba)
    from numba.np.numpy_support import from_dtype  # lazy: backend chosen first (numba)

    return tuple(types.Array(from_dtype(np.dtype(d[1])), d[2], d[3]) if d[0] == "array" else getattr(types, d[1])
                 for d in desc)


# --- The compiler's message, in the student's words --------------------------------------------------
_FUNC = re.compile(r"No implementation of function Function\(<(?:built-in )?function (\w+)[^>]*>\) found for "
                   r"signature:\s*>>> \w+\((.*?)\)\s*$", re.M | re.S)
_UNTYPED = re.compile(r"Untyped global name '(\w+)'(?::\s*(.*))?")
_NP_FUNC = re.compile(r"Use of unsupported NumPy function '([\w.]+)'")
_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def _source_line(path, line):
    """Line ``line`` of the student's source: the text the checker read (:mod:`linecache`, filled by
    :func:`lab.teach.contained.source.build`), else the file."""
    try:
        return linecache.getline(path, int(line)).rstrip("\n")
    except (TypeError, ValueError):
        return ""


def student_line(text: str, path: str, loc_line: int | None = None) -> int | None:
    """The line of the student's file that the compiler's message points at (the last one named)."""
    base = os.path.basename(path)
    lines = [int(n) for f, n in _LINE.findall(text) if os.path.basename(f) == base]
    return lines[-1] if lines else loc_line


def explain(text: str, path: str, line: int | None) -> str:
    """One sentence for a numba-cuda compile error ``text`` at ``line`` of the student's file ``path``."""
    src = _source_line(path, line) if line else ""
    m = _FUNC.search(text)
    if m:
        name = m.group(1)
        dotted = (re.search(r"\b((?:np|numpy)\.)" + re.escape(name) + r"\s*\(", src)
                  or re.search(r"([A-Za-z_][\w.]*\.)?\b" + re.escape(name) + r"\s*\(", src))
        shown = (dotted.group(1) or "") + name if dotted else name
        if "." in shown and shown.split(".")[0] in ("np", "numpy"):
            return f"{shown} is not supported in a CUDA kernel"
        args = " ".join(m.group(2).split())
        return f"{shown}({args}) is not supported in a CUDA kernel"
    m = _NP_FUNC.search(text)
    if m:
        return f"{m.group(1).replace('numpy.', 'np.')} is not supported in a CUDA kernel"
    if "use of yield in a closure" in text or "generator" in text.lower() and "unsupported" in text.lower():
        return ("a generator expression (e.g. sum(v for v in ...)) is not supported in a CUDA kernel: "
                "write the loop out")
    m = _UNTYPED.search(text)
    if m:
        what = m.group(2) or ""
        if "function" in what:
            return (f"{m.group(1)} is a plain Python function: a kernel can call only device functions "
                    f"(@cuda.jit(device=True)) and the supported math")
        return f"{m.group(1)} cannot be used in a CUDA kernel ({what.strip() or 'untyped global'})"
    if "list" in text and "reflected list" in text:
        return "Python lists cannot be used in a CUDA kernel: use an array (cuda.local.array)"
    for ln in text.splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("Failed in", "During:", "File ", ">>>", "- ", "^", "<source")):
            return ln[:160]
    return "the compiler rejected it"


def compile_here(py_func, sigs: list, path: str, cc) -> dict:
    """In a process whose ``numba.cuda`` is the real one: compile ``py_func`` for each signature.
    Returns {"ok": True, "ptx": [the PTX of each signature]} or {"ok": False, "message", "line"}."""
    from numba import cuda  # lazy: backend chosen first (numba)

    import numba.cuda.dispatcher as dispatcher  # lazy: backend chosen first (numba)

    class _Target:  # device functions ask the current device for its cc: answer the target's
        compute_capability = tuple(cc)

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Target
    ptx = []
    try:
        for desc in sigs:
            try:
                ptx.append(cuda.compile_ptx(py_func, _numba_sig(desc), cc=tuple(cc))[0])
            except Exception as e:  # noqa: BLE001 - the compiler's verdict on the student's code, unless
                if _environment_error(e):  # the toolchain itself failed: no verdict, tried again next check
                    return {"skipped": f"the compiler could not run ({type(e).__name__}: "
                                       f"{' '.join(str(e).split())[:120]})"}
                text = str(e)
                line = student_line(text, path, _loc_line(e, path))
                return {"ok": False, "message": explain(text, path, line), "line": line}
    finally:
        dispatcher.get_current_device = saved
    return {"ok": True, "ptx": ptx}


PTX_CAP = 4 << 20  # bytes of PTX per signature taken as evidence at most
_PTX_VERSION = re.compile(r"^\s*\.version\s+\d+\.\d+\s*$", re.M)
_PTX_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+)", re.M)
_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([\w$]+)", re.M)


def ptx_problem(ptx, kernel: str, cc) -> str | None:
    """None when ``ptx`` is the evidence of a compile of ``kernel`` for ``cc``: text of at most
    :data:`PTX_CAP` bytes with a PTX ``.version``, ``.target sm_XY`` of that compute capability and
    an ``.entry`` whose (mangled) name holds the kernel's name; else what is wrong. Source: PTX ISA,
    "PTX Module Directives" and "Kernel and Function Directives: .entry"."""
    if not isinstance(ptx, str) or not ptx.strip():
        return "no PTX"
    if len(ptx) > PTX_CAP:
        return f"PTX larger than {PTX_CAP} bytes"
    if not _PTX_VERSION.search(ptx):
        return "not PTX (no .version directive)"
    target = _PTX_TARGET.search(ptx)
    want = f"{int(cc[0])}{int(cc[1])}"
    if not target or target.group(1) != want:
        return f"PTX for {('sm_' + target.group(1)) if target else 'no target'}, not sm_{want}"
    if not any(kernel in name for name in _PTX_ENTRY.findall(ptx)):
        return f"no .entry for {kernel} in the PTX"
    return None


def verified(result, kernel: str, nsigs: int, cc) -> dict:
    """A compile result that a child handed back, taken only for what the parent can check: an
    "ok" stands only with a PTX per signature that :func:`ptx_problem` accepts (else it is a
    failure naming what was wrong); a compiler error or a skip is the child's word (it can only
    hurt the submission itself). Returns {"ok": True, "ptx"}, {"ok": False, "message", "line"} or
    {"skipped": why}."""
    if not isinstance(result, dict):
        return {"ok": False, "message": "the compile returned no result", "line": None}
    if "skipped" in result:
        return {"skipped": str(result["skipped"])[:300], **({"broken": True} if result.get("broken") else {})}
    if result.get("ok") is True:
        ptx = result.get("ptx")
        if not isinstance(ptx, list) or len(ptx) != nsigs:
            return {"ok": False, "line": None, "message": f"the compile said ok without the PTX of its "
                                                          f"{nsigs} signature(s) (not a compiler's result)"}
        for text in ptx:
            why = ptx_problem(text, kernel, cc)
            if why:
                return {"ok": False, "line": None, "message": f"the compile said ok, but its evidence is not a "
                                                              f"compile of {kernel} ({why})"}
        return {"ok": True, "ptx": list(ptx)}
    line = result.get("line")
    return {"ok": False, "message": str(result.get("message"))[:300], "line": line if isinstance(line, int) else None}


def _environment_error(e: BaseException) -> bool:
    """True when ``e`` (or one it was raised from, ``raise ... from``) is the compiler's environment
    failing, not a verdict on the code: NVVM, NVRTC or the CUDA driver missing or failing to load
    (numba-cuda's ``*SupportError`` are ImportErrors), the driver's errors, an unsupported compute
    capability, out of memory, a file the toolchain needs unreadable (OSError)."""
    from numba.cuda.cudadrv import error as cuda_errors  # lazy: backend chosen first (numba)

    driver = ("CudaDriverError", "CudaRuntimeError", "CCSupportError")  # (the simulator's module has fewer)
    transient = (ImportError, MemoryError, OSError,
                 *(getattr(cuda_errors, n) for n in driver if hasattr(cuda_errors, n)))
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, transient):
            return True
        seen.add(id(e))
        e = e.__cause__  # not __context__: an error met while handling another can still be the student's
    return False


def _loc_line(e, path) -> int | None:
    """The student's line from the error's ``loc``, or from the ``loc`` of the typing constraint that
    raised it (a numba.core TypingError raised inside numba-cuda's type inference carries none)."""
    base = os.path.basename(path)

    def line_of(loc):
        if loc is not None and getattr(loc, "line", None) and os.path.basename(str(getattr(loc, "filename", ""))) == base:
            return int(loc.line)
        return None

    found = line_of(getattr(e, "loc", None))
    tb = e.__traceback__
    while tb is not None and found is None:  # the deepest frame that knows the student's line
        owner = tb.tb_frame.f_locals.get("self")
        found = line_of(getattr(owner, "loc", None)) or line_of(tb.tb_frame.f_locals.get("loc")) or found
        tb = tb.tb_next
    return found


def message(result: dict, cc=CC) -> str:
    """The failing test's text for a compile result."""
    where = f" (line {result['line']})" if result.get("line") else ""
    return f"does not compile for a GPU (sm_{cc[0]}{cc[1]}): {result['message']}{where}"


# --- The child process ------------------------------------------------------------------------------
def compile_source(text: str, path: str, kernel: str, sigs: list, cc) -> dict:
    """:func:`compile_here` of ``kernel`` built from the file's source ``text`` (:func:`lab.teach.contained.source.load`:
    its syntax tree checked, nothing of the file run), in a process whose ``numba.cuda`` is the real one.
    A file the checker refuses is a failure with the reason (the judge refused it first)."""
    try:
        mod = source.load(text, path, kernel)
    except Failed as e:
        return {"ok": False, "message": str(e)[:300], "line": None}
    fn = getattr(getattr(mod, kernel, None), "py_func", None)
    if fn is None:
        return {"ok": False, "message": f"{kernel} is not a @cuda.jit kernel", "line": None}
    return compile_here(fn, sigs, path, cc)


def _child(request: dict) -> list[dict]:
    """In the child (no simulator): compile each item {"path", "text", "kernel", "sigs", "cc"} of the
    request from its source text (the student's file is never imported)."""
    from lab.core import resources  # lazy: heavy for the contained tests child's start (the compilers, unittest.mock)

    why = resources.offline_unavailable()
    if why:
        return [{"skipped": f"needs {why}"} for _ in request["items"]]
    from numba import cuda  # noqa: F401 - loaded before seccomp, like the checker's child  # lazy: backend chosen first (numba)

    lockdown()  # (where libseccomp is missing the parent's notes say so already)
    return [compile_source(item["text"], item["path"], item["kernel"], item["sigs"], item["cc"])
            for item in request["items"]]


def _cache_file(key: str):
    """The verdict's file in the lab's cache folder ($LAB_CACHE_DIR, else platformdirs' user cache
    folder; kernels.tuning.cache_dir): written by the judge only, never by a child."""
    return os.path.join(cache_dir(), "gpu-compile", key + ".json")


def cache_key(path: str, kernel: str, sigs: list, cc, text: str, where: str = "") -> str:
    """The compile verdict's cache key: a hash of the student's source ``text``, the compile's own code
    (this module and the source rules, whose messages a verdict carries), the file's name, ``kernel``,
    ``sigs``, ``cc``, the numba-cuda version and ``where`` ("contained": a verdict of the contained
    compile, :mod:`lab.teach.contained.compile_sandbox`, kept apart from this module's own)."""
    try:
        nv = metadata.version("numba-cuda")
    except PackageNotFoundError:
        nv = "?"
    h = hashlib.sha256(text.encode())  # the student's source, this module and the source rules (their messages)
    for f in (__file__, *(os.path.join(os.path.dirname(__file__), f"{m}.py") for m in ("source", "source_rules",
                                                                                         "source_eval", "allowlist"))):
        with open(f, "rb") as fh:
            h.update(fh.read())
    h.update(json.dumps([os.path.basename(path), kernel, sigs, list(cc), nv, 2, *([where] if where else [])]).encode())
    return h.hexdigest()[:32]


def cached_verdict(key: str) -> dict | None:
    """The compiler's verdict ({"ok": ...}) remembered under ``key`` (:func:`cache_key`), from this process or
    the cache folder (:func:`remember`), or None."""
    if key in _MEMO:
        return _MEMO[key]
    path = _cache_file(key)
    if os.path.isfile(path):
        try:
            with open(path) as f:
                got = json.load(f)
        except (OSError, ValueError):
            return None
        if isinstance(got, dict) and "ok" in got:
            _MEMO[key] = got
            return got
    return None


def remember(key: str, result: dict) -> None:
    """Keep the compiler's verdict ``result`` under ``key`` for this process and in the cache folder (written
    by the judge only, atomically); anything but a verdict (a skip: no NVVM, a killed or timed-out
    process) is not kept, so it is tried again."""
    if "ok" not in result:
        return
    _MEMO[key] = result
    try:
        path = _cache_file(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, json.dumps(result), "GPU compile cache")
    except Exception:  # noqa: BLE001 - a cache that cannot be written is only slower
        pass


def check(path: str, kernel: str, sigs: list, cc=CC, timeout: float = 50.0, text: str | None = None) -> dict:
    """Compile ``kernel`` of the student's file ``path`` (its source ``text``, default: read now) for
    ``cc`` with each signature of ``sigs`` (:func:`arg_types` descriptors) in a child process without
    the simulator, from the source (:func:`compile_source`: the file is never imported). Returns
    {"ok": True}, {"ok": False, "message", "line"} (the compiler's error at the student's line) or
    {"skipped": why} (no verdict: no NVVM, the process failed or took longer than ``timeout`` s). Cached per source,
    kernel, signatures and numba-cuda version."""
    return check_many([(path, kernel, sigs, text)], cc, timeout)[0]


_MEMO: dict = {}  # cache key -> the compiler's verdict ({"ok": ...}), this process (and on disk)
_TRANSIENT: dict = {}  # cache key -> the last {"skipped": ...}: tried again, unless no process may start
_NO_PROCESS: list = []  # [why] once :func:`no_more_processes` was called


def no_more_processes(why: str = "no process may start after the grader's audit hook") -> None:
    """From now on start no compile process in this process: a check answers with the result this
    process already has for it (a skipped one too) or is skipped saying ``why``. A contained grader's
    child (:mod:`lab.teach.contained.sandbox`) compiles before its audit hook, which refuses processes (and
    fails the submission); it calls this before installing the hook."""
    _NO_PROCESS[:] = [why]


def check_many(items, cc=CC, timeout: float = 50.0) -> list[dict]:
    """:func:`check` for several (path, kernel, sigs) at once, in one child process. The compiler's
    verdicts (``{"ok": ...}``) are kept for this process and on disk; a compile that could not run
    (``{"skipped": ...}``: no NVVM, out of memory, the process killed or timed out) is tried again at
    the next call, except after :func:`no_more_processes`."""
    todo, results, keys = [], [None] * len(items), [None] * len(items)
    for k, (path, kernel, sigs, *rest) in enumerate(items):
        sigs = [json.loads(s) for s in dict.fromkeys(json.dumps(s) for s in sigs)]
        text = rest[0] if rest and rest[0] is not None else None
        try:
            if text is None:
                text = read(path)
            keys[k] = cache_key(path, kernel, sigs, cc, text)
        except OSError:
            pass
        except Exception as e:  # noqa: BLE001 - a file that is no source (too large, not UTF-8): the reason
            results[k] = {"ok": False, "message": str(e)[:300], "line": None}
            continue
        if keys[k] is not None:
            got = cached_verdict(keys[k])
            if got is not None:
                results[k] = got
                continue
        if _NO_PROCESS:
            results[k] = _TRANSIENT.get(keys[k]) or {"skipped": _NO_PROCESS[0]}
            continue
        todo.append((k, {"path": os.path.abspath(path), "text": text, "kernel": kernel, "sigs": sigs,
                         "cc": list(cc)}))
    if not todo:
        return results
    env = child_env(NUMBA_ENABLE_CUDASIM="0", LAB_COMPILER="numba-cuda", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0")
    request = {"items": [item for _, item in todo]}
    try:  # from an empty folder, the student's folder not on sys.path (its json.py shadows nothing)
        with tempfile.TemporaryDirectory(prefix="lab-compile-") as empty:
            proc = subprocess.run(session.python_module("lab.teach.contained.gpu_compile"), input=json.dumps(request),
                                  capture_output=True, text=True, env=env, timeout=timeout * len(todo), cwd=empty)
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        got = got if isinstance(got, list) else []
        got += [None] * (len(todo) - len(got))
    except subprocess.TimeoutExpired:  # no verdict (a grade's gate fails on it: lab.teach.child._compile_gate)
        got = [{"skipped": f"the compile took longer than {timeout:.0f} s"}] * len(todo)
    except (ValueError, IndexError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        got = [{"skipped": f"the compiler's process failed ({last.strip()[:120]})"}] * len(todo)
    for (k, item), result in zip(todo, got):
        result = verified(result, item["kernel"], len(item["sigs"]), cc)
        results[k] = result
        if keys[k] is not None:
            if "ok" in result:
                remember(keys[k], result)
            else:
                _TRANSIENT[keys[k]] = result
    return results


if __name__ == "__main__":
    _out = _child(json.loads(sys.stdin.read()))
    sys.stdout.write("\n" + json.dumps(_out) + "\n")
