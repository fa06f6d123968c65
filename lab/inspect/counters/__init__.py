"""``lab counters KERNEL``: what the hardware did during one call of each contender, and a verdict.

Every kernel module explains why one rung beats the last (fewer bytes, coalesced loads, no bank
conflicts, more occupancy); this module measures those claims. Data only: the CLI prints.

Engines (the document's ``tool``):

``ncu``
    NVIDIA Nsight Compute's command line (``ncu``, found on PATH, under /usr/local/cuda/bin or
    $CUDA_HOME/bin). It profiles a *separate* Python process (:func:`child_main`) that prepares
    every contender as ``lab run`` does, calls each once to compile and warm up, and then, for each
    contender in turn: flushes L2 (outside any profiled range), opens a profiler range
    (``cuProfilerStart``; ncu runs with ``--profile-from-start off``), launches a one-thread marker
    kernel whose grid size numbers the contender, makes exactly one call, and closes the range. So
    only the marker and the call's own kernels are profiled; the timer's kernels (the blocking
    kernel, the L2 flush) never run inside a range, and any kernel whose name is the timer's is
    dropped as well. A contender that launches several kernels (split-K, two-pass quantize,
    cuBLAS, torch) gets the sum over its kernels (averages weighted by each kernel's duration).
    ncu runs twice: first the DRAM bytes alone, with ``--cache-control none`` so the call's kernels
    share L2 as they do in ``lab run`` (one pass: no replay can warm L2 for itself), then everything
    else, the L2 hit rate included, with ncu's per-kernel replay and its default cache flush. The
    first run collects nothing else: with ``lts__t_sector_hit_rate.pct`` beside the DRAM bytes, what
    one kernel left in L2 was lost to the next (H100: quantize's l2_tail_first then read
    536.94 MB like block_partials; alone, 511.23 MB against 536.94 MB).
``simulator``
    Numba's CUDA simulator with :class:`lab.core.trace.SectorTracer`: sectors per request and
    bytes touched from the recorded addresses of every warp's loads and stores, at small sizes.
    DRAM, L2, occupancy and stalls are ``null`` there (nothing measures them).
``cupti``
    Where ncu is absent (or ``--tool cupti``): CUPTI through NVIDIA's ``cupti-python`` package
    (``pip install 'numba-gpu-lab[counters]'``; it brings libcupti and needs no toolkit). cupti-python
    13.4 binds CUPTI's *PM sampling* and *Profiler Host* APIs, not the range profiler (its
    ``cupti.cupti`` has no ``range_profiler_*`` functions), so this engine samples
    the GPU's performance monitors (``cupti.pm_sampling.Collector``, GPU-time trigger) over one
    contender's call at a time, in a separate Python process prepared like ncu's (the call after an
    unsampled L2 flush, then a pause of a few sampling intervals so the last sample completes).
    Counters are summed and ratios weighted over the samples (:func:`reduce_samples`). They are the
    GPU's, not one kernel's: nothing else may run on the GPU meanwhile. On the H100 (GH100) its PM
    sampling gives DRAM bytes read and written, sectors per global load request (a ratio; no
    sector or request counter), the L2 hit rate, shared-memory bank conflicts and active warps
    (:data:`CUPTI_GROUPS`); load efficiency, throughput and stalls are ``null``. The libcupti must
    be the one cupti-python was built for (:func:`cupti_preload`: an older one, such as the 13.0
    that torch 2.11 brings, fails every call with ``ERROR_INVALID_PARAMETER``).

The package: :mod:`~lab.inspect.counters.metrics` (the metric table: each row field, its ncu and CUPTI
metrics, unit and derivation; its optional metrics, the tensor pipe, shared wavefronts and the SOL
breakdown, collected only for a kernel that declares them in ``KernelSpec.counter_metrics``),
:mod:`~lab.inspect.counters.row` (the one row type, the DRAM ratio, the verdict),
:mod:`~lab.inspect.counters.bound` (what limits a call: tensor-, memory-, issue-, compute- or latency-bound,
by Nsight Compute's Speed Of Light thresholds), :mod:`~lab.inspect.counters.ncu`, :mod:`~lab.inspect.counters.cupti`,
:mod:`~lab.inspect.counters.child` (the profiled process) and :mod:`~lab.inspect.counters.simulator`;
this module is the command (:func:`counters`, :func:`for_run`, :func:`find_engine`); callers import
every other name from the module that defines it.
"""
from __future__ import annotations

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.inspect.counters.bound import bound as limit_of  # not `bound`: that name is the module
from lab.inspect.counters.cupti import profile_cupti
from lab.inspect.counters.engine import CUPTI_FIX, NCU_FIX, NO_ENGINE, TOOLS, cupti_available, find_ncu
from lab.inspect.counters.metrics import RUN_PHASES, declared, phases_for
from lab.inspect.counters.ncu import profile_ncu
from lab.inspect.counters.row import UNSET, dram_ratio, verdict
from lab.inspect.counters.simulator import simulate
from lab.core import catalog, simulator as S


