"""The session: where kernels run — a CUDA GPU or Numba's CUDA simulator — and which compiler builds
them, fixed once per process before ``numba.cuda`` loads (:func:`start` returns a :class:`Session`).

The backend choice itself (:func:`choose`, :func:`select`) is :mod:`lab.core.simulator`'s, re-exported
here. Everything that imports ``numba.cuda`` (the ``kernels`` package, the runner, the timer) must be
imported after :func:`select`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kernels.backend import SIM_ENV
from kernels.backend import gpu_count, is_simulator  # noqa: F401  (re-exported for lab's commands)
from lab.core.errors import LabError
from lab.core.simulator import choose, select  # noqa: F401  (the backend: lab.core.simulator owns it)


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
    holds the ``lab`` package first on PYTHONPATH, plus ``overrides``. A simulator child
    (``NUMBA_ENABLE_CUDASIM=1``) compiles with numba-cuda, the simulator's only compiler, unless the
    overrides name one: this process's ``LAB_COMPILER`` (numba-cuda-mlir on a GPU, chosen or the
    default) is not inherited there."""
    from lab.core import compilers

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **overrides)
    if env.get(SIM_ENV, "0") not in ("", "0") and compilers.ENV not in overrides:
        env[compilers.ENV] = compilers.NUMBA_CUDA
        env[compilers.WHY_ENV] = f"{compilers.NUMBA_CUDA}: the simulator's compiler"
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env
