"""The judge of the exercise checker: it makes the hidden tests, their float64 references and every
verdict, and it never imports the student's code. The student's file is loaded and launched only by
:mod:`lab.teach.executor`, in a child process that the parent (:func:`lab.teach.workspace.check`) kills
when a test runs past its timeout; the child gets each test's inputs (never a reference, a
tolerance or the seed) and hands back raw data (output arrays, the simulator's trace facts) in
files of its folder, which :class:`Judge` reads safely and re-checks against what was asked.
Nothing the child prints or writes is taken as a verdict.

Per hidden test: poison the outputs (NaN; integer outputs twice, with two different poisons), launch
the student's kernel (in the simulator through :mod:`lab.core.simt`, which traces who wrote what, out-of-
bounds accesses and shared-memory races; on a GPU with guard bands around each output), compare with
the float64 reference, and turn what went wrong into one diagnosing message. Messages name at most
one expected element, never the test's code or its data.

What the judge cannot tell from the data: outputs that the child computed right on the CPU (from the
inputs it was given) and passed off as the kernel's, with forged writers; the simulator's trace
catches the plain form (an output that holds values no traced thread stored), and a kernel defined
outside the student's file (the shipped solution imported) is refused; the grader's sandbox
(:mod:`lab.teach.sandbox`) must keep the solutions unreadable.
"""
from __future__ import annotations

import inspect
import json
import math
import os
import threading
import traceback

import numpy as np

from kernels.spec import plural

GUARD = 1024  # poisoned elements before and after each output on a GPU (>= a block of overshoot)


def verdict(outs, refs, tols, out_specs=None, second=None):
    """A ``lab.core.check.Verdict`` (ok, max_abs_err, rel_err, reason): the lab's one correctness
    check (``lab.core.runner.check_outputs``, i.e. ``lab.core.check.check_outputs``: count/shape/dtype,
    two-poison integers, tolerances or Bounds).

    The only call to it in the exercise checker, so a change to the lab's check lands here too.
    """
    from lab.core.check import check_outputs

    return check_outputs(outs, refs, tols, out_specs=out_specs, second=second)


def _bad(out64, ref, tol):
    """Elements outside the tolerance (an absolute bound, or kernels.spec.Bounds), and its text at
    one element."""
    if hasattr(tol, "lo") and hasattr(tol, "hi"):
        lo = np.broadcast_to(np.asarray(tol.lo, np.float64), ref.shape)
        hi = np.broadcast_to(np.asarray(tol.hi, np.float64), ref.shape)
        return ~((out64 >= lo) & (out64 <= hi)), lambda i: (f"exactly {lo[i]:.9g} is right" if lo[i] == hi[i]
                                                          else f"accepted {lo[i]:.9g}..{hi[i]:.9g}")
    bound = np.broadcast_to(np.asarray(tol, np.float64), ref.shape)
    return ~(np.abs(out64 - ref) <= bound), lambda i: f"tolerance {bound[i]:.2g}"


class Failed(Exception):
    """A test failed with a message for the student; ``map``: who wrote each element of the output
    (:func:`_writers_map`), for indexing failures in the simulator."""

    def __init__(self, message, map=None):
        super().__init__(message)
        self.map = map


MAP_ENV = "LAB_CHECK_MAP"  # "1": a failing test's entry carries "map" (the notebook draws it; the CLI never asks)
MAP_LIMIT = 1 << 16  # elements: a larger output's map is not sent


def _writers_map(name, writer: dict, shape, grid, block) -> dict | None:
    """Which block and thread first wrote each element of output ``name`` (the simulator's record):
    {"output", "shape", "grid", "block", "block_of", "thread_of"} with linear block and thread ids
    (x fastest, as lab grid's map), -1 where nothing was written. None for a scalar or a large output."""
    size = int(np.prod(shape)) if shape else 1
    if not shape or size > MAP_LIMIT:
        return None
    g = tuple(grid) + (1,) * (3 - len(tuple(grid))) if not isinstance(grid, (int, np.integer)) else (int(grid), 1, 1)
    b = tuple(block) + (1,) * (3 - len(tuple(block))) if not isinstance(block, (int, np.integer)) else (int(block), 1, 1)
    block_of = np.full(size, -1, dtype=np.int64)
    thread_of = np.full(size, -1, dtype=np.int64)
    for flat, (who_b, who_t) in writer.items():
        if 0 <= flat < size:
            wb, wt = tuple(who_b) + (0,) * 3, tuple(who_t) + (0,) * 3
            block_of[flat] = wb[0] + g[0] * (wb[1] + g[1] * wb[2])
            thread_of[flat] = wt[0] + b[0] * (wt[1] + b[1] * wt[2])
    return {"output": name, "shape": list(shape), "grid": [int(x) for x in g], "block": [int(x) for x in b],
            "block_of": block_of.reshape(shape).tolist(), "thread_of": thread_of.reshape(shape).tolist()}


# --- The student's file (loaded only by lab.teach.executor, in the child) ----------------------
def kernel_problem(obj) -> str:
    """'' when ``obj`` is a ``@cuda.jit`` kernel (the simulator's or the GPU's), else what it is
    instead: a plain function passes the simulator's tests but is no CUDA kernel."""
    mod = type(obj).__module__ or ""
    if mod.startswith("numba.cuda"):
        device = getattr(obj, "_device", False) or (getattr(obj, "targetoptions", None) or {}).get("device")
        if device:
            return ("a device function (@cuda.jit(device=True)), not a kernel: decorate it with @cuda.jit "
                    "(device functions are called from kernels, not launched)")
        return ""
    if mod.startswith("numba"):
        return "not a CUDA kernel (compiled for the CPU): decorate it with @cuda.jit, not @numba.jit"
    return "not a CUDA kernel: decorate it with @cuda.jit"


def _one_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _where(e, path):
    """' (your line N)' for the deepest frame of the student's file in e's traceback."""
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fr.filename) == os.path.abspath(path):
            line = fr.lineno
    return f" (line {line} of your file)" if line else ""


# --- Formatting -----------------------------------------------------------------------------------
def _fmt_who(who, nd):
    b, t = who
    b, t = tuple(b)[:nd], tuple(t)[:nd]
    f = (lambda v: str(v[0])) if nd == 1 else (lambda v: "(" + ", ".join(map(str, v)) + ")")
    return f"thread {f(t)} of block {f(b)}"


def _fmt_t(t, nd):
    t = tuple(t)[:nd]
    return str(t[0]) if nd == 1 else "(" + ", ".join(map(str, t)) + ")"


def _fmt_idx(name, idx):
    return f"{name}[{', '.join(map(str, idx))}]"


def _ranges(flat_idx):
    """'1024..5465' style text for sorted flat indices (at most 3 runs)."""
    from lab.core.simt import ranges_text

    return ranges_text(flat_idx, most=3)


def _ndims(d):
    return 1 if isinstance(d, (int, np.integer)) else len(tuple(d))


