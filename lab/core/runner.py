"""Run one kernel problem across contenders: check each against a float64 reference, then time it.

Data flows one way: KernelSpec (kernels/) -> :func:`run` here (:func:`validate` the options into a
:class:`Plan`, :func:`plan` the rows' :class:`Step` s, :func:`execute` them) -> a Report of frozen
:class:`Row` s, each a :class:`Task` (kernel, contender, variant, size, dtype, launch), its
:class:`Check` and its :class:`lab.core.timing.Measurement`, with GB/s, GFLOP/s, % of copy bandwidth
and of peak FP32 and the speedup over NumPy as properties -> lab.cli.views.report prints it. The
library (:func:`lab.bench.commands.run`, i.e. ``lab.library.run``) and the tests call :func:`run`;
the simulator's set-up is :mod:`lab.core.simulator`'s.

For each contender (each Numba variant, NumPy, CuPy, torch): copy the inputs, poison the outputs,
make the first call (timed alone: compile + load + run), check every output element against the
float64 reference, and only if that passed, warm up and time ``repeats`` calls. A FAIL row is shown
with its error and is never timed. In the simulator nothing is timed unless ``repeats`` is given:
each row is checked once and shows its first call's wall time (a simulated call's wall clock is no
GPU time, and repeating it only makes the first ten minutes longer).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from collections.abc import Callable
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np

import kernels.gemm.precision  # (binds kernels too)
from kernels.cache import WouldCompile, would_have_compiled
from lab.core import collect, compile_child, compilers, registry, resources
from lab.core import simulator as simulation
from lab.core import contenders as C, device as core_device, options as D, clocks
from lab.core.check import check_prepared
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.simulator import (check_calls as _check_calls, minutes as _minutes,  # the simulator's estimates
                                quick_options, simulator_calls, simulator_seconds)
from lab.core.rows import Check, Rates, Row, Task
from lab.core.stopping import StopRule
from lab.core.timing import Timer
from kernels import tuning
from lab.core.device import copy_bandwidth
from lab.core.occupancy import launch_usage
from lab.core.session import start
from lab.core.trace import SIM_LABEL

HOST_BUDGET_MS = 3000.0  # time budget for timing one CPU contender
FLOAT32_INSIDE = ("float32 inside: the op computes in float32, so it is checked against the reference of the "
                  "inputs rounded to float32, at float32's tolerance")
TF32 = "TF32: inputs rounded to 10 mantissa bits on tensor cores, checked at that mantissa's tolerance"
OWN_TOLERANCE = "checked at the tolerance its declaration gives (coarser arithmetic than the dtype)"
SLOW_SIMULATION_S = 30.0  # a simulator run estimated longer than this is announced with a smaller --size
REFUSE_SIMULATION_S = 600.0  # ... and one estimated longer than this does not start without Options.yes
SIMULATOR_SWITCH_INTERVAL_S = simulation.SWITCH_INTERVAL_S  # the simulator's set-up: lab.core.simulator


@dataclass
class Options:
    """What the user asked for; ``None`` means the kernel's or the backend's default."""

    kernel: str
    threads: int | None = None  # default: 256 on a GPU, 32 in the simulator (one simulated warp)
    size: str | None = None
    dtype: str = "float32"
    variants: list[str] | None = None
    contenders: list[str] | None = None
    repeats: int | None = None  # None: the stop rule (lab.core.stopping.StopRule) on a GPU, none timed in the simulator
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
    arrays: str = "numba"  # who owns the Numba rows' device buffers: numba, torch or cupy (kernels.arrays)
    precision: str | None = None  # what float32 matmul's auto may run (kernels/gemm/precision.py); None: the process's


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
    arrays: str = "numba"  # who owned the Numba rows' device buffers (lab run --arrays)
    precision: str = ""  # lab run --precision in force (kernels/gemm/precision.py)
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
            "compiler": self.compiler, "arrays": self.arrays, "precision": self.precision,
            "warnings": self.warnings,
            "notes": self.notes,
            "stop_rule": self.stop_rule,
            "clocks": self.clocks,
            "counters": self.counters,
            "results": [{
                "contender": r.contender, "variant": r.variant, "status": r.status, "reason": r.reason,
                "ok": r.ok, "median_ms": m(r, "median_ms"), "iqr_ms": m(r, "iqr_ms"),
                "first_call_ms": r.first_call_ms, "timing": r.measurement.timing if r.measurement else None,
                "stop": r.measurement.stop if r.measurement else None,
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
    need = spec.footprint_bytes(size, dtype)
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    checks = [(3 * need, host, "host memory")]
    if not simulator:
        checks.insert(0, (need, device.get("memory_free_bytes") or 0, f"free device memory on {device['name']}"))
    for bytes_needed, have, where in checks:
        if bytes_needed > 0.9 * have:
            raise LabError(f"size {'x'.join(map(str, size))} needs {bytes_needed / 2**30:.2f} GiB; "
                           f"{where} is {have / 2**30:.2f} GiB")


def _pick(requested, available, what, default=None):
    if requested is None:
        return list(default or available)
    for name in requested:
        if name not in available:
            raise LabError(f"unknown {what} {name!r}; choose from: {', '.join(available)}")
    return list(requested)


def check_contenders(names: list[str] | None) -> list[str]:
    """The contenders asked for (None: C.DEFAULT_CONTENDERS), each known; LabError naming the choices otherwise."""
    return _pick(names, C.CONTENDERS, "contender", C.DEFAULT_CONTENDERS)


# The simulator's set-up lives in lab.core.simulator; these names stay for the callers that use them.
enter_simulator_threads = simulation.enter
simulator_threads = simulation.threads
_serialize_shared_arrays = simulation.serialize_shared_arrays


def run(opts: Options, backend: str, progress: Events | None = None) -> Report:
    """Run, check and time ``opts.kernel`` on the selected backend; raises LabError on bad input.

    Three steps: :func:`validate` (every option checked, nothing made yet), :func:`plan` (the rows' tasks, in
    order: launch math per rung, skips), :func:`execute` (inputs, reference, each task checked then timed),
    under ``opts.precision``; progress: optional ``progress(event, report, **info)`` (events listed above)."""
    with simulation.threads(backend == "simulator"), collect.frozen():  # collections scan only new objects
        plan_ = validate(opts, backend)
        with kernels.gemm.precision.using(opts.precision, plan_.dtype):  # what auto may choose: launch and run
            return execute(plan_, plan(plan_), progress)


@dataclass(frozen=True)
class Plan:
    """A run's validated parameters (:func:`validate`): the kernel's spec, the problem, the device,
    threads per block, the variants and contenders in order, timing counts, seed, warnings, and in
    the simulator the run's estimated wall time (and a quicker size when it is long)."""

    opts: Options
    backend: str
    spec: object  # kernels.spec.KernelSpec
    size: tuple
    dtype: np.dtype
    device: dict
    threads: int
    variants: tuple
    contenders: tuple
    repeats: int | None  # None: the stop rule (GPU); 0: none timed (the simulator's default)
    warmup: int
    seed: int
    warnings: tuple = ()
    estimate_s: float | None = None
    quick: str | None = None

    @property
    def simulator(self) -> bool:
        return self.backend == "simulator"


