"""Run one kernel problem across contenders: check each against a float64 reference, then time it.

Data flows one way: KernelSpec (kernels/) -> run() here -> Report of Rows (with Measurements from
lab.timing) -> lab.report prints it. The CLI and the tests both call :func:`run`.

For each contender (each Numba variant, NumPy, CuPy, torch): copy the inputs, poison the outputs,
make the first call (timed alone: compile + load + run), check every output element against the
float64 reference, and only if that passed, warm up and time ``repeats`` calls. A FAIL row is shown
with its error and is never timed.
"""
from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field

import numpy as np

import kernels
from lab import contenders as C
from lab.errors import LabError
from lab.timing import SIMULATOR_CLOCK, Measurement, Timer


HOST_BUDGET_MS = 3000.0  # time budget for timing one CPU contender


@dataclass
class Options:
    """What the user asked for; ``None`` means the kernel's or the backend's default."""

    kernel: str
    threads: int | None = None  # default: 256 on a GPU, 32 in the simulator (one simulated warp)
    size: str | None = None
    dtype: str = "float32"
    variants: list[str] | None = None
    contenders: list[str] | None = None
    repeats: int | None = None
    warmup: int | None = None
    seed: int | None = None
    library_ops: list[str] | None = None  # only these CuPy/torch op labels (default: all of them)


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
    repeats: int
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


def check_outputs(outs, refs, tols):
    """(ok, max_abs_err, rel_err) of outputs against float64 references and absolute tolerances.

    A non-finite output where the reference is finite (e.g. a poisoned, never-written element)
    fails and counts as an infinite error.
    """
    ok, max_err, num, den = True, 0.0, 0.0, 0.0
    for out, ref, tol in zip(outs, refs, tols):
        out = np.asarray(out, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if out.shape != ref.shape:
            return False, math.inf, math.inf
        finite = np.isfinite(ref)
        same_nonfinite = np.array_equal(np.isfinite(out), finite) and np.array_equal(out[~finite], ref[~finite])
        err = np.abs(out - ref)[finite] if finite.any() else np.zeros(0)
        err = np.where(np.isnan(err), np.inf, err)
        bound = np.broadcast_to(tol, ref.shape)[finite]
        ok &= bool(same_nonfinite and np.all(err <= bound))
        if err.size:
            max_err = max(max_err, float(err.max()))
        num += float(np.sum(err ** 2))
        den += float(np.sum(ref[finite] ** 2))
        if not same_nonfinite:
            max_err = math.inf
    return ok, max_err, (math.sqrt(num / den) if den else math.sqrt(num))


def run(opts: Options, backend: str) -> Report:
    """Run, check and time ``opts.kernel`` on the selected backend; raises LabError on bad input."""
    from lab.device import describe, measure_copy_bandwidth

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
    repeats = opts.repeats if opts.repeats is not None else (3 if simulator else 50)
    warmup = opts.warmup if opts.warmup is not None else (0 if simulator else 5)
    if repeats < 1 or warmup < 0:
        raise LabError("--repeats must be >= 1 and --warmup >= 0")
    seed = opts.seed if opts.seed is not None else int(np.random.SeedSequence().entropy % 2**32)

    rng = np.random.default_rng(seed)
    inputs = spec.make_inputs(size, dtype, rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = spec.tolerance(inputs, refs, dtype)

    report = Report(spec.name, spec.summary, backend, device, size, str(dtype), seed, repeats, warmup,
                    spec.bytes_moved(size, dtype), spec.flops(size), threads=threads, warnings=warnings)
    if not simulator:
        report.copy_bandwidth = measure_copy_bandwidth()
    report.numpy_threads = _numpy_threads()

    def measure(row: Row, prepare) -> Row:
        """Fill ``row`` from the contender that ``prepare()`` sets up: check, then time."""
        try:
            prepared = prepare()
        except Exception as e:
            row.status, row.reason = "FAIL", f"setup raised {type(e).__name__}: {_first_line(e)}"
            return row
        try:
            prepared.poison()
            timer = Timer(prepared.call, prepared.timer_mode, prepared.sync)
            row.first_call_ms, outs = timer.first_call()
            host_outs = prepared.read(outs)
            ok, row.max_abs_err, row.rel_err = check_outputs(host_outs, refs, tols)
            if not ok:
                row.status, row.reason = "FAIL", "output differs from the float64 reference"
                return row
            if spec.summarize and row.contender == "numba" and not report.notes:
                report.notes = [f"{row.variant}: {line}" for line in spec.summarize(inputs, host_outs)]
            n = repeats
            if prepared.timer_mode == "host":  # CPU contenders can take seconds a call: cap their time
                n = min(repeats, max(3, int(HOST_BUDGET_MS / max(row.first_call_ms, 1e-3))))
            row.measurement = timer.measure(n, warmup if n == repeats else 1)
        except Exception as e:  # a contender that raises is a FAIL row, not a crash of the whole run
            row.status, row.reason = "FAIL", f"raised {type(e).__name__}: {_first_line(e)}"
        finally:
            prepared.release()
        return row

    for name in contender_names:
        why = C.why_unavailable(name, simulator)
        if name == "numba":
            for v in variant_names:
                variant = spec.variants[v]
                cfg = variant.launch(size, threads)
                row = Row("numba", v, "ok", launch=cfg.as_dict())
                report.launches[v] = cfg.as_dict()
                if variant.warp_multiple and threads % 32:
                    row.status, row.reason = "skipped", f"{v} needs whole warps: --threads must be a multiple of 32"
                elif variant.max_threads and threads > variant.max_threads:
                    row.status, row.reason = "skipped", f"{v} supports at most {variant.max_threads} threads per block"
                else:
                    measure(row, lambda: C.prepare_numba(spec, size, variant, cfg, inputs, simulator))
                report.rows.append(row)
        elif name == "numpy":
            report.rows.append(measure(Row("numpy", "reference (CPU)", "ok"), lambda: C.prepare_numpy(spec, inputs)))
        elif why is not None:
            report.rows.append(Row(name, "-", "skipped", why))
        else:
            for label in C.library_labels(name, spec.name):
                if opts.library_ops is not None and label not in opts.library_ops:
                    continue
                prepare = lambda label=label: C.prepare_library(name, spec, size, label, inputs)  # noqa: E731
                report.rows.append(measure(Row(name, label, "ok"), prepare))
        gc.collect()
    _derive(report)
    return report


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
