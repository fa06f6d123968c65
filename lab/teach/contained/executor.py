"""The student's side of the exercise checker: the only code of the lab that runs a student's kernel.
It runs in a child process (``python -m lab.teach.contained.executor NAME PATH BACKEND - PROGRESS [SKIP]``,
or under :mod:`lab.teach.contained.sandbox` when grading) and does no judging at all: it builds the kernel
from the source text the judge read and sent (:func:`lab.teach.contained.source.load`: the file's syntax tree
checked, the kernel and the device functions it reaches defined from it; the file is never imported
and its top level never runs), launches it with the launch configuration the judge evaluated on
the inputs the parent gave it and hands back raw data. The verdict, the references, the launch
configurations, the lessons' facts and every message are the parent's (:mod:`lab.teach.checker`,
the judge), which this package never imports (pyproject.toml's import-linter contract).

The channel (files in the child's folder, the folder of PROGRESS; :data:`REQUEST`, :data:`INPUTS`,
written by the parent; the rest written here):

* ``request.json``: {"exercise", "kernel", "launch", "backend", "shuffle_seed", "compile": null or
  {"sigs"}, "source": the file's text, "cases": [{"name", "args": [{"array": KEY} | {"scalar":
  value, "type"}], "outputs": [[shape, dtype]], "init": [KEY] or null, "out_names", "grid", "block"
  (the judge's), "launch_args", "runs": [poisons], "finite_rerun": bool, "launch_failed": bool (not
  run)}], "bench": a case as these, with ``--bench``}; ``request.npz``: the input arrays and initial
  values by KEY. No reference, tolerance, diagnosis or solution path is ever in it.
* ``result-load.json``: {"failed": message} when the file does not load;
* ``result-compile.json``: the GPU compile's raw result (:mod:`lab.teach.contained.gpu_compile`: an "ok" with
  the PTX of each signature, which the judge checks; a contained simulator check compiles in a
  child of its own instead, :mod:`lab.teach.contained.compile_sandbox`);
* ``result-K.json`` (case K of the request): {"grid", "block", "param_names", "kernel_file",
  "failed", "kernel_error", "traces" (per run the tracer's records and "lab_counts", the JSON part of
  its raw counts), "runs", "again"}; ``result-K.npz``: ``run{r}_out{k}`` (the output arrays of poison
  run r), ``again_out{k}`` (the GPU's finite-poison re-run), ``run{r}_writers{k}`` and
  ``run{r}_others{k}`` (the simulator's writers per output element: rows of flat index, block x, y,
  z, thread x, y, z), ``run{r}_lines{k}`` (per output element the line of its first write, 0 for
  none), ``run{r}_per_thread``, ``run{r}_stored``, ``run{r}_requests``, ``run{r}_load_lines`` (the
  tracer's count tables, :func:`lab.teach.contained.counts.stats_counts`).
* the progress file: ``{"start": NAME}``, ``{"loaded": [NAMES]}``, ``{"done": NAME}``, ``{"note": text}``
  (the parent's clock and progress only: it never takes a result from it).
"""
from __future__ import annotations

import inspect
import json
import math
import os
import sys
import threading
from types import SimpleNamespace
import reprlib

import numpy as np

from lab.teach.cases import COMPILE_TEST
from lab.teach.contained.channel import INPUTS, OTHERS_ROWS, REQUEST, decode, encode, result_name
from lab.teach.contained.counts import stats_counts
from lab.teach.messages import Failed, error_line, where_raised
from lab.core import simt, simulator
from lab.core.sanitizer import lineinfo_on
from lab.teach.contained import source, gpu_compile

LOAD, COMPILE = "load", "compile"


# --- What the launch needs: the guard band, the kernel's and launch()'s checks, the names ---------
GUARD = 1024  # poisoned elements before and after each output on a GPU (>= a block of overshoot)


def guard_elements() -> int:
    """Poisoned elements around each GPU output: GUARD, or 0 under compute-sanitizer (LAB_SANITIZER set
    by lab.teach.workspace), where an out-of-bounds store must leave the allocation for memcheck to see it."""
    return 0 if os.environ.get("LAB_SANITIZER") else GUARD


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