def validate(opts: Options, backend: str) -> Plan:
    """Every option of ``opts`` checked and defaulted, before any input is made or anything compiles:
    LabError (one line, the CLI's exit 2) for an unknown kernel, dtype, variant or contender, a size
    the kernel cannot parse or the device cannot hold, threads per block out of range, bad counts or
    seed, or a simulation estimated above REFUSE_SIMULATION_S without ``opts.yes``."""
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
    device = core_device.describe(simulator)
    variant_names = _pick(opts.variants, spec.variants, f"variant of {spec.name}")
    contender_names = _pick(opts.contenders, C.CONTENDERS, "contender", C.DEFAULT_CONTENDERS)
    threads = opts.threads if opts.threads is not None else (32 if simulator else 256)
    warnings = _threads_check(threads, device)
    _memory_check(spec, size, dtype, device, simulator)
    C.check_arrays(opts.arrays, simulator, numba="numba" in contender_names)
    for option, value in ((D.REPEATS, opts.repeats), (D.WARMUP, opts.warmup), (D.SEED, opts.seed)):
        option.check(value)
    # the simulator checks each row once and times nothing unless --repeats asks (repeats 0)
    repeats = opts.repeats if opts.repeats is not None else (0 if simulator else None)
    warmup = opts.warmup if opts.warmup is not None else (0 if simulator else 5)
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
    return Plan(opts, backend, spec, size, dtype, device, threads, tuple(variant_names), tuple(contender_names),
                repeats, warmup, seed, tuple(warnings), estimate_s, quick)


