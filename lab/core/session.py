"""The session: where kernels run — a CUDA GPU or Numba's CUDA simulator — and which compiler builds
them, fixed once per process before ``numba.cuda`` loads (:func:`start` returns a :class:`Session`).

The backend choice itself (:func:`lab.core.simulator.choose`, :func:`lab.core.simulator.select`) is
:mod:`lab.core.simulator`'s. Everything that imports ``numba.cuda`` (the ``kernels`` package, the runner, the timer) must be
imported after :func:`select`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
import sys

from kernels.backend import SIM_ENV
from lab.core.errors import LabError
from lab.core.simulator import select
from lab.core import compilers


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
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **overrides)
    if env.get(SIM_ENV, "0") not in ("", "0") and compilers.ENV not in overrides:
        env[compilers.ENV] = compilers.NUMBA_CUDA
        env[compilers.WHY_ENV] = f"{compilers.NUMBA_CUDA}: the simulator's compiler"
    # no empty entry (an empty PYTHONPATH entry is the working folder: a json.py there would shadow
    # the standard library), and no working folder on sys.path at all (PYTHONSAFEPATH, Python >= 3.11)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *rest])
    env["PYTHONSAFEPATH"] = "1"
    return env


# Python < 3.11 has no -P: the module is run by a bootstrap that first drops sys.path[0] (the working folder)
_BOOT = ("import runpy, sys; del sys.path[0]; m = sys.argv.pop(1); sys.argv[0] = m; "
         "runpy.run_module(m, run_name='__main__', alter_sys=True)")


def python_module(module: str) -> list[str]:
    """The command that runs ``python -m MODULE`` in a child of the lab without the working folder (or
    the script's) on ``sys.path``: ``-P`` (Python >= 3.11), else a bootstrap that drops it. A
    folder's ``json.py`` or ``numpy.py`` (a student's, where a teacher runs the lab) never shadows
    a module the child imports. Source: the Python docs, "Command line and environment", -P."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module]
    return [sys.executable, "-c", _BOOT, module]