ROUNDED_DOWN = "Blocks counted by rounding down (size // threads)"  # (lab.teach.checker adds the line)


def launch_config(launch, ex, case):
    """(grid, block) that the student's ``launch`` (a :class:`lab.teach.contained.source.Launch`: the file's
    launch() interpreted here, never run) returns for ``case``; Failed naming what is wrong: it
    raised, returned something else than (blocks per grid, threads per block) of 1-3 ints >= 1
    each, or more than 1024 threads a block. The judge checks it; no process of the student's
    gives a launch configuration."""
    if not callable(launch):
        raise Failed(f"your file has no function {ex.launch}(...) for the launch configuration")
    try:
        cfg = launch(*case.launch_args)
    except Exception as e:  # noqa: BLE001 - what the interpreted launch() raised: the student's error
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} raised {error_line(e)}") from None
    try:
        grid, block = cfg
        g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
        b = (block,) if isinstance(block, (int, np.integer)) else tuple(block)
        assert 1 <= len(g) <= 3 and 1 <= len(b) <= 3
        assert all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in g + b)
    except Exception:  # noqa: BLE001
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} returned {_short_repr(cfg)}: return (blocks per grid, "
                     f"threads per block), each an int or a tuple of 1-3 ints") from None
    if min(g + b) < 1:
        zero = [ax for ax, v in zip("xyz", g) if v < 1]
        why = (f": {' and '.join(zero)} {'have' if len(zero) > 1 else 'has'} {min(g)} blocks. {ROUNDED_DOWN} are 0 "
               f"for a size smaller than a block (and miss the last partial block for any other size): round up, "
               f"(size + threads - 1) // threads" if zero and min(b) >= 1 else "")
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} returned grid {g}, block {b}: every "
                     f"dimension must be at least 1{why}")
    if max(g + b) > 1 << 31:
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} returned grid {g}, block {b}: a dimension "
                     f"past 2^31")
    if math.prod(b) > 1024:
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} asks for {math.prod(b)} threads per block; "
                     f"the limit is 1024")
    grid = int(grid) if isinstance(grid, (int, np.integer)) else tuple(int(v) for v in g)
    block = int(block) if isinstance(block, (int, np.integer)) else tuple(int(v) for v in b)
    return grid, block


def _short_repr(value) -> str:
    """At most 80 characters of ``value``'s repr, its nesting cut at 4 levels (a tuple nested thousands
    deep, which launch() may build, has no plain repr: Python's recursion stops first)."""
    r = reprlib.Repr()
    r.maxlevel, r.maxtuple, r.maxlist, r.maxstring, r.maxother = 4, 8, 8, 40, 40
    return r.repr(value)[:80]


def param_names(kernel):
    fn = getattr(kernel, "py_func", kernel)
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def out_names(kernel, case):
    if case.out_names:
        return case.out_names
    names = param_names(kernel)[len(case.args):]
    return [names[k] if k < len(names) else f"out{k}" for k in range(len(case.outputs))]


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


def _lineinfo(mod):
    """Line info for every kernel and device function of the student's module, before they compile."""
    for v in vars(mod).values():
        if hasattr(v, "targetoptions") and hasattr(v, "py_func"):
            lineinfo_on(v)


# --- Loading the student's file ---------------------------------------------------------------------
def load_student(path, ex, text: str | None = None):
    """The student's kernel as a module, built from the file's source (:func:`lab.teach.contained.source.load`):
    its syntax tree checked, its kernels and the device functions they reach compiled from it, its
    top level never run (no import of the file). ``text``: the file's text as the judge read it
    (default: read ``path`` now). Failed with the line for a file the checker refuses. ``ex``: any
    object with ``name``, ``kernel`` and ``launch`` (an exercise, or the request); ``launch`` on the
    module is :class:`lab.teach.contained.source.Launch` (interpreted, never run)."""
    if text is None:
        try:
            text = source.read(path)
        except OSError as e:
            raise Failed(f"cannot read {os.path.basename(str(path))}: {e.strerror or e}") from None
    mod = source.load(text, str(path), ex.kernel, ex.launch, module_name=f"student_{ex.name}")
    problem = kernel_problem(getattr(mod, ex.kernel))
    if problem:
        raise Failed(f"{ex.kernel} is {problem}")
    return mod


