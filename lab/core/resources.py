"""What a compiled kernel uses: registers a thread, static shared memory a block, local memory (spills).

Two ways to the same numbers:

* on a GPU, the CUDA driver's function attributes of the kernel Numba loaded
  (``cuFuncGetAttribute``: NUM_REGS, SHARED_SIZE_BYTES, LOCAL_SIZE_BYTES), and the driver's own
  occupancy answer (cuda.core ``Kernel.occupancy.max_active_blocks_per_multiprocessor``, i.e.
  ``cuOccupancyMaxActiveBlocksPerMultiprocessor``);
* without one, numba-cuda compiles the kernel for ``sm_XX`` the way it does on a GPU — to LTO-IR
  (its default, ``lto=True``; PTX for a kernel that turns LTO off) — and nvJitLink
  (``cuda.bindings.nvjitlink``, options ``-arch=sm_XX -verbose``, plus ``-lto``) links it and logs
  ptxas's report ("Used N registers, ..., N bytes smem"; "N bytes stack frame"). Assembling the PTX
  instead gives other numbers (measured on the H100: more registers for 10 of 25 kernels, and 1 KB
  more shared memory counted). This runs in a child process with ``NUMBA_ENABLE_CUDASIM=0``: the
  simulator in this process cannot compile.

Which kernels a variant launches, and with which argument types, is recorded from a real (small)
run of the variant (:func:`record_launches`), so multi-kernel variants report every kernel.
"""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
import ast
import importlib
import warnings

import numpy as np

from lab.core import compilers
from lab.core.errors import LabError
from kernels.backend import is_simulator
from kernels.spec import poison_value
from lab.core.session import child_env

EXTRA_HINT = "pip install 'numba-gpu-lab[occupancy]' (numba-cuda[cu13]: NVVM, NVRTC and nvJitLink)"


@dataclass
class LaunchRecord:
    """One kernel launch seen during a variant's run."""

    module: str
    name: str  # attribute of ``module`` holding the kernel (None when it is not a module global)
    argtypes: list  # [("array", dtype str, ndim, layout) | ("scalar", numba type name)]
    grid: tuple
    block: tuple
    dynamic_shared: int = 0
    kernel: object = field(default=None, repr=False)  # the dispatcher (this process only)

    @property
    def label(self) -> str:
        return self.name or "?"


def _argtype(arg):
    if hasattr(arg, "shape") and hasattr(arg, "dtype") and getattr(arg, "ndim", 0) > 0:
        ary = getattr(arg, "_ary", None)  # the simulator's FakeCUDAArray
        c = ary.flags.c_contiguous if ary is not None else getattr(arg, "is_c_contiguous", lambda: True)()
        return ("array", np.dtype(arg.dtype).str, int(arg.ndim), "C" if c else "A")
    # Numba's name of the scalar's type (numba.typeof's, without importing numba: numba-cuda-mlir
    # processes never load it): Python int -> int64, float -> float64, bool -> bool, NumPy scalars by dtype
    if isinstance(arg, bool):
        return ("scalar", "bool")
    return ("scalar", {int: "int64", float: "float64"}.get(type(arg)) or np.dtype(type(arg)).name)


def _global_name(kernel) -> tuple[str, str | None]:
    """(module, how to find the kernel there): ``NAME`` for a module global; ``FACTORY(ARGS)`` for a
    kernel a module-level factory built and cached: in a module-level dict keyed by its arguments
    (e.g. softmax's ``fused_resident_kernel(per_thread)``, ``group_rows_kernel(per_lane, width)``), or
    by ``functools.cache`` when called with no arguments (``make_tf32_kernel()``); a name is given only
    where it resolves back to this very kernel (:func:`_resolve`). None when none does."""
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    modname = getattr(fn, "__module__", "?")
    module = sys.modules.get(modname)
    if module is None:
        return modname, None
    for k, v in vars(module).items():
        if v is kernel:
            return modname, k
    factory = fn.__qualname__.split(".<locals>.")[0] if ".<locals>." in fn.__qualname__ else None
    if not factory or not callable(getattr(module, factory, None)):
        return modname, None
    names = [f"{factory}()"] if hasattr(getattr(module, factory), "cache_info") else []
    for v in vars(module).values():
        if isinstance(v, dict):
            for key, val in v.items():
                if val is kernel and isinstance(key, (int, str)):
                    names.append(f"{factory}({key!r})")
                elif val is kernel and isinstance(key, tuple) and all(isinstance(x, (int, str)) for x in key):
                    names.append(f"{factory}({', '.join(map(repr, key))})")
    for name in names:
        try:
            if _resolve(module, name) is kernel:
                return modname, name
        except Exception:  # noqa: BLE001 - a dict keyed otherwise than by the factory's arguments
            continue
    return modname, None


