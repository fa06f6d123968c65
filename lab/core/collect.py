"""Garbage collection between the contenders of a run, scanning only the objects made since the last one.

The runner collects garbage each time the contender changes (Numba -> NumPy -> CuPy -> torch), so
that a contender's device copies caught in reference cycles are freed before the next one allocates
its own. A full collection scans every tracked object of the process: with torch, CuPy and the
compiler loaded, a few hundred thousand objects (modules, functions, types), 45-60 ms a collection
on a 2-core host with torch (CPU build) and Numba alone, every time. Inside :func:`frozen` the objects alive
when the run starts, and those that survived each collection since, are moved to the collector's
permanent generation (``gc.freeze``), so the next collection scans only what is new: what the last
contender made. At the end they are unfrozen (``gc.unfreeze``): an object frozen during the run that
became garbage later is collected by the process's next collection, as it would have been.
A caller that froze objects itself keeps its freeze: nothing is frozen or unfrozen then.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

_active = False  # inside frozen(), and this module froze the objects (none were frozen before)


@contextmanager
def frozen():
    """Within: :func:`between` freezes what its collection left. Unfreezes on the way out."""
    global _active
    if _active or gc.get_freeze_count():  # nested, or the caller's own freeze: leave it alone
        yield
        return
    gc.freeze()
    _active = True
    try:
        yield
    finally:
        _active = False
        gc.unfreeze()


def between() -> None:
    """Collect garbage (the objects not frozen), then freeze the survivors when inside :func:`frozen`."""
    gc.collect()
    if _active:
        gc.freeze()