def _numba_cuda_helpers(mod) -> None:
    """The student's kernel is numba-cuda's (``from numba import cuda``); where the lab's kernels are
    numba-cuda-mlir's, the lab helpers it imported from kernels/gemm/mma.py are MLIR device functions
    numba-cuda cannot call: swap each for its numba-cuda twin (``kernels.gemm.mma.for_numba_cuda``)."""
    mma = sys.modules.get("kernels.gemm.mma")
    if mma is None:
        return
    for name, value in list(vars(mod).items()):
        twin = mma.for_numba_cuda(value)
        if twin is not None:
            setattr(mod, name, twin)


def case_launch(mod, ex, case):
    """(grid, block) of ``case``: the test's own, or the judge's evaluation of the file's launch()
    (:func:`launch_config`, as the judge evaluates it)."""
    if case.grid is not None:
        return case.grid, case.block
    return launch_config(getattr(mod, ex.launch, None), ex, case)


# --- Launching --------------------------------------------------------------------------------------
def _launch_sim(mod, ex, kernel, case, grid, block, which, rng, path):
    """(outputs, trace, writers, error): the kernel run in the simulator with every output poisoned
    (``which``); ``error`` is None or the raw facts of what it raised ({"kind": "kernel" | "launch",
    ...}): the judge words them (:func:`lab.teach.messages.kernel_error_message`)."""
    trace, lock = simt.Trace(), threading.RLock()
    names = param_names(kernel)
    args = []
    for k, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            args.append(simt.traced(a.copy(), names[k] if k < len(names) else f"arg{k}", trace, lock))
        else:
            args.append(a)
    outs = _initial(case, which)
    onames = out_names(kernel, case)
    targs = [simt.traced(o, n, trace, lock, output=True) for o, n in zip(outs, onames)]
    touched = [_touched(tr._lab_tracker) for tr in targs]
    error = None
    try:
        simt.run(kernel, grid, block, args + targs, rng, trace=trace, lock=lock)
    except simt.KernelError as e:
        line = where_raised(e.error, path)
        error = {"kind": "kernel", "type": type(e.error).__name__, "text": str(e.error),
                 "one_line": error_line(e.error), "who": [list(map(int, w)) for w in e.who],
                 "line": int(line.split("line ")[1].split()[0]) if line else None}
    except ValueError as e:
        error = {"kind": "launch", "text": str(e)}
    writers = [tr._lab_tracker.writer for tr in targs]
    trace.lab_store_lines = [tr._lab_tracker.store_line for tr in targs]  # the line of each element's first write
    trace.lab_others = [tr._lab_tracker.others for tr in targs]  # extra writers per element, per output
    trace.lab_touched = [bool(t[0]) for t in touched]  # whether a kernel thread indexed each output at all
    # plain stores beside atomics of other blocks, per output (store_and_atomic)
    trace.lab_store_atomic = store_and_atomic([tr._lab_tracker for tr in targs])
    return outs, trace, writers, error


def _touched(tracker) -> list:
    """[False] that turns True at the first index of ``tracker``'s array by a simulated CUDA thread
    (any index: ``out[i][j]`` too, which the tracer does not follow). The judge tells an output that
    no thread touched but that holds values (filled around the launch) from one the tracer missed."""
    seen, inner = [False], tracker.index

    def index(arr, idx, kind):
        if hasattr(threading.current_thread(), "blockIdx"):
            seen[0] = True
            try:
                del tracker.index  # from now on the tracker's own method: no cost per access
            except AttributeError:  # another thread of the block was first
                pass
        return inner(arr, idx, kind)

    tracker.index = index
    return seen


