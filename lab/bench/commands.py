"""The measuring commands as library functions: ``run``, ``sweep``, ``bench``, ``roofline``, ``profile``,
``compare`` and ``tune``. Each takes the ``lab`` command's options as keyword arguments (the same names
and defaults; lists may stand for comma-separated values), declared once in :mod:`lab.core.options`
(:func:`~lab.core.options.declares` checks them, with the command's one-line LabError), does the work and returns the result: the command's
``--json`` document, or for ``run`` the :class:`lab.core.runner.Report`. Nothing here prints: the
``lab`` commands and the notebook API (:mod:`lab.cli`) are views over these functions.

The backend (``sim``: True for the simulator, False for a GPU, None for auto) and the compiler are
fixed for the process by the first call that compiles, as for one ``lab`` command
(:func:`lab.core.session.start`); a later call that disagrees is a LabError.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING
from collections.abc import Callable

from lab.core import args as A
from lab.core import options as D
from lab.core.errors import LabError
from lab.core.options import declares
import kernels

if TYPE_CHECKING:  # lab.core.runner imports numba.cuda: only once the backend is chosen
    from lab.core.runner import Events, Steps


def quiet(done: int, total: int, label: str) -> None:
    """The default progress callback: says nothing."""


def _session(sim, compiler=None, allow_both: bool = False):
    from lab.core.session import start  # lazy: heavy for lab --help's start (ctypes)

    return start(A.backend(sim), compiler, allow_both)


def _backend(sim) -> str:
    """The backend alone (no compiler is involved): "gpu" or "simulator", chosen before numba.cuda loads."""
    from lab.core.simulator import select  # lazy: heavy for lab --help's start (ctypes)

    return select(A.backend(sim))


def _kernels(names) -> list[str]:
    """Kernel names checked against the registry (LabError with a suggestion); all when none given."""
    for n in names:
        if n not in kernels.NAMES:  # checked by name: no kernel module (numba.cuda) is imported here
            try:
                kernels.load(n)
            except KeyError as e:
                raise LabError(e.args[0]) from None
    return list(names) or list(kernels.NAMES)


@declares(D.KERNEL, D.THREADS, D.SIZE, D.DTYPE, D.VARIANT, D.CONTENDERS, D.REPEATS, D.WARMUP, D.SEED, D.YES,
          D.COUNTERS, D.SIM, D.COMPILER, D.ARRAYS_OPT, D.PRECISION)
def run(kernel: str, *, threads: int | None, size: str | None, dtype: str, variant: str | list | None,
        contenders: str | list | None, repeats: int | None, warmup: int | None, seed: int | None, yes: bool,
        counters: bool, sim: bool | None, compiler: str | None, arrays: str, precision: str | None,
        counters_engine: Callable | None = None, progress: Events | None = None):
    """``lab run KERNEL``: each Numba variant beside NumPy, CuPy and torch, checked against float64, then
    timed (CUDA events on a GPU; in the simulator each row is checked once, not timed).

    threads: per block (default 256 on a GPU, 32 in the simulator); size: "N", "ROWSxCOLS", "MxNxK"
    (default per backend); dtype: float32 or float64; variant/contenders: comma-separated or a list
    (default all); repeats/warmup: timed and untimed calls (default: the stop rule and 5 on a GPU, none
    in the simulator); seed: the inputs' seed (default fresh); yes: start a simulation estimated above
    10 minutes; counters: DRAM bytes / the minimum traffic and sectors per load request per row (in the
    simulator from the Numba rows' recorded addresses; on a GPU ``counters_engine(report)`` profiles
    the passed rows afterwards, e.g. lab.inspect.counters.for_run, and without one they are not
    measured); compiler: numba-cuda, numba-cuda-mlir or both; arrays: who owns the Numba rows' device
    buffers (inputs, outputs, canaries, the rungs' scratch): "numba" (the compiler's device arrays),
    "torch" (CUDA tensors) or "cupy" (a GPU with that library only; LabError otherwise). precision: what a
    float32 matmul's auto may run, torch's float32_matmul_precision names (kernels/gemm/precision.py): "highest"
    (SIMT FP32 only), "high" (also 3xTF32 on tensor cores, FP32-accurate; the default), "medium" (also TF32,
    checked at TF32's tolerance); the JSON's "precision" key says which was in force. progress:
    ``progress(event, report, **info)`` (lab.core.runner's events).

    Returns the :class:`lab.core.runner.Report` (``to_dict()``: docs/schemas/run.json), or with
    ``compiler="both"`` the comparison document (docs/schemas/run-both.json). A FAIL row is in the
    result, not an exception; bad input raises LabError (the CLI's one-line message)."""
    arrays = arrays or "numba"
    session = _session(sim, compiler, allow_both=True)
    if counters and session.compiler == "both":
        raise LabError("--counters counts one compiler's kernels: drop --compiler both, or run each compiler")
    if session.compiler == "both":
        from lab.bench.compilers import run_both  # lazy: heavy for lab --help's start (ctypes)

        return run_both(dict(kernel=kernel, threads=threads, size=size, dtype=dtype, variant=variant,
                             contenders=contenders, repeats=repeats, warmup=warmup, seed=seed, arrays=arrays,
                             precision=precision),
                        session.backend)
    from lab.core.runner import Options, run as run_kernel  # lazy: heavy for lab --help's start (concurrent)

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=A.csv(variant),
                   contenders=A.csv(contenders), repeats=repeats, warmup=warmup, seed=seed, yes=yes,
                   counters=counters, counters_engine=counters_engine, arrays=arrays, precision=precision)
    return run_kernel(opts, session.backend, progress=progress)


@declares(D.KERNEL, D.THREADS_LIST, D.SIZES, D.VARIANT, D.CONTENDERS, D.DTYPE,
          D.REPEATS.but(help="Timed calls per configuration (default on a GPU: the stop rule; none in the simulator)."),
          D.WARMUP, D.SEED, D.yes_for("sweep"), D.SIM, D.COMPILER)
def sweep(kernel: str, *, threads: str | list | None, sizes: str | list | None, variant: str | list | None,
          contenders: str | list | None, dtype: str, repeats: int | None, warmup: int | None, seed: int | None,
          yes: bool, sim: bool | None, compiler: str | None, progress: Steps = quiet) -> dict:
    """``lab sweep KERNEL``: ``lab run`` at every threads-per-block value ("32,64,128" or a list)
    and/or size, each checked and timed. Returns docs/schemas/sweep.json's document; LabError on bad
    input, and (before anything runs) for a simulation estimated above 10 minutes in all without
    ``yes``."""
    from lab.bench import sweep as S  # lazy: heavy for lab --help's start (concurrent)

    threads_list, size_list = S.parse_threads(threads), S.parse_sizes(sizes)
    backend = _session(sim, compiler).backend
    return S.sweep(kernel, backend, threads_list, size_list, variants=A.csv(variant), contenders=A.csv(contenders),
                   dtype=dtype, repeats=repeats, warmup=warmup, seed=seed, progress=progress,
                   yes=yes)


@declares(D.KERNEL_NAMES, D.KERNELS.but(help="Comma-separated kernels, as the arguments (default: all)."),
          D.OUT.but(help="Write the markdown report to FILE (e.g. docs/benchmarks.md; '-': stdout)."), D.QUICK,
          D.REPEATS.but(help="Timed calls per contender (default on a GPU: the stop rule)."), D.CONTENDERS, D.SEED,
          D.FROM_JSON.but(help="Render the markdown from a saved `lab bench --json` file instead of running."),
          D.SHAPE_SWEEP,
          D.FORCE.but(help="Let a CUDA-simulator run replace an --out file that holds a GPU's results."),
          D.SIM, D.COMPILER)
def bench(kernel_names, *, kernels: str | list | None, out: str | None, quick: bool, repeats: int | None,
          contenders: str | list | None, seed: int | None, from_json: str | None, shapes: bool, force: bool,
          sim: bool | None, compiler: str | None, progress: Steps = quiet) -> dict:
    """``lab bench [KERNEL]...``: every kernel x variant x contender at the standard sizes (``quick``:
    each kernel's small simulator size), plus the shape sweep when all kernels run at full size; or
    ``from_json``: a saved bench document. Returns the bench document (every run's ``lab run --json``
    dict); its markdown is :func:`lab.bench.suite.render_markdown`. LabError on bad input, and (before
    any work) when ``out`` holds a GPU's results and this run is in the simulator, unless ``force``
    (:func:`lab.core.files.check_results`)."""
    from lab.bench import suite as B  # lazy: heavy for lab --help's start (concurrent)

    if from_json is not None:
        return B.load(from_json)
    backend = _session(sim, compiler).backend
    from lab.core.files import check_results  # lazy: heavy for lab --help's start (lab.core.files)

    check_results(out, backend == "simulator", force)
    names = _kernels(list(kernel_names) + (A.csv(kernels) or []))
    from lab.core.runner import check_contenders  # lazy: heavy for lab --help's start (concurrent)

    check_contenders(A.csv(contenders))
    return B.run_bench(names, backend, repeats=repeats, quick=quick, contenders=A.csv(contenders), seed=seed,
                       progress=progress, shapes=shapes and not quick and not kernel_names and not kernels)


@declares(D.KERNELS, D.CONTENDERS.but(help="Comma-separated from numba,cupy,torch (default: all three)."),
          D.REPEATS.but(help="Timed calls per contender."), D.FROM_JSONS, D.SIM)
def roofline(*, kernels: str | list | None, contenders: str | list | None, repeats: int | None, from_json: tuple,
             sim: bool | None, progress: Steps = quiet) -> dict:
    """``lab roofline``: every variant placed on this GPU's roofline (run now, or read from saved
    ``lab run/bench --json`` files: ``from_json``, one path or several). Returns
    docs/schemas/roofline.json's document; LabError on bad input."""
    from lab.bench import roofline as R  # lazy: heavy for lab --help's start (concurrent)
    from lab.bench.compare import load_reports, reading  # lazy: heavy for lab --help's start (lab.bench.compare)

    backend = _backend(sim)
    names = _kernels(A.csv(kernels) or [])
    from lab.core.runner import check_contenders  # lazy: heavy for lab --help's start (concurrent)

    check_contenders(A.csv(contenders))  # before minutes of runs (and in the simulator, which runs none)
    reports = [r for p in from_json for r in load_reports(p)] if from_json else None
    with reading(*from_json) if from_json else contextlib.nullcontext():
        return R.roofline(backend, names, A.csv(contenders), repeats, reports, progress)


@declares(D.KERNEL, D.SIZE, D.THREADS, D.VARIANT,
          D.CONTENDERS.but(help="Comma-separated from numba,torch (default: both)."), D.DTYPE,
          D.REPEATS.but(help="Calls per contender inside the profile (default: 20; 1 in the simulator)."), D.SEED,
          D.TRACE, D.ROW_LIMIT, D.yes_for("profile"), D.SIM)
def profile(kernel: str, *, size: str | None, threads: int | None, variant: str | list | None,
            contenders: str | list | None, dtype: str, repeats: int | None, seed: int | None, trace: str | None,
            row_limit: int, yes: bool, sim: bool | None) -> dict:
    """``lab profile KERNEL``: the Numba variants and torch ops under torch.profiler (CPU + CUDA),
    NVTX-named; ``trace``: also a Chrome/Perfetto trace file. Returns the profile document (tables
    as rows); LabError on bad input, without torch, or for a simulation estimated above 10 minutes
    without ``yes``."""
    from lab.bench.profiling import profile as run_profile  # lazy: heavy for lab --help's start (lab.bench.profiling)
    from lab.core.files import check_writable  # lazy: heavy for lab --help's start (lab.core.files)

    _kernels([kernel])  # an unknown kernel is named before anything about torch
    check_writable(trace, "trace")
    backend = _backend(sim)
    return run_profile(kernel, backend, size=size, threads=threads, variants=A.csv(variant),
                       contenders=A.csv(contenders), dtype=dtype, repeats=repeats, seed=seed, trace=trace,
                       row_limit=row_limit, yes=yes)


@declares(D.FILE_A, D.FILE_B)
def compare(a: str, b: str) -> dict:
    """``lab compare A B``: B's speedup over A per (kernel, contender, variant) row of two ``lab
    run/bench/sweep --json`` files, and whether it is beyond the noise. Returns the comparison
    document; LabError when a file cannot be read or they share no row."""
    from lab.bench import compare as K  # lazy: heavy for lab --help's start (lab.bench.compare)

    reports_a, reports_b = K.load_reports(a), K.load_reports(b)
    with K.reading(a, b):
        result = K.compare(reports_a, reports_b)
    if not result["rows"]:
        raise LabError(f"{a} and {b} share no (kernel, contender, variant) row")
    return result


@declares(D.KERNEL, D.SHAPES.but(help="Comma-separated sizes as lab run --size, e.g. 4096,1x4096x4096 (default: "
                                       "the public sweep's shapes of KERNEL; a few tiny ones in the simulator)."),
          D.BUDGET, D.DTYPE, D.SEED,
          D.OUT.but(help="Also write the winners as a shipped table to FILE (e.g. kernels/tuned/h100.json)."),
          D.MATCH, D.NO_CACHE, D.yes_for("search"), D.SIM, D.COMPILER)
def tune(kernel: str, *, shapes: str | list | None, budget: float | None, dtype: str, seed: int | None,
         out: str | None, match: str | None, no_cache: bool, yes: bool, sim: bool | None, compiler: str | None,
         progress: Steps = quiet) -> dict:
    """``lab tune KERNEL``: every rung x threads per block x tunable parameter at each shape, each
    checked then timed; on a GPU the fastest per shape class goes to the user's tuned cache (unless
    ``no_cache``; a simulator search is shown, never cached), and with ``out`` to a shipped table for
    devices named like ``match``. Returns docs/schemas/tune.json's document; LabError on bad input, or
    for a simulator search estimated above 10 minutes without ``yes``."""
    from lab.bench import sweep as S  # lazy: heavy for lab --help's start (concurrent)
    from lab.bench import tune as T  # lazy: heavy for lab --help's start (concurrent)
    from lab.core.files import check_writable  # lazy: heavy for lab --help's start (lab.core.files)

    _kernels([kernel])
    check_writable(out, "tuned table")  # before minutes of tuning
    if match and not out:
        raise LabError("--match names the devices of a shipped table: give --out FILE too")
    session = _session(sim, compiler)
    doc = T.tune(kernel, session.backend, S.parse_sizes(shapes), budget, dtype, seed or 0, write=not no_cache,
                 progress=progress or quiet, yes=yes)
    if out:
        doc["table_path"] = T.save(doc["entries"], out, match)
    return doc
