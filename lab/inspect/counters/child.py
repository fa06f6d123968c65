"""The profiled child process (ncu and CUPTI alike): every contender prepared and warmed up as ``lab
run`` does, then, under ncu, one profiled call each after an unprofiled L2 flush, behind a marker
kernel whose grid size numbers the contender (lab.inspect.counters.ncu reads them back). CUPTI's
sampled child is lab.inspect.counters.cupti.cupti_child_main."""
from __future__ import annotations

import json

import numpy as np
import kernels as K
from lab.core import simulator, contenders as C, device, timing
from lab.core.occupancy import launch_usage


def marker_kernel():
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    @cuda.jit
    def lab_counters_mark(index):
        """Does nothing; its grid size (index + 1 blocks of 1 thread) numbers the contender after it."""
        if cuda.grid(1) == 0 and index < 0:
            pass

    return lab_counters_mark


def profiler():
    """(start, stop): cuProfilerStart/Stop through Numba (numba-cuda), else cuda-bindings."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    if hasattr(cuda, "profile_start"):
        return cuda.profile_start, cuda.profile_stop
    from cuda.bindings import driver  # lazy: optional (cuda)

    return (lambda: driver.cuProfilerStart()), (lambda: driver.cuProfilerStop())


def prepare_child(req: dict):
    """In a profiled child: every contender of ``req`` prepared and warmed up as lab run does.
    Returns (entries of those that could not be, [(meta, prepared)] of those that can)."""
    simulator.select("gpu")
    spec = K.load(req["kernel"])
    size, dtype, threads = tuple(req["size"]), np.dtype(req["dtype"]), req["threads"]
    inputs = spec.make_inputs(size, dtype, np.random.default_rng(req["seed"]))
    entries, ready = [], []
    for v in req["variants"]:
        variant = spec.variants[v]
        why = variant.accepts(threads)
        if why:
            entries.append({"contender": "numba", "variant": v, "status": "skipped", "reason": f"{v} {why}"})
            continue
        try:
            prepared = C.prepare_numba(spec, size, variant, variant.launch(size, threads), inputs, False)
            occ = launch_usage(spec, v, threads, False, size).get("occupancy")
        except Exception as e:
            entries.append({"contender": "numba", "variant": v, "status": "FAIL", "reason": f"{type(e).__name__}: {e}"})
            continue
        ready.append(({"contender": "numba", "variant": v,
                       "theoretical_occupancy_pct": None if occ is None else 100 * occ}, prepared))
    for lib in req["contenders"]:
        why = C.why_unavailable(lib, False)
        if why:
            entries.append({"contender": lib, "variant": "-", "status": "skipped", "reason": why})
            continue
        for label in C.library_labels(lib, spec.name):
            try:
                ready.append(({"contender": lib, "variant": label}, C.prepare_library(lib, spec, size, label, inputs)))
            except Exception as e:
                entries.append({"contender": lib, "variant": label, "status": "FAIL",
                                "reason": f"{type(e).__name__}: {e}"})
    warm = []
    for meta, p in ready:
        try:
            for _ in range(1 + req["warmup"]):
                p.call()
            p.sync()
            warm.append((meta, p))
        except Exception as e:
            entries.append({**meta, "status": "FAIL", "reason": f"{type(e).__name__}: {e}"})
    return entries, warm


def finish_child(req: dict, entries: list, result_path: str, **extra) -> None:
    order = {v: n for n, v in enumerate(req["variants"])}
    entries.sort(key=lambda e: (("numba", "cupy", "torch").index(e["contender"]), order.get(e["variant"], 0)))
    with open(result_path, "w") as f:
        json.dump({"device": device.describe(False), "entries": entries, **extra}, f)


def child_main(request_path: str, result_path: str) -> None:
    """In the process ncu profiles: prepare every contender, warm it up, then one profiled call each
    (after an unprofiled L2 flush, behind its marker); writes the entries and the device."""
    with open(request_path) as f:
        req = json.load(f)
    entries, warm = prepare_child(req)
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)
    mark = marker_kernel()
    mark[1, 1](0)  # compile + load outside any profiled range
    timing._flush_l2()  # the timer's flush: compiled and run outside any range
    start, stop = profiler()
    for i, (meta, p) in enumerate(warm):
        timing._flush_l2()
        cuda.synchronize()
        start()
        mark[i + 1, 1](i)
        p.call()
        p.sync()
        stop()
        entries.append({**meta, "status": "ok", "index": i})
    finish_child(req, entries, result_path)

