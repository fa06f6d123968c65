"""How each kind of option value is checked (:meth:`lab.core.options.Option.check` picks the checker
from the option's declaration), with click's one-line messages (LabError; the CLI's exit code 2): the
command line (through each option's click type) and the library (through
:func:`lab.core.options.declares`) call the same checker, so ``lab.run(..., seed=-1)`` and ``lab run
--seed -1`` fail alike. Also :func:`backend` and :func:`csv`, which turn checked values into what the
engine takes.

Each checker takes the value (from Python: an int, a str, a list; from the command line: the string
click parsed) and the option as the CLI spells it (``"--seed"``), and returns the checked value.
"""
from __future__ import annotations

import os

from lab.core.errors import LabError


def _invalid(opt: str, why: str) -> LabError:
    return LabError(f"Invalid value for '{opt}': {why}")


def integer(value, opt: str, min: int | None = None):
    """An int (None passes); a str of an int is taken, as on the command line; ``min``: the least
    allowed. "Invalid value for '--seed': -1 is not in the range x>=0." otherwise."""
    if value is None:
        return None
    kind = "integer range" if min is not None else "integer"
    if isinstance(value, bool) or not isinstance(value, (int, str)) and not hasattr(value, "__index__"):
        raise _invalid(opt, f"{value!r} is not a valid {kind}.")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _invalid(opt, f"{value!r} is not a valid {kind}.") from None
    value = int(value)
    if min is not None and value < min:
        raise _invalid(opt, f"{value} is not in the range x>={min}.")
    return value


def number(value, opt: str, min: float | None = None, min_open: bool = False):
    """A float (None passes; an int or a str of a number is taken); ``min``: the least allowed (or,
    with ``min_open``, the bound it must exceed)."""
    if value is None:
        return None
    kind = "float range" if min is not None else "float"
    try:
        if isinstance(value, bool):
            raise ValueError
        value = float(value)
    except (TypeError, ValueError):
        raise _invalid(opt, f"{value!r} is not a valid {kind}.") from None
    if min is not None and (value <= min if min_open else value < min):
        raise _invalid(opt, f"{value} is not in the range x{'>' if min_open else '>='}{min}.")
    return value


def choice(value, opt: str, choices):
    """One of ``choices`` (None passes)."""
    if value is None or value in choices:
        return value
    shown = ", ".join(repr(c) for c in choices)
    raise _invalid(opt, f"{value!r} is not one of {shown}.")


def flag(value, opt: str) -> bool:
    """True or False (a flag of the command line)."""
    if isinstance(value, bool):
        return value
    raise LabError(f"{opt} is a flag: True or False, got {value!r}")


def text(value, opt: str):
    """A str (None passes): a list or tuple stands for its comma-separated items; an empty or blank
    value is bad input, as ``--variant ''`` is."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    value = str(value)
    if not value.strip():
        raise LabError(f"{opt} is empty: give a value or leave the option out")
    return value


def existing_file(value, opt: str):
    """A path to a file that exists (None passes)."""
    if value is None:
        return None
    value = text(value, opt)
    if not os.path.exists(value):
        raise _invalid(opt, f"File {value!r} does not exist.")
    if os.path.isdir(value):
        raise _invalid(opt, f"File {value!r} is a directory.")
    return value


def path(value, opt: str):
    """A path that is not a folder (None passes; the file need not exist yet)."""
    if value is None:
        return None
    value = text(value, opt)
    if os.path.isdir(value):
        raise _invalid(opt, f"File {value!r} is a directory.")
    return value


def folder(value, opt: str):
    """A path that is not a file (None passes; a folder need not exist yet)."""
    if value is None:
        return None
    value = text(value, opt)
    if os.path.isfile(value):
        raise _invalid(opt, f"Directory {value!r} is a file.")
    return value


def backend(sim) -> str:
    """``sim`` (True: the simulator, False: a GPU, None: auto) as :func:`lab.core.simulator.select`'s
    ``prefer``."""
    if sim is not None and not isinstance(sim, bool):
        raise LabError(f"--sim/--gpu: True (the simulator), False (a GPU) or None (auto), got {sim!r}")
    return "auto" if sim is None else ("sim" if sim else "gpu")


def csv(value) -> list[str] | None:
    """A comma-separated option (or a list) as a list (None or "all": the default, all). Empty items
    are bad input."""
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    if value is None or value == "all":
        return None
    items = [v.strip() for v in value.split(",")]
    if not all(items):
        raise LabError(f"{value!r}: an empty item in a comma-separated list")
    return items
