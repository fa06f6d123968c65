"""Performance grading of an exercise (``lab exercise check NAME --bench``), after every hidden test
passed. It runs in the checker's child process (``python -m lab.teach.bench ...``: :func:`main`, the
executor's :func:`lab.teach.executor.main` plus the benchmark, once the parent judged every test
passed), so the student's code stays contained; nothing here prints. The bench document is still
the child's own report (its timings and sector counts are not re-checked by the parent).

On a GPU: the student's kernel, the reference solution (``exercises/NAME/solution.py``) and, where
the exercise names one (meta ``RUNG = "kernel:variant"``), the ``kernels/`` rung it mirrors are
timed with the lab's timer (:class:`lab.core.timing.Timer`: CUDA events, calls queued behind a
blocked GPU, L2 flushed before each call, nvbench's stop rule) on the same inputs. Reported:

* ``pct_of_reference`` = 100 x reference ms / student ms (the reference's speed is 100%);
* ``pct_of_peak``: the bytes the problem must move per ms against the *measured* device-to-device
  copy bandwidth (:func:`lab.core.device.measure_copy_bandwidth`; the nominal DRAM bandwidth when
  that fails) for ``PEAK = "copy"``, or FLOP/ms against the FP32 peak
  (:func:`lab.core.device.describe`) for ``PEAK = "fp32"``;
* ``passed``: ``pct_of_reference >= PASS_PCT_OF_REFERENCE`` (meta; 70 when missing).

In the simulator nothing can be timed; instead every warp's global loads and stores are traced
(:class:`lab.core.trace.SectorTracer`, as ``lab counters --sim``) in the lab's executor
(:func:`lab.core.simt.run`, which has the warp shuffles Numba's simulator lacks), and the student's
32-byte sectors are compared with the reference's: ``passed`` when the loads' and the stores'
sectors in all are each within ``SECTOR_FACTOR`` (meta; 1.25 when missing) of the reference's, and
the global atomics within ATOMIC_FACTOR. A failing line names its cause: sectors per warp request
(coalescing: consecutive threads touching consecutive elements), sectors fetched again for the same
data (reuse: shared memory), or atomics per element. This grades memory traffic without a GPU.

The inputs: ``exercises/NAME/bench.py``'s ``case(rng, simulator)`` (a GPU-sized problem), else the
largest hidden test (a note says so: small for a GPU). Source: CUDA C++ Best Practices Guide,
"Coalesced Access to Global Memory" and "Using CUDA GPU Timers".
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

SIM_MAX_ELEMENTS = 20_000  # simulator: the largest hidden test up to this many elements (seconds, not minutes)
KEYS = ("backend", "case", "passed", "message", "pass_line", "student_ms", "reference_ms", "pct_of_reference",
        "peak", "achieved", "peak_value", "peak_unit", "pct_of_peak", "peak_source", "rung", "rung_ms",
        "pct_of_rung", "sectors", "timing", "notes")


def _blank(ex, backend) -> dict:
    doc = dict.fromkeys(KEYS)
    doc.update(backend=backend, peak=ex.peak, rung=ex.rung, notes=[], passed=False)
    return doc


def pick_case(ex, rng, simulator: bool):
    """(Case, note or None): bench.py's case, else the largest hidden test (in the simulator the
    largest up to SIM_MAX_ELEMENTS elements)."""
    mod = ex.bench()
    if mod is not None:
        return mod.case(rng, simulator), None
    cases = ex.hidden().cases(rng)

    def size(c):
        return sum(a.size for a in c.args if isinstance(a, np.ndarray)) + sum(math.prod(s) for s, _ in c.outputs)

    pool = [c for c in cases if size(c) <= SIM_MAX_ELEMENTS] if simulator else cases
    case = max(pool or cases, key=size) if pool else min(cases, key=size)
    note = None if simulator else (f"timed at the hidden tests' largest size ({case.name}): small for a GPU; "
                                   f"add exercises/{ex.name}/bench.py for a larger one")
    return case, note


def bytes_moved(ex, case) -> int:
    """bench.py's ``bytes(case)``, else every input array read once and every output written once."""
    mod = ex.bench()
    if mod is not None and hasattr(mod, "bytes"):
        return int(mod.bytes(case))
    n = sum(a.nbytes for a in case.args if isinstance(a, np.ndarray))
    return int(n + sum(math.prod(s) * np.dtype(dt).itemsize for s, dt in case.outputs))


