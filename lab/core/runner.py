"""Run one kernel problem across contenders: check each against a float64 reference, then time it.

Data flows one way: KernelSpec (kernels/) -> run() here -> Report of Rows (with Measurements from
lab.core.timing) -> lab.cli.views.report prints it. The CLI and the tests both call :func:`run`.

For each contender (each Numba variant, NumPy, CuPy, torch): copy the inputs, poison the outputs,
make the first call (timed alone: compile + load + run), check every output element against the
float64 reference, and only if that passed, warm up and time ``repeats`` calls. A FAIL row is shown
with its error and is never timed. In the simulator nothing is timed unless ``repeats`` is given:
each row is checked once and shows its first call's wall time (a simulated call's wall clock is no
GPU time, and repeating it only makes the first ten minutes longer).
"""
from __future__ import annotations

import contextlib
import gc
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import kernels
from lab.core import compilers, resources
from lab.core import contenders as C
from lab.core.check import check_prepared
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.timing import SIMULATOR_CLOCK, Measurement, StopRule, Timer


HOST_BUDGET_MS = 3000.0  # time budget for timing one CPU contender
FLOAT32_INSIDE = ("float32 inside: the op computes in float32, so it is checked against the reference of the "
                  "inputs rounded to float32, at float32's tolerance")
SLOW_SIMULATION_S = 30.0  # a simulator run estimated longer than this is announced with a smaller --size
REFUSE_SIMULATION_S = 600.0  # ... and one estimated longer than this does not start without Options.yes
# The simulator runs each CUDA thread of a block as a Python thread, and every barrier and warp
# shuffle waits for all of them while the block's manager thread polls them. A thread woken at a
# barrier gets the GIL only when the running thread blocks or its switch interval (5 ms by default)
# runs out, so each simulated barrier cost up to 5 ms. At 0.2 ms a simulated call of 32-thread blocks
# ran 2-7x faster on a 2-core CPU machine (matvec 67x7 warp_per_row 6.8 -> 1.3 s, softmax fused
# 0.7 -> 0.1 s, quantize block_partials 1.9 -> 0.3 s: best of 3, 2026-11-22); 1024-thread blocks,
# dominated by starting the threads, gain less. Switching that often exposed a race in the
# simulator's shared arrays (_serialize_shared_arrays), fixed here.
SIMULATOR_SWITCH_INTERVAL_S = 2e-4


@dataclass
class Options:
    """What the user asked for; ``None`` means the kernel's or the backend's default."""

    kernel: str
    threads: int | None = None  # default: 256 on a GPU, 32 in the simulator (one simulated warp)
    size: str | None = None
    dtype: str = "float32"
    variants: list[str] | None = None
    contenders: list[str] | None = None
    repeats: int | None = None  # None: the stop rule (lab.core.timing.StopRule) on a GPU, none timed in the simulator
    warmup: int | None = None
    seed: int | None = None
    library_ops: list[str] | None = None  # only these CuPy/torch op labels (default: all of them)
    yes: bool = False  # start a simulator run estimated above REFUSE_SIMULATION_S anyway (lab run --yes)
    # lab run --counters: each row's DRAM bytes / the minimum traffic and sectors per load request. In
    # the simulator the Numba rows' checked calls are traced (lab.core.trace.SectorTracer); on a GPU
    # ``counters_engine(report)`` (lab.inspect.counters.for_run: ncu or CUPTI, a separate process) runs
    # once every row is done and returns {"tool", "engine", "notes", "rows": {(contender, variant):
    # {"dram_ratio", "sectors_per_request"}}}; a LabError it raises becomes a warning, not a lost run.
    counters: bool = False
    counters_engine: Callable | None = None