def _launch_gpu(kernel, case, grid, block, which):
    from numba import cuda  # lazy: backend chosen first (numba)

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
        raise Failed(f"the launch failed: {error_line(e)}") from None
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
    from numba import cuda  # lazy: backend chosen first (numba)

    n = math.prod(shape)
    host = simt.poisoned((n + 2 * guard,), dtype, which)
    if values is not None:
        host[guard:guard + n] = np.asarray(values, dtype).ravel()
    d = cuda.to_device(host)
    return d, (d[guard:guard + n].reshape(shape) if shape else d[guard:guard + 1])


def _initial(case, which):
    if case.init is not None:
        return [np.array(v, dtype=dt).reshape(shape) for v, (shape, dt) in zip(case.init, case.outputs)]
    return [simt.poisoned(shape, dt, which) for shape, dt in case.outputs]


def who_rows(pairs) -> np.ndarray:
    """(n, 7) int64 rows [flat, block x, y, z, thread x, y, z] for (flat, (block, thread)) pairs."""
    rows = [[int(f), *(tuple(b) + (0, 0, 0))[:3], *(tuple(t) + (0, 0, 0))[:3]] for f, (b, t) in pairs]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 7)


def store_lines(lines: dict, size: int) -> np.ndarray:
    """(size,) int32: the kernel file's line of each output element's first write, 0 where none."""
    out = np.zeros(max(int(size), 1), dtype=np.int32)
    if lines:
        out[np.fromiter(lines.keys(), np.int64, len(lines))] = np.fromiter(lines.values(), np.int64, len(lines))
    return out


def _trace_facts(trace) -> dict:
    """Every fact of a :class:`lab.core.simt.Trace` (its fields and what the checker added to it),
    as JSON-able data; the writers go to the npz (:func:`who_rows`), the tracer's counts too
    (:func:`count_arrays`)."""
    return {k: encode(v) for k, v in vars(trace).items()
            if not k.startswith("_") and k not in ("lab_others", "stats", "lab_store_lines")}


def count_arrays(trace, grid, block, r: int) -> tuple[dict, dict]:
    """(JSON part, npz arrays ``run{r}_pt``, ``run{r}_stored``, ``run{r}_requests``) of the tracer's
    raw counts of one launch (:func:`lab.teach.contained.counts.stats_counts`): the judge derives the mapping
    lesson's facts from them (:func:`lab.teach.lessons.facts_from_counts`)."""
    c = stats_counts(trace.stats, grid, block)
    arrays = {f"run{r}_{k}": np.asarray(c.pop(k), dtype=np.int64).reshape(-1, w)
              for k, w in (("per_thread", 4), ("stored", 3), ("requests", 4), ("load_lines", 6))}
    return c, arrays


# --- One test ----------------------------------------------------------------------------------------
def run_case(mod, ex, case, backend, rng, path) -> tuple[dict, dict]:
    """Run one case of the request; (record, arrays) for :data:`result_name` (json, npz)."""
    kernel = getattr(mod, ex.kernel)
    fn = getattr(kernel, "py_func", kernel)
    code = getattr(fn, "__code__", None)
    record = {"param_names": [str(n)[:64] for n in param_names(kernel)],
              "kernel_file": getattr(code, "co_filename", None), "failed": None, "kernel_error": None,
              "traces": None, "runs": 0, "again": False}
    arrays: dict = {}
    try:
        grid, block = case_launch(mod, ex, case)
    except Failed as e:
        record["failed"] = str(e)
        return record, arrays
    record["grid"], record["block"] = encode(grid), encode(block)
    try:
        if backend == "simulator":
            record["traces"] = []
            for r, which in enumerate(case.runs):
                outs, trace, writers, error = _launch_sim(mod, ex, kernel, case, grid, block, which, rng, path)
                facts = _trace_facts(trace)
                counts, counted = count_arrays(trace, grid, block, r)
                facts["lab_counts"] = encode(counts)
                record["traces"].append(facts)
                arrays.update(counted)
                for k, o in enumerate(outs):
                    arrays[f"run{r}_out{k}"] = np.asarray(o)
                    arrays[f"run{r}_writers{k}"] = who_rows(writers[k].items())
                    arrays[f"run{r}_lines{k}"] = store_lines(trace.lab_store_lines[k], o.size)
                    others = trace.lab_others[k]
                    pairs = [(f, w) for f in sorted(others) for w in sorted(others[f])]
                    arrays[f"run{r}_others{k}"] = who_rows(pairs[:OTHERS_ROWS])
                record["runs"] = r + 1
                if error is not None:
                    record["kernel_error"] = error
                    break
        else:
            for r, which in enumerate(case.runs):
                for k, o in enumerate(_launch_gpu(kernel, case, grid, block, which)):
                    arrays[f"run{r}_out{k}"] = np.asarray(o)
                record["runs"] = r + 1
            # no tracer on a GPU: NaN in a float output again with a finite poison tells "written with
            # NaN" from "never written" (the judge compares the two runs)
            if case.finite_rerun and any(np.isnan(arrays[f"run0_out{k}"]).any()
                                         for k, (_, dt) in enumerate(case.outputs) if np.dtype(dt).kind == "f"):
                for k, o in enumerate(_launch_gpu(kernel, case, grid, block, 2)):
                    arrays[f"again_out{k}"] = np.asarray(o)
                record["again"] = True
    except Failed as e:
        record["failed"] = str(e)
    except Exception as e:  # noqa: BLE001 - the student's code misbehaved in a way we did not foresee
        record["failed"] = f"raised {error_line(e)}{where_raised(e, path)}"
    return record, arrays


