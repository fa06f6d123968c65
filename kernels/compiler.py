"""The one place kernels get ``cuda`` and the scalar types they cast with.

Every kernel module writes ``from kernels.compiler import cuda, float64, uint64`` (never
``from numba import cuda``), so the compiler is chosen in one place, once per process, before
anything compiles:

* numba-cuda (default): ``numba.cuda``, on a GPU or in Numba's CUDA simulator;
* numba-cuda-mlir (``LAB_COMPILER=numba-cuda-mlir``), numba-cuda's successor (GPU only).

Importing this module first settles the backend (``kernels.backend.choose_default``: the simulator
when no GPU is usable and nobody chose).
"""
from __future__ import annotations

import os

from kernels.backend import choose_default, is_simulator

COMPILERS = ("numba-cuda", "numba-cuda-mlir")
COMPILER_ENV = "LAB_COMPILER"

choose_default()
COMPILER = os.environ.get(COMPILER_ENV, "numba-cuda") or "numba-cuda"
SIMULATOR = is_simulator()

if COMPILER == "numba-cuda":
    from numba import cuda  # noqa: F401
    from numba import float32, float64, int32, int64, uint8, uint32, uint64  # noqa: F401
else:
    raise ImportError(f"{COMPILER_ENV}={COMPILER!r}: choose one of {', '.join(COMPILERS)}")