@dataclass
class Row:
    """One contender (and variant) of a run."""

    contender: str
    variant: str
    status: str  # "ok", "FAIL" or "skipped"
    reason: str = ""
    measurement: Measurement | None = None
    first_call_ms: float | None = None
    max_abs_err: float | None = None
    rel_err: float | None = None
    launch: dict | None = None
    gbps: float | None = None
    gflops: float | None = None
    pct_copy: float | None = None
    pct_peak_flops: float | None = None
    speedup_vs_numpy: float | None = None
    compiler: str | None = None  # numba rows: numba-cuda or numba-cuda-mlir
    registers: int | None = None  # numba rows: registers a thread (the most among the rung's kernels)
    spill_bytes: int | None = None  # numba rows: ptxas spill stores + loads a thread (summed)
    local_bytes: int | None = None  # numba rows: local memory a thread (spills and local arrays)
    # --counters (None where not measured): DRAM bytes read + written / the kernel's minimum traffic (in
    # the simulator: distinct 32-byte sectors touched x 32 / the minimum), and 32-byte sectors a warp's
    # global load request fetched (l1tex__t_sectors / l1tex__t_requests, _op_ld)
    dram_ratio: float | None = None
    sectors_per_request: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class Report:
    kernel: str
    summary: str
    backend: str
    device: dict
    size: tuple
    dtype: str
    seed: int
    repeats: int | None  # None: each row's count came from the stop rule (``stop_rule``); 0: none timed
    warmup: int
    bytes_moved: int
    flops: int
    threads: int = 0  # threads per block asked for
    launches: dict = field(default_factory=dict)  # variant -> Launch.as_dict()
    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # from spec.summarize
    copy_bandwidth: dict | None = None
    numpy_threads: str = ""
    stop_rule: str = ""  # how many calls each row timed, in words
    clocks: dict = field(default_factory=dict)  # {"before": lab.core.clocks.read(), "after": ...} on a GPU
    estimate_s: float | None = None  # simulator only: rough wall time of the whole run, before it starts
    quick_options: str | None = None  # simulator only: e.g. "--size 7x11", a run of seconds, when estimate_s is long
    compiler: str = ""  # the compiler of the Numba rows
    counters: dict | None = None  # --counters: {"tool": "ncu"|"cupti"|"simulator", "engine", "notes"}

    def to_dict(self) -> dict:
        """The ``lab run --json`` contract (docs/schemas/run.json): ``schema_version``, kernel, backend,
        device, size, dtype, launch, results (+ extras)."""
        first_launch = next(iter(self.launches.values()), None)
        m = lambda r, attr: getattr(r.measurement, attr) if r.measurement else None  # noqa: E731
        return {
            "schema_version": SCHEMA_VERSION,
            "kernel": self.kernel,
            "backend": self.backend,
            "device": self.device,
            "size": list(self.size),
            "dtype": self.dtype,
            "threads_per_block": self.threads,
            "seed": self.seed,
            "repeats": self.repeats,
            "warmup": self.warmup,
            "bytes_moved": self.bytes_moved,
            "flops": self.flops,
            "launch": first_launch,
            "launches": self.launches,
            "copy_bandwidth": self.copy_bandwidth,
            "numpy_threads": self.numpy_threads,
            "compiler": self.compiler,
            "warnings": self.warnings,
            "notes": self.notes,
            "stop_rule": self.stop_rule,
            "clocks": self.clocks,
            "counters": self.counters,
            "results": [{
                "contender": r.contender, "variant": r.variant, "status": r.status, "reason": r.reason,
                "ok": r.ok, "median_ms": m(r, "median_ms"), "iqr_ms": m(r, "iqr_ms"),
                "first_call_ms": r.first_call_ms, "timing": r.measurement.timing if r.measurement else None,
                "timed_calls": len(r.measurement.samples_ms) if r.measurement else 0,
                "noise": m(r, "noise"), "noisy": m(r, "noisy"), "host_gaps": m(r, "host_gaps"),
                "gbps": r.gbps, "gflops": r.gflops, "pct_copy_bandwidth": r.pct_copy,
                "pct_peak_fp32": r.pct_peak_flops, "speedup_vs_numpy": r.speedup_vs_numpy,
                "max_abs_err": r.max_abs_err, "rel_err": r.rel_err, "launch": r.launch,
                "compiler": r.compiler, "registers": r.registers, "spill_bytes": r.spill_bytes,
                "local_bytes": r.local_bytes, "dram_ratio": r.dram_ratio,
                "sectors_per_request": r.sectors_per_request,
            } for r in self.rows],
        }


