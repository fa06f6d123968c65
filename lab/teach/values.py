"""Value evidence for a wrong float output that names its cause by itself (used by the checker where
no trace fact is stronger): every wrong element a whole number where the expected values have a
fraction (a value went through an integer). Pure functions of the outputs; None where the evidence
does not single the cause out.
"""
from __future__ import annotations

import numpy as np


def whole_number_hint(out64, ref, bad, dtype) -> str | None:
    """The fraction-dropped hint: a float output whose wrong elements are all whole numbers, where the
    expected values at those elements are not and at least one is 1 or more in magnitude (a 0 alone is
    no evidence: nothing added gives it too)."""
    if np.dtype(dtype).kind != "f" or not bad.any():
        return None
    o, r = np.asarray(out64, np.float64)[bad], np.asarray(ref, np.float64)[bad]
    if not (np.all(np.isfinite(o)) and np.all(np.isfinite(r))):
        return None
    if not np.all(o == np.round(o)) or np.any(r == np.round(r)) or not np.any(np.abs(r) >= 1) or not np.any(o):
        return None
    return ("every wrong element is a whole number where the expected value has a fraction: the fraction was "
            "dropped on the way: a value went through an integer (a shared array or variable declared int32, int(), "
            "or // where / was meant): keep it float32")
