"""A failing test's message with the bug's class named where the judge's words only showed a symptom, each
rule on its own evidence (judge side; called by :func:`lab.teach.kernel_words.refined` before the one-difference
words):

* threads that passed different numbers of barriers: the early return or the branched barrier of the file
  (:func:`lab.teach.barrier_words.barrier_words`);
* integer poison or a NaN from a shared cell nobody stored, where the cells are filled one a thread and the
  array has more cells than the block has threads (:func:`lab.teach.cover_words.cells_per_thread_words`);
* columns from the block's thread count on never written by a store in no loop
  (:func:`lab.teach.cover_words.one_column_words`);
* an output that is the reference minus an input's own elements, where the storing line subtracts that input or
  reads the cell before the thread's own (:func:`lab.teach.cover_words.own_element_words`): the exclusive scan;
* a lesson's mistake named from the values alone (the exercise's ``MISTAKES``) where the trace shows an atomic
  function other than the reference solution's at an element (:func:`lab.teach.reference.atomic_op_fact`):
  that atomic is the bug, the values are only what it left.
"""
from __future__ import annotations

import math

import numpy as np

from lab.teach.barrier_words import barrier_words
from lab.teach.cover_words import cells_per_thread_words, one_column_words, own_element_words
from lab.teach.diagnose import Mistake, exercise_mistakes
from lab.teach.messages import one_store_line, store_line
from lab.teach.pipeline_words import UNREAD_BASE, other_buffer_words
from lab.teach.reference import atomic_op_fact

# the judge's words for a value read from shared memory nobody stored, where they name no cause: the integer
# poison's question, the NaN's hedge, the NaN's general advice (an exercise's own reading, a halo's, stays)
UNSTORED_GUESSES = ("shared memory never zeroed (set every element, then cuda.syncthreads(), before adding to it)?",
                    "read before initialised (an accumulator not set to 0 before +=, shared memory read before it was "
                    "filled)? or 0/0, inf/inf (an overflow)?",
                    "every cell the block reads must be stored first (threads past the end store 0, the identity, into "
                    "their own cell)")


def _trace(raw):
    runs = getattr(raw, "runs", None) or []
    return runs[0][1] if runs and len(runs[0]) > 1 else None


def _threads(block) -> int:
    return int(block) if isinstance(block, int) else int(math.prod(tuple(block)))


def class_words(ex, case, raw, text: str) -> str | None:
    """``text`` with the class of the bug named by the first rule whose evidence holds; None where none does."""
    source = getattr(raw, "source", None)
    said = barrier_words(text, source)
    if said:
        return said
    trace = _trace(raw)
    if trace is None or not source:
        return None
    counts = getattr(trace, "lab_counts", None) or {}
    uninit = list(getattr(trace, "uninit", None) or [])
    guess = next((g for g in UNSTORED_GUESSES if g in text), None)
    if uninit and guess:
        arr, idx = uninit[0][0], tuple(uninit[0][1])
        size = next((int(a[1]) for a in counts.get("arrays") or () if a[0] == arr), None)
        words = cells_per_thread_words("\n".join(map(str, source)), arr, idx, _threads(raw.block), size)
        if words:
            return text.replace(guess, words)
    if uninit and UNREAD_BASE.format(arr=uninit[0][0]) in text and "Hint: " in text:
        arr, idx, _who, line = uninit[0]
        words = other_buffer_words("\n".join(map(str, source)), arr, tuple(idx), int(line or 0))
        if words:
            return text[:text.index("Hint: ") + 6] + words
    onames = list(getattr(raw, "onames", None) or ())
    if "all unwritten although" in text and onames:
        for k, name in enumerate(onames):
            words = one_column_words(text, source, counts, name, k, one_store_line(trace, k),
                                     tuple(case.outputs[k][0]), raw.block)
            if words:
                return words
    if "Hint: " in text and case.init is not None:
        return _atomic_first(ex, case, raw, trace, text, source, onames)
    if onames and not text.startswith(("race", "out of bounds", "not every thread")):
        return _own_element(case, raw, trace, text, source, onames)
    return None


def _own_element(case, raw, trace, text, source, onames) -> str | None:
    """``text`` with :func:`lab.teach.cover_words.own_element_words` for the first output that is the reference
    minus an input's own elements, the line that stores it saying why."""

    inputs = dict(zip(list(getattr(raw, "names", ()) or ())[:len(case.args)], case.args))
    for k, name in enumerate(onames):
        out = np.asarray(raw.runs[0][0][k], np.float64)
        ref = np.asarray(case.refs[k], np.float64)
        for xname, x in inputs.items():
            if not isinstance(x, np.ndarray) or x.shape != out.shape or not np.any(x) or np.array_equal(out, ref):
                continue
            if not np.array_equal(out, ref - np.asarray(x, np.float64)):
                continue
            words = own_element_words(source, store_line(trace, k, 0), name, xname)
            if words:
                at = text.index("Hint: ") if "Hint: " in text else len(text)
                return text[:at].rstrip(". ") + ". Hint: " + words
    return None


def _atomic_first(ex, case, raw, trace, text, source, onames) -> str | None:
    """``text`` whose hint is one of the exercise's value mistakes, the hint replaced by the atomic function
    that differs from the reference's at an element (:func:`lab.teach.reference.atomic_op_fact`)."""
    hint = text[text.index("Hint: ") + 6:]
    if not any(Mistake(*m).message == hint for m in exercise_mistakes(ex) or ()):
        return None

    for k, name in enumerate(onames):
        fact = atomic_op_fact(ex, case, k, trace, name, source)
        if fact:
            return text[:text.index("Hint: ") + 6] + fact
    return None