# Progress events run() sends to its optional ``progress(event, report, **info)`` callback (the
# engine never prints; lab.cli.views.report renders them):
#   "start"  report header known (seed, device, estimate), no rows yet
#   "stage"  info: contender, variant, stage ("compile + check", "first call + check" or "time"),
#            calls (timed calls, with "time")
#   "row"    info: row, a finished Row (ok, FAIL or skipped), already appended to report.rows
#   "done"   every row finished and derived numbers (GB/s ...) filled in
Events = Callable[..., None]  # run()'s progress(event, report, **info): the live table of one run
Steps = Callable[[int, int, str], None]  # progress(done, total, label): many runs (bench, sweep, roofline)


def quiet(done: int, total: int, label: str) -> None:
    """The default :data:`Steps` callback: says nothing."""


def _threads_check(threads: int, device: dict) -> list[str]:
    limit = device.get("max_threads_per_block") or 1024
    if threads <= 0 or threads > limit:
        raise LabError(f"--threads {threads}: threads per block must be 1..{limit} on {device['name']}")
    warp = device.get("warp_size") or 32
    warnings = []
    if threads % warp:
        wasted = warp - threads % warp
        warnings.append(f"--threads {threads} is not a multiple of the warp size ({warp}): the last warp "
                        f"of each block has {wasted} idle lanes")
    return warnings


def _memory_check(spec, size, dtype, device: dict, simulator: bool) -> None:
    """LabError when one contender's inputs + outputs do not fit the device, or the host's copies
    (native, float64 reference inputs and outputs: ~3x the footprint) do not fit host memory."""
    import os

    need = spec.footprint_bytes(size, dtype)
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    checks = [(3 * need, host, "host memory")]
    if not simulator:
        checks.insert(0, (need, device.get("memory_free_bytes") or 0, f"free device memory on {device['name']}"))
    for bytes_needed, have, where in checks:
        if bytes_needed > 0.9 * have:
            raise LabError(f"size {'x'.join(map(str, size))} needs {bytes_needed / 2**30:.2f} GiB; "
                           f"{where} is {have / 2**30:.2f} GiB")


def _pick(requested, available, what):
    if requested is None:
        return list(available)
    for name in requested:
        if name not in available:
            raise LabError(f"unknown {what} {name!r}; choose from: {', '.join(available)}")
    return list(requested)


def check_contenders(names: list[str] | None) -> list[str]:
    """The contenders asked for (None: all), each one known; LabError naming the choices otherwise."""
    return _pick(names, C.CONTENDERS, "contender")


def _serialize_shared_arrays() -> None:
    """Make the simulator's ``cuda.shared.array`` atomic (once a process).

    numba-cuda's simulator (0.30.4, ``simulator/kernelapi.py``, ``FakeCUDAShared.array``) finds a
    block's shared array by the calling file and line: a dict get, and on a miss ``np.empty`` and a
    store, with no lock. Two threads of a block that miss together get two different arrays, and
    what one of them writes the others never read: a wrong result now and then (the test suite failed
    about one run in two, in quantize, matmul shared and tile64, once threads switched every 0.2 ms;
    none in 12 runs with this lock). The same lookup, under a lock; the caller's file and line are
    read from its frame (the original's traceback.extract_stack, without reading source lines).
    """
    try:
        from numba.core import types
        from numba.cuda.simulator import kernelapi
        from numba.np import numpy_support
    except ImportError:  # not the simulator (or another compiler): nothing to fix
        return
    shared = getattr(kernelapi, "FakeCUDAShared", None)
    original = getattr(shared, "array", None)
    if original is None or getattr(original, "lab_serialized", False):
        return
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:  # an error, or dynamic shared memory: no lookup
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    array.lab_serialized = True
    shared.array = array


def enter_simulator_threads() -> float:
    """Simulate with a switch interval of at most SIMULATOR_SWITCH_INTERVAL_S (a simulated barrier
    then costs ~0.2 ms, not up to 5 ms) and atomic shared-array allocation; returns the old interval."""
    _serialize_shared_arrays()
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SIMULATOR_SWITCH_INTERVAL_S))
    return old


