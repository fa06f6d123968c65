"""A block reduction or scan whose block combines its values by atomics into shared memory, one per
data element, where the lesson (and the reference solution) combines them in a tree or with warp
shuffles: right values, the mapping the lesson forbids. Judge side: the student's counts (the tracer's
``shared_atomics``, the loads of the largest input) beside the reference solution's own run on the case
(:func:`lab.teach.reference.reference`): an exercise whose reference itself updates shared memory
atomically per element (a privatised histogram) is never failed by this rule.

Source: CUDA C++ Programming Guide, "Atomic Functions"; M. Harris, "Optimizing Parallel Reduction in
CUDA" (NVIDIA, 2007): the tree of barrier-separated steps.
"""
from __future__ import annotations

from lab.teach.reference import reference

LESSONS = {"block_reduction": "a block reduction", "block_scan": "a block scan"}


def atomic_combine_message(ex, case, facts: dict) -> str | None:
    """The lesson's words when the student's launch made about one shared-memory atomic per loaded data
    element and no warp shuffle, and the reference solution, run on the same case, made fewer than one
    per two elements (None otherwise, or when the reference cannot be run)."""
    lesson = getattr(ex, "lesson", None)
    lessons = lesson if isinstance(lesson, (tuple, list)) else (lesson,)
    what = next((LESSONS[k] for k in lessons if k in LESSONS), None)
    if what is None or not facts.get("inputs") or facts.get("warp_collectives"):
        return None
    big = facts["inputs"][0]
    loads, atomics = int(big["loads"]), int(facts.get("shared_atomics", 0))
    if atomics < 2 or 2 * atomics < loads:
        return None
    if not getattr(ex, "has_solution", False):
        return None
    ref = reference(ex, case)
    if ref is None:
        return None
    stats = getattr(ref[1], "stats", None)
    r_atomics = int(getattr(stats, "shared_atomics", -1)) if stats is not None else -1
    if r_atomics < 0 or 2 * r_atomics >= max(1, loads):
        return None
    return (f"right values, but the block combined its values with {atomics} atomic updates of shared memory for "
            f"{loads} loads of {big['name']}, about one per element, with no tree (the reference solution makes "
            f"{r_atomics} on this case): this exercise is about {what}: the block's threads combine their values "
            f"together in a tree (at each step half of them add a cell of the other half, a cuda.syncthreads() "
            f"between steps) or with warp shuffles, not one atomic per element")