def find_engine(tool: str = "auto") -> tuple[str, str | None]:
    """(engine, ncu path or None): ``tool`` "ncu", "cupti" or "auto" (ncu where found, else CUPTI).
    LabError (one line: the reason and the fix) when the engine asked for, or any for "auto", is missing."""
    if tool not in TOOLS:
        raise LabError(f"--tool {tool}: choose from {', '.join(TOOLS)}")
    ncu = find_ncu() if tool in ("auto", "ncu") else None
    if ncu:
        return "ncu", ncu
    if tool == "ncu":
        raise LabError(f"lab counters needs Nsight Compute (ncu), which was not found: {NCU_FIX}")
    if cupti_available():
        return "cupti", None
    if tool == "cupti":
        raise LabError(f"--tool cupti needs the cupti-python package, which is not installed: {CUPTI_FIX}")
    raise LabError(NO_ENGINE)


# --- the command ---------------------------------------------------------------------------------------
def _resolve(kernel, variants, size, threads, dtype, simulator):
    spec = catalog.load(kernel)
    for v in variants or []:
        if v not in spec.variants:
            raise LabError(f"unknown variant of {spec.name} {v!r}; choose from: {', '.join(spec.variants)}")
    if dtype not in spec.dtypes:
        raise LabError(f"--dtype {dtype}: {spec.name} supports {', '.join(spec.dtypes)}")
    shape = catalog.problem_shape(spec, size, lambda: (spec.counter_size or spec.default_size(True)
                                                       if simulator else spec.default_size(False)))
    threads = threads if threads is not None else (32 if simulator else 256)
    if not 1 <= threads <= 1024:
        raise LabError(f"--threads {threads}: threads per block must be 1..1024")
    return spec, tuple(shape), threads, list(variants or spec.variants)


def counters(kernel: str, backend: str, variants: list[str] | None = None, size: str | None = None,
             threads: int | None = None, dtype: str = "float32", contenders: list[str] | None = None,
             seed: int = 0, progress=None, phases: tuple[str, ...] = ("dram", "detail"), tool: str = "auto",
             lean: bool = False, yes: bool = False) -> dict:
    """The ``lab counters --json`` document (docs/schemas/counters.json); LabError on bad input or
    when no engine can run here (one line: the reason and the fix). ``phases`` (ncu only): "dram"
    (DRAM bytes) and/or "detail" (everything else, the L2 hit rate included); the other's values are null.
    ``tool`` (on a GPU): "auto" (ncu, else CUPTI), "ncu" or "cupti" (:func:`find_engine`). ``lean``
    (ncu): only what ``lab run --counters`` shows (:data:`RUN_PHASES`)."""
    simulator = backend == "simulator"
    if not simulator:
        engine, ncu = find_engine(tool)  # fail before any work
    spec, shape, threads, names = _resolve(kernel, variants, size, threads, dtype, simulator)
    who = contenders or ["numba", "cupy", "torch"]
    for c in who:
        if c not in ("numba", "numpy", "cupy", "torch"):
            raise LabError(f"unknown contender {c!r}; choose from: numba, numpy, cupy, torch")
    doc = {"schema_version": SCHEMA_VERSION, "kernel": spec.name, "size": list(shape), "dtype": dtype,
           "threads_per_block": threads, "seed": seed}
    optional = [] if lean else [m.name for m in declared(spec.counter_metrics) if m.optional]
    if simulator:
        if "numba" not in who:
            raise LabError("in the simulator only the Numba rungs can be counted: add numba to --contenders, or "
                           "run on a GPU for the CuPy and torch ops")
        if not yes:  # before any input is made: hours do not start unless asked
            calls = S.TRACE_FACTOR  # one traced call costs about this many plain ones
            S.refuse_long(S.simulator_seconds(spec, shape, names, threads, calls),
                          f"lab counters {spec.name} {'x'.join(map(str, shape))} (every load and store traced)",
                          S.quick_options(spec, shape, names, threads, calls) + " for a run of seconds", yes)
        doc.update(simulate(spec, shape, threads, dtype, names, seed, progress))
        libs = [c for c in who if c in ("cupy", "torch")]
        if libs and contenders:
            doc["notes"].append(f"{', '.join(libs)}: not counted in the simulator (they run on a GPU only)")
    elif engine == "cupti":
        doc.update(profile_cupti(spec, shape, threads, dtype, names, who, seed, progress, optional))
    else:
        doc.update(profile_ncu(ncu, spec, shape, threads, dtype, names, who, seed, progress,
                            [p for p in (RUN_PHASES if lean else phases_for(spec.counter_metrics)) if p[0] in phases],
                            optional))
    doc["counter_metrics"] = list(spec.counter_metrics)
    doc["rows"] = [_judged(r, optional, doc["tool"]).as_dict() for r in doc["rows"]]
    if optional and doc["tool"] != "ncu":
        doc["notes"].append(f"not measured ({_NOT_MEASURED[doc['tool']]}): "
                            f"{', '.join(n for n in optional if n not in _MEASURED[doc['tool']])}")
    return doc


