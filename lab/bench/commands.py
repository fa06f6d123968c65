"""The measuring commands as library functions: ``run``, ``sweep``, ``bench``, ``roofline``, ``profile``,
``compare`` and ``tune``. Each takes the ``lab`` command's options as keyword arguments (the same names
and defaults; lists may stand for comma-separated values), checks them as the command does (the same
one-line LabError, :mod:`lab.core.args`), does the work and returns the result: the command's
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
from lab.core.errors import LabError

if TYPE_CHECKING:  # lab.core.runner imports numba.cuda: only once the backend is chosen
    from lab.core.runner import Events, Steps


def quiet(done: int, total: int, label: str) -> None:
    """The default progress callback: says nothing."""

DTYPES = ("float32", "float64")  # every kernel's KernelSpec.dtypes today; the runner checks per kernel
COMPILERS = ("numba-cuda", "numba-cuda-mlir", "both")
METRICS = ("auto", "ms", "gbps", "gflops")
ARRAYS = ("numba", "torch", "cupy")  # kernels.arrays.ARRAYS (not imported here: lab run --help stays light)


def _session(sim, compiler=None, allow_both: bool = False):
    from lab.core.session import start

    return start(A.backend(sim), A.choice(compiler, "--compiler", COMPILERS), allow_both)


def _backend(sim) -> str:
    """The backend alone (no compiler is involved): "gpu" or "simulator", chosen before numba.cuda loads."""
    from lab.core.simulator import select

    return select(A.backend(sim))


def _kernels(names) -> list[str]:
    """Kernel names checked against the registry (LabError with a suggestion); all when none given."""
    import kernels

    for n in names:
        if n not in kernels.NAMES:  # checked by name: no kernel module (numba.cuda) is imported here
            try:
                kernels.load(n)
            except KeyError as e:
                raise LabError(e.args[0]) from None
    return list(names) or list(kernels.NAMES)


def run(kernel: str, *, threads: int | None = None, size: str | None = None, dtype: str = "float32",
        variant: str | list | None = None, contenders: str | list | None = None, repeats: int | None = None,
        warmup: int | None = None, seed: int | None = None, yes: bool = False, counters: bool = False,
        sim: bool | None = None, compiler: str | None = None, arrays: str = "numba", precision: str | None = None,
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
    kernel = A.text(kernel, "KERNEL")
    threads, size = A.integer(threads, "--threads"), A.text(size, "--size")
    dtype = A.choice(dtype, "--dtype", DTYPES)
    variant, contenders = A.text(variant, "--variant"), A.text(contenders, "--contenders")
    repeats, warmup = A.integer(repeats, "--repeats", min=1), A.integer(warmup, "--warmup", min=0)
    seed = A.integer(seed, "--seed", min=0)
    yes, counters = A.flag(yes, "--yes"), A.flag(counters, "--counters")
    arrays = A.choice(arrays, "--arrays", ARRAYS) or "numba"
    from kernels.gemm.precision import PRECISIONS

    precision = A.choice(precision, "--precision", PRECISIONS)
    session = _session(sim, compiler, allow_both=True)
    if counters and session.compiler == "both":
        raise LabError("--counters counts one compiler's kernels: drop --compiler both, or run each compiler")
    if session.compiler == "both":
        from lab.bench.compilers import run_both

        return run_both(dict(kernel=kernel, threads=threads, size=size, dtype=dtype, variant=variant,
                             contenders=contenders, repeats=repeats, warmup=warmup, seed=seed, arrays=arrays,
                             precision=precision),
                        session.backend)
    from lab.core.runner import Options, run as run_kernel

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=A.csv(variant),
                   contenders=A.csv(contenders), repeats=repeats, warmup=warmup, seed=seed, yes=yes,
                   counters=counters, counters_engine=counters_engine, arrays=arrays, precision=precision)
    return run_kernel(opts, session.backend, progress=progress)


def sweep(kernel: str, *, threads: str | list | None = None, sizes: str | list | None = None,
          variant: str | list | None = None, contenders: str | list | None = None, dtype: str = "float32",
          repeats: int | None = None, warmup: int | None = None, seed: int | None = None, sim: bool | None = None,
          compiler: str | None = None, progress: Steps = quiet, yes: bool = False) -> dict:
    """``lab sweep KERNEL``: ``lab run`` at every threads-per-block value ("32,64,128" or a list)
    and/or size, each checked and timed. Returns docs/schemas/sweep.json's document; LabError on bad
    input, and (before anything runs) for a simulation estimated above 10 minutes in all without
    ``yes``."""
    from lab.bench import sweep as S

    kernel = A.text(kernel, "KERNEL")
    threads_list = S.parse_threads(A.text(threads, "--threads"))
    size_list = S.parse_sizes(A.text(sizes, "--sizes"))
    variant, contenders = A.text(variant, "--variant"), A.text(contenders, "--contenders")
    dtype = A.choice(dtype, "--dtype", DTYPES)
    repeats, warmup = A.integer(repeats, "--repeats", min=1), A.integer(warmup, "--warmup", min=0)
    seed = A.integer(seed, "--seed", min=0)
    backend = _session(sim, compiler).backend
    return S.sweep(kernel, backend, threads_list, size_list, variants=A.csv(variant), contenders=A.csv(contenders),
                   dtype=dtype, repeats=repeats, warmup=warmup, seed=seed, progress=progress,
                   yes=A.flag(yes, "--yes"))


def bench(kernel_names=(), *, kernels: str | list | None = None, quick: bool = False, repeats: int | None = None,
          contenders: str | list | None = None, seed: int | None = None, from_json: str | None = None,
          shapes: bool = True, sim: bool | None = None, compiler: str | None = None, progress: Steps = quiet,
          out: str | None = None, force: bool = False) -> dict:
    """``lab bench [KERNEL]...``: every kernel x variant x contender at the standard sizes (``quick``:
    each kernel's small simulator size), plus the shape sweep when all kernels run at full size; or
    ``from_json``: a saved bench document. Returns the bench document (every run's ``lab run --json``
    dict); its markdown is :func:`lab.bench.suite.render_markdown`. LabError on bad input, and (before
    any work) when ``out`` holds a GPU's results and this run is in the simulator, unless ``force``
    (:func:`lab.core.files.check_results`)."""
    from lab.bench import suite as B

    if isinstance(kernel_names, str):
        kernel_names = [kernel_names]
    kernels_csv = A.text(kernels, "--kernels")
    quick, shapes = A.flag(quick, "--quick"), A.flag(shapes, "--shapes/--no-shapes")
    repeats, seed = A.integer(repeats, "--repeats", min=1), A.integer(seed, "--seed", min=0)
    contenders = A.text(contenders, "--contenders")
    if from_json is not None:
        return B.load(A.existing_file(from_json, "--from"))
    backend = _session(sim, compiler).backend
    from lab.core.files import check_results

    check_results(out, backend == "simulator", A.flag(force, "--force"))
    names = _kernels(list(kernel_names) + (A.csv(kernels_csv) or []))
    from lab.core.runner import check_contenders

    check_contenders(A.csv(contenders))
    return B.run_bench(names, backend, repeats=repeats, quick=quick, contenders=A.csv(contenders), seed=seed,
                       progress=progress, shapes=shapes and not quick and not kernel_names and not kernels_csv)


def roofline(*, kernels: str | list | None = None, contenders: str | list | None = None, repeats: int | None = None,
             from_json=(), sim: bool | None = None, progress: Steps = quiet) -> dict:
    """``lab roofline``: every variant placed on this GPU's roofline (run now, or read from saved
    ``lab run/bench --json`` files: ``from_json``, one path or several). Returns
    docs/schemas/roofline.json's document; LabError on bad input."""
    from lab.bench import roofline as R
    from lab.bench.compare import load_reports, reading

    if isinstance(from_json, str):
        from_json = (from_json,)
    from_json = tuple(A.existing_file(p, "--from") for p in from_json or ())
    kernels_csv, contenders = A.text(kernels, "--kernels"), A.text(contenders, "--contenders")
    repeats = A.integer(repeats, "--repeats", min=1)
    backend = _backend(sim)
    names = _kernels(A.csv(kernels_csv) or [])
    from lab.core.runner import check_contenders

    check_contenders(A.csv(contenders))  # before minutes of runs (and in the simulator, which runs none)
    reports = [r for p in from_json for r in load_reports(p)] if from_json else None
    with reading(*from_json) if from_json else contextlib.nullcontext():
        return R.roofline(backend, names, A.csv(contenders), repeats, reports, progress)


