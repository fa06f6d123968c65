"""The hidden-test runner. It runs in a child process (``python -m lab.teach.checker``) that the
parent (:func:`lab.teach.workspace.check`) kills when a test runs past its timeout, so a kernel that loops
forever or deadlocks at a barrier cannot hang the checker.

Per hidden test: poison the outputs (NaN; integer outputs twice, with two different poisons), launch
the student's kernel (in the simulator through :mod:`lab.core.simt`, which traces who wrote what, out-of-
bounds accesses and shared-memory races; on a GPU with guard bands around each output), compare with
the float64 reference, and turn what went wrong into one diagnosing message. Messages name at most
one expected element, never the test's code or its data.

Protocol: one JSON object per line in the progress file: ``{"start": NAME}`` before a test and
``{"name", "passed", "message"}`` after it.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import math
import os
import sys
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


# --- Loading the student's file ---------------------------------------------------------------------
def load_student(path, ex):
    """Import the student's file; Failed with the error's line when it does not import."""
    spec = importlib.util.spec_from_file_location(f"student_{ex.name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise Failed(f"{os.path.basename(path)} line {e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:  # noqa: BLE001
        raise Failed(f"importing {os.path.basename(path)} raised {_one_line(e)}{_where(e, path)}") from None
    if not hasattr(mod, ex.kernel):
        raise Failed(f"{os.path.basename(path)} has no kernel named {ex.kernel!r}")
    if ex.launch and not callable(getattr(mod, ex.launch, None)):
        raise Failed(f"{os.path.basename(path)} has no function {ex.launch}(...) for the launch configuration")
    return mod


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
    runs, start, prev = [], None, None
    for i in map(int, flat_idx):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            runs.append((start, prev))
            start = prev = i
    if start is not None:
        runs.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in runs[:3])
    return text + (", …" if len(runs) > 3 else "")


def _ndims(d):
    return 1 if isinstance(d, (int, np.integer)) else len(tuple(d))


def _launch_config(mod, ex, case):
    if case.grid is not None:
        return case.grid, case.block
    try:
        cfg = getattr(mod, ex.launch)(*case.launch_args)
    except Exception as e:  # noqa: BLE001
        raise Failed(f"your {ex.launch}{case.launch_args} raised {_one_line(e)}") from None
    try:
        grid, block = cfg
        g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
        b = (block,) if isinstance(block, (int, np.integer)) else tuple(block)
        assert 1 <= len(g) <= 3 and 1 <= len(b) <= 3
        assert all(isinstance(v, (int, np.integer)) for v in g + b)
    except Exception:  # noqa: BLE001
        raise Failed(f"your {ex.launch}{case.launch_args} returned {cfg!r}: return (blocks per grid, "
                     f"threads per block), each an int or a tuple of 1-3 ints") from None
    if min(g + b) < 1:
        raise Failed(f"your {ex.launch}{case.launch_args} returned grid {g}, block {b}: every "
                     f"dimension must be at least 1")
    if math.prod(b) > 1024:
        raise Failed(f"your {ex.launch}{case.launch_args} asks for {math.prod(b)} threads per block; "
                     f"the limit is 1024")
    return grid, block


# --- Launching --------------------------------------------------------------------------------------
def _launch_sim(mod, ex, kernel, case, grid, block, which, rng, path):
    from lab.core import simt

    trace, lock = simt.Trace(), threading.RLock()
    names = _param_names(kernel)
    args = []
    for k, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            args.append(simt.traced(a.copy(), names[k] if k < len(names) else f"arg{k}", trace, lock))
        else:
            args.append(a)
    outs = _initial(case, which)
    onames = _out_names(kernel, case)
    targs = [simt.traced(o, n, trace, lock, output=True) for o, n in zip(outs, onames)]
    nd = _ndims(grid)
    try:
        simt.run(kernel, grid, block, args + targs, rng, trace=trace, lock=lock)
    except simt.KernelError as e:
        if trace.oob:
            name, idx, shape, who, kind = trace.oob[0]
            if min(idx) < 0:
                advice = "a negative index: check your index arithmetic"
            elif len(idx) == 2 and idx[1] < shape[0] and idx[0] < shape[1]:
                advice = "past the end; the index would fit the transposed shape: are row and column swapped?"
            else:
                advice = "past the end: guard it, e.g. `if i < n:`"
            raise Failed(f"out of bounds: {_fmt_who(who, nd)} {'wrote' if kind == 'write' else 'read'} "
                         f"{_fmt_idx(name, idx)}, outside its shape {tuple(shape)}; {advice}") from None
        advice = ""
        if isinstance(e.error, OverflowError) and "math range" in str(e.error):
            advice = ": a float overflowed (exp of a large number? subtract the maximum first)"
        elif isinstance(e.error, OverflowError) and "out of bounds for" in str(e.error):
            advice = ": the value does not fit the output's dtype (clamp before converting?)"
        raise Failed(f"your kernel raised {_one_line(e.error)} in {_fmt_who(e.who, nd)}"
                     f"{_where(e.error, path)}{advice}") from None
    except ValueError as e:
        raise Failed(f"bad launch configuration: {e}") from None
    writers = [tr._lab_tracker.writer for tr in targs]
    return outs, trace, writers


def guard_elements() -> int:
    """Poisoned elements around each GPU output: GUARD, or 0 under compute-sanitizer (LAB_SANITIZER set
    by lab.teach.workspace), where an out-of-bounds store must leave the allocation for memcheck to see it."""
    return 0 if os.environ.get("LAB_SANITIZER") else GUARD


def _launch_gpu(kernel, case, grid, block, which):
    from numba import cuda

    from lab.core import simt

    guard = guard_elements()
    dev_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    bufs, views = [], []
    for shape, dt in case.outputs:
        n = math.prod(shape)
        host = simt.poisoned((n + 2 * guard,), dt, which)
        if case.init is not None:
            host[guard:guard + n] = np.asarray(case.init[len(bufs)], dt).ravel()
        d = cuda.to_device(host)
        bufs.append(d)
        views.append(d[guard:guard + n].reshape(shape) if shape else d[guard:guard + 1])
    try:
        kernel[grid, block](*dev_args, *views)
        cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        raise Failed(f"the launch failed: {_one_line(e)}") from None
    outs = []
    for d, (shape, dt) in zip(bufs, case.outputs):
        host = d.copy_to_host()
        n = host.size - 2 * guard
        ref = simt.poisoned((guard,), dt, which)
        for band, where in (((host[:guard], "before its first"), (host[guard + n:], "past its last")) if guard else ()):
            changed = ~((band == ref) | (np.isnan(band) & np.isnan(ref)))
            if changed.any():
                raise Failed(f"out of bounds: your kernel wrote {where} element (into the guard band "
                             f"around an output of shape {tuple(shape)}): guard it, e.g. `if i < n:`")
        outs.append(host[guard:guard + n].reshape(shape))
    return outs


def _initial(case, which):
    from lab.core import simt

    if case.init is not None:
        return [np.array(v, dtype=dt).reshape(shape) for v, (shape, dt) in zip(case.init, case.outputs)]
    return [simt.poisoned(shape, dt, which) for shape, dt in case.outputs]


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
def run_case(mod, ex, case, backend, rng, path):
    """Raise Failed with a diagnosing message, or return the pass message."""
    kernel = getattr(mod, ex.kernel)
    grid, block = _launch_config(mod, ex, case)
    int_out = any(np.dtype(dt).kind in "iub" for _, dt in case.outputs)
    runs = []
    for which in ((0, 1) if int_out and case.init is None else (0,)):
        if backend == "simulator":
            runs.append(_launch_sim(mod, ex, kernel, case, grid, block, which, rng, path))
        else:
            runs.append((_launch_gpu(kernel, case, grid, block, which), None, None))
    outs, trace, writers = runs[0]
    nd = _ndims(grid)
    onames = _out_names(kernel, case)
    if trace is not None:
        if trace.barrier_mismatch:
            b, counts = trace.barrier_mismatch[0]
            desc = ", ".join(f"{plural(v, 'thread')} passed {k}" for k, v in sorted(counts.items()))
            raise Failed(f"not every thread of block {tuple(b)[:nd]} reached the same cuda.syncthreads() "
                         f"calls ({desc}): a barrier inside a branch or after an early return is undefined "
                         f"behaviour and can hang on a GPU; let all threads reach every barrier")
        if trace.races:
            who, did, arr, idx, other, other_did = trace.races[0]
            tnd = _ndims(block)
            raise Failed(f"race: {_fmt_who(who, nd if nd == tnd else 3)} {did} {_fmt_idx(arr, idx)}, which thread "
                         f"{_fmt_t(other, tnd)} of the same block {other_did} with no cuda.syncthreads() between "
                         f"the two accesses; add one between writing shared memory and reading what other "
                         f"threads wrote (and before overwriting what they still read)")
        if trace.global_rmw:
            name, idx, a, b = trace.global_rmw[0]
            raise Failed(f"race: {_fmt_idx(name, idx)} is read and updated by several threads "
                         f"({_fmt_who(a, nd)} and {_fmt_who(b, nd)}) without an atomic: use "
                         f"cuda.atomic.add (or min/max)")
    # never-written elements: NaN in a float output, or a value that changed with the poison
    for k, (out, ref) in enumerate(zip(outs, case.refs)):
        out = np.asarray(out)
        if case.init is not None:
            continue
        if out.dtype.kind == "f":
            unwritten = np.isnan(out) & ~np.isnan(np.asarray(ref, dtype=np.float64))
        else:
            unwritten = np.asarray(runs[1][0][k]) != out
        if unwritten.any():
            raise Failed(_unwritten_message(onames[k], unwritten, grid, block),
                         writers and _writers_map(onames[k], writers[k], out.shape, grid, block))
    second = runs[1][0] if len(runs) > 1 else None
    verdict_ = verdict(outs, case.refs, case.tols, out_specs=case.outputs, second=second)
    if verdict_.ok:
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
            raise Failed(f"{onames[k]} is all zeros: is anything written? (a kernel that writes 0.0 "
                         f"cannot pass)")
        first = tuple(int(v) for v in np.argwhere(bad)[0])
        digits = 9 if hasattr(tol, "lo") else 6
        msg = (f"{_fmt_idx(onames[k], first)} = {out64[first]:.{digits}g}, expected {ref[first]:.{digits}g} "
               f"({tol_text(first)}); "
               f"{int(bad.sum())} of {plural(ref.size, 'element')} wrong")
        if writers is not None:
            flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
            who = writers[k].get(flat)
            if who is not None:
                msg += f"; written by {_fmt_who(who, nd)}"
        extra = None
        if ref.ndim == 2 and first[1] < ref.shape[0] and first[0] < ref.shape[1]:
            if abs(out64[first] - ref[first[1], first[0]]) <= 1e-5 * (1 + abs(ref[first[1], first[0]])):
                extra = "it holds the value of the transposed position: row and column swapped?"
        if case.diagnose is not None:
            extra = case.diagnose(outs, case.refs) or extra
        raise Failed(msg + (f". Hint: {extra}" if extra else ""),
                     writers and _writers_map(onames[k], writers[k], out64.shape, grid, block))
    raise Failed(f"output differs from the float64 reference: {verdict_.reason}")


def _unwritten_message(name, unwritten, grid, block):
    idx = np.argwhere(unwritten)
    count, total = len(idx), unwritten.size
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
        if tail and u >= launched:
            return text + f": your launch has {plural(launched, 'thread')} for {plural(total, 'element')}: round the number " \
                          f"of blocks up (ceiling division)"
        if tail and count <= 2:
            return text + ": off by one in the guard (`i < n`, not `i < n - 1`)?"
        return text
    first = tuple(int(v) for v in idx[0])
    rows = np.where(unwritten.all(axis=tuple(range(1, unwritten.ndim))))[0]
    cols = np.where(unwritten.all(axis=0))[0] if unwritten.ndim == 2 else []
    text = f"{count} of {total} elements of {name} never written, the first {_fmt_idx(name, first)}"
    if count == total:
        return text + ": nothing was written: does your kernel store into " + name + "?"
    if len(rows) and rows[-1] == unwritten.shape[0] - 1 and len(rows) == unwritten.shape[0] - rows[0]:
        text += f" (rows {rows[0]}.. all unwritten: does the grid cover every row, rounded up?)"
    elif len(cols) and cols[-1] == unwritten.shape[1] - 1 and len(cols) == unwritten.shape[1] - cols[0]:
        text += f" (columns {cols[0]}.. all unwritten: does the grid cover every column, rounded up?)"
    return text


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
def run_all(name, path, backend, seed, emit=lambda obj: None):
    """Every hidden test of exercise ``name`` on the student's file ``path`` in this process (the
    backend must already be selected); returns [{"name", "passed", "message"}]. ``emit`` gets the
    progress protocol's objects as they happen."""
    import exercises

    ex = exercises.load(name)
    rng = np.random.default_rng(int(seed))
    emit({"start": "load"})
    try:
        mod = load_student(path, ex)
        if os.environ.get("LAB_LINEINFO"):  # under compute-sanitizer (lab.teach.workspace): reports name lines
            _lineinfo(mod)
        cases = ex.hidden().cases(rng)
    except Failed as e:
        result = {"name": "load", "passed": False, "message": str(e)}
        emit(result)
        return [result]
    emit({"loaded": [c.name for c in cases]})
    results = []
    for case in cases:
        emit({"start": case.name})
        try:
            result = {"name": case.name, "passed": True, "message": run_case(mod, ex, case, backend, rng, path)}
        except Failed as e:
            result = {"name": case.name, "passed": False, "message": str(e)}
            if e.map and os.environ.get(MAP_ENV) == "1":
                result["map"] = e.map
        except Exception as e:  # noqa: BLE001 - the student's code misbehaved in a way we did not foresee
            result = {"name": case.name, "passed": False, "message": f"raised {_one_line(e)}{_where(e, path)}"}
        emit(result)
        results.append(result)
    return results


def main(argv):
    """The child process: select the backend, run the tests, write progress lines."""
    name, path, backend, seed, progress = argv
    from lab.core.session import select

    select("sim" if backend == "simulator" else "gpu")
    with open(progress, "a", buffering=1) as out:
        run_all(name, path, backend, seed, lambda obj: out.write(json.dumps(obj) + "\n"))


if __name__ == "__main__":
    # Student prints go nowhere; the parent reads only the progress file.
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