def run(name: str, path: str, backend: str, seed: int) -> dict:
    """The bench document of ``path`` (the student's file) for exercise ``name`` (keys: KEYS)."""
    import exercises
    from lab.teach.checker import Failed
    from lab.teach.executor import load_student

    ex = exercises.load(name)
    doc = _blank(ex, backend)
    rng = np.random.default_rng(int(seed) + 1)
    try:
        mine = load_student(path, ex)
        ref = load_student(str(ex.solution), ex)
        case, note = pick_case(ex, rng, backend == "simulator")
        doc["case"] = case.name
        if note:
            doc["notes"].append(note)
        (_sectors if backend == "simulator" else _timed)(ex, mine, ref, case, doc)
    except Failed as e:
        doc["message"] = f"not benchmarked: {e}"
    except Exception as e:  # noqa: BLE001 - a student's kernel that misbehaves only at this size
        doc["message"] = f"the benchmark failed: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    return doc


# --- the simulator: sectors per warp request ----------------------------------------------------------
SLACK_SECTORS = 4  # sectors a kernel may fetch or store beyond FACTOR x the reference's (one warp's request)
ATOMIC_FACTOR, ATOMIC_SLACK = 2.0, 32  # global atomics: per element where the reference has one a block fails
ACCESS = {"load": ("loads", "read", "read"), "store": ("stores", "write", "written")}