# --- The request -----------------------------------------------------------------------------------------
def _scalar(d):
    t, v = d.get("type"), d.get("scalar")
    if t == "bool":
        return bool(v)
    if t == "int":
        return int(v)
    if t == "float":
        return float(v)
    if isinstance(t, str) and t.startswith("np:"):
        return np.dtype(t[3:]).type(v)
    raise ValueError(f"unknown scalar type {t!r}")


def cases_of(request: dict, inputs) -> list:
    """The request's cases as objects with the attributes of :class:`exercises.Case` the launch needs
    (name, args, outputs, init, grid, block, launch_args, out_names) plus runs and finite_rerun."""
    out = []
    for c in request["cases"]:
        args = [np.array(inputs[a["array"]]) if "array" in a else _scalar(a) for a in c["args"]]
        outputs = [(tuple(int(v) for v in s), np.dtype(dt)) for s, dt in c["outputs"]]
        init = None if c.get("init") is None else [np.array(inputs[k]) for k in c["init"]]
        out.append(SimpleNamespace(name=c["name"], args=args, outputs=outputs, init=init,
                                   grid=decode(c.get("grid")), block=decode(c.get("block")),
                                   launch_args=tuple(decode(c.get("launch_args") or [])),
                                   out_names=list(c.get("out_names") or []), runs=list(c["runs"]),
                                   finite_rerun=bool(c.get("finite_rerun")),
                                   launch_failed=bool(c.get("launch_failed"))))
    return out


def _save(folder, key, record, arrays=None) -> None:
    """Write result ``key``'s npz, then its JSON (the JSON last: its presence means both are whole)."""
    if arrays is not None:
        with open(os.path.join(folder, result_name(key, "npz")), "wb") as f:
            np.savez(f, **arrays)
    with open(os.path.join(folder, result_name(key, "json")), "w") as f:
        f.write(json.dumps(record, allow_nan=True))