@contextlib.contextmanager
def simulator_threads():
    """Within: :func:`enter_simulator_threads`; the switch interval restored after."""
    old = enter_simulator_threads()
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run(opts: Options, backend: str, progress: Events | None = None) -> Report:
    """Run, check and time ``opts.kernel`` on the selected backend; raises LabError on bad input.

    progress: optional ``progress(event, report, **info)`` callback (events listed above).
    """
    with simulator_threads() if backend == "simulator" else contextlib.nullcontext():
        return _run(opts, backend, progress)


def _run(opts: Options, backend: str, progress: Events | None) -> Report:
    emit = progress or (lambda event, report, **info: None)
    from lab.core.device import describe, measure_copy_bandwidth

    simulator = backend == "simulator"
    try:
        spec = kernels.load(opts.kernel)
    except KeyError as e:
        raise LabError(e.args[0]) from None
    if opts.dtype not in spec.dtypes:
        raise LabError(f"--dtype {opts.dtype}: {spec.name} supports {', '.join(spec.dtypes)}")
    dtype = np.dtype(opts.dtype)
    try:
        size = spec.parse_size(opts.size) if opts.size else spec.default_size(simulator)
    except ValueError as e:
        raise LabError(str(e)) from None
    device = describe(simulator)
    variant_names = _pick(opts.variants, spec.variants, f"variant of {spec.name}")
    contender_names = _pick(opts.contenders, C.CONTENDERS, "contender")
    threads = opts.threads if opts.threads is not None else (32 if simulator else 256)
    warnings = _threads_check(threads, device)
    _memory_check(spec, size, dtype, device, simulator)
    if (opts.repeats is not None and opts.repeats < 1) or (opts.warmup is not None and opts.warmup < 0):
        raise LabError("--repeats must be >= 1 and --warmup >= 0")
    # the simulator checks each row once and times nothing unless --repeats asks (repeats 0)
    repeats = opts.repeats if opts.repeats is not None else (0 if simulator else None)
    warmup = opts.warmup if opts.warmup is not None else (0 if simulator else 5)
    if opts.seed is not None and opts.seed < 0:
        raise LabError(f"--seed {opts.seed}: the seed must be a non-negative integer")
    seed = opts.seed if opts.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    estimate_s = quick = None
    if simulator and "numba" in contender_names:  # before any input is made: hours do not start unless asked
        calls = simulator_calls(repeats, warmup, _check_calls(spec, size, dtype))
        estimate_s = simulator_seconds(spec, size, variant_names, threads, calls)
        if estimate_s > SLOW_SIMULATION_S:
            quick = quick_options(spec, size, variant_names, threads, calls)
        if estimate_s > REFUSE_SIMULATION_S and not opts.yes:
            raise LabError(f"the simulator would take roughly {_minutes(estimate_s)} for {spec.name} "
                           f"{'x'.join(map(str, size))} (estimated); try {quick} for a run of seconds, "
                           f"or --yes to run it anyway")

    rng = np.random.default_rng(seed)
    inputs = spec.make_inputs(size, dtype, rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = spec.tolerance(inputs, refs, dtype)
    out_specs = spec.out_specs(size, dtype)

    report = Report(spec.name, spec.summary, backend, device, size, str(dtype), seed, repeats, warmup,
                    spec.bytes_moved(size, dtype), spec.flops(size), threads=threads, warnings=warnings)
    rule = StopRule(repeats=repeats)
    report.stop_rule = ("none (each row checked once; --repeats N times N calls)" if repeats == 0 else
                        f"{repeats} timed calls a row after {warmup} warm-up" if repeats is not None else
                        f"each row: at least {rule.min_samples} calls and {rule.min_time_s:g} s of measured time, "
                        f"more while the noise (IQR/median) is above {rule.max_noise:.0%}, at most "
                        f"{rule.time_limit_s:g} s; {warmup} warm-up")
    if not simulator:
        from lab.core import clocks

        report.copy_bandwidth = measure_copy_bandwidth()
        report.clocks["before"] = clocks.read()  # after the copy test: the GPU is awake, at its clock
    report.numpy_threads = _numpy_threads()
    report.compiler = compilers.current()
    cc = None if simulator else tuple(int(p) for p in str(device["compute_capability"]).split("."))
    if simulator:
        report.estimate_s, report.quick_options = estimate_s, quick
    emit("start", report)

    float32_check: list = []  # (refs, tols) of the inputs rounded to float32, made on first use

    def float32_reference():
        """The reference and tolerances a float32-inside contender is held to (lab.core.registry)."""
        if not float32_check:
            rounded = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in inputs]
            refs32 = spec.reference(*[a.astype(np.float64) for a in rounded])
            float32_check.append((refs32, spec.tolerance(rounded, refs32, np.dtype(np.float32))))
        return float32_check[0]

    def measure(row: Row, prepare, against=None) -> Row:
        """Fill ``row`` from the contender that ``prepare()`` sets up: check (against ``against``,
        (refs, tols), instead of the run's float64 reference when given), then time."""
        refs_, tols_ = against or (refs, tols)
        launches: list = []  # numba rows on a GPU: the kernels the checked call launched
        record = row.contender == "numba" and not simulator
        tracer = None
        if opts.counters and simulator and row.contender == "numba":  # --counters: the checked call's addresses
            from lab.core.trace import SectorTracer

            tracer = SectorTracer()
        try:
            prepared = prepare()
        except Exception as e:
            row.status, row.reason = "FAIL", f"setup raised {type(e).__name__}: {_first_line(e)}"
            return row
        try:
            emit("stage", report, contender=row.contender, variant=row.variant,
                 stage="compile + check" if row.contender == "numba" else "first call + check")
            timer = Timer(prepared.call, prepared.timer_mode, prepared.sync)
            first = {}

            def first_call():  # the poisoned first call, timed alone (compile + load + run)
                with resources.launched(launches) if record else contextlib.nullcontext(), \
                        tracer if tracer is not None else contextlib.nullcontext():
                    first["ms"], outs = timer.first_call()
                return outs

            checked = check_prepared(prepared, refs_, tols_, out_specs, first_call=first_call)
            if tracer is not None:
                _traced(row, tracer.summary(), report.bytes_moved)
            row.first_call_ms = first.get("ms")
            if record:  # the compiler's report of the kernels this call launched
                res = compilers.resources(resources.compiled(launches), cc)
                row.registers, row.spill_bytes, row.local_bytes = (
                    res["registers"], res["spill_bytes"], res["local_bytes"])
            verdict, host_outs = checked.verdict, checked.outputs
            row.max_abs_err, row.rel_err = verdict.max_abs_err, verdict.rel_err
            if not verdict.ok:
                reference = ("the float64 reference" if against is None or against[0] is refs else
                             "the reference of the float32-rounded inputs")
                row.status, row.reason = "FAIL", f"output differs from {reference}: {verdict.reason}"
                return row
            if spec.summarize and row.contender == "numba" and not report.notes:
                report.notes = [f"{row.variant}: {line}" for line in spec.summarize(inputs, host_outs)]
            n, warm = repeats, warmup
            if n == 0:  # the simulator's default: checked once, its first call shown, nothing timed
                return row
            if prepared.timer_mode == "host":  # CPU contenders can take seconds a call: cap their time
                if repeats is not None:
                    n = min(repeats, max(3, int(HOST_BUDGET_MS / max(row.first_call_ms, 1e-3))))
                if n != repeats or row.first_call_ms > 10:
                    warm = min(warmup, 1)
            emit("stage", report, contender=row.contender, variant=row.variant, stage="time", calls=n)
            row.measurement = timer.measure(n, warm, rule)
        except Exception as e:  # a contender that raises is a FAIL row, not a crash of the whole run
            row.status, row.reason = "FAIL", f"raised {type(e).__name__}: {_first_line(e)}"
        finally:
            prepared.release()
        return row

    def add(row: Row) -> None:
        report.rows.append(row)
        emit("row", report, row=row)

    for name in contender_names:
        why = C.why_unavailable(name, simulator)
        if name == "numba":
            for v in variant_names:
                variant = spec.variants[v]
                row = Row("numba", v, "ok", compiler=report.compiler)
                # a skipped rung gets no launch math: warp rungs compute threads // 32 (0 below a warp)
                if variant.accepts(threads):
                    row.status, row.reason = "skipped", f"{v} {variant.accepts(threads)}"
                elif compilers.unsupported(spec.name, v):
                    row.status, row.reason = "skipped", compilers.unsupported(spec.name, v)
                elif getattr(variant, "unavailable", None) and variant.unavailable(dtype):  # e.g. a float32-only rung
                    row.status, row.reason = "skipped", variant.unavailable(dtype)
                else:
                    try:
                        cfg = variant.launch(size, threads)
                    except Exception as e:  # launch math that cannot serve this input is a row, not a crash
                        row.status, row.reason = "FAIL", f"launch math raised {type(e).__name__}: {_first_line(e)}"
                    else:
                        row.launch = report.launches[v] = cfg.as_dict()
                        # a rung with coarser arithmetic than dtype (tensor cores: TF32, bf16) has its own tolerance
                        own = getattr(variant, "tolerance", None)
                        measure(row, lambda: C.prepare_numba(spec, size, variant, cfg, inputs, simulator),
                                (refs, own(inputs, refs, dtype)) if own else None)
                        from lab.core.occupancy import launch_usage  # registers, shared/local bytes, occupancy

                        report.launches[v].update(launch_usage(spec, v, threads, simulator, size))
                add(row)
        elif name == "numpy":
            add(measure(Row("numpy", "reference (CPU)", "ok"), lambda: C.prepare_numpy(spec, inputs)))
        elif why is not None:
            add(Row(name, "-", "skipped", why))
        else:
            for label in C.library_labels(name, spec.name):
                if opts.library_ops is not None and label not in opts.library_ops:
                    continue
                prepare = lambda label=label: C.prepare_library(name, spec, size, label, inputs)  # noqa: E731
                if dtype != np.float32 and C.float32_inside(name, spec.name, label):
                    row = measure(Row(name, label, "ok"), prepare, float32_reference())
                    row.reason = FLOAT32_INSIDE + (f"; {row.reason}" if row.reason else "")
                    add(row)
                else:
                    add(measure(Row(name, label, "ok"), prepare))
        gc.collect()
    from kernels import tuning

    report.warnings += [p for p in tuning.problems() if "auto" in report.launches and p not in report.warnings]
    if not simulator:
        report.clocks["after"] = clocks.read()
        drop = clocks.dropped(report.clocks["before"], report.clocks["after"])
        if drop:
            report.warnings.append(drop)
    if opts.counters:
        _counters(report, opts, emit)
    _derive(report)
    emit("done", report)
    return report


