"""Where the kernels run — a CUDA GPU or Numba's CUDA simulator — decided before ``numba.cuda`` loads.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the choice must
come first. A GPU is detected through the CUDA driver API (``cuInit`` and ``cuDeviceGetCount`` from
``libcuda``, CUDA Driver API reference, "Initialization" and "Device Management") without importing
Numba. ``lab`` makes the choice explicitly (``lab.core.session.select``, ``--sim/--gpu``); a user who
imports a kernel module directly gets :func:`choose_default`: the GPU when one is usable, else the
simulator, with one warning saying so. Nothing here imports Numba.
"""
from __future__ import annotations

import ctypes
import os
import sys
import warnings

SIM_ENV = "NUMBA_ENABLE_CUDASIM"


class SimulatorFallback(UserWarning):
    """No usable CUDA GPU: the lab's kernels run in Numba's CUDA simulator."""


def gpu_count() -> tuple[int, str]:
    """Number of CUDA devices the driver reports, and why it is 0 when it is."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return 0, "no CUDA driver (libcuda) found"
    if lib.cuInit(0) != 0:
        return 0, "the CUDA driver found no usable GPU (cuInit failed)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return 0, "the CUDA driver reports no GPU"
    return count.value, ""


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
