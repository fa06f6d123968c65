"""The channel between the judge (:mod:`lab.teach.checker`) and the executor
(:mod:`lab.teach.contained.executor`, the student's child): what goes out (``request.json``, ``request.npz``:
inputs, shapes, launch configurations, poisons; never a reference, a tolerance or the seed) and
what comes back (``result-K.json`` and ``.npz``), read safely (:mod:`lab.teach.contained.childio`: regular
files, no links, size caps) and checked against what was asked before any of it is judged. The
file layout is :mod:`lab.teach.contained.executor`'s docstring. Nothing here prints.
"""
from __future__ import annotations

import json
import math
import os
import dataclasses
from types import SimpleNamespace

import numpy as np

from lab.teach.cases import compile_sigs, runs_of
from lab.teach.indices import as_dims3
from lab.teach.messages import Failed
from lab.core import simt
from lab.teach.contained.childio import UnsafeChildFile, read_child_file as read, read_npz


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
        return np.asarray(v["__a"], dtype=_small_dtype(v.get("dtype")))
    if "__r" in v:
        return v["__r"]
    raise ValueError("not an encoded value")


def _small_dtype(name) -> np.dtype:
    """A dtype named in a child's record: a number (bool, int, uint, float, complex) of at most 16
    bytes; ValueError else (a 300-byte record naming ``V8200000000`` once allocated 8.2 GB)."""
    if not isinstance(name, str) or len(name) > 8:
        raise ValueError("not a dtype of a number")
    dt = np.dtype(name)
    if dt.kind not in "biufc" or dt.itemsize > 16 or dt.fields is not None or dt.subdtype is not None:
        raise ValueError(f"not a dtype of a number: {name!r}")
    return dt


JSON_CAP = 8 << 20  # bytes: the largest JSON record read back (trace facts are a few lists, each capped)
OTHERS_ROWS = 1 << 16  # extra writers per output the executor hands back at most (lab.teach.contained.executor)


COUNT_CAP = 64 << 20  # bytes of the tracer's count tables a run may add, beyond 2 KiB a thread of its launch


def result_cap(case, launch=None) -> int:
    """The largest result file (bytes) that case ``case`` can need: per run and output, the output
    itself, its writers (7 int64 a row: one per element, and at most OTHERS_ROWS extra) and their lines (int32), twice
    for the GPU's re-run, the tracer's count tables (:data:`COUNT_CAP` and 2 KiB a thread of the
    ``launch``, (grid, block)), plus 1 MiB of headers; a larger file is not read."""
    per_run = sum(math.prod(s) * (np.dtype(dt).itemsize + 60) + OTHERS_ROWS * 56 for s, dt in case.outputs)
    launch = launch if isinstance(launch, tuple) else (case.grid, case.block)
    threads = math.prod(as_dims3(launch[0])) * math.prod(as_dims3(launch[1])) if launch[0] is not None else 1 << 16
    per_run += COUNT_CAP + 2048 * threads
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


def make_request(ex, cases, backend: str, compile_check: bool, rng, launches=None,
                 source: str | None = None) -> tuple[dict, dict]:
    """(request, input arrays) for :mod:`lab.teach.contained.executor`: the kernel's and launch function's
    names, per case its inputs, output shapes and dtypes, initial values, launch configuration and
    poisons. Never a reference, a tolerance, a diagnosis or the seed (the block and thread order of the
    simulator is drawn from ``rng``). ``launches``: per case the (grid, block) the judge evaluated
    (:func:`lab.teach.checker.launch_plan`; a str: launch() failed, the case is not run); ``source``:
    the file's text as the judge read it, which the executor builds the kernel from."""
    inputs: dict = {}
    out = [_case_entry(f"c{i}", c, backend, inputs, None if launches is None else launches[i])
           for i, c in enumerate(cases)]
    request = {"exercise": ex.name, "kernel": ex.kernel, "launch": ex.launch, "backend": backend,
               "shuffle_seed": int(rng.integers(1 << 62)), "bench_seed": int(rng.integers(1 << 62)),
               "compile": {"sigs": compile_sigs(cases)} if compile_check else None, "cases": out,
               "source": source}
    return request, inputs


