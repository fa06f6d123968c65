"""The Numba GPU kernel lab: run, check and time Numba CUDA kernels beside NumPy, CuPy and torch.

From Python (notebooks, scripts): ``lab.run``, ``lab.grid``, ``lab.occupancy``, ``lab.counters``,
``lab.sweep``, ``lab.device`` (:mod:`lab.cli.api`: results with rich display, ``to_dict()`` as the
CLI's ``--json``, ``to_pandas()``), ``lab.LabError``, and ``%load_ext lab`` for the exercise cells
(:mod:`lab.cli.magics`). Under them, ``lab.library``: one typed function per ``lab`` command that
does the work and returns the plain result (a Report, the ``--json`` document), printing nothing;
the commands and the notebook API are views over it. They load on first use: ``import lab`` itself
imports nothing heavy.
"""

import importlib
__version__ = "0.1.0"

_API = {"run": "lab.cli.api", "grid": "lab.cli.api", "occupancy": "lab.cli.api", "counters": "lab.cli.api",
        "sweep": "lab.cli.api", "device": "lab.cli.api", "Result": "lab.cli.api",
        "LabError": "lab.core.errors", "load_ipython_extension": "lab.cli.magics"}
_MODULES = {"library": "lab.library"}


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'lab' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(set(globals()) | set(_API) | set(_MODULES))