def trace_launch(mod, ex, case, seed: int = 0) -> dict:
    """One launch of ``mod``'s kernel on ``case`` in the simulator, traced: the
    :meth:`lab.core.trace.SectorTracer.summary` of its global loads, stores and atomics.

    The kernel runs in the lab's executor (:func:`lab.core.simt.run`: warp shuffles, votes and
    ``syncwarp`` included), its array arguments wrapped as the simulator's device arrays so that
    the tracer sees every access. Raises what the kernel raised (a thread's exception)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

    from lab.core import simt
    from lab.core.runner import simulator_threads
    from lab.core.trace import SectorTracer
    from lab.teach.executor import _launch_config

    grid, block = _launch_config(mod, ex, case)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    outs = [np.zeros(s, dt) for s, dt in case.outputs] if case.init is None else \
        [np.array(v, dtype=dt).reshape(s) for v, (s, dt) in zip(case.init, case.outputs)]
    fakes = [FakeWithinKernelCUDAArray(FakeCUDAArray(a)) if isinstance(a, np.ndarray) and a.ndim else a
             for a in args + outs]
    with simulator_threads(), SectorTracer() as tr:
        try:
            simt.run(getattr(mod, ex.kernel), grid, block, fakes, np.random.default_rng(seed))
        except simt.KernelError as e:
            raise e.error from None
    return tr.summary()


def _traffic(s: dict, kind: str) -> dict:
    st = s[kind]
    return {"requests": st.requests, "sectors": st.sectors, "bytes": st.bytes_used, "touched": s["touched"][kind],
            "per_request": st.sectors_per_request, "efficiency": st.efficiency_pct}


def _sectors(ex, mine, ref, case, doc) -> None:
    """The simulator's pass line: for the global loads and for the stores, the sectors fetched in all
    at most ``SECTOR_FACTOR`` x the reference's (+ SLACK_SECTORS); global atomic operations at most
    ATOMIC_FACTOR x the reference's (+ ATOMIC_SLACK). A failing line names its cause: sectors per
    warp request above the reference's (uncoalesced: consecutive threads do not touch consecutive
    elements), or more requests for the same data (re-reads: each sector fetched again and again,
    where the reference keeps the data in shared memory or registers), or atomics per element."""
    a, b = trace_launch(mine, ex, case), trace_launch(ref, ex, case)
    f = ex.sector_factor
    ours = {k: _traffic(a, k) for k in ACCESS}
    theirs = {k: _traffic(b, k) for k in ACCESS}
    doc["sectors"] = {"student": ours["load"]["per_request"], "reference": theirs["load"]["per_request"],
                      "student_store": ours["store"]["per_request"], "reference_store": theirs["store"]["per_request"],
                      "factor": f,
                      "student_load_sectors": ours["load"]["sectors"], "reference_load_sectors": theirs["load"]["sectors"],
                      "student_store_sectors": ours["store"]["sectors"],
                      "reference_store_sectors": theirs["store"]["sectors"],
                      "student_load_touched": ours["load"]["touched"], "reference_load_touched": theirs["load"]["touched"],
                      "student_atomics": a["atomic_ops"], "reference_atomics": b["atomic_ops"], "cause": None}
    doc["pass_line"] = (f"loads and stores at most {f:g}x the reference's sectors, global atomics at most "
                        f"{ATOMIC_FACTOR:g}x its count")
    doc["timing"] = ("CUDA simulator: 32-byte sectors of the global loads and stores, per warp request and in "
                     "all (lab.core.trace)")
    if not theirs["load"]["requests"] and not theirs["store"]["requests"] and not ours["load"]["requests"]:
        doc["passed"] = True
        doc["message"] = "no global loads or stores traced (slices are not traced): coalescing not graded"
        return
    fails = []
    for kind in ACCESS:
        m, r = ours[kind], theirs[kind]
        if m["sectors"] > f * r["sectors"] + SLACK_SECTORS:
            fails.append(_why(kind, m, r, f))
    if a["atomic_ops"] > ATOMIC_FACTOR * b["atomic_ops"] + ATOMIC_SLACK:
        fails.append(("atomics", f"your kernel makes {a['atomic_ops']} atomic updates of global memory, the "
                                 f"reference {b['atomic_ops']}: combine the values within the block first (shared "
                                 f"memory or warp shuffles), then one atomic per block (or per bin)"))
    doc["passed"] = not fails
    if fails:
        doc["sectors"]["cause"] = fails[0][0]
        doc["message"] = "; ".join(text for _, text in fails)
        return
    mine_ld, ref_ld = ours["load"], theirs["load"]
    doc["message"] = (f"your loads touch {mine_ld['per_request']:.3g} sectors per warp request; the reference "
                      f"touches {ref_ld['per_request']:.3g}"
                      if mine_ld["per_request"] is not None and ref_ld["per_request"] is not None
                      else "your loads and stores move no more sectors than the reference's")
    if ours["store"]["sectors"] or theirs["store"]["sectors"]:
        doc["message"] += (f" (stores: {ours['store']['sectors']} sectors in all, the reference "
                           f"{theirs['store']['sectors']})")


def _why(kind, m, r, f) -> tuple:
    """(cause, message) of ``kind``'s (load or store) traffic above the pass line. Sectors in all =
    (bytes the requests ask for) / (bytes used per byte fetched) / 32: against the reference's, the
    second factor is coalescing (each request's lanes spread over more sectors than their bytes
    need, or one lane a request), the first the volume asked for (the same elements read again:
    reuse). The larger names the cause; the other is added when it alone exceeds the factor."""
    words, verb, done = ACCESS[kind]
    eff_m, eff_r = (m["efficiency"] or 100.0), (r["efficiency"] or 100.0)
    coalescing = eff_r / eff_m
    volume = m["bytes"] / max(r["bytes"], 1)
    spr_r = f"{r['per_request']:.3g}" if r["per_request"] is not None else "none"
    uncoalesced = (f"your {words} touch {m['per_request']:.3g} sectors per warp request and use {eff_m:.0f}% of "
                   f"the bytes they fetch; the reference touches {spr_r} and uses {eff_r:.0f}% ({m['sectors']} "
                   f"sectors in all, the reference {r['sectors']}; more than {f:g}x): do consecutive threads "
                   f"{verb} consecutive elements?")
    again = m["sectors"] / max(m["touched"], 1)
    again_r = r["sectors"] / max(r["touched"], 1) if r["sectors"] else 0.0
    same = (f"the same {m['touched']} distinct sectors" if m["touched"] == r["touched"] else
            f"{m['touched']} distinct sectors (the reference {r['touched']})")
    keep = ("keep them in shared memory (or registers) and reuse them" if kind == "load" else
            "write each element once, from registers or shared memory")
    not_coalescing = "" if coalescing > f else ", not uncoalesced requests"
    reuse = (f"your {words} move {m['sectors']} sectors, the reference {r['sectors']} (more than {f:g}x), over "
             f"{same}: each is {done} {again:.2g} times from global memory (the reference's {again_r:.2g}), "
             f"{volume:.2g}x the bytes the reference asks for: re-{'reads' if kind == 'load' else 'writes'} of "
             f"the same elements{not_coalescing}; {keep}")
    if coalescing >= volume:
        return ("coalescing", uncoalesced + (f"; and {reuse}" if volume > f else ""))
    return ("reuse", reuse + (f"; and {uncoalesced}" if coalescing > f else ""))


# --- a GPU: the lab's timer ----------------------------------------------------------------------------
def _time_launch(fn, sync):
    from lab.core.timing import Timer

    m = Timer(fn, "device", sync).measure()
    return m.median_ms, m.timing


def _device_call(mod, ex, case):
    from numba import cuda

    from lab.teach.executor import _launch_config

    grid, block = _launch_config(mod, ex, case)
    args = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in case.args]
    if case.init is None:
        outs = [cuda.device_array(s, dt) for s, dt in case.outputs]
    else:
        outs = [cuda.to_device(np.array(v, dtype=dt).reshape(s)) for v, (s, dt) in zip(case.init, case.outputs)]
    launch = getattr(mod, ex.kernel)[grid, block]
    return lambda: launch(*args, *outs)


def _timed(ex, mine, ref, case, doc) -> None:
    from numba import cuda

    from lab.core.device import describe, measure_copy_bandwidth

    doc["student_ms"], doc["timing"] = _time_launch(_device_call(mine, ex, case), cuda.synchronize)
    doc["reference_ms"], _ = _time_launch(_device_call(ref, ex, case), cuda.synchronize)
    doc["pct_of_reference"] = 100.0 * doc["reference_ms"] / doc["student_ms"]
    doc["pass_line"] = f"at least {ex.pass_pct:g}% of the reference's speed"
    doc["passed"] = doc["pct_of_reference"] >= ex.pass_pct
    seconds = doc["student_ms"] * 1e-3
    if ex.peak == "fp32":
        mod = ex.bench()
        flops = mod.flops(case) if mod is not None and hasattr(mod, "flops") else None
        peak = describe(False).get("peak_fp32_gflops")
        doc.update(peak_unit="GFLOP/s", peak_source="nominal FP32 peak (lab.core.device.describe)",
                   peak_value=peak)
        if flops:
            doc["achieved"] = flops / seconds / 1e9
        else:
            doc["notes"].append(f"no flops(case) in exercises/{ex.name}/bench.py: % of FP32 peak not computed")
    else:
        try:
            peak, source = measure_copy_bandwidth()["gbps"], "measured device-to-device copy"
        except Exception:  # noqa: BLE001 - too little free memory for the 1 GiB copy: the nominal figure
            peak, source = describe(False).get("peak_bandwidth_gbps"), "nominal DRAM bandwidth"
        doc.update(peak_unit="GB/s", peak_source=source, peak_value=peak,
                   achieved=bytes_moved(ex, case) / seconds / 1e9)
    if doc["achieved"] is not None and doc["peak_value"]:
        doc["pct_of_peak"] = 100.0 * doc["achieved"] / doc["peak_value"]
    _rung(ex, case, doc)
    doc["message"] = (f"{doc['student_ms']:.4g} ms, {doc['pct_of_reference']:.0f}% of the reference's speed "
                      f"({doc['reference_ms']:.4g} ms)"
                      + (f", {doc['pct_of_peak']:.0f}% of {'copy bandwidth' if ex.peak == 'copy' else 'FP32 peak'}"
                         if doc["pct_of_peak"] is not None else "")
                      + ("" if doc["passed"] else f": below the pass line ({doc['pass_line']})"))


def _rung(ex, case, doc) -> None:
    """Time the kernels/ rung ``ex.rung`` at the same problem size (bench.py's ``rung_size(case)``)."""
    mod = ex.bench()
    if not ex.rung or mod is None or not hasattr(mod, "rung_size"):
        return
    import kernels
    from lab.core import contenders as C

    kernel, variant = ex.rung.split(":")
    spec = kernels.load(kernel)
    size = tuple(mod.rung_size(case))
    v = spec.variants[variant]
    why = v.accepts(256)
    if why:
        doc["notes"].append(f"kernels/ rung {ex.rung} not timed: {why}")
        return
    inputs = spec.make_inputs(size, np.dtype(np.float32), np.random.default_rng(0))
    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), inputs, False)
    doc["rung_ms"], _ = _time_launch(prepared.call, prepared.sync)
    doc["pct_of_rung"] = 100.0 * doc["rung_ms"] / doc["student_ms"]


def main(argv) -> None:
    """The child process with ``--bench``: the hidden tests' launches (:func:`lab.teach.executor.main`)
    and, once the parent judged every one passed (it writes ``bench-go``: "1"), ``{"start": "bench"}``
    then ``{"bench": {...}}`` on the progress file."""
    import time

    from lab.teach import executor
    from lab.teach.checker import BENCH_GO

    name, path, backend, _unused, progress, *rest = argv
    executor.main(argv)
    folder = os.path.dirname(os.path.abspath(progress))
    go = os.path.join(folder, BENCH_GO)
    with open(os.path.join(folder, executor.REQUEST)) as f:
        seed = int(json.load(f).get("bench_seed", 0))
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
    with open(progress, "a", buffering=1) as out:
        out.write(json.dumps({"start": "bench"}) + "\n")
        out.write(json.dumps({"bench": run(name, path, backend, seed)}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