def _case_entry(key: str, c, backend: str, inputs: dict, launch=None) -> dict:
    """One case of the request (its arrays into ``inputs`` under ``KEY_aK`` / ``KEY_iK``); ``launch``:
    the (grid, block) the judge evaluated for it, or a str (launch() failed: not run)."""
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
    grid, block = (c.grid, c.block) if launch is None or isinstance(launch, str) else launch
    return {"name": c.name, "args": args, "init": init,
            "outputs": [[[int(v) for v in tuple(s)], np.dtype(dt).str] for s, dt in c.outputs],
            "out_names": list(c.out_names or []), "grid": encode(grid), "block": encode(block),
            "launch_args": encode(list(c.launch_args)), "runs": runs_of(c),
            "finite_rerun": backend != "simulator" and c.init is None and float_out,
            "launch_failed": isinstance(launch, str)}


def add_bench(request: dict, inputs: dict, case, backend: str, launch=None) -> None:
    """The benchmark's problem (:func:`lab.teach.bench.plan`, made by the judge) into the request
    ("bench": a case as the hidden tests', its arrays under ``b_*``; ``launch``: the (grid, block)
    the judge evaluated for it): the bench child reads neither the hidden tests nor the reference
    solution, and evaluates no launch()."""
    request["bench"] = _case_entry("b", case, backend, inputs, launch)


BENCH_GO = "bench-go"  # the parent's word to the child, once every test was judged: "1" bench, "0" do not


def write_request(folder: str, request: dict, inputs: dict) -> tuple[list[str], list[str]]:
    """The request and its input arrays into the executor's folder, and every file the executor may
    write there made now, empty (the results, :data:`BENCH_GO`). Returns (the files the child reads,
    the files it writes): under bubblewrap the folder is a fresh tmpfs and these are bound into it
    one by one (:func:`lab.teach.contained.sandbox.wrap`), so the channel is a fixed set of files of ours, each
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
    """:func:`lab.teach.contained.childio.read_child_file` (a regular file only, no link followed, never
    blocking, at most ``cap`` bytes; None when missing), its refusals a ResultError."""
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
    """{flat: (block, thread)} from :func:`lab.teach.contained.executor.who_rows`'s rows."""
    return {int(r[0]): ((int(r[1]), int(r[2]), int(r[3])), (int(r[4]), int(r[5]), int(r[6]))) for r in rows.tolist()}


def _others(rows) -> dict:
    out: dict = {}
    for r in rows.tolist():
        out.setdefault(int(r[0]), set()).add(((int(r[1]), int(r[2]), int(r[3])), (int(r[4]), int(r[5]), int(r[6]))))
    return out


def _trace(facts: dict, others: list):
    """A trace object with every fact of :class:`lab.core.simt.Trace` the executor sent (defaults for
    a missing field), for the message functions."""
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


COUNT_TABLES = (("per_thread", 4), ("stored", 3), ("requests", 4), ("load_lines", 6))  # executor.count_arrays


def _counts(facts, arrays: dict, r: int, grid, block) -> dict:
    """The tracer's raw counts of run ``r`` (:func:`lab.teach.contained.counts.stats_counts`: the JSON part
    ``facts``, the tables in ``arrays``), checked: every field there, of the right type, every index
    in range. ResultError otherwise: the mapping lesson is judged from these, never skipped."""
    if not isinstance(facts, dict):
        raise ResultError("no counts of the tracer")
    names = facts.get("arrays")
    if not isinstance(names, list) or len(names) > 4096 or not all(
            isinstance(a, list) and len(a) == 4 and isinstance(a[0], str) and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in a[1:3]) and isinstance(a[3], bool)
            for a in names):
        raise ResultError("counts of the tracer without their arrays")
    out = {"arrays": names}
    for key in ("atomic_elements", "block_elements"):
        v = facts.get(key)
        if not isinstance(v, list) or len(v) != len(names) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
            raise ResultError(f"counts of the tracer without {key}")
        out[key] = v
    for key in ("shared_accesses", "warp_collectives", "async_copies", "async_groups", "async_overlap"):
        v = facts.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ResultError(f"counts of the tracer without {key}")
        out[key] = v
    for key in ("shared_atomics", "mma_calls", "async_loads"):  # (optional: counts added later; absent reads as 0)
        v = facts.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ResultError(f"counts of the tracer with a malformed {key}")
        out[key] = v
    threads = math.prod(as_dims3(grid)) * math.prod(as_dims3(block))
    top = facts.get("shared_read_max", [0, 0])
    if not isinstance(top, list) or len(top) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in top) or top[0] >= max(1, threads):
        raise ResultError("counts of the tracer with a malformed shared_read_max")
    out["shared_read_max"] = top
    for key, width in COUNT_TABLES:
        a = arrays.get(f"run{r}_{key}")
        if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.ndim != 2 or a.shape[1] != width:
            raise ResultError(f"run{r}_{key}: not a table of counts")
        if a.size:
            col = {"per_thread": (1, 2), "stored": (0, 1), "requests": (1, None), "load_lines": (0, 1)}[key]
            if a.min() < 0 or a[:, col[0]].max() >= len(names) or \
                    (col[1] is not None and a[:, col[1]].max() >= threads) or \
                    (key in ("per_thread", "requests") and a[:, 0].max() > (2 if key == "per_thread" else 1)) or \
                    (key == "load_lines" and (bool((a[:, 5] >= np.asarray([n[1] for n in names], np.int64)[a[:, 0]]).any())
                                              or bool((a[:, 4] > a[:, 5]).any()))):
                raise ResultError(f"run{r}_{key}: counts out of range")
        out[key] = a.tolist()
    return out


