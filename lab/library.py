"""The lab as a library: one typed function per ``lab`` command, doing the command's work and returning
its result, printing nothing. The ``lab`` commands (:mod:`lab.cli`) and the notebook API (``lab.run``
... with rich display, :mod:`lab.cli.api`) are views over these same functions.

    run, sweep, bench, roofline, profile, compare, tune     lab.bench.commands
    grid, occupancy, counters, sanitize, doctor             lab.inspect.commands
    list_kernels (lab list), device                         lab.core.commands
    exercise_list, exercise_start, exercise_check, exercise_grade, exercise_hint,
    exercise_solution, exercise_new, exercise_notebook      lab.teach.commands

Keyword arguments are the command's options, each declared once in :mod:`lab.core.options` (the
click command is made from the same declarations: same names, same defaults, same checks;
tests/cli/test_options.py holds them together); bad input raises :class:`lab.core.errors.LabError`
with the command's one-line message. ``fn.options`` lists a function's declarations. Importing this module imports no Numba: the backend is chosen by the first call (``sim=``).

    import lab.library as L
    report = L.run("vecadd", size="4096", counters=True)   # a lab.core.runner.Report
    report.to_dict()                                         # what lab run --json prints
"""
from __future__ import annotations

from lab.bench.commands import bench, compare, profile, roofline, run, sweep, tune
from lab.core.commands import device, list_kernels
from lab.inspect.commands import counters, doctor, grid, occupancy, sanitize
from lab.teach.commands import (exercise_check, exercise_grade, exercise_hint, exercise_list, exercise_new,
                                exercise_notebook, exercise_solution, exercise_start)

# the lab command each function serves
COMMANDS = {"run": run, "list": list_kernels, "device": device, "bench": bench, "sweep": sweep,
            "roofline": roofline, "profile": profile, "compare": compare, "tune": tune, "grid": grid,
            "occupancy": occupancy, "doctor": doctor, "counters": counters, "sanitize": sanitize,
            "exercise list": exercise_list, "exercise start": exercise_start, "exercise check": exercise_check,
            "exercise grade": exercise_grade, "exercise hint": exercise_hint, "exercise solution": exercise_solution,
            "exercise new": exercise_new, "exercise notebook": exercise_notebook}

__all__ = [*{f.__name__ for f in COMMANDS.values()}, "COMMANDS"]
