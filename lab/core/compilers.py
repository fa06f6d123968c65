"""Which compiler turns the lab's ``@cuda.jit`` kernels into GPU code: numba-cuda or numba-cuda-mlir.

numba-cuda-mlir is numba-cuda's successor: the same kernel source, typed by a vendored Numba front
end, lowered through MLIR to NVVM. It needs a GPU (no simulator) and Python >= 3.11, and is the
default on a GPU where it is installed with a CUDA 13 driver (:func:`default`). numba-cuda
(``numba.cuda``) is in maintenance mode (NVIDIA/numba-cuda issue 902: security and critical fixes
only, through the lifetime of CUDA 13); it stays the compiler of the simulator, of CUDA 12 machines
and of ``--compiler numba-cuda``.

Like the backend (``lab.core.simulator.select``), the compiler is chosen once per process, before anything
compiles: :func:`select` sets ``LAB_COMPILER``, which ``kernels.compiler`` reads at import. Nothing
here imports either compiler; :func:`compilers_status` only looks for them.

Per-kernel resources (registers, spills) come from each compiler's dispatcher
(``get_regs_per_thread``, ``get_local_mem_per_thread``) and from ptxas's verbose report of the
kernel's PTX (through nvJitLink), the same numbers ``ptxas -v`` prints.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import importlib.util
import os
import re
import sys

from kernels.backend import default_compiler, gpu_count
from lab.core.errors import LabError
from kernels import cache

NUMBA_CUDA = "numba-cuda"
MLIR = "numba-cuda-mlir"
COMPILERS = (NUMBA_CUDA, MLIR)
ENV = "LAB_COMPILER"
INSTALL = {NUMBA_CUDA: "pip install numba-cuda", MLIR: "pip install 'numba-gpu-lab[cuda13]'"}
_MODULE = {NUMBA_CUDA: "numba_cuda", MLIR: "numba_cuda_mlir"}
_DIST = {NUMBA_CUDA: "numba-cuda", MLIR: "numba_cuda_mlir"}


_WHY: dict[str, str] = {}  # compiler -> why this process uses it (select)
WHY_ENV = "LAB_COMPILER_WHY"  # "compiler: why", set by select for child processes


def _env_reason(name: str) -> str:
    """Why ``LAB_COMPILER`` names ``name``: a parent lab process's reason, or the variable itself."""
    inherited = os.environ.get(WHY_ENV, "")
    if inherited.startswith(f"{name}: "):
        return inherited[len(name) + 2:]
    return f"{ENV}={name}"


def default(simulator: bool | None = None) -> tuple[str, str]:
    """(compiler, why) when none is named: numba-cuda-mlir on a GPU where it is installed (Python
    >= 3.11, a CUDA 13 driver), else numba-cuda (``kernels.backend.default_compiler``)."""
    return default_compiler(simulator)


def current() -> str:
    """The compiler this process uses: ``LAB_COMPILER``, else the one ``kernels.compiler`` loaded,
    else :func:`default`."""
    name = os.environ.get(ENV)
    if name:
        return name
    loaded = sys.modules.get("kernels.compiler")
    return loaded.COMPILER if loaded is not None else default()[0]


def why(name: str | None = None) -> str:
    """Why this process uses compiler ``name`` (default :func:`current`): "--compiler", the
    environment, or the default's reason."""
    name = name or current()
    if name in _WHY:
        return _WHY[name]
    loaded = sys.modules.get("kernels.compiler")
    if loaded is not None and loaded.COMPILER == name:
        return loaded.WHY
    return _env_reason(name) if os.environ.get(ENV) == name else default()[1]


def version(name: str) -> str | None:
    """Installed version of compiler ``name``, or None."""
    try:
        return md.version(_DIST[name])
    except md.PackageNotFoundError:
        mod = sys.modules.get(_MODULE[name])
        return getattr(mod, "__version__", None)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(_MODULE[name]) is not None
    except (ImportError, ValueError):
        return False


