"""Words for a failing kernel that is the reference solution's but for one statement
(:func:`lab.teach.kernel_diff.one_difference`), judge side: where the judge's message only says what
differs (the differential's "how the values were combined", a hedged list), that statement replaces
those words; elsewhere it is added after them. The student's launch must be the reference's on the
case (else the launch may be what differs, and the kernel's one difference a harmless rewrite)."""
from __future__ import annotations

import re

import numpy as np

from lab.teach.indices import RUNS_PAST
from lab.teach.contained import source as src
from lab.teach.contained.counts import dims3
from lab.teach.kernel_diff import one_difference
from lab.teach.load_words import VALUE_GUESSES, reloaded_words
from lab.teach.pipeline_words import IN_FLIGHT, async_order_words
from lab.teach.class_words import class_words

# the judge's words that say what differs without naming why: where the kernel is the reference's
# but one statement (lab.teach.kernel_diff), that statement replaces them
_GENERIC = ("Hint: the reference solution, run on this case, wrote ", "Hint: the first wrong element is ")
_KEEP = ("; the wrong element is the expected value", "; every wrong element is the expected value")  # facts: kept
_HEDGES = (RUNS_PAST, "the index of this access is wrong (an offset, a halo cell, a warp or lane number), or the array's size is",
           "read before initialised (an accumulator not set to 0 before +=, shared memory read before it was filled)? or "
           "0/0, inf/inf (an overflow)?")


def _reference_launch(ex, case):
    """(grid, block) of the reference solution's launch() for ``case`` (the lab's own code), or None."""
    if case.grid is not None:
        return case.grid, case.block
    try:
        path = str(ex.solution)
        mod = src.load(src.read(path), path, ex.kernel, ex.launch, module_name=f"reference_launch_{ex.name}")
        return getattr(mod, ex.launch)(*case.launch_args)
    except Exception:  # noqa: BLE001
        return None


def one_difference_words(ex, case, raw) -> str | None:
    """:func:`lab.teach.kernel_diff.one_difference` of the student's kernel and the reference solution's,
    where the student's launch is the reference's on ``case`` (else the launch may be what differs)."""
    source = getattr(raw, "source", None)
    if not source or not ex.has_solution:
        return None
    ref = _reference_launch(ex, case)
    try:
        if ref is None or dims3(ref[0]) != dims3(raw.grid) or dims3(ref[1]) != dims3(raw.block):
            return None
        shapes = [np.shape(a) for a in case.args] + [tuple(o[0]) for o in case.outputs]
        return one_difference("\n".join(map(str, source)), src.read(str(ex.solution)), ex.kernel,
                              tuple(tuple(int(v) for v in sh) for sh in shapes), tuple(dims3(raw.block)))
    except Exception:  # noqa: BLE001 - no words rather than no verdict
        return None



def refined(ex, case, raw, text: str) -> str | None:
    """``text`` (a failing test's message) with the one difference of the student's kernel from the
    reference solution's (:func:`one_difference_words`) in place of its generic words or added to it;
    None when there is no one difference, or the message says it already."""
    source = getattr(raw, "source", None)
    named = class_words(ex, case, raw, text)  # the bug's class, on its own evidence, where the words showed a symptom
    text = named or text
    order = async_order_words("\n".join(map(str, source))) if source and IN_FLIGHT in text else None
    if order:  # the text shows which rule of the pipeline it breaks: that, for the rule's whole list
        text = text[:text.index(IN_FLIGHT)] + order
    runs = getattr(raw, "runs", None) or []
    trace = runs[0][1] if runs and len(runs[0]) > 1 else None
    guess = next((g for g in VALUE_GUESSES if g in text), None)
    again = reloaded_words(getattr(trace, "lab_counts", None), source, list(getattr(raw, "names", ()) or ())) \
        if guess and trace is not None else None
    if again:  # the trace shows the load repeated inside the loop: that, for the values' guess
        text = text[:text.index(guess)] + again
        order = order or again
    diff = one_difference_words(ex, case, raw)
    if not diff or diff in text:
        return text if order or named else None
    for g in _GENERIC:
        if g in text:
            at = text.index(g)
            kept = next((text[text.index(k, at):] for k in _KEEP if k in text[at:]), "")
            return text[:at] + "Hint: " + diff + kept
    for h in _HEDGES:
        if h in text:
            return text.replace(h, diff)
    return f"{_guard_claim_dropped(text, diff).rstrip('. ')}; {diff}"


# indices.other_shape_advice's claim about the access's guard: where the one differing statement is the access
# itself (the index, not the guard), the claim is dropped (a guard by the other array's shape can be right)
_GUARD_CLAIM = re.compile(r"; the index is inside \w+'s shape \([^)]*\) but outside \w+'s: the guard of this (?:store|"
                          r"load) \(or the loop's range that makes this index\) must test \w+'s shape \([^)]*\), not \w+'s")


def _guard_claim_dropped(text: str, diff: str) -> str:
    """``text`` without the other-shape guard claim where ``diff`` is at the access's own line."""
    m = _GUARD_CLAIM.search(text)
    at = re.search(r"outside its shape \([^)]*\), at line (\d+):", text)
    if not m or not at or f"at line {at.group(1)}: " not in diff:
        return text
    return text[:m.start()] + text[m.end():]