# --- Launching --------------------------------------------------------------------------------------
def kernel_error_message(error: dict, trace, grid, block, case, names=()) -> str:
    """The message for a simulator launch that raised (the executor's raw facts ``error``: {"kind":
    "kernel", "type", "text", "one_line", "who", "line"} or {"kind": "launch", "text"}): a barrier
    that not every thread reached, a race or an out-of-bounds access that came first, else the
    exception at the student's line. ``names``: the kernel's array arguments (an out-of-bounds
    array not among them is a shared array)."""
    if error.get("kind") == "launch":
        return f"bad launch configuration: {error.get('text')}"
    nd = _ndims(grid)
    one_line = str(error.get("one_line"))
    if error.get("type") == "WarpError" and "reached the same cuda.syncthreads()" in str(error.get("text")):
        who = error.get("who") or ((0,), (0,))
        return f"{str(error.get('text')).strip()} (block {_fmt_who(who, nd).split(' of block ')[1]})"
    if trace.shared_rmw or trace.races:  # the race came first; what it then raised is its consequence
        return _race_text(trace, grid, block) + f" (the kernel then raised {one_line})"
    if trace.oob:
        name, idx, shape, who, kind = trace.oob[0]
        shared = name not in set(names)  # a shared array: not one of the kernel's arguments
        return (f"out of bounds: {_fmt_who(who, nd)} {'wrote' if kind == 'write' else 'read'} "
                f"{_fmt_idx(name, idx)}, outside its shape {tuple(shape)}; "
                f"{_oob_advice(idx, shape, who, block, grid, [s for s, _ in case.outputs], shared=shared)}")
    advice, kind, text = "", error.get("type"), str(error.get("text"))
    if kind == "OverflowError" and "math range" in text:
        advice = ": a float overflowed (exp of a large number? subtract the maximum first)"
    elif kind == "OverflowError" and "out of bounds for" in text:
        advice = ": the value does not fit the output's dtype (clamp before converting?)"
    elif kind == "ValueError" and "NaN" in text:
        advice = ": a NaN was converted to an integer (a value read before it was written?)"
    where = f" (line {int(error['line'])} of your file)" if error.get("line") else ""
    who = error.get("who") or ((0,), (0,))
    return f"your kernel raised {one_line} in {_fmt_who(who, nd)}{where}{advice}"


def guard_elements() -> int:
    """Poisoned elements around each GPU output: GUARD, or 0 under compute-sanitizer (LAB_SANITIZER set
    by lab.teach.workspace), where an out-of-bounds store must leave the allocation for memcheck to see it."""
    return 0 if os.environ.get("LAB_SANITIZER") else GUARD


def _extra_thread(own, grid, block, out_shapes):
    """Whether the thread at global coordinates ``own`` is one of the last block's extra threads in a
    thread-per-element launch: past an output's extent along an axis whose threads cover it, rounded
    up to the block (x = the last dimension, y = the one before)."""
    reach, bd = [g * b for g, b in zip(_dims3(grid), _dims3(block))], _dims3(block)
    for shape in out_shapes:
        shape = tuple(shape)
        for a, d in ((0, len(shape) - 1), (1, len(shape) - 2)):
            if d >= 0 and shape[d] <= reach[a] < shape[d] + bd[a] and own[a] >= shape[d]:
                return True
    return False


def _oob_advice(idx, shape, who, block, grid=None, out_shapes=(), shared=False):
    """What an out-of-bounds index suggests, from where the thread's own global index (x, y, z) sits
    in it: on its own axis, a missing guard (the last block's extra threads); on the other axis, row
    and column swapped; not there at all, index arithmetic (a loop bound, a stride, an offset), with
    how far it is from the thread's own index, and a bound check on that index (not on the thread's
    own) when the thread is one of the last block's extra threads. ``shared``: a shared array, whose
    slots are the threads' indices in the block."""
    if min(idx) < 0:
        return "a negative index: check your index arithmetic"
    b, t = tuple(who[0]), tuple(who[1])
    bd = _dims3(block)
    if shared:  # a shared array: the thread's own slot is its index in the block
        past = [d for d, (i, n) in enumerate(zip(idx, shape)) if i >= n]
        d = past[0]
        tt = tuple(int(v) for v in t) + (0, 0, 0)
        mine = tt[0] if len(idx) == 1 else (tt[0] if d == len(idx) - 1 else tt[1] if d == len(idx) - 2 else None)
        rel = f", {int(idx[d]) - mine:+d} from the thread's own slot {mine}" if mine is not None else ""
        return (f"index {int(idx[d])} is past the end ({int(shape[d])}) of this shared array{rel}: an offset (a tree "
                f"step that starts too large, a halo cell) or the array's size is wrong")
    own = [int(b[k]) * bd[k] + int(t[k]) if k < min(len(b), len(t)) else 0 for k in range(3)]
    grid_2d = bd[1] > 1 or any(int(v) for v in b[1:2])
    past = [d for d, (i, n) in enumerate(zip(idx, shape)) if i >= n]
    d = past[0]
    fits_t = len(idx) == 2 and idx[1] < shape[0] and idx[0] < shape[1]
    if len(idx) == 2 and fits_t:
        swapped = (idx[0] == own[0] and idx[1] == own[1] and own[0] != own[1]) if grid_2d else (d == 1 and idx[1] == own[0])
        if swapped:
            return "past the end; the index would fit the transposed shape: are row and column swapped?"
    if all(int(idx[k]) in own for k in past):
        return "past the end (the last block's extra threads): guard it, e.g. `if i < n:`"
    axis = (0 if not grid_2d else None) if len(idx) == 1 else (1 if d == len(idx) - 2 else 0) if len(idx) == 2 else None
    rel = ""
    if axis is not None and own[axis] != int(idx[d]):
        rel = f"; the thread's own index is {own[axis]}, this one {int(idx[d]) - own[axis]:+d} from it"
    if grid is not None and _extra_thread(own, grid, block, out_shapes):
        return (f"index {int(idx[d])} is past the end ({int(shape[d])}), at an offset from this thread's own "
                f"index{rel} (the thread is one of the last block's extra threads): an access at an offset (a halo "
                f"cell, a neighbour) needs its own bound check on that index, e.g. `x[j] if j < n else 0`")
    return (f"index {int(idx[d])} is past the end ({int(shape[d])}) and is not this thread's own element{rel}: a "
            f"loop bound, a stride or an offset runs past the end?")


def _race_text(trace, grid, block):
    """The message for ``trace``'s first shared-memory problem: a lost update (two threads read,
    changed and wrote the same element in one barrier phase: an atomic is the fix) before a race."""
    if getattr(trace, "shared_rmw", None):
        return shared_rmw_message(trace, 0, grid, block)
    return race_message(trace, 0, grid, block)


def shared_rmw_message(trace, k, grid, block):
    """The ``k``-th lost update in shared memory: two threads of a block both read and then wrote one
    element (``s[j] += 1``) in the same barrier phase."""
    arr, idx, who, other, line = trace.shared_rmw[k]
    nd, tnd = _ndims(grid), _ndims(block)
    at = f" at line {line}" if line else ""
    return (f"race: {_fmt_who(who, nd if nd == tnd else 3)} and thread {_fmt_t(other, tnd)} of the same block both "
            f"read, changed and wrote {_fmt_idx(arr, idx)}{at} in the same phase: one update is lost (a "
            f"read-modify-write such as `+=` is not atomic); use cuda.atomic.add({arr}, index, value) for an update "
            f"that several threads make to one element")


def race_message(trace, k, grid, block):
    """The ``k``-th shared-memory race of ``trace``: both threads, the element and the lines of both
    accesses (lines of the kernel's file only: simt records None for an access from elsewhere)."""
    who, did, arr, idx, other, other_did = trace.races[k]
    lines = trace.race_lines[k] if k < len(getattr(trace, "race_lines", [])) else (None, None)
    nd, tnd = _ndims(grid), _ndims(block)
    at = f" at line {lines[0]}" if lines[0] else ""
    other_at = f" at line {lines[1]}" if lines[1] else ""
    text = (f"race: {_fmt_who(who, nd if nd == tnd else 3)} {did} {_fmt_idx(arr, idx)}{at}, which thread "
            f"{_fmt_t(other, tnd)} of the same block {other_did}{other_at}")
    if did == "wrote" and other_did == "also wrote":
        return (text + " in the same phase (no cuda.syncthreads() between): two threads store to one element; if each "
                "element should have one writer, an index is wrong (a halo cell or an offset that lands on a "
                "neighbour's element?)")
    return (text + " with no cuda.syncthreads() between the two accesses; add one between writing shared memory "
            "and reading what other threads wrote (and before overwriting what they still read)")