def _resolve(module, name: str):
    """The kernel ``name`` (:func:`_global_name`'s) names in ``module``: a global, or a factory's call."""
    m = re.fullmatch(r"(\w+)\((.*)\)", name)
    if m:
        args = ast.literal_eval(f"({m.group(2)},)") if m.group(2).strip() else ()
        return getattr(module, m.group(1))(*args)
    return getattr(module, name)


def _mlir() -> bool:
    return compilers.current() == compilers.MLIR


def _dims(d) -> tuple:
    return tuple(d) if isinstance(d, (tuple, list)) else (d,)


@contextlib.contextmanager
def launch_hook(callback):
    """Call ``callback(kernel, grid, block, dynamic_shared, args)`` before every kernel launch in this
    process (the simulator's FakeCUDAKernel, numba-cuda's or numba-cuda-mlir's configured launch)."""
    if is_simulator():
        from numba.cuda.simulator.kernel import FakeCUDAKernel as cls  # lazy: backend chosen first (numba)

        orig = cls.__call__

        def call(self, *args):
            from numba.cuda.simulator.kernel import _kernel_context  # lazy: backend chosen first (numba)

            if not self._device and not _kernel_context:
                callback(self, tuple(self.grid_dim), tuple(self.block_dim), self.dynshared_size, args)
            return orig(self, *args)
    elif _mlir():
        # numba-cuda-mlir 0.6: kernel[grid, block] returns an _ArgMarshaller holding the configuration
        from numba_cuda_mlir.descriptor import _ArgMarshaller as cls  # lazy: backend chosen first (numba_cuda_mlir)

        orig = cls.__call__

        def call(self, *args):
            cfg = self._available_launch_config
            shared = cfg.get("sharedmem")
            callback(self._dispatcher, _dims(cfg["grid"]), _dims(cfg["block"]),
                     shared if isinstance(shared, int) and shared > 0 else 0, args)
            return orig(self, *args)
    else:
        from numba.cuda.dispatcher import _LaunchConfiguration as cls  # lazy: backend chosen first (numba)

        orig = cls.__call__

        def call(self, *args):
            callback(self.dispatcher, _dims(self.griddim), _dims(self.blockdim), self.sharedmem or 0, args)
            return orig(self, *args)
    cls.__call__ = call
    try:
        yield
    finally:
        cls.__call__ = orig


def run_variant(spec, variant_name, size, threads, dtype="float32", seed=0, on_launch=None, on_outputs=None):
    """Run one variant once on fresh random inputs (outputs poisoned first); returns the host outputs.

    on_launch(kernel, grid, block, dynamic_shared, args): called before each launch;
    on_outputs(device_outputs): called with the output arrays before the run.
    """
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)
    variant = spec.variants[variant_name]
    rng = np.random.default_rng(seed)
    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
    d_in = [cuda.to_device(np.ascontiguousarray(a)) for a in inputs]
    outs = [cuda.to_device(np.full(shape, poison_value(dt), dt)) for shape, dt in spec.out_specs(size, np.dtype(dtype))]
    if on_outputs:
        on_outputs(outs)
    cfg = variant.launch(size, threads)
    call = variant.prepare(cfg, d_in, outs)
    with launch_hook(on_launch or (lambda *a: None)), warnings.catch_warnings():
        # a small internal run: Numba's low-occupancy warning (either compiler's NumbaPerformanceWarning)
        # would be about our size, not the user's
        warnings.filterwarnings("ignore", message=".*Grid size")
        call()
    cuda.synchronize()
    return [o.copy_to_host() for o in outs], inputs


@contextlib.contextmanager
def launched(records: list):
    """Append a :class:`LaunchRecord` to ``records`` for each distinct lab kernel (a ``kernels.*``
    module's) launched inside the ``with`` block: the kernels a call really ran, whether or not this
    process compiled them before."""
    seen: set[int] = set()
    lock = threading.Lock()

    def on_launch(kernel, grid, block, dyn, args):
        with lock:
            if id(kernel) in seen:
                return
            seen.add(id(kernel))
            module, name = _global_name(kernel)
            if module.startswith("kernels"):
                records.append(LaunchRecord(module, name, [_argtype(a) for a in args], grid, block, int(dyn), kernel))

    with launch_hook(on_launch):
        yield records


def record_launches(spec, variant_name, size, threads, dtype="float32") -> list[LaunchRecord]:
    """The kernels one run of the variant launches (in order, each kernel once)."""
    records: list[LaunchRecord] = []
    with launched(records):
        run_variant(spec, variant_name, size, threads, dtype)
    return records


def compiled(records: list[LaunchRecord]) -> set:
    """(dispatcher, signature) of each recorded launch: what :func:`lab.core.compilers.resources` reads."""
    return {(rec.kernel, _overload_key(rec)) for rec in records}


# --- On a GPU: the driver's numbers --------------------------------------------------------------
def _overload_key(rec: LaunchRecord):
    """The signature the recorded launch compiled (numba-cuda-mlir keys by its own types: the only
    overload there, as the lab launches each kernel with one signature a process)."""
    over = rec.kernel.overloads
    if not _mlir():
        types = tuple(_numba_type(t) for t in rec.argtypes)
        if types in over:
            return types
    return next(iter(over))


