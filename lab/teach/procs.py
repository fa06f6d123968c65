"""The checker's child processes, tracked (the tests' children, the compile's, compute-sanitizer's):
:func:`stop_all` (Ctrl-C) kills every one running and any started until the next check or grade.
Nothing here prints.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

_LIVE: set = set()  # the children running now (the checker's, the simulator's, the sanitizer's)
_LIVE_LOCK = threading.Lock()
_STOP = threading.Event()  # set by stop_all: children started from now on are killed at once


def _track(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.add(proc)
        stopping = _STOP.is_set()
    if stopping:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _untrack(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def stop_all() -> None:
    """Kill every checker child running now (their process groups) and any started until the next
    :func:`check` or grade: Ctrl-C stops at once, not after the running tests' timeouts."""
    _STOP.set()
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        proc.lab_killed = True  # reaped by whoever waits for it, not waited for again
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _kill_group(proc) -> bool:
    """Kill what is left of the (exited) child's process group; True when something was left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True