def profile(kernel: str, *, size: str | None = None, threads: int | None = None, variant: str | list | None = None,
            contenders: str | list | None = None, dtype: str = "float32", repeats: int | None = None,
            seed: int | None = None, trace: str | None = None, row_limit: int = 15, sim: bool | None = None,
            yes: bool = False) -> dict:
    """``lab profile KERNEL``: the Numba variants and torch ops under torch.profiler (CPU + CUDA),
    NVTX-named; ``trace``: also a Chrome/Perfetto trace file. Returns the profile document (tables
    as rows); LabError on bad input, without torch, or for a simulation estimated above 10 minutes
    without ``yes``."""
    from lab.bench.profiling import profile as run_profile
    from lab.core.files import check_writable

    kernel, size = A.text(kernel, "KERNEL"), A.text(size, "--size")
    threads = A.integer(threads, "--threads")
    variant, contenders = A.text(variant, "--variant"), A.text(contenders, "--contenders")
    dtype = A.choice(dtype, "--dtype", DTYPES)
    repeats, seed = A.integer(repeats, "--repeats", min=1), A.integer(seed, "--seed", min=0)
    row_limit, yes = A.integer(row_limit, "--row-limit", min=1), A.flag(yes, "--yes")
    _kernels([kernel])  # an unknown kernel is named before anything about torch
    check_writable(trace, "trace")
    backend = _backend(sim)
    return run_profile(kernel, backend, size=size, threads=threads, variants=A.csv(variant),
                       contenders=A.csv(contenders), dtype=dtype, repeats=repeats, seed=seed, trace=trace,
                       row_limit=row_limit, yes=yes)