def _overload(rec: LaunchRecord):
    return rec.kernel.overloads[_overload_key(rec)]


def device_resources(rec: LaunchRecord) -> dict:
    """Registers, static shared and local bytes of the kernel the compiler loaded on this GPU."""
    d, sig = rec.kernel, _overload_key(rec)
    return {"registers": compilers.kernel_attr(d, sig, "regs_per_thread"),
            "shared_bytes": compilers.kernel_attr(d, sig, "shared_mem_per_block"),
            "local_bytes": compilers.kernel_attr(d, sig, "local_mem_per_thread"),
            "source": "CUDA driver (cuFuncGetAttribute)"}


def driver_blocks_per_sm(rec: LaunchRecord, threads: int, dynamic_shared: int = 0) -> int:
    """The driver's max active blocks per SM (cuda.core, else cuOccupancyMaxActiveBlocksPerMultiprocessor)."""
    cufunc = _overload(rec)._codelibrary.get_cufunc()
    core = getattr(cufunc, "kernel", None)
    if core is not None and hasattr(core, "occupancy"):
        return int(core.occupancy.max_active_blocks_per_multiprocessor(threads, dynamic_shared))
    from cuda.bindings import driver  # lazy: optional (cuda)

    err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(cufunc.handle, threads, dynamic_shared)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor: {err}")
    return int(n)


# --- Without a GPU: numba-cuda LTO-IR (or PTX) + nvJitLink-----------------------------------------------
def _numba_type(t):
    from numba import types  # lazy: backend chosen first (numba)
    from numba.np.numpy_support import from_dtype  # lazy: backend chosen first (numba)

    if t[0] == "array":
        return types.Array(from_dtype(np.dtype(t[1])), t[2], t[3])
    return getattr(types, t[1])


def _child_main(request: dict) -> list[dict]:
    """In the child (NUMBA_ENABLE_CUDASIM=0): compile each kernel to PTX and read its usage."""
    from numba import cuda  # lazy: backend chosen first (numba)

    import numba.cuda.dispatcher as dispatcher  # lazy: backend chosen first (numba)

    arch = request["arch"]
    cc = (int(arch[3:-1]), int(arch[-1]))

    class _Target:  # device functions ask the current device for its cc: answer the target's
        compute_capability = cc

    dispatcher.get_current_device = lambda: _Target
    out = []
    for rec in request["kernels"]:
        try:
            disp = _resolve(importlib.import_module(rec["module"]), rec["name"])
            opts = {k: v for k, v in disp.targetoptions.items()
                    if k in ("debug", "lineinfo", "fastmath", "opt", "forceinline", "launch_bounds")}
            if "opt" in opts:
                opts["opt"] = bool(opts["opt"])
            lto = bool(disp.targetoptions.get("lto"))  # numba-cuda's default: link LTO-IR with nvJitLink
            code, _ = cuda.compile(disp.py_func, tuple(_numba_type(t) for t in rec["argtypes"]), device=False,
                                   abi="numba", output="ltoir" if lto else "ptx", cc=cc, **opts)
            out.append(compilers.nvjitlink_usage(code if isinstance(code, bytes) else code.encode(), arch, lto))
        except Exception as e:  # reported per kernel
            out.append({"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"})
    return out


def offline_resources(records: list[LaunchRecord], arch: str, timeout: float = 300) -> list[dict]:
    """Registers / shared / local bytes of each recorded kernel for ``arch``, without a GPU."""
    why = offline_unavailable()
    if why:
        raise LabError(f"reading registers without a GPU needs {why}: {EXTRA_HINT}")
    missing = [r for r in records if not r.name]
    if missing:
        raise LabError(f"kernel {missing[0].module}.? is not a module-level global: it cannot be compiled offline")
    request = {"arch": arch, "kernels": [{"module": r.module, "name": r.name, "argtypes": r.argtypes} for r in records]}
    # numba-cuda compiles offline (numba-cuda-mlir has no offline path here), whatever this process runs
    env = child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", LAB_COMPILER="numba-cuda",
                    CUDA_CACHE_DISABLE="1")
    proc = subprocess.run([sys.executable, "-c", "import json,sys; from lab.core.resources import _child_main; "
                           "print(json.dumps(_child_main(json.loads(sys.stdin.read()))))"],
                          input=json.dumps(request), capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise LabError(f"offline compile for {arch} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def offline_unavailable() -> str | None:
    """None when nvJitLink, NVVM and NVRTC load here, else what is missing."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # lazy: optional (cuda)
    except ImportError:
        return "cuda-bindings / cuda-pathfinder"
    missing = []
    for lib in ("nvJitLink", "nvvm", "nvrtc"):
        try:
            load_nvidia_dynamic_lib(lib)
        except Exception:
            missing.append(lib)
    return f"{', '.join(missing)} (not found)" if missing else None