@dataclass(frozen=True)
class Step:
    """One planned row: its :class:`Task`; ``skip`` (a Check) when it does not run, else how to run
    it: the Numba rung's launch (``cfg``), or a library op's label and whether it computes in float32
    inside (then checked against the float32-rounded inputs' reference)."""

    task: Task
    skip: Check | None = None
    cfg: object = None  # kernels.spec.Launch of a Numba rung
    label: str | None = None
    float32_inside: bool = False
    tf32: bool = False  # the op multiplies in TF32 (registry option): checked at a 10-bit mantissa's tolerance
    tolerance: object = None  # (registry option) the op's own tolerance(inputs, refs, dtype), e.g. bf16 inputs
    why: str | None = None  # what its row says of that tolerance (registry option "why")


def plan(p: Plan) -> list[Step]:
    """The run's rows in order: each Numba rung (skipped where it cannot take ``threads`` or the
    compiler cannot build it; FAIL where its launch math raises), NumPy, then each CuPy and torch op
    (one skipped row for a library that cannot run here). Pure: nothing is made or compiled."""
    spec, simulator = p.spec, p.simulator
    base = dict(kernel=spec.name, size=tuple(p.size), dtype=str(p.dtype),
                bytes_moved=spec.bytes_moved(p.size, p.dtype), flops=spec.flops(p.size))
    steps = []
    for name in p.contenders:
        if name == "numba":
            for v in p.variants:
                variant = spec.variants[v]
                # a skipped rung gets no launch math: warp rungs compute threads // 32 (0 below a warp)
                why = variant.accepts(p.threads)
                if why:
                    steps.append(Step(Task(contender="numba", variant=v, **base), Check("skipped", f"{v} {why}")))
                    continue
                why = compilers.unsupported(spec.name, v)
                if why:
                    steps.append(Step(Task(contender="numba", variant=v, **base), Check("skipped", why)))
                    continue
                why = variant.unavailable(p.dtype) if getattr(variant, "unavailable", None) else None
                if why:  # e.g. a float32-only rung
                    steps.append(Step(Task(contender="numba", variant=v, **base), Check("skipped", why)))
                    continue
                try:
                    cfg = variant.launch(p.size, p.threads)
                except Exception as e:  # launch math that cannot serve this input is a row, not a crash
                    steps.append(Step(Task(contender="numba", variant=v, **base), Check(
                        "FAIL", f"launch math raised {type(e).__name__}: {_first_line(e)}")))
                    continue
                steps.append(Step(Task(contender="numba", variant=v, launch=cfg.as_dict(), **base), cfg=cfg))
        elif name == "numpy":
            steps.append(Step(Task(contender="numpy", variant="reference (CPU)", **base)))
        elif C.why_unavailable(name, simulator) is not None:
            steps.append(Step(Task(contender=name, variant="-", **base), Check("skipped", C.why_unavailable(name, simulator))))
        else:
            for label in C.library_labels(name, spec.name):
                if p.opts.library_ops is not None and label not in p.opts.library_ops:
                    continue
                steps.append(Step(Task(contender=name, variant=label, **base), label=label,
                                  float32_inside=p.dtype != np.float32 and C.float32_inside(name, spec.name, label),
                                  tf32=bool(registry.options(name, spec.name, label).get("tf32")),
                                  tolerance=registry.options(name, spec.name, label).get("tolerance"),
                                  why=registry.options(name, spec.name, label).get("why")))
    return steps


