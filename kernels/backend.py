"""Where the kernels run — a CUDA GPU or Numba's CUDA simulator — decided before ``numba.cuda`` loads.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the choice must
come first. A GPU is detected through the CUDA driver API (``cuInit`` and ``cuDeviceGetCount`` from
``libcuda``, CUDA Driver API reference, "Initialization" and "Device Management") without importing
Numba. ``lab`` makes the choice explicitly (``lab.core.simulator.select``, ``--sim/--gpu``); a user who
imports a kernel module directly gets :func:`choose_default`: the GPU when one is usable, else the
simulator, with one warning saying so. Nothing here imports Numba.

This is the project's one ctypes module: every call into ``libcuda`` (device count, driver version,
device names for ``lab doctor``, and the ``cuLaunchKernel`` of ``torch_bridge.launch``) is here.
"""
from __future__ import annotations

import ctypes
import os
import sys
import warnings
import importlib.util

SIM_ENV = "NUMBA_ENABLE_CUDASIM"


class SimulatorFallback(UserWarning):
    """No usable CUDA GPU: the lab's kernels run in Numba's CUDA simulator."""


_LIBCUDA = []


def libcuda():
    """The CUDA driver library (``libcuda``) through ctypes, loaded once; None when there is none.
    The only place in the project that uses ctypes: the driver calls below are all of it."""
    if not _LIBCUDA:
        lib = None
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        _LIBCUDA.append(lib)
    return _LIBCUDA[0]


def gpu_count() -> tuple[int, str]:
    """Number of CUDA devices the driver reports, and why it is 0 when it is."""
    lib = libcuda()
    if lib is None:
        return 0, "no CUDA driver (libcuda) found"
    if lib.cuInit(0) != 0:
        return 0, "the CUDA driver found no usable GPU (cuInit failed)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return 0, "the CUDA driver reports no GPU"
    return count.value, ""


def driver_version() -> int | None:
    """The CUDA driver's version as 1000 * major + 10 * minor (cuDriverGetVersion), None without one."""
    lib = libcuda()
    if lib is None:
        return None
    v = ctypes.c_int(0)
    return v.value if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value else None


def device_name(index: int = 0) -> str | None:
    """The name of CUDA device ``index`` as the driver reports it (cuDeviceGetName), None without one."""
    lib = libcuda()
    if lib is None or lib.cuInit(0) != 0:
        return None
    dev = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(256)
    if lib.cuDeviceGet(ctypes.byref(dev), index) != 0 or lib.cuDeviceGetName(buf, 256, dev) != 0:
        return None
    return buf.value.decode()


# --- cuLaunchKernel for torch_bridge.launch.FastKernel (CUDA Driver API, "Execution Control") ---------
def param_block(layout: list[int]):
    """(values, pointers): ``layout`` as a ctypes array of int64 (one kernel parameter each, written
    in place by index before a launch) and the ``void*[]`` array of their addresses, the
    ``kernelParams`` that cuLaunchKernel reads. Keep ``values`` alive as long as ``pointers``."""
    n = len(layout)
    values = (ctypes.c_int64 * n)(*layout)
    base = ctypes.addressof(values)
    return values, (ctypes.c_void_p * n)(*[base + 8 * i for i in range(n)])


def launcher(handle: int, dims: tuple[int, ...], pointers):
    """``launch(stream)``: cuLaunchKernel of the ``CUkernel``/``CUfunction`` ``handle`` with ``dims``
    (grid x, y, z, block x, y, z), no dynamic shared memory, and the parameter block ``pointers``
    (:func:`param_block`) on ``stream`` (a raw ``cudaStream_t``, 0 = legacy default). Everything is
    converted once here: a call allocates nothing. RuntimeError with the driver's error name."""
    lib = libcuda()
    if lib is None:
        raise RuntimeError("no CUDA driver (libcuda) found")
    fn = lib.cuLaunchKernel
    if fn.argtypes is None:
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    h = ctypes.c_void_p(handle)

    def launch(stream):
        err = fn(h, *dims, 0, stream, pointers, None)
        if err:
            name = ctypes.c_char_p()
            lib.cuGetErrorName(err, ctypes.byref(name))
            raise RuntimeError(f"cuLaunchKernel failed: {(name.value or b'?').decode()} ({err})")
    return launch


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (its metadata: ``importlib.metadata.version``),
    or None when it is not installed. One helper for ``lab doctor``, the kernel cache's key and the
    benchmarks' version lines."""
    import importlib.metadata as md  # lazy: heavy for lab exercise list's start (importlib.metadata)

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def is_simulator() -> bool:
    """True when Numba runs (or will run) kernels in its CUDA simulator."""
    return os.environ.get(SIM_ENV, "0") not in ("", "0")


def choose_default() -> None:
    """Pick the simulator when nobody chose a backend and no GPU is usable (one warning).

    A no-op when ``NUMBA_ENABLE_CUDASIM`` is already set (by the user or by ``lab``) or
    ``numba.cuda`` is already loaded (the choice can no longer change in this process).
    """
    if SIM_ENV in os.environ or "numba.cuda" in sys.modules:
        return
    n, why = gpu_count()
    if n == 0:
        os.environ[SIM_ENV] = "1"
        warnings.warn(f"{why}: the lab's kernels run in Numba's CUDA simulator (correctness only, "
                      f"timings are not meaningful); set {SIM_ENV}=0 to insist on a GPU",
                      SimulatorFallback, stacklevel=3)
    else:
        os.environ[SIM_ENV] = "0"


# --- which compiler by default ---------------------------------------------------------------------
MLIR_DRIVER = 13000  # numba-cuda-mlir is the lab's compiler on CUDA 13 drivers (its [cu13] wheels)


def default_compiler(simulator: bool | None = None) -> tuple[str, str]:
    """(compiler, why) when nobody chose one (``LAB_COMPILER`` unset, no ``--compiler``).

    numba-cuda-mlir, numba-cuda's successor, where it can run: a GPU, Python >= 3.11, the package
    installed and a CUDA 13 driver. numba-cuda otherwise: the simulator (numba-cuda-mlir has none),
    a CUDA 12 driver, or numba-cuda-mlir not installed. ``simulator`` None: :func:`is_simulator`
    when a backend was chosen, else whether the driver reports no GPU. Nothing is imported.
    """
    if simulator is None:
        simulator = is_simulator() if SIM_ENV in os.environ else gpu_count()[0] == 0
    if simulator:
        return "numba-cuda", "the simulator's compiler"
    try:
        installed = importlib.util.find_spec("numba_cuda_mlir") is not None
    except (ImportError, ValueError):
        installed = False
    if not installed:
        return "numba-cuda", "numba-cuda-mlir not installed"
    if sys.version_info < (3, 11):
        return "numba-cuda", "numba-cuda-mlir needs Python >= 3.11"
    drv = driver_version()
    if drv is not None and drv < MLIR_DRIVER:
        return "numba-cuda", f"CUDA {drv // 1000}.{drv % 1000 // 10} driver"
    return "numba-cuda-mlir", "the default on CUDA 13"