def compare(a: str, b: str) -> dict:
    """``lab compare A B``: B's speedup over A per (kernel, contender, variant) row of two ``lab
    run/bench/sweep --json`` files, and whether it is beyond the noise. Returns the comparison
    document; LabError when a file cannot be read or they share no row."""
    from lab.bench import compare as K

    a, b = A.text(a, "A"), A.text(b, "B")
    reports_a, reports_b = K.load_reports(a), K.load_reports(b)
    with K.reading(a, b):
        result = K.compare(reports_a, reports_b)
    if not result["rows"]:
        raise LabError(f"{a} and {b} share no (kernel, contender, variant) row")
    return result


def tune(kernel: str, *, shapes: str | list | None = None, budget: float | None = None, dtype: str = "float32",
         seed: int | None = None, out: str | None = None, match: str | None = None, no_cache: bool = False,
         sim: bool | None = None, compiler: str | None = None, yes: bool = False, progress: Steps = quiet) -> dict:
    """``lab tune KERNEL``: every rung x threads per block x tunable parameter at each shape, each
    checked then timed; on a GPU the fastest per shape class goes to the user's tuned cache (unless
    ``no_cache``; a simulator search is shown, never cached), and with ``out`` to a shipped table for
    devices named like ``match``. Returns docs/schemas/tune.json's document; LabError on bad input, or
    for a simulator search estimated above 10 minutes without ``yes``."""
    from lab.bench import sweep as S
    from lab.bench import tune as T
    from lab.core.files import check_writable

    kernel, shapes = A.text(kernel, "KERNEL"), A.text(shapes, "--shapes")
    budget, dtype = A.number(budget, "--budget"), A.choice(dtype, "--dtype", DTYPES)
    seed, match = A.integer(seed, "--seed", min=0), A.text(match, "--match")
    no_cache, yes = A.flag(no_cache, "--no-cache"), A.flag(yes, "--yes")
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