def execute(p: Plan, steps: list[Step], progress: Events | None = None) -> Report:
    """Make the inputs (seeded), the float64 reference and tolerances; run each step (check, then time
    what passed); the counters when asked; the rates each row is held to. Returns the Report."""
    emit = progress or (lambda event, report, **info: None)
    spec, size, dtype, simulator, opts = p.spec, p.size, p.dtype, p.simulator, p.opts
    rng = np.random.default_rng(p.seed)
    inputs = spec.make_inputs(size, dtype, rng)
    refs = spec.float64_reference(inputs)  # reference() of float64 copies, or the kernel's own reference64
    ref = _Reference(spec, inputs, refs, spec.tolerance(inputs, refs, dtype), spec.out_specs(size, dtype))

    report = Report(spec.name, spec.summary, p.backend, p.device, size, str(dtype), p.seed, p.repeats, p.warmup,
                    spec.bytes_moved(size, dtype), spec.flops(size), threads=p.threads, warnings=list(p.warnings), arrays=opts.arrays, precision=kernels.gemm.precision.get())
    rule = StopRule(repeats=p.repeats)
    report.stop_rule = ("none (each row checked once; --repeats N times N calls)" if p.repeats == 0 else
                        f"{p.repeats} timed calls a row after {p.warmup} warm-up" if p.repeats is not None else
                        rule.describe(p.warmup))
    if not simulator:
        report.copy_bandwidth = copy_bandwidth()  # remembered per device for a day: "measured_at" says when
        report.clocks["before"] = clocks.read()  # after the copy test: the GPU is awake, at its clock
    report.numpy_threads = _numpy_threads()
    report.compiler = compilers.current()
    # a rung's first compile runs in a child process, and a crash there falls back (lab.core.compile_child)
    guard = compile_child.Guard(
        compile_child.Problem(spec.name, tuple(size), str(dtype), p.threads, opts.arrays, p.seed, p.backend),
        report.compiler, [s.task.variant for s in steps if s.task.contender == "numba" and s.skip is None], simulator,
        opts.repeats, opts.warmup)
    report.warnings += compile_child.earlier_crashes()
    if simulator:
        report.estimate_s, report.quick_options = p.estimate_s, p.quick
    emit("start", report)

    def add(row_: Row) -> None:
        report.rows.append(row_)
        emit("row", report, row=row_)

    contender = None
    for step in steps:
        if contender is not None and step.task.contender != contender:
            collect.between()  # between contenders, as each one's copies go (lab.core.collect)
        contender = step.task.contender
        task = step.task
        if task.launch is not None:
            report.launches[task.variant] = task.launch
        if step.skip is not None:
            add(Row(task, step.skip, compiler=report.compiler if task.contender == "numba" else None))
        elif task.contender == "numba":
            variant = spec.variants[task.variant]
            # a rung with coarser arithmetic than dtype (TF32, bf16) has its own tolerance; auto that of its choice
            own = getattr(variant, "tolerance", None) or getattr(spec.variants.get(step.cfg.rung), "tolerance", None)
            prepare = lambda variant=variant, cfg=step.cfg: C.prepare_numba(spec, size, variant, cfg, inputs, simulator, opts.arrays)  # noqa: E731
            against = (ref.refs, own(inputs, ref.refs, dtype)) if own else None

            def attempt(probe, task=task, prepare=prepare, against=against):  # the checked (and timed) call
                launched: list = []  # on a GPU: the kernels the checked call launched (lab.core.resources)
                return _measure(p, report, rule, ref, task, emit, prepare, against, launches=launched, probe=probe), launched

            # compiled by a child process when it would compile here; another compiler's when that crashed
            row_, launched = guard.row(task, attempt, lambda stage, v=task.variant: emit(
                "stage", report, contender="numba", variant=v, stage=stage))
            report.warnings += [w for w in guard.warnings if w not in report.warnings]
            add(row_)
            if launched is not None:  # None: the rung ran in another process (a compiler crash's fallback)
                # the checked call's kernels, not a second run of the rung on inputs of its own
                task.launch.update(launch_usage(spec, task.variant, p.threads, simulator, size, records=launched))
        elif task.contender == "numpy":
            add(_measure(p, report, rule, ref, task, emit, lambda: C.prepare_numpy(spec, inputs)))
        else:
            prepare = lambda label=step.label, who=task.contender: C.prepare_library(who, spec, size, label, inputs)  # noqa: E731
            # an op that computes in float32, or multiplies in TF32, is held to that reference or
            # tolerance, and its row says so
            against, why = ((ref.float32(), FLOAT32_INSIDE) if step.float32_inside else
                            (ref.tf32(), TF32) if step.tf32 else
                            ((ref.refs, step.tolerance(inputs, ref.refs, dtype)), step.why or OWN_TOLERANCE)
                            if step.tolerance else (None, None))
            r = _measure(p, report, rule, ref, task, emit, prepare, against)
            add(replace(r, check=replace(r.check, reason=why + (f"; {r.reason}" if r.reason else ""))) if why else r)
    if contender is not None:
        collect.between()
    report.warnings += [w for w in tuning.problems() if "auto" in report.launches and w not in report.warnings]
    if not simulator:
        report.clocks["after"] = clocks.read()
        drop = clocks.dropped(report.clocks["before"], report.clocks["after"])
        if drop:
            report.warnings.append(drop)
    if opts.counters:
        _counters(report, opts, emit)
    _rate(report)
    emit("done", report)
    return report


