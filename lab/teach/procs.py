"""The checker's child processes, tracked (the tests' children, the compile's, compute-sanitizer's):
:func:`stop_all` (Ctrl-C) kills every one running and any started until the next check or grade.
Nothing here prints.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

LIVE: set = set()  # the children running now (the checker's, the simulator's, the sanitizer's)
LIVE_LOCK = threading.Lock()
STOP = threading.Event()  # set by stop_all: children started from now on are killed at once


def track(proc) -> None:
    with LIVE_LOCK:
        LIVE.add(proc)
        stopping = STOP.is_set()
    if stopping:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def untrack(proc) -> None:
    with LIVE_LOCK:
        LIVE.discard(proc)


def stop_all() -> None:
    """Kill every checker child running now (their process groups) and any started until the next
    :func:`check` or grade: Ctrl-C stops at once, not after the running tests' timeouts."""
    STOP.set()
    with LIVE_LOCK:
        procs = list(LIVE)
    for proc in procs:
        proc.lab_killed = True  # reaped by whoever waits for it, not waited for again
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


# an exited child's process group may take this long to empty by itself: bubblewrap's init (pid 1 of the
# sandbox's namespace, in the child's group) ends after bubblewrap, later under load. Waited only while a
# process of the group still runs (normally milliseconds); a process that stays is killed after it.
LEFTOVER_GRACE_S = 10.0


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running: not a zombie, which has ended and only
    waits to be reaped (``kill(2)`` still finds a zombie). From ``/proc/PID/stat`` (its state and
    process group: proc(5)); where there is no ``/proc``, whether ``killpg(pgid, 0)`` finds one."""
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # (ended meanwhile)
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def kill_group(proc, grace: float = LEFTOVER_GRACE_S) -> bool:
    """Kill what is left of the (exited) child's process group; True when a process of it still ran
    ``grace`` s after the child ended (it forked, and its process stayed). A process that ends by
    itself within ``grace`` is not counted: bubblewrap, the child's parent, exits once the sandbox's
    init (pid 1 of its namespace, in the same group) has told it the exit status, and that init ends
    a moment later; under load that moment was once read as "left processes running (it forked)"."""
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + grace
    while _group_running(proc.pid):
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            return True
        time.sleep(0.01)
    # the group is empty (zombies at most, which nothing kills): no signal now, its number may be reused
    return False
