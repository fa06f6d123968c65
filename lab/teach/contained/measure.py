"""The benchmark's measurement, the student's side (``lab exercise check NAME --bench``): the child
with ``--bench`` (:func:`main`: the hidden tests' launches of :func:`lab.teach.contained.executor.main`,
then, once the judge said go, the student's kernel measured on the request's "bench" case) and
:func:`measure`, which the reference's trusted child (:mod:`lab.teach.bench`) runs on the reference
solution too. Raw numbers only: the pass line, the reference and the verdict are the judge's
(:func:`lab.teach.bench.judge`). Nothing here prints.

In the simulator the kernel runs in the lab's executor (:func:`lab.core.simt.run`) under the
sector tracer (:class:`lab.core.trace.SectorTracer`, as ``lab counters --sim``); on a GPU it is
timed with the lab's timer (:class:`lab.core.timing.Timer`: CUDA events, L2 flushed before each
call, nvbench's stop rule). Source: CUDA C++ Best Practices Guide, "Coalesced Access to Global
Memory" and "Using CUDA GPU Timers".
"""
from __future__ import annotations

import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

from lab.teach.contained import executor
from lab.teach.contained.channel import BENCH_GO
from lab.teach.messages import Failed
from lab.core import simt
from lab.core.runner import simulator_threads
from lab.core.timing import Timer
from lab.core.trace import SectorTracer


def failure_text(e) -> str:
    """One line for what stopped a measurement: a Failed's message, else the exception's first line."""
    if isinstance(e, Failed):
        return f"not benchmarked: {e}"
    text = str(e).strip().splitlines()
    return f"the benchmark failed: {type(e).__name__}: {text[0] if text else ''}"


def measure(mod, ex, case, backend: str) -> dict:
    """The raw numbers of ``mod``'s kernel on ``case`` (the child's side: no verdict): in the
    simulator {"load": traffic, "store": traffic, "atomic_ops"} (:func:`traffic`), on a GPU
    {"ms", "timing"}. ``ex``: anything with ``name``, ``kernel`` and ``launch``."""
    if backend == "simulator":
        s = trace_launch(mod, ex, case)
        return {"load": traffic(s, "load"), "store": traffic(s, "store"), "atomic_ops": int(s["atomic_ops"]),
                "repeat_loads": int(s["repeat_loads"]), "repeat_lines": s["repeat_lines"],
                "idle_blocks": int(s["idle_blocks"]), "idle_load_sectors": int(s["idle_load_sectors"])}
    from numba import cuda  # lazy: backend chosen first (numba)

    ms, timing = time_launch(device_call(mod, ex, case), cuda.synchronize)
    return {"ms": float(ms), "timing": str(timing)}


def traffic(s: dict, kind: str) -> dict:
    st = s[kind]
    per, eff = st.sectors_per_request, st.efficiency_pct
    return {"requests": int(st.requests), "sectors": int(st.sectors), "bytes": int(st.bytes_used),
            "touched": int(s["touched"][kind]), "per_request": None if per is None else float(per),
            "efficiency": None if eff is None else float(eff)}


def trace_launch(mod, ex, case, seed: int = 0) -> dict:
    """One launch of ``mod``'s kernel on ``case`` in the simulator, traced: the
    :meth:`lab.core.trace.SectorTracer.summary` of its global loads, stores and atomics, loads of
    a value the thread already holds in a register left out (``repeat_loads``; ``repeat_lines``:
    [[line of the kernel's file, loads]]), and the loads of blocks that store nothing too
    (``idle_blocks``, ``idle_load_sectors``): neither is a failure of the lesson.

    The kernel runs in the lab's executor (:func:`lab.core.simt.run`: warp shuffles, votes and
    ``syncwarp`` included), its array arguments wrapped as the simulator's device arrays so that
    the tracer sees every access. Raises what the kernel raised (a thread's exception)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray  # lazy: backend chosen first (numba)

    grid, block = executor.case_launch(mod, ex, case)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    outs = [np.zeros(s, dt) for s, dt in case.outputs] if case.init is None else \
        [np.array(v, dtype=dt).reshape(s) for v, (s, dt) in zip(case.init, case.outputs)]
    fakes = [FakeWithinKernelCUDAArray(FakeCUDAArray(a)) if isinstance(a, np.ndarray) and a.ndim else a
             for a in args + outs]
    kernel = getattr(mod, ex.kernel)
    with simulator_threads(), SectorTracer(registers=True) as tr:
        try:
            simt.run(kernel, grid, block, fakes, np.random.default_rng(seed))
        except simt.KernelError as e:
            raise e.error from None
    out = tr.summary(skip_idle=True)
    code = getattr(getattr(kernel, "py_func", kernel), "__code__", None)
    out["repeat_lines"] = [[r["line"], r["loads"]] for r in tr.repeats()
                           if code is not None and r["file"] == code.co_filename][:4]
    return out


def time_launch(fn, sync):
    m = Timer(fn, "device", sync).measure()
    return m.median_ms, m.timing


def device_call(mod, ex, case):
    from numba import cuda  # lazy: backend chosen first (numba)

    grid, block = executor.case_launch(mod, ex, case)
    args = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in case.args]
    if case.init is None:
        outs = [cuda.device_array(s, dt) for s, dt in case.outputs]
    else:
        outs = [cuda.to_device(np.array(v, dtype=dt).reshape(s)) for v, (s, dt) in zip(case.init, case.outputs)]
    launch = getattr(mod, ex.kernel)[grid, block]
    return lambda: launch(*args, *outs)


def main(argv) -> None:
    """The child process with ``--bench``: the hidden tests' launches (:func:`lab.teach.contained.executor.main`)
    and, once the parent judged every one passed (it writes ``bench-go``: "1"), ``{"start": "bench"}``
    then ``{"bench": raw}`` on the progress file: :func:`measure`'s numbers of the student's kernel
    on the request's "bench" case, or {"error": why}. No reference, no hidden test, no verdict here."""
    name, path, backend, _unused, progress, *rest = argv
    executor.main(argv)
    folder = os.path.dirname(os.path.abspath(progress))
    go = os.path.join(folder, BENCH_GO)
    word = ""
    for _ in range(3000):  # the parent judges within moments of the last result (60 s at most)
        try:
            with open(go) as f:
                word = f.read().strip()
        except OSError:
            return
        if word:
            break
        time.sleep(0.02)
    if word != "1":
        return
    with open(os.path.join(folder, executor.REQUEST)) as f:
        request = json.load(f)
    with open(progress, "a", buffering=1) as out:
        out.write(json.dumps({"start": "bench"}) + "\n")
        try:
            ex = SimpleNamespace(name=request["exercise"], kernel=request["kernel"], launch=request.get("launch"))
            with np.load(os.path.join(folder, executor.INPUTS), allow_pickle=False) as inputs:
                case = executor.cases_of({"cases": [request["bench"]]}, inputs)[0]
            raw = measure(executor.load_student(path, ex, text=request.get("source")), ex, case, backend)
        except Exception as e:  # noqa: BLE001 - a student's kernel that misbehaves only at this size
            raw = {"error": failure_text(e)}
        out.write(json.dumps({"bench": raw}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