# what each engine measures of the optional metrics, and why not the rest
_MEASURED = {"simulator": (), "cupti": ("tensor_pipe_pct",), "ncu": ()}
_NOT_MEASURED = {"simulator": "simulator: it has no tensor pipe and no throughput counters",
                 "cupti": "CUPTI PM sampling has no SOL throughputs, stalls or shared wavefronts: ncu measures them"}


def _judged(row, optional, tool):
    """``row`` with its declared optional fields (null where not measured), its verdict and what bounds it."""
    if row.status != "ok":
        return row.with_(verdict=row.reason)
    row = row.with_(**{n: None for n in optional if row.get(n, UNSET) is UNSET})
    limit = limit_of(row, row.dram_bytes_ratio or None)
    text = verdict(row)
    if limit is None and "bound" in optional:
        what = "tensor pipe and bound" if "tensor_pipe_pct" in optional and row.get("tensor_pipe_pct") is None else "bound"
        text = ("" if text == "no counters" else text + "; ") + f"{what}: not measured ({tool})"
    fields = {"verdict": text}
    if limit is not None or "bound" in optional:
        fields["bound"] = None if limit is None else limit.kind
    return row.with_(**fields)


# --- lab run --counters -------------------------------------------------------------------------------------------
def for_run(report, tool: str = "auto") -> dict:
    """``lab run --counters`` on a GPU (the runner's ``Options.counters_engine``): the rows of
    ``report`` (a lab.core.runner.Report) that passed, profiled once each in a separate process at
    the run's size, dtype, threads and seed. Returns {"tool", "engine", "notes", "rows":
    {(contender, variant): {"dram_ratio", "sectors_per_request"}}}; LabError as :func:`counters`."""
    ok = [r for r in report.rows if r.status == "ok"]
    variants = [r.variant for r in ok if r.contender == "numba"]
    libs = sorted({r.contender for r in ok if r.contender in ("cupy", "torch")})
    who = (["numba"] if variants else []) + libs
    if not who:
        return {"tool": None, "engine": None, "rows": {}, "notes": ["no GPU row passed: nothing to count"]}
    doc = counters(report.kernel, report.backend, variants or None, "x".join(map(str, report.size)), report.threads,
                   report.dtype, who, report.seed, tool=tool, lean=True)
    rows = {}
    for r in doc["rows"]:
        if r["status"] != "ok":
            continue
        ratio = dram_ratio(r.get("dram_read_bytes"), r.get("dram_write_bytes"), r.get("min_bytes"))
        rows[(r["contender"], r["variant"])] = {"dram_ratio": ratio, "sectors_per_request": r.get("sectors_per_request")}
    return {"tool": doc["tool"], "engine": doc["engine"], "rows": rows, "notes": doc.get("notes", [])}