def _traced(row: Row, summary: dict, min_bytes: int) -> None:
    """--counters in the simulator: a Numba row's numbers from the sector tracer's ``summary`` of its
    checked call (lab.core.trace.SectorTracer.summary)."""
    row.sectors_per_request = summary["load"].sectors_per_request
    row.dram_ratio = summary["bytes_touched"] / min_bytes if min_bytes and summary["bytes_touched"] else None


def _counters(report: Report, opts: Options, emit) -> None:
    """--counters once every row ran: the simulator's traced rows are done already; on a GPU the
    engine profiles the rows that passed in a process of its own (never while anything is timed)."""
    from lab.core.trace import SIM_LABEL

    if report.backend == "simulator":
        report.counters = {"tool": "simulator", "engine": SIM_LABEL, "notes": [
            f"DRAM×, sec/req {SIM_LABEL} of the Numba rows' checked calls (DRAM×: distinct 32-byte sectors "
            "touched, as with a perfect cache)"]}
        return
    if opts.counters_engine is None:
        report.counters = {"tool": None, "engine": None, "notes": ["no counters engine was given: not measured"]}
        return
    emit("stage", report, contender="--counters:", variant="every passed row",
         stage="profiled once more (ncu or CUPTI, a separate process)")
    try:
        got = opts.counters_engine(report)
    except Exception as e:  # noqa: BLE001 - a failed profile (LabError: its reason) must not lose the timed run
        why = str(e) if isinstance(e, LabError) else f"{type(e).__name__}: {_first_line(e)}"
        report.counters = {"tool": None, "engine": None, "notes": []}
        report.warnings.append(f"--counters: not measured: {why}")
        return
    by_row = got.get("rows", {})
    for r in report.rows:
        hit = by_row.get((r.contender, r.variant))
        if hit:
            r.dram_ratio, r.sectors_per_request = hit.get("dram_ratio"), hit.get("sectors_per_request")
    report.counters = {k: got.get(k) for k in ("tool", "engine")} | {"notes": list(got.get("notes") or [])}