def _param_names(kernel):
    fn = getattr(kernel, "py_func", kernel)
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _out_names(kernel, case):
    if case.out_names:
        return case.out_names
    names = _param_names(kernel)[len(case.args):]
    return [names[k] if k < len(names) else f"out{k}" for k in range(len(case.outputs))]


# --- One test ----------------------------------------------------------------------------------------
def runs_of(case) -> list:
    """The poisons of one case's launches: integer outputs twice (two poisons: an element that
    changes with the poison was never written), else once."""
    int_out = any(np.dtype(dt).kind in "iub" for _, dt in case.outputs)
    return [0, 1] if int_out and case.init is None else [0]


def judge_case(ex, case, raw, backend):
    """Raise Failed with a diagnosing message, or return the pass message. ``raw``: what the executor
    handed back for ``case``, checked by :func:`raw_result` (grid, block, onames, runs: [(outputs,
    trace or None, writers or None)], again: the GPU's finite-poison outputs or None, error: a
    simulator launch that raised, or None)."""
    grid, block = raw.grid, raw.block
    runs = raw.runs
    outs, trace, writers = runs[0]
    nd = _ndims(grid)
    onames = raw.onames
    if raw.error is not None:
        raise Failed(kernel_error_message(raw.error, runs[-1][1], grid, block, case, raw.names))  # the run that raised
    if trace is not None:
        if trace.barrier_mismatch:
            b, counts = trace.barrier_mismatch[0]
            desc = ", ".join(f"{plural(v, 'thread')} passed {k}" for k, v in sorted(counts.items()))
            raise Failed(f"not every thread of block {tuple(b)[:nd]} reached the same cuda.syncthreads() "
                         f"calls ({desc}): a barrier inside a branch or after an early return is undefined "
                         f"behaviour and can hang on a GPU; let all threads reach every barrier")
        if trace.races or trace.shared_rmw:
            raise Failed(_race_text(trace, grid, block))
        init_msg = _store_and_atomic_message(trace, onames, case, nd)
        if init_msg:
            raise Failed(init_msg)
        if trace.global_rmw:
            name, idx, a, b = trace.global_rmw[0]
            raise Failed(f"race: {_fmt_idx(name, idx)} is read and updated by several threads "
                         f"({_fmt_who(a, nd)} and {_fmt_who(b, nd)}) without an atomic: use "
                         f"cuda.atomic.add (or min/max)")
    if trace is not None:
        _untraced_values(case, outs, writers, onames, getattr(trace, "lab_touched", None))
    # the mapping lesson's counts (lab.teach.lessons.mapping_facts), made by the executor
    facts = getattr(trace, "lab_facts", None) if trace is not None and getattr(ex, "lesson", None) else None
    # never-written elements: NaN in a float output, or a value that changed with the poison; the
    # simulator's tracer tells those apart from elements that were written with NaN (or garbage)
    for k, (out, ref) in enumerate(zip(outs, case.refs)):
        out = np.asarray(out)
        if case.init is not None:
            continue
        if out.dtype.kind == "f":
            unwritten = np.isnan(out) & ~np.isnan(np.asarray(ref, dtype=np.float64))
        else:
            unwritten = np.asarray(runs[1][0][k]) != out
        if unwritten.any():
            written = _written_mask(writers[k], out.shape) if writers is not None else None
            if written is None and out.dtype.kind == "f" and backend != "simulator":
                # no tracer on a GPU: run again with a finite poison; NaN in both runs was written
                again = None if raw.again is None else np.asarray(raw.again[k])
                written = None if again is None else ~(again == np.asarray(simt_poison(out.dtype)))
                if written is not None and (unwritten & written).any():
                    first = tuple(int(v) for v in np.argwhere(unwritten & written)[0])
                    raise Failed(f"{_fmt_idx(onames[k], first)} is NaN although it was written (a second run "
                                 f"with another poison tells the two apart): read before initialised (an "
                                 f"accumulator not set to 0 before +=, shared memory read before it was "
                                 f"filled)? or 0/0, inf/inf (an overflow)?; {int((unwritten & written).sum())} of "
                                 f"{plural(out.size, 'element')} like this")
                written = None
            if written is not None and (unwritten & written).any():
                first = tuple(int(v) for v in np.argwhere(unwritten & written)[0])
                flat = int(np.ravel_multi_index(first, out.shape)) if out.shape else 0
                what = "NaN" if out.dtype.kind == "f" else "a value that depends on what the output held before"
                seen = ""
                if trace is not None and trace.uninit:  # the tracer saw the read: name it
                    arr, uidx, uwho, uline = trace.uninit[0]
                    seen = (f"; the simulator saw {_fmt_who(uwho, nd)} read shared {_fmt_idx(arr, uidx)}"
                            f"{f' at line {uline}' if uline else ''} before any thread of its block wrote it")
                raise Failed(f"{_fmt_idx(onames[k], first)} was written by {_fmt_who(writers[k][flat], nd)}, but it "
                             f"is {what}: read before initialised (an accumulator not set to 0 before +=, shared "
                             f"memory read before it was filled)? or 0/0, inf/inf (an overflow)?; "
                             f"{int((unwritten & written).sum())} of {plural(out.size, 'element')} like this{seen}")
            raise Failed(_unwritten_message(onames[k], unwritten, grid, block, checker_grid=case.grid is not None),
                         writers and _writers_map(onames[k], writers[k], out.shape, grid, block))
    if trace is not None and case.init is not None:  # an accumulator (dot's out[0]): atomics only
        for k, others in enumerate(getattr(trace, "lab_others", [])):
            if others:
                flat = min(others)
                n = 1 + len(others[flat])
                idx = tuple(int(v) for v in np.unravel_index(flat, tuple(case.outputs[k][0])))
                one_each = len({tuple(w[0]) for w in [writers[k][flat], *others[flat]]}) == n
                raise Failed(f"{_fmt_idx(onames[k], idx)} was stored to by {n} threads{', one per block' if one_each else ''} "
                             f"with a plain store: the last one wins and the other partials are lost; add with "
                             f"cuda.atomic.add")
    if trace is not None and getattr(ex, "one_writer", False):
        for k, others in enumerate(getattr(trace, "lab_others", [])):
            if others:
                raise Failed(_many_writers_message(onames[k], case.outputs[k][0], writers[k], others, grid, block))
    second = runs[1][0] if len(runs) > 1 else None
    verdict_ = verdict(outs, case.refs, case.tols, out_specs=case.outputs, second=second)
    if verdict_.ok:
        if trace is not None and trace.uninit:
            arr, idx, who, line = trace.uninit[0]
            at = f" at line {line}" if line else ""
            raise Failed(f"right values here, but {_fmt_who(who, nd)} read {_fmt_idx(arr, idx)}{at} before any thread of "
                         f"its block wrote it: shared memory starts with whatever the last kernel left there (the "
                         f"simulator fills it with NaN or 0xAB.., which this result happened to ignore); store every "
                         f"element before it is read (e.g. 0 or the identity for threads past the end)")
        if facts is not None:
            from lab.teach.lessons import lesson_message

            lesson = lesson_message(ex.lesson, facts, launch=ex.launch if case.grid is None else None,
                                    output=onames[0] if onames else "the output")
            if lesson:
                raise Failed(lesson)
        return f"ok (max abs error {verdict_.max_abs_err:.2g})"
    for k, (out, ref, tol) in enumerate(zip(outs, case.refs, case.tols)):
        out64 = np.asarray(out, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if out64.shape != ref.shape:
            raise Failed(f"{onames[k]} has shape {out64.shape}, expected {ref.shape}")
        bad, tol_text = _bad(out64, ref, tol)
        if not bad.any():
            continue
        if case.init is not None and np.array_equal(out64, np.asarray(case.init[k], np.float64).reshape(out64.shape)):
            raise Failed(f"{onames[k]} still holds its initial value {out64.ravel()[:2].tolist()}: nothing was "
                         f"written or added to it")
        if ref.size > 1 and not np.any(out64) and np.any(ref):
            if writers is not None and len(writers[k]) == ref.size:
                raise Failed(f"{onames[k]} is all zeros, though every element was written: the value stored is 0 "
                             f"(expected e.g. {_fmt_idx(onames[k], tuple(int(v) for v in np.argwhere(ref != 0)[0]))} = "
                             f"{ref[tuple(np.argwhere(ref != 0)[0])]:.6g}): check the formula (a clamp, a scale)")
            raise Failed(f"{onames[k]} is all zeros: is anything written? (a kernel that writes 0.0 "
                         f"cannot pass)")
        first = tuple(int(v) for v in np.argwhere(bad)[0])
        digits = 9 if hasattr(tol, "lo") else 6
        if np.dtype(case.outputs[k][1]).kind in "iub":  # integers exactly (2.84831e+07 hid a difference of 1)
            got, want = f"{int(out64[first])}", f"{int(round(ref[first]))}" if np.isfinite(ref[first]) else f"{ref[first]}"
        else:
            got, want = f"{out64[first]:.{digits}g}", f"{ref[first]:.{digits}g}"
        msg = (f"{_fmt_idx(onames[k], first)} = {got}, expected {want} "
               f"({tol_text(first)}); "
               f"{int(bad.sum())} of {plural(ref.size, 'element')} wrong")
        if writers is not None:
            flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
            who = writers[k].get(flat)
            if who is not None:
                msg += f"; written by {_fmt_who(who, nd)}"
        extra = _transposed_hint(out64, ref, bad)
        if case.diagnose is not None:
            extra = case.diagnose(outs, case.refs) or extra
        extra = _scaled_hint(out64, ref, bad) or _poison_hint(out64, ref, bad, out.dtype) or extra
        raise Failed(msg + (f". Hint: {extra}" if extra else ""),
                     writers and _writers_map(onames[k], writers[k], out64.shape, grid, block))
    raise Failed(f"output differs from the float64 reference: {verdict_.reason}")


def _untraced_values(case, outs, writers, onames, touched=None) -> None:
    """Failed when an output holds values (not its poison, not its initial value) that no thread of
    the kernel stored: nothing at all was stored into it, not even an index taken (``touched``: the
    executor's per-output record; ``out[i][j] = v`` is indexed but not followed by the tracer), or the
    tracer followed this kernel's stores to it and an element changed without one. Such values were
    not computed by the kernel's threads (the output filled around the launch)."""
    from lab.core.simt import poisoned

    for k, out in enumerate(outs):
        out = np.asarray(out)
        if writers[k] is None:
            continue
        shape, dt = case.outputs[k]
        if case.init is not None:
            before = np.asarray(case.init[k], dtype=dt).reshape(out.shape)
        else:
            before = poisoned(tuple(shape), dt, 0)
        changed = ~((out == before) | (np.isnan(out) & np.isnan(before))) if out.dtype.kind == "f" else out != before
        if not changed.any():
            continue
        if not writers[k]:
            if touched is not None and k < len(touched) and touched[k]:
                continue
            raise Failed(f"{onames[k]} holds values, but no thread of your kernel stored into it (the simulator "
                         f"traced every thread): its values were not computed by the kernel's threads (filled "
                         f"around the launch?)")
        stray = changed & ~_written_mask(writers[k], out.shape)
        if stray.any():
            first = tuple(int(v) for v in np.argwhere(stray)[0]) if out.shape else ()
            raise Failed(f"{_fmt_idx(onames[k], first)} holds a value, but no thread of your kernel stored into it "
                         f"(the simulator traced every thread's stores); {int(stray.sum())} of "
                         f"{plural(out.size, 'element')} like this: the values were not computed by the kernel's "
                         f"threads (filled around the launch?)")


def _transposed_hint(out64, ref, bad):
    """The transposed-position hint, only when the output matches the transposed reference: every
    wrong element whose transposed position exists holds that position's value (and most do)."""
    if ref.ndim != 2 or ref.size < 2:
        return None
    idx = np.argwhere(bad)
    fits = (idx[:, 1] < ref.shape[0]) & (idx[:, 0] < ref.shape[1])
    if fits.sum() < max(2, len(idx) // 2):
        return None
    i, j = idx[fits, 0], idx[fits, 1]
    want = ref[j, i]
    if np.all(np.abs(out64[i, j] - want) <= 1e-5 * (1 + np.abs(want))):
        return "it holds the value of the transposed position: row and column swapped?"
    return None


def _scaled_hint(out64, ref, bad):
    """'every wrong element is 64 times the expected value' when all wrong elements are one integer
    multiple (2..4096) of the reference (a value added once per thread or block)."""
    if not bad.any():
        return None
    o, r = out64[bad], ref[bad]
    if not np.all(np.isfinite(o)) or np.any(np.abs(r) < 1e-6):
        return None
    k = o / r
    m = float(np.round(k[0]))
    if 2 <= m <= 4096 and np.all(np.abs(k - m) <= 1e-3 * m):
        return (f"every wrong element is {m:g} times the expected value: is it added {m:g} times (once per "
                f"thread of a block, once per block or per warp) instead of once?")
    return None


def _poison_hint(out64, ref, bad, dtype):
    """A hint when the wrong elements are NaN (floats) or off by whole multiples of the simulator's
    integer poison: a value read before it was written (shared memory never zeroed or filled)."""
    o, r = out64[bad], ref[bad]
    if np.dtype(dtype).kind == "f":
        if np.isnan(o).any() and np.isfinite(r).all():
            return ("it is NaN: a value read before it was written? (shared memory not filled for every "
                    "element the block reads, e.g. threads past the end not storing 0; an accumulator not set)")
        return None
    from lab.core import simt

    poison = float(np.asarray(simt.poisoned((), dtype))[()])
    if poison == 0:
        return None
    k = (o - r) / poison
    if np.all(np.abs(k - np.round(k)) < 1e-9) and np.all(np.round(k) != 0):
        return (f"each wrong element is off by a multiple of {int(poison)}, the value the simulator fills fresh shared "
                f"memory with: shared memory never zeroed (set every element, then cuda.syncthreads(), before adding "
                f"to it)?")
    return None


def store_and_atomic(trackers) -> list:
    """Per output (the simulator's trackers of a launch, executor side): None, or [flat, who, line]
    of the first element that got both a plain store and atomic updates from another block (an
    output initialised, or reset, inside a kernel whose other threads add to it atomically)."""
    out = []
    for tr in trackers:
        # a store and atomics of the same block, ordered by a barrier, are fine (a block's own slot)
        both = [f for f in tr.plain if tr.atomics.get(f) and tr.atomic_blocks.get(f, set()) - {tr.plain[f][0][0]}]
        if not both:
            out.append(None)
            continue
        flat = min(both)
        who, line = tr.plain[flat]
        out.append([int(flat), who, line])
    return out


def _store_and_atomic_message(trace, onames, case, nd):
    """The message for :func:`store_and_atomic`'s first finding (``trace.lab_store_atomic``): blocks
    run in any order, so the store can wipe out updates made before it."""
    for k, found in enumerate(getattr(trace, "lab_store_atomic", None) or []):
        if not found:
            continue
        flat, who, line = found
        shape = tuple(case.outputs[k][0])
        idx = tuple(int(v) for v in np.unravel_index(int(flat), shape)) if shape else (0,)
        at = f" at line {line}" if line else ""
        if case.init is not None:
            init = np.asarray(case.init[k], np.float64).ravel()
            before = (f"{onames[k]} already holds its start value ({init[int(flat)]:g}) before the launch: remove the "
                      f"store (initialise outside the kernel)")
        else:
            before = "initialise it before the launch (on the host or in a kernel launched first)"
        return (f"{_fmt_idx(onames[k], idx)} is set with a plain store by {_fmt_who(who, nd)}{at} while other threads "
                f"update it with cuda.atomic: blocks run in any order, so the store can wipe out updates made before "
                f"it; {before}")
    return None


def simt_poison(dtype):
    from lab.core.simt import FLOAT_SENTINEL

    return np.dtype(dtype).type(FLOAT_SENTINEL)


def _written_mask(writer, shape):
    """Boolean array of ``shape``: which elements the tracer saw written."""
    mask = np.zeros(int(np.prod(shape)) if shape else 1, bool)
    if writer:
        mask[np.fromiter(writer.keys(), int, len(writer))] = True
    return mask.reshape(shape) if shape else mask.reshape(())


def _many_writers_message(name, shape, writer, others, grid, block):
    """'out[0] was written by 12 threads, one per block: ...' for the first element that more than
    one thread wrote (mapping exercises: each output element has exactly one writer)."""
    flat = min(others)
    idx = tuple(int(v) for v in np.unravel_index(flat, tuple(shape))) if shape else (0,)
    who = [writer[flat], *sorted(others[flat])]
    blocks = {tuple(w[0]) for w in who}
    nblocks = math.prod(_dims3(grid))
    nd = _ndims(grid)
    n = len(who)
    text = f"{_fmt_idx(name, idx)} was written by {n} threads"
    if len(blocks) == n and n == nblocks > 1:
        return (text + ", one per block: every block repeats the whole loop; use the block's offset "
                "(cuda.blockIdx.x * cuda.blockDim.x, or cuda.grid(1)) so that each block does its own part")
    if len(blocks) == 1:
        return (text + f" of {_fmt_who(who[0], nd).split(' of ')[1]} ({_fmt_who(who[0], nd).split(' of ')[0]}, "
                f"{_fmt_who(who[1], nd).split(' of ')[0]}, ...): each output element must be written by exactly "
                f"one thread: does every thread loop over all the elements?")
    return (text + f" ({_fmt_who(who[0], nd)}, {_fmt_who(who[1], nd)}, ...): each output element must be "
            f"written by exactly one thread")


def _dims3(d):
    d = (int(d),) if isinstance(d, (int, np.integer)) else tuple(int(v) for v in d)
    return d + (1,) * (3 - len(d))


def _unwritten_message(name, unwritten, grid, block, checker_grid=False):
    """Which elements of output ``name`` were never written, and what that pattern is evidence of:
    "round the number of blocks up" only when the student's own grid (``checker_grid`` False) has
    fewer threads than elements along that axis; x and y swapped only when the unwritten band starts
    where the other axis's threads end; a guard against the wrong extent when it starts at the other
    dimension's size; otherwise what was observed and where."""
    idx = np.argwhere(unwritten)
    count, total = len(idx), unwritten.size
    whose = "the checker's grid" if checker_grid else "your launch"
    if unwritten.ndim == 1:
        flat = idx[:, 0]
        text = f"{name} elements {_ranges(flat)} ({count} of {total}) never written"
        u = int(flat[0])
        if count == total:
            return text + ": nothing was written: does your kernel store into " + name + "?"
        tail = count == total - u  # everything from u on
        tpb = math.prod(block if not isinstance(block, (int, np.integer)) else (block,))
        launched = tpb * math.prod(grid if not isinstance(grid, (int, np.integer)) else (grid,))
        if tail and u == tpb and launched > u:
            return text + ": is blockIdx.x * blockDim.x in your index?"
        if tail and u >= launched and not checker_grid:
            return text + f": your launch has {plural(launched, 'thread')} for {plural(total, 'element')}: round the number " \
                          f"of blocks up (ceiling division)"
        if tail and u >= launched:
            return text + (f": the checker's grid has {plural(launched, 'thread')} for {plural(total, 'element')}: "
                           f"does each thread write more than its one element, or is the index scaled?")
        if tail and count == 1:
            return text + ": off by one in the guard (`i < n`, not `i < n - 1`)?"
        if tail:
            return text + (f": {whose} has {plural(launched, 'thread')} for {plural(total, 'element')}, so the "
                           f"threads of the last {count} elements exist: the guard (or the index) stops {count} "
                           f"elements short of n")
        return text + f" ({whose} has {plural(launched, 'thread')}; the first unwritten is {name}[{u}])"
    first = tuple(int(v) for v in idx[0])
    rows = np.where(unwritten.all(axis=tuple(range(1, unwritten.ndim))))[0]
    cols = np.where(unwritten.all(axis=0))[0] if unwritten.ndim == 2 else []
    text = f"{count} of {total} elements of {name} never written, the first {_fmt_idx(name, first)}"
    if count == total:
        return text + ": nothing was written: does your kernel store into " + name + "?"
    if unwritten.ndim != 2:
        return text
    # the launch's coverage, x = column and y = row (the exercises' mapping), before any grid hint
    reach = [g * b for g, b in zip(_dims3(grid), _dims3(block))]  # threads along x, y
    n_rows, n_cols = unwritten.shape
    need = {"column": (0, n_cols), "row": (1, n_rows)}
    for what, run in (("row", rows), ("column", cols)):
        a, size = need[what]
        if len(run) and run[-1] == size - 1 and len(run) == size - run[0]:
            start = int(run[0])
            other = 1 - a
            if reach[a] < size and not checker_grid:  # the student's grid really stops short
                g, b = _dims3(grid)[a], _dims3(block)[a]
                if reach[a] >= unwritten.shape[a] and reach[other] >= size:  # it would fit with x and y swapped
                    return text + (f" ({what}s {start}.. all unwritten: your grid has {reach[0]} threads along x and "
                                   f"{reach[1]} along y for {n_cols} columns x {n_rows} rows: it would cover the "
                                   f"matrix the other way round: are the grid's x and y swapped? x = column (from "
                                   f"the number of columns), y = row)")
                return text + (f" ({what}s {start}.. all unwritten: your grid has {plural(g, 'block')} of {b} threads "
                               f"along {'xy'[a]}, {reach[a]} threads for {size} {what}s: round the number of "
                               f"blocks up (x = column, y = row)")
            if start == reach[other] and reach[other] < size:
                return text + (f" ({what}s {start}.. all unwritten, and {start} is the number of threads along "
                               f"{'xy'[other]}: the grid covers the matrix, but the {what} index comes from the {'xy'[other]} axis: are x and y "
                               f"swapped in your indices? x = column, y = row)")
            if start == unwritten.shape[a] and start < size:
                dim = "rows" if a == 0 else "columns"
                return text + (f" ({what}s {start}.. all unwritten, and {start} is the number of {dim}: does the "
                               f"guard compare the {what} with the number of {dim}? a {what} must be below "
                               f"{size}, shape[{1 if a == 0 else 0}])")
            return text + (f" ({what}s {start}.. all unwritten although {whose} has {reach[0]} x {reach[1]} threads "
                           f"for {n_cols} columns x {n_rows} rows: the guard, a loop bound or the index stops "
                           f"short of {size} {what}s)")
    parts = []
    if len(rows):
        parts.append(f"rows {_ranges(rows)} entirely")
    if len(cols):
        parts.append(f"columns {_ranges(cols)} entirely")
    return text + (f" (unwritten: {', '.join(parts)})" if parts else
                   f" ({whose} has {reach[0]} x {reach[1]} threads for {n_cols} columns x {n_rows} rows)")


# --- compute-sanitizer's reports, in the words of the simulator's diagnoses ------------------------------------
def _lineinfo(mod):
    """Line info for every kernel and device function of the student's module, before they compile."""
    from lab.core.sanitizer import lineinfo_on

    for v in vars(mod).values():
        if hasattr(v, "targetoptions") and hasattr(v, "py_func"):
            lineinfo_on(v)


def _who(thread, block):
    """'thread 40 of block 3' (1-D) or 'thread (1, 2) of block (0, 1)' from a report's 3-D ids."""
    if thread is None or block is None:
        return "a thread"
    nd = 3 if thread[2] or block[2] else 2 if thread[1] or block[1] else 1
    return _fmt_who((block, thread), nd)


def sanitizer_message(r, hazards: int = 0) -> str:
    """One diagnosing line for compute-sanitizer report ``r`` (a lab.core.sanitizer.Report) in the
    student's file, in the style of the simulator's race, out-of-bounds and barrier messages."""
    at = f"line {r.line} of your file" if r.line else "your kernel (no line info)"
    tool = f"compute-sanitizer {r.tool} on the GPU"
    if r.kind.startswith("Race ("):
        first, second = (w.strip().lower() for w in r.kind[6:-1].split("/"))
        other = f"line {r.others[0].rsplit(':', 1)[-1]}" if r.others else "another line"
        count = f"; {hazards or r.count} hazards" if (hazards or r.count) > 1 else ""
        return (f"race ({tool}{count}): a {first} at {at} and a {second} at {other} by another thread of the same "
                f"block, with no cuda.syncthreads() between the two accesses; add one between writing shared memory "
                f"and reading what other threads wrote (and before overwriting what they still read)")
    if r.tool == "memcheck" and "Invalid" in r.kind:
        did = "wrote" if "write" in r.kind.lower() else "read"
        return (f"out of bounds ({tool}): {_who(r.thread, r.block)} {did} outside an array at {at} ({r.kind}); "
                f"guard it, e.g. `if i < n:`")
    if r.tool == "synccheck":
        return (f"barrier ({tool}): {r.kind} at {at} ({_who(r.thread, r.block)}): not every thread of the block "
                f"reached the same cuda.syncthreads() calls; let all threads reach every barrier")
    return f"{r.tool} ({tool}): {r.kind} at {at} ({_who(r.thread, r.block)})"


# --- Running every test --------------------------------------------------------------------------------
COMPILE_TEST = "compiles for a GPU"


def unique_names(cases):
    """Give every case a distinct label ('n=1', then 'n=1 (2)'): results are keyed by name."""
    seen = {}
    for c in cases:
        k = seen.get(c.name, 0)
        seen[c.name] = k + 1
        if k:
            c.name = f"{c.name} ({k + 1})"
    return cases


_QUIET = threading.Lock()


def hidden_cases(ex, rng):
    """The hidden tests of exercise ``ex`` drawn from ``rng`` (``np.random.default_rng(seed)``), each
    with a distinct name. (The judge's process makes them: an exercise's hidden.py may import the
    lab's kernels, whose backend note is no news here.)"""
    import warnings

    from kernels.backend import SimulatorFallback

    with _QUIET, warnings.catch_warnings():  # (catch_warnings is process-wide: one grader thread at a time)
        warnings.simplefilter("ignore", SimulatorFallback)
        return unique_names(ex.hidden().cases(rng))


def compile_sigs(cases) -> list:
    """The argument types the GPU-compile test compiles the kernel for: each hidden case's
    (:func:`lab.teach.gpu_compile.arg_types`), each once. The sandbox's precompile uses these too,
    so that it fills the cache entry this test reads."""
    from lab.teach import gpu_compile

    return [json.loads(t) for t in dict.fromkeys(json.dumps(gpu_compile.arg_types(c)) for c in cases)]


def compile_entry(r: dict, backend: str):
    """The GPU-compile test's entry from the executor's raw result (:func:`lab.teach.executor.compile_raw`),
    or a note (str) when it was skipped."""
    from lab.teach import gpu_compile

    if not isinstance(r, dict):
        raise ValueError("not a compile result")
    if "skipped" in r:
        if r.get("broken"):
            return f"the GPU compile check could not run ({str(r['skipped'])[:200]})"
        return (f"the GPU compile check was skipped ({str(r['skipped'])[:200]}): the simulator runs any Python, "
                f"so code that a GPU cannot compile (np.dot, generators, ...) may pass here; enable it with "
                f"{gpu_compile.ENABLE_HINT}")
    cc = tuple(int(v) for v in r.get("cc") or gpu_compile.CC)[:2]
    if r.get("ok") is True:
        return {"name": COMPILE_TEST, "passed": True,
                "message": f"ok (compiled offline for sm_{cc[0]}{cc[1]})" if backend == "simulator" else "ok"}
    line = r.get("line")
    return {"name": COMPILE_TEST, "passed": False,
            "message": gpu_compile.message({"message": str(r.get("message"))[:300],
                                            "line": int(line) if isinstance(line, int) else None}, cc)}


# --- The channel to the executor (lab.teach.executor): what goes out, what comes back -------------------
REQUEST, INPUTS = "request.json", "request.npz"  # the parent's request to the executor, in its folder


def result_name(key, ext: str) -> str:
    """``result-KEY.EXT``: the executor's result for KEY, a case index, "load" or "compile"."""
    return f"result-{key}.{ext}"


def encode(v):
    """A JSON-able form of ``v`` that :func:`decode` turns back into equal values of the same types
    (tuples, sets, dicts with any keys, NumPy scalars and small arrays)."""
    if isinstance(v, (bool, type(None), str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, tuple) or type(v).__name__ == "Dim3":
        return {"__t": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return {"__s": [encode(x) for x in v]}
    if isinstance(v, dict):
        return {"__d": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, np.ndarray) and v.size <= 1 << 16:
        return {"__a": v.tolist(), "dtype": v.dtype.str}
    return {"__r": repr(v)[:200]}


def decode(v):
    """The inverse of :func:`encode` (sets come back as sets of tuples or scalars)."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "__t" in v:
        return tuple(decode(x) for x in v["__t"])
    if "__s" in v:
        return {decode(x) for x in v["__s"]}
    if "__d" in v:
        return {decode(k): decode(x) for k, x in v["__d"]}
    if "__a" in v:
        return np.asarray(v["__a"], dtype=np.dtype(v["dtype"]))
    if "__r" in v:
        return v["__r"]
    raise ValueError("not an encoded value")


JSON_CAP = 8 << 20  # bytes: the largest JSON record read back (trace facts are a few lists, each capped)
OTHERS_ROWS = 1 << 16  # extra writers per output the executor hands back at most (lab.teach.executor)


def result_cap(case) -> int:
    """The largest result file (bytes) that case ``case`` can need: per run and output, the output
    itself and its writers (7 int64 a row: one per element, and at most OTHERS_ROWS extra), twice
    for the GPU's re-run, plus 1 MiB of headers; a larger file is not read."""
    per_run = sum(math.prod(s) * (np.dtype(dt).itemsize + 56) + OTHERS_ROWS * 56 for s, dt in case.outputs)
    return (len(runs_of(case)) + 1) * per_run + (1 << 20)


def _scalar_arg(a):
    if isinstance(a, (bool, np.bool_)):
        return {"scalar": bool(a), "type": "bool"}
    if isinstance(a, np.generic):
        return {"scalar": a.item(), "type": "np:" + np.dtype(type(a)).str}
    if isinstance(a, int):
        return {"scalar": int(a), "type": "int"}
    if isinstance(a, float):
        return {"scalar": float(a), "type": "float"}
    raise ValueError(f"a hidden test's argument of type {type(a).__name__} cannot be sent to the executor")


def make_request(ex, cases, backend: str, compile_check: bool, rng) -> tuple[dict, dict]:
    """(request, input arrays) for :mod:`lab.teach.executor`: the kernel's and launch function's
    names, per case its inputs, output shapes and dtypes, initial values, launch configuration and
    poisons. Never a reference, a tolerance, a diagnosis or the seed (the block and thread order of the
    simulator is drawn from ``rng``)."""
    inputs: dict = {}
    out = [_case_entry(f"c{i}", c, backend, inputs) for i, c in enumerate(cases)]
    request = {"exercise": ex.name, "kernel": ex.kernel, "launch": ex.launch, "backend": backend,
               "shuffle_seed": int(rng.integers(1 << 62)), "bench_seed": int(rng.integers(1 << 62)),
               "compile": {"sigs": compile_sigs(cases)} if compile_check else None, "cases": out}
    return request, inputs


def _case_entry(key: str, c, backend: str, inputs: dict) -> dict:
    """One case of the request (its arrays into ``inputs`` under ``KEY_aK`` / ``KEY_iK``)."""
    args = []
    for k, a in enumerate(c.args):
        if isinstance(a, np.ndarray):
            inputs[f"{key}_a{k}"] = np.asarray(a)
            args.append({"array": f"{key}_a{k}"})
        else:
            args.append(_scalar_arg(a))
    init = None
    if c.init is not None:
        init = []
        for k, v in enumerate(c.init):
            inputs[f"{key}_i{k}"] = np.asarray(v)
            init.append(f"{key}_i{k}")
    float_out = any(np.dtype(dt).kind == "f" for _, dt in c.outputs)
    return {"name": c.name, "args": args, "init": init,
            "outputs": [[[int(v) for v in tuple(s)], np.dtype(dt).str] for s, dt in c.outputs],
            "out_names": list(c.out_names or []), "grid": encode(c.grid), "block": encode(c.block),
            "launch_args": encode(list(c.launch_args)), "runs": runs_of(c),
            "finite_rerun": backend != "simulator" and c.init is None and float_out}


def add_bench(request: dict, inputs: dict, case, backend: str) -> None:
    """The benchmark's problem (:func:`lab.teach.bench.plan`, made by the judge) into the request
    ("bench": a case as the hidden tests', its arrays under ``b_*``): the bench child reads neither
    the hidden tests nor the reference solution."""
    request["bench"] = _case_entry("b", case, backend, inputs)


BENCH_GO = "bench-go"  # the parent's word to the child, once every test was judged: "1" bench, "0" do not


def write_request(folder: str, request: dict, inputs: dict) -> tuple[list[str], list[str]]:
    """The request and its input arrays into the executor's folder, and every file the executor may
    write there made now, empty (the results, :data:`BENCH_GO`). Returns (the files the child reads,
    the files it writes): under bubblewrap the folder is a fresh tmpfs and these are bound into it
    one by one (:func:`lab.teach.sandbox.wrap`), so the channel is a fixed set of files of ours, each
    capped by the file-size limit. An empty result file is one not written yet."""
    with open(os.path.join(folder, REQUEST), "w") as f:
        json.dump(request, f)
    with open(os.path.join(folder, INPUTS), "wb") as f:
        np.savez(f, **inputs)
    keys = ["load", "compile"] + list(range(len(request["cases"])))
    out = [result_name(k, "json") for k in keys] + [result_name(k, "npz") for k in keys[2:]] + [BENCH_GO]
    for n in out:
        open(os.path.join(folder, n), "w").close()
    return ([os.path.join(folder, n) for n in (REQUEST, INPUTS)], [os.path.join(folder, n) for n in out])


class ResultError(Exception):
    """A result file of the executor that is not one (a link, a FIFO, too large, not what was asked)."""


def read_child_file(folder, name: str, cap: int, dir_fd=None) -> bytes | None:
    """:func:`lab.teach.childio.read_child_file` (a regular file only, no link followed, never
    blocking, at most ``cap`` bytes; None when missing), its refusals a ResultError."""
    from lab.teach.childio import UnsafeChildFile
    from lab.teach.childio import read_child_file as read

    try:
        return read(folder, name, cap, dir_fd)
    except UnsafeChildFile as e:
        raise ResultError(str(e)) from None


def _launch_dims(v, what):
    """A grid or block reported by the executor: an int or a tuple of 1-3 ints >= 1."""
    t = (v,) if isinstance(v, int) and not isinstance(v, bool) else v
    if not isinstance(t, (tuple, list)) or not 1 <= len(t) <= 3 or \
            not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 1 << 31 for x in t):
        raise ResultError(f"an invalid {what} {v!r}")
    return v if isinstance(v, int) else tuple(t)


def _writers(rows) -> dict:
    """{flat: (block, thread)} from :func:`lab.teach.executor.who_rows`'s rows."""
    return {int(r[0]): ((int(r[1]), int(r[2]), int(r[3])), (int(r[4]), int(r[5]), int(r[6]))) for r in rows.tolist()}


def _others(rows) -> dict:
    out: dict = {}
    for r in rows.tolist():
        out.setdefault(int(r[0]), set()).add(((int(r[1]), int(r[2]), int(r[3])), (int(r[4]), int(r[5]), int(r[6]))))
    return out


def _trace(facts: dict, others: list):
    """A trace object with every fact of :class:`lab.core.simt.Trace` the executor sent (defaults for
    a missing field), for the message functions."""
    import dataclasses
    from types import SimpleNamespace

    from lab.core import simt
    values = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
              for f in dataclasses.fields(simt.Trace)}
    if not isinstance(facts, dict):
        raise ResultError("trace facts that are not a record")
    values.update({str(k): decode(v) for k, v in facts.items()})
    for k in ("oob", "races", "race_lines", "barrier_mismatch", "global_rmw"):
        if not isinstance(values.get(k), list):
            raise ResultError(f"trace facts without a list of {k}")
    values["lab_others"] = others
    return SimpleNamespace(**values)


def raw_result(case, record, npz: bytes | None, backend: str, path: str):
    """The executor's raw data for ``case`` checked against what was asked (every output of every run
    there, with the asked shape and dtype; grid and block valid and, where the test sets them, the
    asked ones), as the object :func:`judge_case` takes. Failed for what the executor reported as a
    failure (the file, the launch function, the launch); ResultError for data that is not a result."""
    import io
    from types import SimpleNamespace

    if not isinstance(record, dict) or not {"failed", "kernel_file", "runs", "param_names"} <= set(record):
        raise ResultError("a record that is not the executor's")
    if record.get("failed") is not None:
        raise Failed(str(record["failed"])[:2000])
    kfile = record.get("kernel_file")
    if not isinstance(kfile, str) or os.path.realpath(kfile) != os.path.realpath(path):
        where = os.path.basename(kfile) if isinstance(kfile, str) else "somewhere else"
        raise Failed(f"the kernel that ran was not defined in your file (it comes from {where!s:.80}): the "
                     f"kernel must be your own code in {os.path.basename(path)}")
    grid = _launch_dims(decode(record.get("grid")), "grid")
    block = _launch_dims(decode(record.get("block")), "block")
    if case.grid is not None and (_dims3(grid) != _dims3(case.grid) or _dims3(block) != _dims3(case.block)):
        raise ResultError(f"launched with grid {grid}, block {block}, not the test's")
    if math.prod((block,) if isinstance(block, int) else block) > 1024:
        raise ResultError("more than 1024 threads per block")
    names = record.get("param_names")
    names = [n for n in names if isinstance(n, str) and n.isidentifier()] if isinstance(names, list) else []
    if case.out_names:
        onames = list(case.out_names)
    else:
        tail = names[len(case.args):]
        onames = [tail[k] if k < len(tail) else f"out{k}" for k in range(len(case.outputs))]
    want = runs_of(case)
    nruns = record.get("runs")
    error = record.get("kernel_error") if backend == "simulator" else None
    if error is not None and not isinstance(error, dict):
        raise ResultError("a kernel error that is not a record")
    if not isinstance(nruns, int) or not (nruns == len(want) or (error is not None and 1 <= nruns <= len(want))):
        raise ResultError(f"{nruns!r} runs, not the {len(want)} asked")
    if npz is None:
        raise ResultError("no output arrays")
    try:
        with np.load(io.BytesIO(npz), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - a damaged or forged file: no result
        raise ResultError(f"unreadable output arrays ({type(e).__name__})") from None

    def output(key, k):
        a = arrays.get(key)
        shape, dt = case.outputs[k]
        if not isinstance(a, np.ndarray) or a.shape != tuple(shape) or a.dtype != np.dtype(dt):
            raise ResultError(f"{key}: not an array of shape {tuple(shape)} and dtype {np.dtype(dt)}")
        return a

    def rows(key, k):
        a = arrays.get(key)
        size = math.prod(case.outputs[k][0])
        if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.ndim != 2 or a.shape[1] != 7 or \
                (a.size and (a[:, 0].min() < 0 or a[:, 0].max() >= max(size, 1) or a[:, 1:].min() < 0)):
            raise ResultError(f"{key}: not a table of writers")
        return a

    traces = record.get("traces")
    if backend == "simulator" and (not isinstance(traces, list) or len(traces) < nruns):
        raise ResultError("no trace of the simulator")
    runs = []
    for r in range(nruns):
        outs = [output(f"run{r}_out{k}", k) for k in range(len(case.outputs))]
        if backend == "simulator":
            writers = [_writers(rows(f"run{r}_writers{k}", k)) for k in range(len(case.outputs))]
            others = [_others(rows(f"run{r}_others{k}", k)) for k in range(len(case.outputs))]
            runs.append((outs, _trace(traces[r], others), writers))
        else:
            runs.append((outs, None, None))
    again = None
    if backend != "simulator" and record.get("again"):
        again = [output(f"again_out{k}", k) for k in range(len(case.outputs))]
    return SimpleNamespace(grid=grid, block=block, onames=onames, runs=runs, again=again, error=error,
                           names=names + onames)


class Judge:
    """The parent's side of one executor child: it judges each test from the raw results the child
    left in ``folder`` (never from what the child printed), in the order they come."""

    def __init__(self, ex, cases, backend: str, path: str, folder: str, compile_planned: bool = False):
        self.ex, self.cases, self.backend, self.path, self.folder = ex, cases, backend, str(path), folder
        self.index = {c.name: i for i, c in enumerate(cases)}
        self.planned = ([COMPILE_TEST] if compile_planned else []) + [c.name for c in cases]
        self.notes: list[str] = []
        self.dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))

    def close(self):
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None

    def _json(self, key):
        data = read_child_file(self.folder, result_name(key, "json"), JSON_CAP, self.dir_fd)
        if not data:  # missing, or made empty by write_request and not written yet
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise ResultError("a damaged JSON record") from None

    def load_failure(self) -> dict | None:
        """The "load" entry when the executor could not load the file, else None."""
        try:
            rec = self._json("load")
        except Exception as e:  # noqa: BLE001 - a link, a FIFO, a JSON bomb: no result, a failure
            return {"name": "load", "passed": False,
                    "message": f"the checker's child returned no result ({e if isinstance(e, ResultError) else _one_line(e)})"}
        if rec is None:
            return None
        msg = rec.get("failed") if isinstance(rec, dict) else None
        return {"name": "load", "passed": False, "message": str(msg)[:2000] if msg else "the file did not load"}

    def compile(self) -> dict | None:
        """The compile test's entry (None when it has no result; a skip becomes a note)."""
        try:
            rec = self._json("compile")
            if rec is None:
                return None
            if not isinstance(rec, dict):
                raise ResultError("a compile record that is not one")
            if "skipped" not in rec:  # an "ok" is believed only with the PTX this process checks
                from lab.teach import gpu_compile

                cc = tuple(int(v) for v in (rec.get("cc") or gpu_compile.CC))[:2]
                rec = dict(gpu_compile.verified(rec, self.ex.kernel, len(compile_sigs(self.cases)), cc), cc=list(cc))
            r = compile_entry(rec, self.backend)
        except Exception as e:  # noqa: BLE001 - no result, a failure
            return {"name": COMPILE_TEST, "passed": False,
                    "message": f"the checker's child returned no result ({e if isinstance(e, ResultError) else _one_line(e)})"}
        if isinstance(r, str):
            if r not in self.notes:
                self.notes.append(r)
            return None
        return r

    def has(self, name: str) -> bool:
        """Whether the child left a result for test ``name``."""
        key = "compile" if name == COMPILE_TEST else self.index.get(name)
        if key is None:
            return False
        try:
            return os.stat(result_name(key, "json"), dir_fd=self.dir_fd, follow_symlinks=False).st_size > 0
        except OSError:
            return False

    def test(self, name: str) -> dict | None:
        """The entry of test ``name`` from its raw result; None when there is none."""
        if name == COMPILE_TEST:
            return self.compile()
        i = self.index.get(name)
        if i is None:
            return None
        case = self.cases[i]
        try:
            rec = self._json(i)
            if rec is None:
                return None
            npz = read_child_file(self.folder, result_name(i, "npz"), result_cap(case), self.dir_fd)
            raw = raw_result(case, rec, npz, self.backend, self.path)
            return {"name": name, "passed": True, "message": judge_case(self.ex, case, raw, self.backend)}
        except Failed as e:
            result = {"name": name, "passed": False, "message": str(e)}
            if e.map and os.environ.get(MAP_ENV) == "1":
                result["map"] = e.map
            return result
        except ResultError as e:
            return {"name": name, "passed": False, "message": f"the checker's child returned no valid result ({e})"}
        except Exception as e:  # noqa: BLE001 - data the messages could not read: no verdict but a failure
            return {"name": name, "passed": False,
                    "message": f"the checker's child returned a result that could not be judged ({_one_line(e)})"}
