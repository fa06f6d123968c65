"""``lab sweep``: one kernel over a list of launch configurations and/or problem sizes.

Every configuration (each size x each threads-per-block value) goes through ``lab.core.runner.run``, so
each is checked against the float64 reference on poisoned outputs before it is timed, exactly like
``lab run``; the sweep keeps each run's ``--json`` dict (``lab.core.runner.Report.to_dict``). :func:`table`
and :func:`plot` present the result (time or GB/s against threads per block or size, one line per
contender). The question it answers: how does the launch configuration (CUDA C++ Best Practices
Guide, "Execution Configuration Optimizations") or the shape change each rung's speed?
"""
from __future__ import annotations

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.bench.compare import row_name
from lab.core.runner import Steps, quiet, Options, check_contenders, REFUSE_SIMULATION_S, validate
import numpy as np
from lab.core import catalog, device, runner, options as D
from lab.core.simulator import minutes

METRICS = {"ms": ("median_ms", "median time per call (ms)"), "gbps": ("gbps", "achieved GB/s (minimum traffic)"),
           "gflops": ("gflops", "achieved GFLOP/s")}


def parse_threads(text: str | None) -> list[int] | None:
    """``"32,64,128"`` -> [32, 64, 128]; LabError naming the bad item."""
    if text is None:
        return None
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            out.append(int(item))
        except ValueError:
            raise LabError(f"--threads {text!r}: {item!r} is not an integer (write e.g. 32,64,128)") from None
    if not out:
        raise LabError("--threads is empty: write e.g. 32,64,128")
    return out


def parse_sizes(text: str | None) -> list[str] | None:
    """``"1000,4096"`` or ``"48x80,96x160"`` -> a list of --size strings (checked by the kernel's parser)."""
    if text is None:
        return None
    out = [s.strip() for s in text.split(",") if s.strip()]
    if not out:
        raise LabError("--sizes is empty: write e.g. 1000,4096 or 48x80,96x160")
    return out


def sweep(kernel: str, backend: str, threads: list[int] | None = None, sizes: list[str] | None = None,
          variants=None, contenders=None, dtype: str = "float32", repeats: int | None = None,
          warmup: int | None = None, seed: int | None = None, progress: Steps = quiet, yes: bool = False) -> dict:
    """Run ``kernel`` at every (size, threads) pair; return a JSON-able dict.

    threads: threads per block to try (None: the backend default); sizes: ``--size`` strings (None:
    the kernel's default). Every value is validated before anything runs (LabError, one line).
    Returns {"schema_version", "kernel", "backend", "threads", "sizes", "seed", "reports": [lab run --json dicts]};
    one seed for all configurations, so every configuration sees the same inputs for a size.
    """
    if not threads and not sizes:
        raise LabError("lab sweep needs --threads A,B,... and/or --sizes A,B,...")
    spec = catalog.load(kernel)
    check_contenders(contenders)
    for v in variants or []:
        if v not in spec.variants:
            raise LabError(f"unknown variant of {spec.name} {v!r}; choose from: {', '.join(spec.variants)}")
    if dtype not in spec.dtypes:
        raise LabError(f"--dtype {dtype}: {spec.name} supports {', '.join(spec.dtypes)}")
    for option, value in ((D.REPEATS, repeats), (D.WARMUP, warmup)):
        option.check(value)
    limit = device.describe(backend == "simulator").get("max_threads_per_block") or 1024
    for t in threads or []:
        if not 1 <= t <= limit:
            raise LabError(f"--threads {t}: threads per block must be 1..{limit}")
    for s in sizes or []:
        try:
            spec.parse_size(s)
        except ValueError as e:
            raise LabError(str(e)) from None
    seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    configs = [(s, t) for s in (sizes or [None]) for t in (threads or [None])]
    estimate = ""
    if backend == "simulator":  # the whole sweep's estimate, before anything runs (each run's own is lifted)
        plans = [validate(Options(kernel=kernel, threads=t, size=size, dtype=dtype, variants=variants,
                                  contenders=contenders, repeats=repeats, warmup=warmup, seed=seed, yes=True), backend)
                 for size, t in configs]
        total = sum(p.estimate_s or 0.0 for p in plans)
        if total > REFUSE_SIMULATION_S and not yes:
            worst = max(zip(plans, configs), key=lambda pc: pc[0].estimate_s or 0.0)[1]
            raise LabError(f"the simulator would take roughly {minutes(total)} for this sweep of {len(configs)} "
                           f"configurations (estimated; the largest is --sizes {worst[0] or 'default'}); use smaller "
                           "or fewer --sizes, fewer --threads or one --variant, or --yes to run it anyway")
        if total > 30:  # announced, as lab run announces a long simulation
            estimate = f" (the simulator: roughly {minutes(total)} for the whole sweep, estimated)"
    doc = {"schema_version": SCHEMA_VERSION, "kernel": kernel, "backend": backend, "threads": threads, "sizes": sizes,
           "seed": seed, "reports": []}
    for i, (size, t) in enumerate(configs):
        progress(i, len(configs), f"{kernel} {size or 'default size'} --threads {t or 'default'}{estimate}")
        opts = Options(kernel=kernel, threads=t, size=size, dtype=dtype, variants=variants,
                       contenders=contenders, repeats=repeats, warmup=warmup, seed=seed, yes=True)
        doc["reports"].append(runner.run(opts, backend).to_dict())
    progress(len(configs), len(configs), "done")
    return doc


def _ms(result: dict, report: dict) -> float | None:
    """The row's median ms; in the simulator without --repeats (nothing timed) its checked first call,
    the only wall clock there is (neither is a GPU time)."""
    if result.get("median_ms") is None and report.get("backend") == "simulator":
        return result.get("first_call_ms")
    return result.get("median_ms")


def rows(doc: dict) -> list[dict]:
    """One flat dict per (configuration, contender): size, threads, name, status, median_ms, iqr_ms, gbps, gflops."""
    out = []
    for rep in doc["reports"]:
        for r in rep["results"]:
            out.append({"size": "x".join(map(str, rep["size"])), "threads": rep["threads_per_block"],
                        "name": row_name(r), "status": r["status"], "reason": r["reason"],
                        "median_ms": _ms(r, rep), "iqr_ms": r["iqr_ms"], "gbps": r["gbps"], "gflops": r["gflops"]})
    return out


def notes(doc: dict) -> list[str]:
    """Why rows failed or were skipped, each reason once."""
    seen = []
    for r in rows(doc):
        line = f"{r['name']}: {r['reason']}"
        if r["reason"] and line not in seen:
            seen.append(line)
    return seen


