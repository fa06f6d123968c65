"""The verdict: is a contender's output the kernel's function of its inputs? One library function,
shared by ``lab run``, the tests (the mutation suite in ``tests/kernels/test_mutations.py``) and the
exercises, so that ``ok`` means the same thing everywhere.

What a check asserts, in order:

1. the contender returned as many outputs as the spec declares, each of the declared shape and
   dtype (``out_specs``; without them, the reference's shapes);
2. no element is left unwritten: outputs are poisoned before the run (NaN for floats). An integer
   poison is always some legal value (uint8 171 is a valid code), so integer outputs are run twice
   with two different poisons (``second``): an element equal to the first poison in the first run
   and to the second poison in the second was never written;
3. every element lies within its tolerance of the float64 reference. A tolerance is an absolute
   bound (a float or an array broadcast to the output), or :class:`Bounds` (the closed interval of
   accepted values per element: an exact answer, or either neighbour of a rounding boundary);
4. for contenders the lab allocates itself (Numba), nothing was written past the end of an output
   (a canary region after each output, see ``lab.core.contenders.prepare_numba``).

Source: the project brief (poison, float64 reference, every size not a multiple of the block);
GPU-Puzzles (one check call a puzzle).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from kernels.spec import Bounds, plural, poison_value


@dataclass(frozen=True)
class Verdict:
    """What :func:`check_outputs` found.

    ok: every output passed; max_abs_err: largest |out - ref| over finite reference elements (inf
    for an unwritten element, a NaN, or a wrong count/shape/dtype); rel_err: ||out - ref||_2 /
    ||ref||_2 over them; reason: why the check failed ("" when it passed).
    """

    ok: bool
    max_abs_err: float
    rel_err: float
    reason: str = ""


def _fail(reason: str) -> Verdict:
    return Verdict(False, math.inf, math.inf, reason)


def _is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iub"


def check_outputs(outs: Sequence[Any], refs: Sequence[Any], tols: Sequence[Any],
                  out_specs: Sequence[tuple] | None = None, second: Sequence[Any] | None = None) -> Verdict:
    """Check ``outs`` against float64 ``refs`` within ``tols``; returns a :class:`Verdict`.

    outs: host arrays, one per output; refs: the float64 reference outputs (same order);
    tols: per output, an absolute tolerance (float or array) or a :class:`Bounds`;
    out_specs: optional [(shape, dtype)] the spec declares (``spec.out_specs(size, dtype)``);
    second: optional outputs of a second run poisoned with ``poison_value(dtype, 1)``; integer
    outputs are then checked for never-written elements (see the module docstring).
    """
    outs, refs, tols = list(outs), list(refs), list(tols)
    want = len(out_specs) if out_specs is not None else len(refs)
    if len(outs) != want or len(refs) != want or len(tols) != want:
        return _fail(f"returned {len(outs)} outputs; the spec declares {want}")
    for i, (out, ref) in enumerate(zip(outs, refs)):
        out = np.asarray(out)
        shape = tuple(out_specs[i][0]) if out_specs is not None else np.shape(ref)
        if out.shape != tuple(shape):
            return _fail(f"output {i} has shape {out.shape}; expected {tuple(shape)}")
        if out_specs is not None and out.dtype != np.dtype(out_specs[i][1]):
            return _fail(f"output {i} has dtype {out.dtype}; expected {np.dtype(out_specs[i][1])}")
        if np.shape(ref) != tuple(shape):
            return _fail(f"reference {i} has shape {np.shape(ref)}; expected {tuple(shape)}")

    ok, max_err, num, den, reasons = True, 0.0, 0.0, 0.0, []
    for i, (out, ref, tol) in enumerate(zip(outs, refs, tols)):
        raw = np.asarray(out)
        out = raw.astype(np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if second is not None and _is_int(raw.dtype):
            other = np.asarray(second[i])
            unwritten = (raw == poison_value(raw.dtype, 0)) & (other == poison_value(raw.dtype, 1))
            if unwritten.any():
                ok = False
                max_err = math.inf
                reasons.append(f"output {i}: {plural(int(unwritten.sum()), 'element')} never written "
                               f"(first at {np.unravel_index(np.argmax(unwritten), raw.shape)})")
        finite = np.isfinite(ref)
        same_nonfinite = np.array_equal(np.isfinite(out), finite) and np.array_equal(out[~finite], ref[~finite])
        err = np.abs(out - ref)[finite] if finite.any() else np.zeros(0)
        err = np.where(np.isnan(err), np.inf, err)
        if isinstance(tol, Bounds):
            lo = np.broadcast_to(np.asarray(tol.lo, np.float64), ref.shape)[finite]
            hi = np.broadcast_to(np.asarray(tol.hi, np.float64), ref.shape)[finite]
            inside = (out[finite] >= lo) & (out[finite] <= hi)
        else:
            inside = err <= np.broadcast_to(np.asarray(tol, np.float64), ref.shape)[finite]
        if not same_nonfinite:
            reasons.append(f"output {i}: non-finite where the reference is finite (or the reverse)")
        elif not inside.all():
            bad = int(inside.size - np.count_nonzero(inside))
            reasons.append(f"output {i}: {bad} of {plural(inside.size, 'element')} outside the tolerance")
        ok &= bool(same_nonfinite and inside.all())
        if err.size:
            max_err = max(max_err, float(err.max()))
        num += float(np.sum(err ** 2))
        den += float(np.sum(ref[finite] ** 2))
        if not same_nonfinite:
            max_err = math.inf
    rel = math.sqrt(num / den) if den else math.sqrt(num)
    return Verdict(ok, max_err, rel, "" if ok else "; ".join(reasons) or "output differs from the reference")


@dataclass
class Checked:
    """What :func:`check_prepared` saw: the verdict, the first run's host outputs, and the value
    the first call returned (raw outputs, for timing code that wants them)."""

    verdict: Verdict
    outputs: list


def check_prepared(prepared, refs, tols, out_specs=None, first_call: Callable[[], Any] | None = None) -> Checked:
    """Run a contender the way ``lab run`` checks it and return the :class:`Checked` result.

    prepared: a ``lab.core.contenders.Prepared`` (call, poison(which), read, sync, optional overrun).
    first_call: runs the first, poisoned call and returns the raw outputs (the runner times it);
    default ``prepared.call()`` then ``prepared.sync()``.
    Poison 0, run, read; if an output is an integer array, poison 1, run again, read (two-poison
    check); then :func:`check_outputs`, then the canary after each output (``prepared.overrun``).
    Exceptions from the contender propagate (the runner turns them into FAIL rows).
    """
    def run_once():
        res = prepared.call()
        prepared.sync()
        return res

    overrun = getattr(prepared, "overrun", None) or (lambda: None)
    prepared.poison(0)
    outs = prepared.read((first_call or run_once)())
    message = overrun()  # each run's canary, before the next poison refills it
    second = None
    if any(_is_int(np.asarray(o).dtype) for o in outs):
        prepared.poison(1)
        second = prepared.read(run_once())
        message = message or overrun()
    verdict = check_outputs(outs, refs, tols, out_specs=out_specs, second=second)
    if message:
        verdict = replace(verdict, ok=False, reason=message if verdict.ok else f"{verdict.reason}; {message}")
    return Checked(verdict, outs)
