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
    problem = kernel_problem(getattr(mod, ex.kernel))
    if problem:
        raise Failed(f"{ex.kernel} is {problem}")
    if ex.launch and not callable(getattr(mod, ex.launch, None)):
        raise Failed(f"{os.path.basename(path)} has no function {ex.launch}(...) for the launch configuration")
    return mod


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
        if isinstance(e.error, simt.WarpError) and "reached the same cuda.syncthreads()" in str(e.error):
            raise Failed(f"{str(e.error).strip()} (block {_fmt_who(e.who, nd).split(' of block ')[1]})") from None
        if trace.shared_rmw or trace.races:  # the race came first; what it then raised is its consequence
            raise Failed(_race_text(trace, grid, block) + f" (the kernel then raised {_one_line(e.error)})") from None
        if trace.oob:
            name, idx, shape, who, kind = trace.oob[0]
            shared = name not in set(names) | set(onames)  # a shared array: not one of the kernel's arguments
            raise Failed(f"out of bounds: {_fmt_who(who, nd)} {'wrote' if kind == 'write' else 'read'} "
                         f"{_fmt_idx(name, idx)}, outside its shape {tuple(shape)}; "
                         f"{_oob_advice(idx, shape, who, block, grid, [s for s, _ in case.outputs], shared=shared)}") from None
        advice = ""
        if isinstance(e.error, OverflowError) and "math range" in str(e.error):
            advice = ": a float overflowed (exp of a large number? subtract the maximum first)"
        elif isinstance(e.error, OverflowError) and "out of bounds for" in str(e.error):
            advice = ": the value does not fit the output's dtype (clamp before converting?)"
        elif isinstance(e.error, ValueError) and "NaN" in str(e.error):
            advice = ": a NaN was converted to an integer (a value read before it was written?)"
        raise Failed(f"your kernel raised {_one_line(e.error)} in {_fmt_who(e.who, nd)}"
                     f"{_where(e.error, path)}{advice}") from None
    except ValueError as e:
        raise Failed(f"bad launch configuration: {e}") from None
    writers = [tr._lab_tracker.writer for tr in targs]
    trace.lab_others = [tr._lab_tracker.others for tr in targs]  # extra writers per element, per output
    trace.lab_outputs = [tr._lab_tracker for tr in targs]  # plain stores and atomics per element, per output
    return outs, trace, writers


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


def _launch_gpu(kernel, case, grid, block, which):
    from numba import cuda

    from lab.core import simt

    guard = guard_elements()

    def device_input(a):
        if not isinstance(a, np.ndarray):
            return a
        if a.dtype.kind not in "fiu":
            return cuda.to_device(a)
        # the other float poison than the outputs' (finite where theirs is NaN): an unguarded
        # c[i] = a[i] + b[i] past the end then stores a finite value into c's NaN band, visible
        return _in_band(a.shape, a.dtype, guard, 0 if which == 2 else 2, a)[1]

    dev_args = [device_input(a) for a in case.args]
    bufs, views = [], []
    for k, (shape, dt) in enumerate(case.outputs):
        d, view = _in_band(shape, dt, guard, which, None if case.init is None else case.init[k])
        bufs.append(d)
        views.append(view)
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


