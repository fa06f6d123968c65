"""``lab profile KERNEL``: the Numba rungs and the torch contenders under ``torch.profiler``.

As in the seed's profiling exercise (ARENA 2.0 chapter 3, "Profiling - ATen out of Ten"; the
PyTorch profiler recipe): ``profile(activities=[CPU, CUDA])`` around the work, then
``key_averages().table(sort_by=...)`` sorted by CUDA time (``device_time_total``, the new name of
the seed's ``cuda_time_total``) and ``export_chrome_trace`` for chrome://tracing or Perfetto.
CUPTI records every kernel of the process, so Numba's kernels show up by name beside torch's.
Each contender runs inside ``record_function(name)`` (a row in the table, a span in the trace)
and an NVTX range of the same name (``torch.cuda.nvtx.range_push/pop``), so ``nsys profile``
shows them by name too. Every contender is called once before profiling, so JIT compiles and
module loads stay out of the profile.

torch is imported here only, when the command runs. Without torch: LabError (exit 2). In the CUDA
simulator torch (a CPU build) can only record CPU activity: the command then profiles CPU time
only, which still shows each Numba rung's simulated run by name (Python interpreting every
thread, not GPU time), and says so; torch contenders need a GPU and are left out there.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import warnings

from lab.core.errors import LabError
import numpy as np
from lab.core import catalog, contenders as C
from lab.core.files import atomic_path
from lab.core.simulator import quick_options, refuse_long, simulator_seconds


def _torch():
    try:
        import torch  # lazy: optional (torch)
        from torch.profiler import ProfilerActivity, profile as torch_profile, record_function  # lazy: optional (torch)
    except ImportError:
        raise LabError("lab profile needs torch (torch.profiler), which is not installed: on a GPU machine "
                       "pip install 'numba-gpu-lab[torch]'; on a CPU-only machine pip install torch==2.13.0") from None
    return torch, ProfilerActivity, torch_profile, record_function


def profile(kernel: str, backend: str, size: str | None = None, threads: int | None = None,
            variants: list[str] | None = None, contenders: list[str] | None = None, dtype: str = "float32",
            repeats: int | None = None, seed: int | None = None, trace: str | None = None,
            row_limit: int = 15, yes: bool = False) -> dict:
    """Profile ``repeats`` calls of each Numba variant and torch op of ``kernel``.

    contenders: from ("numba", "torch"), default both. Returns {"kernel", "backend", "size",
    "threads", "activities", "sort_by", "contenders" (names, in order), "skipped" (name: why),
    "table" (the key_averages text), "trace" (path or None), "notes"}. Raises LabError on bad
    input, without torch, when --gpu is active but torch has no CUDA, or in the simulator for a
    profile estimated above 10 minutes without ``yes`` (lab.core.simcost; the estimate and a
    quicker --size).
    """
    torch, Activity, torch_profile, record_function = _torch()
    simulator = backend == "simulator"
    if not simulator and not torch.cuda.is_available():
        raise LabError(f"torch {torch.__version__} has no CUDA support here, so the profiler cannot record "
                       "GPU activity; install a CUDA build of torch (pip install 'numba-gpu-lab[torch]')")
    spec = catalog.load(kernel)
    who = contenders or ["numba", "torch"]
    for c in who:
        if c not in ("numba", "torch"):
            raise LabError(f"unknown contender {c!r} for lab profile; choose from: numba, torch")
    unknown = [v for v in variants or [] if v not in spec.variants]
    if unknown:
        raise LabError(f"unknown variant of {kernel} {unknown[0]!r}; choose from: {', '.join(spec.variants)}")
    if dtype not in spec.dtypes:
        raise LabError(f"--dtype {dtype}: {kernel} supports {', '.join(spec.dtypes)}")
    shape = catalog.problem_shape(spec, size, lambda: spec.default_size(simulator))
    threads = threads if threads is not None else (32 if simulator else 256)
    if not 1 <= threads <= 1024:
        raise LabError(f"--threads {threads}: threads per block must be 1..1024")
    repeats = repeats if repeats is not None else (1 if simulator else 20)
    if repeats < 1:
        raise LabError("--repeats must be >= 1")
    if simulator and "numba" in who and not yes:  # before any input is made: hours do not start unless asked
        names, calls = list(variants or spec.variants), 1 + repeats  # one call outside the profile, then repeats
        refuse_long(simulator_seconds(spec, shape, names, threads, calls),
                    f"lab profile {kernel} {'x'.join(map(str, shape))}",
                    quick_options(spec, shape, names, threads, calls) + " for a run of seconds"
                    + (" (and --repeats 1)" if repeats > 1 else ""), yes)
    rng = np.random.default_rng(seed)
    inputs = spec.make_inputs(shape, np.dtype(dtype), rng)

    prepared, skipped = [], {}
    if "numba" in who:
        for name in variants or spec.variants:
            v = spec.variants[name]
            if v.accepts(threads):
                skipped[name] = v.accepts(threads)
            else:
                prepared.append((f"numba {name}", C.prepare_numba(spec, shape, v, v.launch(shape, threads), inputs, simulator)))
    if "torch" in who:
        if simulator:
            skipped["torch"] = "needs a CUDA GPU; the simulator backend is active"
        else:
            for label in C.library_labels("torch", kernel):
                prepared.append((label, C.prepare_library("torch", spec, shape, label, inputs)))
    if not prepared:
        raise LabError("nothing to profile: " + "; ".join(f"{k} {v}" for k, v in skipped.items()))
    for _, p in prepared:  # compile and load outside the profile
        p.call()
        p.sync()

    gpu = not simulator
    activities = [Activity.CPU] + ([Activity.CUDA] if gpu else [])
    with warnings.catch_warnings():
        # torch warns that one profiling cycle keeps only its own events: that is what we want.
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        prof = _record(torch, torch_profile, record_function, activities, prepared, repeats, gpu)
        sort_by = "device_time_total" if gpu else "cpu_time_total"
        averages = prof.key_averages()
        table = averages.table(sort_by=sort_by, row_limit=row_limit)
        rows = _rows(averages, sort_by, row_limit, gpu)
    for _, p in prepared:
        p.release()
    notes = [] if gpu else ["CUDA simulator: CPU activity only (torch.profiler records no GPU here); a Numba "
                            "rung's CPU time is Python simulating every thread, not GPU time"]
    if trace:
        _export_trace(prof, trace)
        notes.append(f"trace written to {trace}: open it in https://ui.perfetto.dev or chrome://tracing")
    return {"kernel": kernel, "backend": backend, "size": list(shape), "threads": threads, "repeats": repeats,
            "activities": ["CPU"] + (["CUDA"] if gpu else []), "sort_by": sort_by,
            "contenders": [n for n, _ in prepared], "skipped": skipped, "table": table, "rows": rows,
            "trace": trace, "notes": notes}


def _rows(averages, sort_by: str, row_limit: int, gpu: bool) -> list[dict]:
    """The key_averages rows as data, sorted like the table: name, calls and the times in µs
    (self and total, CPU; and the device's on a GPU)."""
    keys = ["self_cpu_time_total", "cpu_time_total"] + (["self_device_time_total", "device_time_total"] if gpu else [])
    out = []
    for e in sorted(averages, key=lambda e: getattr(e, sort_by, 0) or 0, reverse=True)[:row_limit]:
        row = {"name": e.key, "calls": int(e.count)}
        row.update({k.removesuffix("_total").replace("time", "us"): float(getattr(e, k, 0) or 0) for k in keys})
        out.append(row)
    return out


def _export_trace(prof, trace: str) -> None:
    """The Chrome/Perfetto trace, written atomically; LabError when torch wrote nothing (or failed):
    the caller then never says it was written."""
    with atomic_path(trace, "trace") as tmp:
        try:
            prof.export_chrome_trace(tmp)
        except Exception as e:  # torch's own failure (its exporter raises RuntimeError and others)
            raise LabError(f"cannot write trace {trace}: torch.profiler's export failed: "
                           f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}") from None


KINETO_CHATTER = re.compile(r"^(USDT|INFO):\S* \S+ \d+:\d+ \S+\.cpp:\d+\] ")


@contextlib.contextmanager
def _without_kineto_chatter():
    """torch's profiler library (kineto) writes "USDT:... profiler_start" lines straight to file
    descriptor 2 in some builds (the CPU wheels): hold fd 2 in a temporary file while the profile
    runs, then pass on every line but those."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (an embedding host): leave it alone
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().decode(errors="replace").splitlines(keepends=True)
                    if not KINETO_CHATTER.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def _record(torch, torch_profile, record_function, activities, prepared, repeats, gpu):
    """One profile: each contender's ``repeats`` calls in a record_function and an NVTX range of its name."""
    with _without_kineto_chatter(), torch_profile(activities=activities) as prof:
        for name, p in prepared:
            if gpu:
                torch.cuda.nvtx.range_push(name)
            with record_function(name):
                for _ in range(repeats):
                    p.call()
                p.sync()
            if gpu:
                torch.cuda.nvtx.range_pop()
    return prof
