"""Ctrl-C, the same in every command: stop now, keep what finished, say so on one line, exit 130.

:func:`install` (the process entry, :func:`lab.cli.entry`) replaces Python's SIGINT handler with one
that records the interrupt before raising ``KeyboardInterrupt`` as usual. Python may swallow that
exception where it lands inside code that cannot raise (a weakref callback, a ``__del__``, a
finalizer: "Exception ignored in ..."); the record is what keeps the interrupt from being lost:
:func:`check` (called at every progress event of a long command) raises it again, and the exit code
is 130 whenever the record says an interrupt came, however the command ended. Commands that keep
partial results (a run's finished rows, a grade's finished students) show them before the line.

Source: Python's documentation, "signal — Set handlers for asynchronous events" (handlers run in the
main thread between bytecodes; exceptions raised in ``__del__`` and weakref callbacks are ignored),
and the shell's convention of exit status 128 + SIGINT (2) for a process ended by Ctrl-C.
"""
from __future__ import annotations

import signal
import threading

EXIT = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
_CAME = [False]


def _handler(signum, frame):
    _CAME[0] = True
    raise KeyboardInterrupt


def install() -> None:
    """Record every SIGINT before raising KeyboardInterrupt (main thread only; else nothing)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)


def came() -> bool:
    """Has an interrupt come in this process (even one that Python swallowed)?"""
    return _CAME[0]


def check() -> None:
    """Raise KeyboardInterrupt again if an interrupt came and was swallowed: a safe point to stop."""
    if _CAME[0]:
        raise KeyboardInterrupt


def message(kept: str = "what finished is shown above") -> str:
    """The one line a command prints when stopped by Ctrl-C."""
    return f"interrupted (Ctrl-C): stopped; {kept}"