class _Reference:
    """The run's inputs, their float64 reference, tolerances and output shapes; the float32-rounded
    inputs' reference (what a float32-inside contender is held to, lab.core.registry), made on first use."""

    def __init__(self, spec, inputs, refs, tols, out_specs):
        self.spec, self.inputs, self.refs, self.tols, self.out_specs = spec, inputs, refs, tols, out_specs
        self._float32 = None

    def float32(self) -> tuple:
        if self._float32 is None:
            rounded = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in self.inputs]
            refs32 = self.spec.float64_reference(rounded)
            self._float32 = (refs32, self.spec.tolerance(rounded, refs32, np.dtype(np.float32)))
        return self._float32

    def tf32(self) -> tuple:
        """The float64 reference at the tolerance of a 10-bit mantissa (TF32: float16's eps)."""
        return self.refs, self.spec.tolerance(self.inputs, self.refs, np.dtype(np.float16))


def child_row() -> None:
    """The fallback child (lab.core.compile_child.Guard.fallback): one Numba rung run, checked and
    timed under the compiler the job names; its Row pickled to the job's result file. Never by hand."""
    job = json.loads(Path(sys.argv[1]).read_text())
    backend = start("sim" if job["backend"] == "simulator" else "gpu", job["compiler"]).backend
    report = run(Options(job["kernel"], threads=job["threads"], size="x".join(map(str, job["size"])),
                         dtype=job["dtype"], variants=[job["variant"]], contenders=["numba"],
                         repeats=job["repeats"], warmup=job["warmup"], seed=job["seed"], arrays=job["arrays"],
                         yes=True), backend)
    Path(job["result"]).write_bytes(pickle.dumps(report.rows[0]))


def _measure(p: Plan, report: Report, rule: StopRule, ref: _Reference, task: Task, emit, prepare,
             against=None, launches: list | None = None, probe=None) -> Row | None:
    """The Row of the contender that ``prepare()`` sets up: its first (poisoned) call timed alone and
    checked (against ``against``, (refs, tols), instead of the float64 reference when given); if it
    passed, warmed up and timed. A contender that raises is a FAIL row, not a crash of the run.
    ``launches``: a list that gets the LaunchRecords of a Numba row's checked call on a GPU.
    ``probe``: a context (lab.core.compile_child.Guard.probe) the setup and checked call run in;
    None is returned when it stopped a compile (kernels.cache.WouldCompile)."""
    try:
        with probe if probe is not None else contextlib.nullcontext():
            return _measure_in(p, report, rule, ref, task, emit, prepare, against, launches)
    except WouldCompile:
        return None


def _stopped_compile(e: Exception) -> None:
    """Re-raise a compile the probe stopped, also when the compiler wrapped it in an error of its own."""
    if isinstance(e, WouldCompile) or would_have_compiled():
        raise WouldCompile(str(e)) from e