def _arrays(case, npz: bytes, nruns: int, grid, block) -> dict:
    """The result file's arrays, only those asked (:func:`lab.teach.contained.childio.read_npz`: shapes and
    dtypes checked against the case's outputs, and the tracer's count tables against the bytes
    :func:`result_cap` allows them for the launch (grid, block), before anything is allocated);
    ResultError else."""
    threads = math.prod(as_dims3(grid)) * math.prod(as_dims3(block))
    expected = {}
    for k, (shape, dt) in enumerate(case.outputs):
        size = max(math.prod(shape), 1)
        expected[f"again_out{k}"] = (dt, tuple(shape))
        for r in range(nruns):
            expected[f"run{r}_out{k}"] = (dt, tuple(shape))
            expected[f"run{r}_writers{k}"] = (np.int64, ((None, size), 7))
            expected[f"run{r}_others{k}"] = (np.int64, ((None, OTHERS_ROWS), 7))
            expected[f"run{r}_lines{k}"] = (np.int32, (size,))
    for r in range(nruns):
        for key, width in COUNT_TABLES:
            expected[f"run{r}_{key}"] = (np.int64, ((None, (COUNT_CAP + 2048 * threads) // (8 * width)), width))
    try:
        return read_npz(npz, expected)
    except UnsafeChildFile as e:
        raise ResultError(f"unreadable output arrays ({e})") from None


def raw_result(case, record, npz: bytes | None, backend: str, path: str, launch=None):
    """The executor's raw data for ``case`` checked against what was asked (every output of every run
    there, with the asked shape and dtype; grid and block the asked ones: the test's, or ``launch``,
    the (grid, block) the judge evaluated; in the simulator the tracer's facts and raw counts of every
    run), as the object :func:`judge_case` takes. Failed for what the executor reported as a failure
    (the launch); ResultError for data that is not a result."""
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
    asked = launch if launch is not None else (case.grid, case.block) if case.grid is not None else None
    if asked is not None and (as_dims3(grid) != as_dims3(asked[0]) or as_dims3(block) != as_dims3(asked[1])):
        raise ResultError(f"launched with grid {grid}, block {block}, not the one asked")
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
    arrays = _arrays(case, npz, nruns, grid, block)

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

    def _store_lines(a, k):
        """The line of each element's first write (0: none), or None when the child sent none."""
        size = max(math.prod(case.outputs[k][0]), 1)
        if not isinstance(a, np.ndarray) or a.dtype != np.int32 or a.shape != (size,) or (a.size and a.min() < 0):
            return None
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
            trace = _trace(traces[r], others)
            trace.lab_store_lines = [_store_lines(arrays.get(f"run{r}_lines{k}"), k) for k in range(len(case.outputs))]
            trace.lab_counts = _counts(trace.lab_counts if hasattr(trace, "lab_counts") else None, arrays, r,
                                       grid, block)
            runs.append((outs, trace, writers))
        else:
            runs.append((outs, None, None))
    again = None
    if backend != "simulator" and record.get("again"):
        again = [output(f"again_out{k}", k) for k in range(len(case.outputs))]
    return SimpleNamespace(grid=grid, block=block, onames=onames, runs=runs, again=again, error=error,
                           names=names + onames)