def compilers_status(simulator: bool | None = None) -> dict[str, dict]:
    """For each compiler: {"usable": bool, "version": str | None, "why": reason when not usable}.

    simulator: whether the simulator backend is active (None: look for a GPU). numba-cuda runs on a
    GPU or in the simulator; numba-cuda-mlir needs an installed package, Python >= 3.11 and a GPU.
    """
    if simulator is None:
        n, gpu_why = gpu_count()
        simulator = n == 0
    else:
        gpu_why = "the CUDA simulator backend is active"
    out = {}
    for name in COMPILERS:
        why = ""
        if not _installed(name):
            why = f"not installed ({INSTALL[name]})"
        elif name == MLIR and sys.version_info < (3, 11):
            why = f"needs Python >= 3.11 (this is {sys.version.split()[0]})"
        elif name == MLIR and simulator:
            why = f"needs a CUDA GPU, it has no simulator ({gpu_why})"
        out[name] = {"usable": not why, "version": version(name), "why": why}
    return out


def doctor_check() -> tuple[bool, str]:
    """For ``lab doctor``: (ok, one line). ok when the compiler used by default is usable; the line
    names it and why, then says which compilers are usable and why the others are not."""
    status = compilers_status()
    chosen = os.environ.get(ENV)
    chosen, reason = (chosen, _env_reason(chosen)) if chosen else default()
    parts = [f"{n} {s['version'] or ''}".strip() + (": usable" if s["usable"] else f": {s['why']}")
             for n, s in status.items()]
    ok = chosen in status and status[chosen]["usable"]
    return ok, f"uses {chosen} ({reason}); " + "; ".join(parts)


def run_header(name: str) -> str:
    """``lab run``'s header line: the compiler of the Numba rows, why, and the kernel cache."""
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    tail = "" if sim else " · kernel cache " + ("on" if cache.location() else f"off ({cache.ENV}=0)")
    return f"Numba compiler: {name} ({why(name)}){tail}"


def cache_check() -> str:
    """For ``lab doctor``: one line on the compiled-kernel cache (kernels.cache): on or off, where,
    how much it holds."""
    base, size, files = cache.usage()
    if not cache.enabled():
        return f"off ({cache.ENV}=0); {base}: {size / 2**20:.1f} MiB in {files} files"
    user = os.environ.get(cache.NUMBA_ENV)
    where = f"{user} (NUMBA_CACHE_DIR)" if user and user != os.environ.get(cache._OURS) else str(base)
    return (f"on: {where}, {size / 2**20:.1f} MiB in {files} files (keyed by kernel source, signature, "
            f"compiler and compute capability; {cache.ENV}=0 turns it off)")


def select(name: str | None, simulator: bool) -> str:
    """Choose the compiler for this process (``None``: ``LAB_COMPILER``, else :func:`default`);
    returns it.

    Raises LabError (one line, exit code 2) for an unknown name, numba-cuda-mlir with the simulator
    backend or not installed, or a change after ``kernels.compiler`` was imported with another one.
    """
    if name:
        reason = "--compiler"
    elif os.environ.get(ENV):
        name = os.environ[ENV]
        reason = _env_reason(name)
    else:
        loaded = sys.modules.get("kernels.compiler")
        name, reason = (loaded.COMPILER, loaded.WHY) if loaded is not None else default(simulator)
    if name not in COMPILERS:
        raise LabError(f"--compiler {name}: choose one of {', '.join(COMPILERS)}")
    if name == MLIR:
        if simulator:
            n, why = gpu_count()
            where = f"needs a CUDA GPU ({why})" if n == 0 else "was asked for with --sim"
            raise LabError(f"--compiler {MLIR} {where} and has no CUDA simulator: "
                           f"use --compiler {NUMBA_CUDA} for the simulator")
        why = compilers_status(simulator=False)[MLIR]["why"]
        if why:
            raise LabError(f"--compiler {MLIR}: {why}")
    loaded = sys.modules.get("kernels.compiler")
    if loaded is not None and loaded.COMPILER != name:
        raise LabError(f"kernels were already loaded with {loaded.COMPILER} in this process; "
                       f"the compiler cannot change to {name}")
    os.environ[ENV] = name
    os.environ[WHY_ENV] = f"{name}: {reason}"
    _WHY[name] = reason
    return name