def _measure_in(p: Plan, report: Report, rule: StopRule, ref: _Reference, task: Task, emit, prepare,
                against=None, launches: list | None = None) -> Row:
    refs_, tols_ = against or (ref.refs, ref.tols)
    numba = task.contender == "numba"
    launches = [] if launches is None else launches  # numba rows on a GPU: the kernels the checked call launched
    record = numba and not p.simulator
    facts: dict = {"compiler": report.compiler} if numba else {}
    checked_: dict = {}
    try:
        prepared = prepare()
    except Exception as e:
        _stopped_compile(e)
        return Row(task, Check("FAIL", f"setup raised {type(e).__name__}: {_first_line(e)}"), **facts)
    try:
        emit("stage", report, contender=task.contender, variant=task.variant,
             stage="compile + check" if numba else "first call + check")
        timer = Timer(prepared.call, prepared.timer_mode, prepared.sync)
        first, traced = {}, p.opts.counters and p.simulator and numba  # --counters: the checked call's addresses

        def first_call():  # the poisoned first call, timed alone (compile + load + run)
            with resources.launched(launches) if record else contextlib.nullcontext(), \
                    simulation.tracing(traced) as tracer:
                first["ms"], outs = timer.first_call()
            if tracer is not None:
                facts.update(_traced(tracer.summary(), report.bytes_moved))
            return outs

        checked = check_prepared(prepared, refs_, tols_, ref.out_specs, first_call=first_call)
        checked_["first_call_ms"] = first.get("ms")
        if record:  # the compiler's report of the kernels this call launched
            res = compilers.resources(resources.compiled(launches), _cc(p.device))
            facts.update(registers=res["registers"], spill_bytes=res["spill_bytes"], local_bytes=res["local_bytes"])
        verdict, host_outs = checked.verdict, checked.outputs
        checked_.update(max_abs_err=verdict.max_abs_err, rel_err=verdict.rel_err)
        if not verdict.ok:
            reference = ("the float64 reference" if against is None or against[0] is ref.refs else
                         "the reference of the float32-rounded inputs")
            return Row(task, Check("FAIL", f"output differs from {reference}: {verdict.reason}", **checked_), **facts)
        if p.spec.summarize and numba and not report.notes:
            report.notes = [f"{task.variant}: {line}" for line in p.spec.summarize(ref.inputs, host_outs)]
        n, warm = p.repeats, p.warmup
        if n == 0:  # the simulator's default: checked once, its first call shown, nothing timed
            return Row(task, Check("ok", **checked_), **facts)
        if prepared.timer_mode == "host":  # CPU contenders can take seconds a call: cap their time
            if p.repeats is not None:
                n = min(p.repeats, max(3, int(HOST_BUDGET_MS / max(checked_["first_call_ms"], 1e-3))))
            if n != p.repeats or checked_["first_call_ms"] > 10:
                warm = min(p.warmup, 1)
        emit("stage", report, contender=task.contender, variant=task.variant, stage="time", calls=n)
        return Row(task, Check("ok", **checked_), timer.measure(n, warm, rule), **facts)
    except Exception as e:  # a contender that raises is a FAIL row, not a crash of the whole run
        _stopped_compile(e)
        return Row(task, Check("FAIL", f"raised {type(e).__name__}: {_first_line(e)}", **checked_), **facts)
    finally:
        prepared.release()


def _cc(device: dict) -> tuple:
    return tuple(int(part) for part in str(device["compute_capability"]).split("."))


def _traced(summary: dict, min_bytes: int) -> dict:
    """--counters in the simulator: a Numba row's numbers from the sector tracer's ``summary`` of its
    checked call (lab.core.trace.SectorTracer.summary): sectors per load request, and distinct bytes
    touched / the minimum traffic."""
    return {"sectors_per_request": summary["load"].sectors_per_request,
            "dram_ratio": summary["bytes_touched"] / min_bytes if min_bytes and summary["bytes_touched"] else None}


def _counters(report: Report, opts: Options, emit) -> None:
    """--counters once every row ran: the simulator's traced rows are done already; on a GPU the
    engine profiles the rows that passed in a process of its own (never while anything is timed)."""
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
    report.rows = [replace(r, dram_ratio=hit.get("dram_ratio"), sectors_per_request=hit.get("sectors_per_request"))
                   if (hit := by_row.get((r.contender, r.variant))) else r for r in report.rows]
    report.counters = {k: got.get(k) for k in ("tool", "engine")} | {"notes": list(got.get("notes") or [])}


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def _numpy_threads() -> str:
    try:
        from threadpoolctl import threadpool_info  # lazy: optional (threadpoolctl: the fallback when it is missing)
    except ImportError:
        return "thread count unknown (threadpoolctl not installed)"

    pools = threadpool_info()
    blas = sorted({f"{p['internal_api']} {p['num_threads']} threads" for p in pools if p.get("user_api") == "blas"})
    return ", ".join(blas) if blas else "1 thread (no BLAS thread pool)"


def _rate(report: Report) -> None:
    """The yardsticks every row is held to (its GB/s, % of copy bandwidth and of peak FP32, speedup over
    NumPy are then properties of the row): the measured copy bandwidth, the device's peak FP32 rate,
    NumPy's median time."""
    rates = Rates((report.copy_bandwidth or {}).get("gbps"), report.device.get("peak_fp32_gflops"),
                  next((r.measurement.median_ms for r in report.rows if r.contender == "numpy" and r.measurement), None))
    report.rows = [replace(r, rates=rates) for r in report.rows]
