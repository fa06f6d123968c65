"""The session: where kernels run — a CUDA GPU or Numba's CUDA simulator — and which compiler builds
them, fixed once per process before ``numba.cuda`` loads (:func:`start` returns a :class:`Session`).

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the choice
must be made first. A GPU is detected through the CUDA driver API without importing Numba
(``kernels.backend.gpu_count``). Everything that imports
``numba.cuda`` (the ``kernels`` package, the runner, the timer) must be imported after
:func:`select`.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from kernels.backend import SIM_ENV as _SIM_ENV
from kernels.backend import gpu_count, is_simulator  # noqa: F401  (re-exported for lab's commands)
from lab.core.errors import LabError


def _numba_cuda_loaded() -> bool:
    return "numba.cuda" in sys.modules


def choose(prefer: str = "auto") -> str:
    """Which backend ``prefer`` means here, "gpu" or "simulator", without setting it (the exercise
    checker sets it in its child process).

    prefer: "auto" (an explicit NUMBA_ENABLE_CUDASIM=1 wins, else a usable GPU, else the
    simulator), "gpu" or "sim". Raises LabError when a GPU is demanded but none is usable.
    """
    want_sim = {"sim": True, "gpu": False}.get(prefer)
    if want_sim is None:
        want_sim = is_simulator() or gpu_count()[0] == 0
    elif not want_sim:
        n, why = gpu_count()
        if n == 0:
            raise LabError(f"--gpu asked for a CUDA GPU, but {why}; use --sim for the CUDA simulator")
    return "simulator" if want_sim else "gpu"


def select(prefer: str = "auto") -> str:
    """Pick the backend for this process (:func:`choose`) and return "gpu" or "simulator".

    Raises LabError when a GPU is demanded but none is usable, or when ``numba.cuda`` was already
    imported with the other backend (the choice cannot change inside one process).
    """
    want_sim = choose(prefer) == "simulator"
    if _numba_cuda_loaded():
        if want_sim != is_simulator():
            have = "simulator" if is_simulator() else "gpu"
            raise LabError(f"numba.cuda is already loaded with the {have} backend in this process")
    else:
        os.environ[_SIM_ENV] = "1" if want_sim else "0"
        # Numba's low-occupancy warning (a grid under 128 blocks) stays on: it teaches something
        # when a student's launch is too small. The timer's 1-thread spin kernel silences it locally.
    return "simulator" if want_sim else "gpu"


@dataclass(frozen=True)
class Session:
    """What a process fixed once: ``backend`` ("gpu" or "simulator") and ``compiler`` ("numba-cuda",
    "numba-cuda-mlir", or "both" for ``lab run``'s one-process-per-compiler comparison)."""

    backend: str
    compiler: str

    @property
    def simulator(self) -> bool:
        return self.backend == "simulator"


def start(prefer: str = "auto", compiler: str | None = None, allow_both: bool = False) -> Session:
    """Fix the backend (:func:`select`) and the compiler (:func:`lab.core.compilers.select`) for this
    process, in that order, before anything compiles. ``compiler``: None means LAB_COMPILER or
    numba-cuda; "both" only where ``allow_both``. Raises LabError (one line) when either cannot be had."""
    from lab.core import compilers

    backend = select(prefer)
    if compiler == "both":
        if not allow_both:
            raise LabError("--compiler both is only for lab run; choose numba-cuda or numba-cuda-mlir")
        return Session(backend, "both")
    return Session(backend, compilers.select(compiler, backend == "simulator"))


def child_env(**overrides: str) -> dict:
    """The environment for a child Python process of the lab (the exercise checker, the offline
    compile, the doctor's tiny kernel, the other compiler's run): this one's, with the folder that
    holds the ``lab`` package first on PYTHONPATH, plus ``overrides``."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **overrides)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env