def simulator_calls(repeats: int, warmup: int, check_calls: int = 1) -> int:
    """Calls a simulator run makes of each variant: the checked first call (``check_calls``: 2 for a
    kernel with integer outputs, checked under two poisons), then (only when some are timed) the
    warm-up and the timed calls."""
    return check_calls + (warmup + repeats if repeats else 0)


def _check_calls(spec, size, dtype) -> int:
    """1, or 2 when an output is an integer array (lab.core.check's two-poison check)."""
    return 2 if any(np.issubdtype(dt, np.integer) for _, dt in spec.out_specs(size, dtype)) else 1


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"


def simulator_seconds(spec, size, variant_names, threads: int, calls: int) -> float:
    """Rough wall seconds of a simulator run of ``variant_names`` (``calls`` calls each; lab.core.simcost)."""
    from lab.core import simcost

    launched = {}
    for v in variant_names:
        variant = spec.variants[v]
        if variant.accepts(threads):
            continue  # skipped rungs cost nothing
        try:
            launched[v] = variant.launch(size, threads).threads_total
        except Exception:
            continue
    return calls * simcost.call_seconds(spec.name, launched, spec.flops(size))


def quick_options(spec, size, variant_names, threads: int, calls: int, target_s: float = 15.0) -> str:
    """Options for a simulator run of about ``target_s``: a --size with every dimension shrunk by the
    same factor, and --threads 32 when blocks of ``threads`` simulated threads alone cost too much."""
    def shrink(t):
        smaller = size
        while simulator_seconds(spec, smaller, variant_names, t, calls) > target_s and max(smaller) > 1:
            smaller = tuple(max(1, int(d * 0.8)) for d in smaller)
        return smaller, simulator_seconds(spec, smaller, variant_names, t, calls) <= target_s

    smaller, quick = shrink(threads)
    if not quick and threads > 32:
        smaller, _ = shrink(32)
        return f"--threads 32 --size {'x'.join(map(str, smaller))}"
    return f"--size {'x'.join(map(str, smaller))}"


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def _numpy_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "thread count unknown (threadpoolctl not installed)"

    pools = threadpool_info()
    blas = sorted({f"{p['internal_api']} {p['num_threads']} threads" for p in pools if p.get("user_api") == "blas"})
    return ", ".join(blas) if blas else "1 thread (no BLAS thread pool)"


def _derive(report: Report) -> None:
    """GB/s, GFLOP/s, % of copy bandwidth and of peak FP32, and speedup over NumPy, per timed row."""
    numpy_ms = next((r.measurement.median_ms for r in report.rows if r.contender == "numpy" and r.measurement), None)
    copy = (report.copy_bandwidth or {}).get("gbps")
    peak = report.device.get("peak_fp32_gflops")
    for r in report.rows:
        if not r.measurement or r.measurement.method == SIMULATOR_CLOCK:
            continue  # a simulated kernel's wall clock says nothing about GPU speed
        s = r.measurement.median_ms * 1e-3
        r.gbps = report.bytes_moved / s / 1e9
        r.gflops = report.flops / s / 1e9
        if copy and r.contender != "numpy":
            r.pct_copy = 100 * r.gbps / copy
        if peak and r.contender != "numpy":
            r.pct_peak_flops = 100 * r.gflops / peak
        if numpy_ms:
            r.speedup_vs_numpy = numpy_ms / r.measurement.median_ms