def unsupported(kernel: str, variant: str) -> str:
    """Why rung ``variant`` of ``kernel`` does not run under the current compiler ("" when it does):
    ``kernels.compiler.UNSUPPORTED`` lists the known incompatibilities of numba-cuda-mlir."""
    if current() != MLIR:
        return ""
    from kernels.compiler import UNSUPPORTED  # lazy: backend chosen first (numba)

    why = UNSUPPORTED.get((kernel, variant), "")
    return f"{MLIR}: {why}" if why else ""


# --- ptxas's resource report through nvJitLink ----------------------------------------
# ptxas's report through nvJitLink, two formats: "ptxas info : Used N registers, ..." plus "N bytes stack
# frame, N bytes spill stores, N bytes spill loads" (CUDA 12), or one line "info : used N registers,
# used N barriers, N stack, N bytes smem, ..., N bytes lmem" with spills named only when nonzero (CUDA 13)
_USED = re.compile(r"info\s*: [Uu]sed (\d+) registers(.*)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_STACK13 = re.compile(r", (\d+) stack,")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def log_spills(log: str) -> int | None:
    """Spill stores plus spill loads (bytes a thread), summed over the functions in an nvJitLink
    ``-verbose`` log; 0 when it has a resource line but names no spills (CUDA 13 names them only
    when there are some); None when it has no resource line (nothing was reported)."""
    found = _SPILLS.findall(log)
    if found:
        return sum(int(a) + int(b) for a, b in found)
    return 0 if _USED.search(log) else None


def nvjitlink_log(code: bytes, arch: str, lto: bool = False) -> str:
    """nvJitLink's info log (ptxas's "Used N registers ..." lines) for PTX or LTO-IR ``code`` linked
    for ``arch`` (e.g. "sm_90") with ``-verbose``. Raises ImportError without cuda-bindings."""
    from cuda.bindings import nvjitlink  # lazy: optional (cuda)
    from unittest import mock  # lazy: heavy for the contained tests child's start (unittest, asyncio)

    # ptxas reports only when it runs: a cached compile (CUDA 13's nvJitLink on the H100 logged
    # nothing, or only the linker's one-line summary, for kernels linked before) hides the spills.
    # CUDA_CACHE_DISABLE=1 makes "-v" always print (NVIDIA/cuda-python issue 1124, the same cache).
    with mock.patch.dict(os.environ, CUDA_CACHE_DISABLE="1"):  # for the whole link: complete() compiles
        h = nvjitlink.create(3 if lto else 2, [f"-arch={arch}", "-verbose", *(["-lto"] if lto else [])])
        try:
            kind = nvjitlink.InputType.LTOIR if lto else nvjitlink.InputType.PTX
            nvjitlink.add_data(h, kind, code, len(code), "kernel")
            nvjitlink.complete(h)
            buf = bytearray(nvjitlink.get_info_log_size(h))
            nvjitlink.get_info_log(h, buf)
        finally:
            nvjitlink.destroy(h)
    return buf.decode(errors="replace")



def nvjitlink_usage(code: bytes, arch: str, lto: bool) -> dict:
    """Link one kernel for ``arch`` (``sm_90``) with nvJitLink, verbose, and parse ptxas's report.

    code: LTO-IR (``lto``, what numba-cuda hands the driver by default) or PTX text. Registers and
    shared bytes from "ptxas info : Used N registers, ..., N bytes smem"; local bytes from "N bytes
    stack frame" (spilled registers and local arrays live there), as cuFuncGetAttribute reports them.
    """
    log = nvjitlink_log(code, arch, lto)
    used, frame = _USED.search(log), _FRAME.search(log)
    if not used:
        raise RuntimeError(f"nvJitLink log has no resource line: {log[-300:]}")
    smem = re.search(r"(\d+) bytes smem", used.group(2))
    stack = _STACK13.search(used.group(2))
    return {"registers": int(used.group(1)), "shared_bytes": int(smem.group(1)) if smem else 0,
            "local_bytes": int(frame.group(1)) if frame else int(stack.group(1)) if stack else 0,
            "spill_bytes": int(frame.group(2)) if frame else 0,
            "source": f"numba-cuda {'LTO-IR' if lto else 'PTX'} + nvJitLink -arch={arch}{' -lto' if lto else ''} -verbose"}


# --- Resources of compiled kernels -----------------------------------------------------------------
def dispatchers():
    """Every compiled-kernel dispatcher of the loaded kernel modules (module attributes and the
    per-size caches that hold factory-built kernels); device functions excluded."""
    seen = {}
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("kernels.") or mod is None:
            continue
        for obj in list(vars(mod).values()):
            for d in (obj.values() if isinstance(obj, dict) else (obj,)):
                if hasattr(d, "overloads") and hasattr(d, "get_regs_per_thread") and id(d) not in seen:
                    if not getattr(d, "targetoptions", {}).get("device"):
                        seen[id(d)] = d
    return list(seen.values())


def _ptxas_spills(ptx: str, cc: tuple[int, int]) -> int | None:
    """Spill-store plus spill-load bytes that ptxas reports for ``ptx`` (nvJitLink -verbose), or None
    when nvJitLink is not available. A known answer is read from the kernel cache (kernels.cache:
    ``spills/<sha256 of the PTX and arch>``): ptxas runs with its own cache off, once per kernel."""
    code = ptx.encode() if isinstance(ptx, str) else ptx
    arch = f"sm_{cc[0]}{cc[1]}"
    memo = cache.root() / "spills" / (hashlib.sha256(code + arch.encode()).hexdigest()[:32] + ".txt") if cache.enabled() else None
    try:
        if memo is not None and memo.is_file():
            return int(memo.read_text())
    except (OSError, ValueError):
        pass
    try:
        log = nvjitlink_log(code, arch)
    except Exception:  # no cuda-bindings / nvJitLink here, or the link failed: spills unknown
        return None
    spills = log_spills(log)
    if memo is not None and spills is not None:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.write_text(str(spills))
        except OSError:
            pass
    return spills


def kernel_attr(d, sig, attr: str) -> int:
    """A compiled kernel's driver attribute (``regs_per_thread``, ``shared_mem_per_block``,
    ``local_mem_per_thread``): numba-cuda's compiled kernel has it, numba-cuda-mlir's dispatcher has
    a ``get_<attr>(sig)`` getter. Raises when neither answers."""
    k = d.overloads.get(sig)
    return int(getattr(k, attr) if hasattr(k, attr) else getattr(d, f"get_{attr}")(sig))


def resources(kernels: set, cc: tuple[int, int] | None = None) -> dict:
    """Registers a thread (the most of the kernels given), local memory and spill bytes a thread
    (summed over them) of (dispatcher, signature) pairs, as the compiler reports them.

    Returns {"registers", "local_bytes", "spill_bytes", "kernels"}; a value is None when the
    compiler cannot say (the simulator, or no nvJitLink for spills).
    """
    regs, local, spills, names = [], [], [], []
    for d, sig in kernels:
        names.append(getattr(getattr(d, "py_func", None), "__name__", "?"))
        for attr, out in (("regs_per_thread", regs), ("local_mem_per_thread", local)):
            try:
                out.append(kernel_attr(d, sig, attr))
            except Exception:
                pass
        if cc is not None:
            try:
                spills.append(_ptxas_spills(d.inspect_asm(sig), cc))
            except Exception:
                spills.append(None)
    return {"registers": max(regs) if regs else None, "local_bytes": sum(local) if local else None,
            "spill_bytes": sum(spills) if spills and None not in spills else None,
            "kernels": sorted(set(names))}
