"""The lab as a library: one typed function per ``lab`` command, doing the command's work and returning
its result, printing nothing. The ``lab`` commands (:mod:`lab.cli`) and the notebook API (``lab.run``
... with rich display, :mod:`lab.cli.api`) are views over these same functions.

    run, sweep, bench, roofline, profile, compare, tune     lab.bench.commands
    grid, occupancy, counters, sanitize, doctor             lab.inspect.commands
    list_kernels (lab list), device                         lab.core.commands

Keyword arguments are the command's options (same names, same defaults; tests/cli/test_library.py
checks every one), bad input raises :class:`lab.core.errors.LabError` with the command's one-line
message. Importing this module imports no Numba: the backend is chosen by the first call (``sim=``).

    import lab.library as L
    report = L.run("vecadd", size="4096", counters=True)   # a lab.core.runner.Report
    report.to_dict()                                         # what lab run --json prints
"""
from __future__ import annotations

from lab.bench.commands import bench, compare, profile, roofline, run, sweep, tune
from lab.core.commands import device, list_kernels
from lab.inspect.commands import counters, doctor, grid, occupancy, sanitize

# the lab command each function serves
COMMANDS = {"run": run, "list": list_kernels, "device": device, "bench": bench, "sweep": sweep,
            "roofline": roofline, "profile": profile, "compare": compare, "tune": tune, "grid": grid,
            "occupancy": occupancy, "doctor": doctor, "counters": counters, "sanitize": sanitize}

__all__ = [*{f.__name__ for f in COMMANDS.values()}, "COMMANDS"]
