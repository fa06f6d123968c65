"""The student's side of the exercise checker: the only code of the lab that imports a student's
file. It runs in a child process (``python -m lab.teach.executor NAME PATH BACKEND - PROGRESS [SKIP]``,
or under :mod:`lab.teach.sandbox` when grading) and does no judging at all: it loads the file,
launches the kernel on the inputs the parent gave it and hands back raw data. The verdict, the
references and every message are the parent's (:mod:`lab.teach.checker`, the judge).

The channel (files in the child's folder, the folder of PROGRESS; :data:`REQUEST`, :data:`INPUTS`,
written by the parent; the rest written here):

* ``request.json``: {"exercise", "kernel", "launch", "backend", "shuffle_seed", "compile": null or
  {"sigs"}, "cases": [{"name", "args": [{"array": KEY} | {"scalar": value, "type"}], "outputs":
  [[shape, dtype]], "init": [KEY] or null, "out_names", "grid", "block", "launch_args", "runs":
  [poisons], "finite_rerun": bool}], "bench": a case as these, with ``--bench``}; ``request.npz``: the
  input arrays and initial values by KEY. No reference, tolerance, diagnosis or solution path is
  ever in it.
* ``result-load.json``: {"failed": message} when the file does not load;
* ``result-compile.json``: the GPU compile's raw result (:mod:`lab.teach.gpu_compile`: an "ok" with
  the PTX of each signature, which the judge checks; a contained simulator check compiles in a
  child of its own instead, :mod:`lab.teach.compile_sandbox`);
* ``result-K.json`` (case K of the request): {"grid", "block", "param_names", "kernel_file",
  "failed", "kernel_error", "traces", "runs", "again"}; ``result-K.npz``: ``run{r}_out{k}`` (the
  output arrays of poison run r), ``again_out{k}`` (the GPU's finite-poison re-run),
  ``run{r}_writers{k}`` and ``run{r}_others{k}`` (the simulator's writers per output element: rows of
  flat index, block x, y, z, thread x, y, z).
* the progress file: ``{"start": NAME}``, ``{"loaded": [NAMES]}``, ``{"done": NAME}``, ``{"note": text}``
  (the parent's clock and progress only: it never takes a result from it).
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import threading
from types import SimpleNamespace

import numpy as np

from lab.teach.checker import (COMPILE_TEST, GUARD, INPUTS, REQUEST, Failed, _ndims, _one_line,  # noqa: F401
                               _out_names, _param_names, _where, decode, encode, guard_elements, kernel_problem,
                               result_name, store_and_atomic)

LOAD, COMPILE = "load", "compile"
OTHERS_ROWS = 1 << 16  # the extra writers handed back per output (the first elements' all: messages name the first)


# --- Loading the student's file ---------------------------------------------------------------------
def load_student(path, ex):
    """Import the student's file; Failed with the error's line when it does not import. ``ex``: any
    object with ``name``, ``kernel`` and ``launch`` (an exercise, or the request)."""
    spec = importlib.util.spec_from_file_location(f"student_{ex.name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        where = f" line {e.lineno}" if e.lineno else ""  # a file with null bytes has no line to name
        raise Failed(f"{os.path.basename(path)}{where}: SyntaxError: {e.msg}") from None
    except Exception as e:  # noqa: BLE001
        raise Failed(f"importing {os.path.basename(path)} raised {_one_line(e)}{_where(e, path)}") from None
    _numba_cuda_helpers(mod)
    if not hasattr(mod, ex.kernel):
        raise Failed(f"{os.path.basename(path)} has no kernel named {ex.kernel!r}")
    problem = kernel_problem(getattr(mod, ex.kernel))
    if problem:
        raise Failed(f"{ex.kernel} is {problem}")
    if ex.launch and not callable(getattr(mod, ex.launch, None)):
        raise Failed(f"{os.path.basename(path)} has no function {ex.launch}(...) for the launch configuration")
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
    """(outputs, trace, writers, error): the kernel run in the simulator with every output poisoned
    (``which``); ``error`` is None or the raw facts of what it raised ({"kind": "kernel" | "launch",
    ...}): the judge words them (:func:`lab.teach.checker.kernel_error_message`)."""
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
    touched = [_touched(tr._lab_tracker) for tr in targs]
    error = None
    try:
        simt.run(kernel, grid, block, args + targs, rng, trace=trace, lock=lock)
    except simt.KernelError as e:
        line = _where(e.error, path)
        error = {"kind": "kernel", "type": type(e.error).__name__, "text": str(e.error),
                 "one_line": _one_line(e.error), "who": [list(map(int, w)) for w in e.who],
                 "line": int(line.split("line ")[1].split()[0]) if line else None}
    except ValueError as e:
        error = {"kind": "launch", "text": str(e)}
    writers = [tr._lab_tracker.writer for tr in targs]
    trace.lab_others = [tr._lab_tracker.others for tr in targs]  # extra writers per element, per output
    trace.lab_touched = [bool(t[0]) for t in touched]  # whether a kernel thread indexed each output at all
    # plain stores beside atomics of other blocks, per output (lab.teach.checker.store_and_atomic)
    trace.lab_store_atomic = store_and_atomic([tr._lab_tracker for tr in targs])
    try:  # the mapping lesson's counts (lab.teach.lessons): JSON-able numbers, judged by the parent
        from lab.teach.lessons import mapping_facts

        trace.lab_facts = mapping_facts(trace, writers, grid, block, onames)
    except Exception:  # noqa: BLE001 - a launch that raised early can leave counts half made: no lesson
        trace.lab_facts = None
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


def who_rows(pairs) -> np.ndarray:
    """(n, 7) int64 rows [flat, block x, y, z, thread x, y, z] for (flat, (block, thread)) pairs."""
    rows = [[int(f), *(tuple(b) + (0, 0, 0))[:3], *(tuple(t) + (0, 0, 0))[:3]] for f, (b, t) in pairs]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 7)


def _trace_facts(trace) -> dict:
    """Every fact of a :class:`lab.core.simt.Trace` (its fields and what the checker added to it),
    as JSON-able data; the writers go to the npz (:func:`who_rows`)."""
    return {k: encode(v) for k, v in vars(trace).items()
            if not k.startswith("_") and k not in ("lab_others", "stats")}  # stats: summed up in lab_facts


# --- One test ----------------------------------------------------------------------------------------
def run_case(mod, ex, case, backend, rng, path) -> tuple[dict, dict]:
    """Run one case of the request; (record, arrays) for :data:`result_name` (json, npz)."""
    kernel = getattr(mod, ex.kernel)
    fn = getattr(kernel, "py_func", kernel)
    code = getattr(fn, "__code__", None)
    record = {"param_names": [str(n)[:64] for n in _param_names(kernel)],
              "kernel_file": getattr(code, "co_filename", None), "failed": None, "kernel_error": None,
              "traces": None, "runs": 0, "again": False}
    arrays: dict = {}
    try:
        grid, block = _launch_config(mod, ex, case)
    except Failed as e:
        record["failed"] = str(e)
        return record, arrays
    record["grid"], record["block"] = encode(grid), encode(block)
    try:
        if backend == "simulator":
            record["traces"] = []
            for r, which in enumerate(case.runs):
                outs, trace, writers, error = _launch_sim(mod, ex, kernel, case, grid, block, which, rng, path)
                record["traces"].append(_trace_facts(trace))
                for k, o in enumerate(outs):
                    arrays[f"run{r}_out{k}"] = np.asarray(o)
                    arrays[f"run{r}_writers{k}"] = who_rows(writers[k].items())
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
        record["failed"] = f"raised {_one_line(e)}{_where(e, path)}"
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
                                   finite_rerun=bool(c.get("finite_rerun"))))
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
        mod = load_student(path, ex)
        if os.environ.get("LAB_LINEINFO"):  # under compute-sanitizer (lab.teach.workspace): reports name lines
            from lab.teach.checker import _lineinfo

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
            r = compile_raw(mod, ex, request["compile"]["sigs"], backend, path)
        except Exception as e:  # noqa: BLE001 - the check itself broke: a note, not the student's failure
            r = {"skipped": f"could not run ({_one_line(e)})", "broken": True}
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
        record, arrays = run_case(mod, ex, case, backend, rng, path)
        _save(folder, i, record, arrays)
        emit({"done": case.name})


def compile_raw(mod, ex, sigs, backend, path) -> dict:
    """The offline GPU compile's raw result ({"ok": True}, {"ok": False, "message", "line"} or
    {"skipped": why}) and the compute capability it compiled for ("cc")."""
    from lab.teach import gpu_compile

    if backend == "simulator":
        r = dict(gpu_compile.check(path, ex.kernel, sigs))
        r["cc"] = list(gpu_compile.CC)
        return r
    from numba import cuda  # the real one here: compile in this process for this GPU

    cc = tuple(cuda.get_current_device().compute_capability)
    fn = getattr(getattr(mod, ex.kernel), "py_func", None)
    r = dict(gpu_compile.compile_here(fn, sigs, path, cc) if fn else {"skipped": "no Python function"})
    r["cc"] = list(cc)
    return r


def run_all(name, path, backend, seed, emit=lambda obj: None, skip=(), compile_check=True):
    """Every hidden test of exercise ``name`` on the student's file ``path``, executor and judge in
    this process, through the same request and result files (for the lab's own tests: the student's
    code runs here, so this is no contained check; :func:`lab.teach.workspace.check` runs the executor
    in a child). The backend must already be
    selected. Returns [{"name", "passed", "message"}]; ``emit`` gets the progress events and
    ``{"note": text}`` for a check that was skipped; ``skip``: names of tests not to run;
    ``compile_check``: also compile the kernel offline for a GPU, the test "compiles for a GPU", first."""
    import tempfile

    import exercises
    from lab.teach import gpu_compile
    from lab.teach.checker import COMPILE_TEST, Judge, hidden_cases, make_request, write_request

    ex = exercises.load(name)
    rng = np.random.default_rng(int(seed))
    cases = hidden_cases(ex, rng)
    do_compile = compile_check and gpu_compile.enabled() and COMPILE_TEST not in skip
    request, inputs = make_request(ex, cases, backend, do_compile, rng)
    with tempfile.TemporaryDirectory(prefix="lab-check-") as folder:
        write_request(folder, request, inputs)
        with np.load(os.path.join(folder, INPUTS), allow_pickle=False) as z:
            execute(json.loads(open(os.path.join(folder, REQUEST)).read()), z, str(path),
                             folder, emit, skip)
        judge = Judge(ex, cases, backend, path, folder, do_compile)
        try:
            failed = judge.load_failure()
            if failed:
                emit(failed)
                return [failed]
            results = []
            for n in judge.planned:
                if n in skip:
                    continue
                r = judge.test(n)
                if r is not None:
                    emit(r)
                    results.append(r)
            for note in judge.notes:
                emit({"note": note})
            return results
        finally:
            judge.close()



def main(argv) -> None:
    """The child process: ``NAME PATH BACKEND - PROGRESS [SKIP]`` (the fourth argument is unused: no
    seed reaches the child); the request lies beside PROGRESS."""
    name, path, backend, _unused, progress = argv[:5]
    skip = json.loads(argv[5]) if len(argv) > 5 and argv[5].startswith("[") else []
    folder = os.path.dirname(os.path.abspath(progress))
    with open(os.path.join(folder, REQUEST)) as f:
        request = json.load(f)
    from lab.core.session import select

    select("sim" if backend == "simulator" else "gpu")
    with np.load(os.path.join(folder, INPUTS), allow_pickle=False) as inputs, \
            open(progress, "a", buffering=1) as out:
        warm(backend, out)
        execute(request, inputs, path, folder, lambda obj: out.write(json.dumps(obj) + "\n"), skip=skip)


def warm(backend, out) -> None:
    """Import what every test needs (Numba, the tracer; on a GPU the CUDA context) and say
    ``{"ready": true}``: the parent's start-up allowance ends here, so from now on a file that hangs
    while it loads gets the per-test timeout, as any test does (lab.teach.sandbox does the same)."""
    import numba.cuda

    if backend == "simulator":
        import lab.core.simt  # noqa: F401
    else:  # the CUDA context now, not in the first test's time (a retry's first test has a short limit)
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