def execute(request: dict, inputs, path: str, folder: str, emit=lambda obj: None, skip=()) -> None:
    """Load the student's file ``path`` and run every case of ``request`` not in ``skip`` (the backend
    already selected in this process), writing the raw results into ``folder``; ``emit`` gets the
    progress events."""
    ex = SimpleNamespace(name=request["exercise"], kernel=request["kernel"], launch=request.get("launch"))
    backend = request["backend"]
    skip = set(skip)
    cases = cases_of(request, inputs)
    emit({"start": LOAD})
    try:
        mod = load_student(path, ex, text=request.get("source"))
        if os.environ.get("LAB_LINEINFO"):  # under compute-sanitizer (lab.teach.workspace): reports name lines
            _lineinfo(mod)
    except Failed as e:
        _save(folder, LOAD, {"failed": str(e)})
        emit({"done": LOAD})
        return
    do_compile = request.get("compile") is not None and COMPILE_TEST not in skip
    emit({"loaded": ([COMPILE_TEST] if do_compile else []) + [c.name for c in cases if c.name not in skip]})
    if do_compile:
        emit({"start": COMPILE_TEST})
        try:
            r = compile_raw(mod, ex, request["compile"]["sigs"], backend, path, request.get("source"))
        except Exception as e:  # noqa: BLE001 - the check itself broke: a note, not the student's failure
            r = {"skipped": f"could not run ({error_line(e)})", "broken": True}
        _save(folder, COMPILE, r)
        emit({"done": COMPILE_TEST})
        if "skipped" in r:  # no NVVM ...: not a test after all (the judge makes it a note); the parent
            # must not call it "not run"
            emit({"loaded": [c.name for c in cases if c.name not in skip]})
    rng = np.random.default_rng(int(request.get("shuffle_seed", 0)))
    for i, case in enumerate(cases):
        if case.name in skip:
            continue
        emit({"start": case.name})
        if not case.launch_failed:  # (the judge's evaluation of launch() failed: its verdict is made)
            record, arrays = run_case(mod, ex, case, backend, rng, path)
            _save(folder, i, record, arrays)
        emit({"done": case.name})


def compile_raw(mod, ex, sigs, backend, path, text=None) -> dict:
    """The offline GPU compile's raw result ({"ok": True}, {"ok": False, "message", "line"} or
    {"skipped": why}) and the compute capability it compiled for ("cc"): in the simulator from the
    file's source ``text`` in a process of its own (:func:`lab.teach.contained.gpu_compile.check`), on a GPU
    here, of the module built from the source (:func:`load_student`)."""
    if backend == "simulator":
        r = dict(gpu_compile.check(path, ex.kernel, sigs, text=text))
        r["cc"] = list(gpu_compile.CC)
        return r
    from numba import cuda  # lazy: backend chosen first (numba); the real one here: compile in this process for this GPU

    cc = tuple(cuda.get_current_device().compute_capability)
    fn = getattr(getattr(mod, ex.kernel), "py_func", None)
    r = dict(gpu_compile.compile_here(fn, sigs, path, cc) if fn else {"skipped": "no Python function"})
    r["cc"] = list(cc)
    return r


def main(argv) -> None:
    """The child process: ``NAME PATH BACKEND - PROGRESS [SKIP]`` (the fourth argument is unused: no
    seed reaches the child); the request lies beside PROGRESS."""
    name, path, backend, _unused, progress = argv[:5]
    skip = json.loads(argv[5]) if len(argv) > 5 and argv[5].startswith("[") else []
    folder = os.path.dirname(os.path.abspath(progress))
    with open(os.path.join(folder, REQUEST)) as f:
        request = json.load(f)
    simulator.select("sim" if backend == "simulator" else "gpu")
    with np.load(os.path.join(folder, INPUTS), allow_pickle=False) as inputs, \
            open(progress, "a", buffering=1) as out:
        warm(backend, out)
        execute(request, inputs, path, folder, lambda obj: out.write(json.dumps(obj) + "\n"), skip=skip)


def warm(backend, out) -> None:
    """Import what every test needs (Numba, the tracer; on a GPU the CUDA context) and say
    ``{"ready": true}``: the parent's start-up allowance ends here, so from now on a file that hangs
    while it loads gets the per-test timeout, as any test does (lab.teach.contained.sandbox does the same)."""
    import numba.cuda  # lazy: backend chosen first (numba)

    if backend != "simulator":  # the CUDA context now, not in the first test's time (a retry's first test has a short limit)
        try:
            numba.cuda.current_context()
        except Exception:  # noqa: BLE001 - no usable GPU: the first launch says so, as a test's failure
            pass
    out.write(json.dumps({"ready": True}) + "\n")


if __name__ == "__main__":
    # Student prints go nowhere; the parent reads only the result files it asked for.
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