def _in_band(shape, dtype, guard, which, values=None):
    """(device buffer, view): a C-contiguous array of ``shape`` on the device inside ``guard``
    poisoned elements on each side (:func:`lab.core.simt.poisoned`: NaN for floats, or the finite
    sentinel with ``which=2``); the view holds ``values`` when given, else the poison. A read or a
    write past either end of the view lands in the band, not in whatever memory follows."""
    from numba import cuda

    from lab.core import simt

    n = math.prod(shape)
    host = simt.poisoned((n + 2 * guard,), dtype, which)
    if values is not None:
        host[guard:guard + n] = np.asarray(values, dtype).ravel()
    d = cuda.to_device(host)
    return d, (d[guard:guard + n].reshape(shape) if shape else d[guard:guard + 1])


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
    facts = None
    if trace is not None and getattr(ex, "lesson", None):
        from lab.teach.lessons import mapping_facts

        facts = mapping_facts(trace, writers, grid, block, onames)
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
                again = np.asarray(_launch_gpu(kernel, case, grid, block, 2)[k])
                written = ~(again == np.asarray(simt_poison(out.dtype)))
                if (unwritten & written).any():
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
        msg = (f"{_fmt_idx(onames[k], first)} = {out64[first]:.{digits}g}, expected {ref[first]:.{digits}g} "
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


def _store_and_atomic_message(trace, onames, case, nd):
    """An output element that got both a plain store and atomic updates (an output initialised, or
    reset, inside a kernel whose other threads add to it atomically): blocks run in any order."""
    for k, tr in enumerate(getattr(trace, "lab_outputs", [])):
        # a store and atomics of the same block, ordered by a barrier, are fine (a block's own slot)
        both = [f for f in tr.plain if tr.atomics.get(f) and tr.atomic_blocks.get(f, set()) - {tr.plain[f][0][0]}]
        if not both:
            continue
        flat = min(both)
        who, line = tr.plain[flat]
        shape = tuple(case.outputs[k][0])
        idx = tuple(int(v) for v in np.unravel_index(flat, shape)) if shape else (0,)
        at = f" at line {line}" if line else ""
        if case.init is not None:
            init = np.asarray(case.init[k], np.float64).ravel()
            before = (f"{onames[k]} already holds its start value ({init[flat]:g}) before the launch: remove the "
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


def hidden_cases(ex, rng):
    """The hidden tests of exercise ``ex`` drawn from ``rng`` (``np.random.default_rng(seed)``), each
    with a distinct name."""
    return unique_names(ex.hidden().cases(rng))


def compile_sigs(cases) -> list:
    """The argument types the GPU-compile test compiles the kernel for: each hidden case's
    (:func:`lab.teach.gpu_compile.arg_types`), each once. The sandbox's precompile uses these too,
    so that it fills the cache entry this test reads."""
    from lab.teach import gpu_compile

    return [json.loads(t) for t in dict.fromkeys(json.dumps(gpu_compile.arg_types(c)) for c in cases)]


def compile_result(mod, ex, cases, backend, path):
    """The GPU-compile test's result, or a note (str) when it was skipped; None when turned off."""
    from lab.teach import gpu_compile

    if not gpu_compile.enabled():
        return None
    sigs = compile_sigs(cases)
    if backend == "simulator":
        r = gpu_compile.check(path, ex.kernel, sigs)
        cc = gpu_compile.CC
    else:  # numba.cuda is the real one here: compile in this process for this GPU
        from numba import cuda

        cc = tuple(cuda.get_current_device().compute_capability)
        fn = getattr(getattr(mod, ex.kernel), "py_func", None)
        r = gpu_compile.compile_here(fn, sigs, path, cc) if fn else {"skipped": "no Python function"}
    if "skipped" in r:
        return (f"the GPU compile check was skipped ({r['skipped']}): the simulator runs any Python, so code "
                f"that a GPU cannot compile (np.dot, generators, ...) may pass here; enable it with "
                f"{gpu_compile.ENABLE_HINT}")
    if r["ok"]:
        return {"name": COMPILE_TEST, "passed": True,
                "message": f"ok (compiled offline for sm_{cc[0]}{cc[1]})" if backend == "simulator" else "ok"}
    return {"name": COMPILE_TEST, "passed": False, "message": gpu_compile.message(r, cc)}


def run_all(name, path, backend, seed, emit=lambda obj: None, skip=(), compile_check=True):
    """Every hidden test of exercise ``name`` on the student's file ``path`` in this process (the
    backend must already be selected); returns [{"name", "passed", "message"}]. ``emit`` gets the
    progress protocol's objects as they happen (``{"note": text}`` for a check that was skipped).
    ``skip``: names of tests not to run (the parent re-runs the rest after a timeout).
    ``compile_check``: also compile the kernel offline for a GPU (:mod:`lab.teach.gpu_compile`),
    the test "compiles for a GPU", first."""
    import exercises

    ex = exercises.load(name)
    rng = np.random.default_rng(int(seed))
    skip = set(skip)
    emit({"start": "load"})
    try:
        mod = load_student(path, ex)
        if os.environ.get("LAB_LINEINFO"):  # under compute-sanitizer (lab.teach.workspace): reports name lines
            _lineinfo(mod)
        cases = hidden_cases(ex, rng)
    except Failed as e:
        result = {"name": "load", "passed": False, "message": str(e)}
        emit(result)
        return [result]
    from lab.teach import gpu_compile

    do_compile = compile_check and gpu_compile.enabled() and COMPILE_TEST not in skip
    emit({"loaded": ([COMPILE_TEST] if do_compile else []) + [c.name for c in cases if c.name not in skip]})
    results = []
    if do_compile:
        emit({"start": COMPILE_TEST})
        try:
            r = compile_result(mod, ex, cases, backend, path)
        except Exception as e:  # noqa: BLE001 - the check itself broke: say so, do not fail the student
            r = f"the GPU compile check could not run ({_one_line(e)})"
        if isinstance(r, dict):
            emit(r)
            results.append(r)
        elif r:
            emit({"note": r})
    for case in cases:
        if case.name in skip:
            continue
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
    """The child process: select the backend, run the tests, write progress lines. An optional sixth
    argument is a JSON list of test names to skip (already run before a timeout)."""
    name, path, backend, seed, progress = argv[:5]
    skip = json.loads(argv[5]) if len(argv) > 5 and argv[5].startswith("[") else []
    from lab.core.session import select

    select("sim" if backend == "simulator" else "gpu")
    with open(progress, "a", buffering=1) as out:
        run_all(name, path, backend, seed, lambda obj: out.write(json.dumps(obj) + "\n"), skip=skip)


if __name__ == "__main__":
    # Student prints go nowhere; the parent reads only the progress file.
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
