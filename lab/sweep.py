"""``lab sweep``: one kernel over a list of launch configurations and/or problem sizes.

Every configuration (each size x each threads-per-block value) goes through ``lab.runner.run``, so
each is checked against the float64 reference on poisoned outputs before it is timed, exactly like
``lab run``; the sweep keeps each run's ``--json`` dict (``lab.report.to_json``). :func:`table`
and :func:`plot` present the result (time or GB/s against threads per block or size, one line per
contender). The question it answers: how does the launch configuration (CUDA C++ Best Practices
Guide, "Execution Configuration Optimizations") or the shape change each rung's speed?
"""
from __future__ import annotations

from lab.errors import LabError
from lab.plot import row_name
from lab.progress import Progress, quiet

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
          warmup: int | None = None, seed: int | None = None, progress: Progress = quiet) -> dict:
    """Run ``kernel`` at every (size, threads) pair; return a JSON-able dict.

    threads: threads per block to try (None: the backend default); sizes: ``--size`` strings (None:
    the kernel's default). Every value is validated before anything runs (LabError, one line).
    Returns {"kernel", "backend", "threads", "sizes", "seed", "reports": [lab run --json dicts]};
    one seed for all configurations, so every configuration sees the same inputs for a size.
    """
    import numpy as np

    import kernels
    from lab.device import describe
    from lab.report import to_json
    from lab.runner import Options, run

    if not threads and not sizes:
        raise LabError("lab sweep needs --threads A,B,... and/or --sizes A,B,...")
    try:
        spec = kernels.load(kernel)
    except KeyError as e:
        raise LabError(e.args[0]) from None
    limit = describe(backend == "simulator").get("max_threads_per_block") or 1024
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
    doc = {"kernel": kernel, "backend": backend, "threads": threads, "sizes": sizes, "seed": seed, "reports": []}
    for i, (size, t) in enumerate(configs):
        progress(i, len(configs), f"{kernel} {size or 'default size'} --threads {t or 'default'}")
        opts = Options(kernel=kernel, threads=t, size=size, dtype=dtype, variants=variants,
                       contenders=contenders, repeats=repeats, warmup=warmup, seed=seed)
        doc["reports"].append(to_json(run(opts, backend)))
    progress(len(configs), len(configs), "done")
    return doc


def rows(doc: dict) -> list[dict]:
    """One flat dict per (configuration, contender): size, threads, name, status, median_ms, iqr_ms, gbps, gflops."""
    out = []
    for rep in doc["reports"]:
        for r in rep["results"]:
            out.append({"size": "x".join(map(str, rep["size"])), "threads": rep["threads_per_block"],
                        "name": row_name(r), "status": r["status"], "reason": r["reason"],
                        "median_ms": r["median_ms"], "iqr_ms": r["iqr_ms"], "gbps": r["gbps"], "gflops": r["gflops"]})
    return out


def table(doc: dict):
    """A rich Table of the sweep (fits 80 columns: long reasons go below it via :func:`notes`)."""
    from rich.table import Table

    sim = doc["backend"] == "simulator"
    data = rows(doc)
    t = Table(title=f"lab sweep {doc['kernel']}" + (" (CUDA simulator: wall clock, not GPU time)" if sim else ""),
              title_justify="left")
    # a column that is the same on every row (one size, or one threads value) goes to the title
    same = {c for c in ("size", "threads") if len({r[c] for r in data}) == 1 and data}
    if same:
        t.title += " — " + ", ".join(f"{c} {data[0][c]}" for c in ("size", "threads") if c in same)
    cols = [c for c in ("size", "threads", "contender", "sim ms" if sim else "median ms", "IQR %", "GB/s", "check")
            if c not in same]
    for col in cols:
        t.add_column(col, justify="left" if col in ("size", "contender", "check") else "right",
                     no_wrap=col == "contender", overflow="fold")
    for r in data:
        iqr = 100 * r["iqr_ms"] / r["median_ms"] if r["median_ms"] else None
        cells = {"size": r["size"], "threads": str(r["threads"]), "contender": r["name"],
                 "median": "-" if r["median_ms"] is None else f"{r['median_ms']:.4g}",
                 "IQR %": "-" if iqr is None else f"{iqr:.0f}", "GB/s": "-" if r["gbps"] is None else f"{r['gbps']:.1f}",
                 "check": r["status"]}
        t.add_row(*[cells["median" if c.endswith(" ms") else c] for c in cols])
    return t


def notes(doc: dict) -> list[str]:
    """Why rows failed or were skipped, each reason once."""
    seen = []
    for r in rows(doc):
        line = f"{r['name']}: {r['reason']}"
        if r["reason"] and line not in seen:
            seen.append(line)
    return seen


def plot(doc: dict, path: str, metric: str = "auto") -> str:
    """Write a PNG: ``metric`` ("ms", "gbps", "gflops"; "auto": GB/s when measured, else ms) against
    threads per block (when several were given; log2 axis) or else against size, one line per contender
    (and per size or threads value when both vary). Returns the metric used. In the simulator "auto"
    means ms (the simulation's wall clock, so labelled)."""
    from lab.plot import pyplot

    plt = pyplot()
    data = rows(doc)
    if metric == "auto":  # the simulator has GB/s for NumPy only: plot its wall clock instead
        metric = "gbps" if doc["backend"] == "gpu" and any(r["gbps"] is not None for r in data) else "ms"
    key, label = METRICS[metric]
    by_threads = len(doc["threads"] or []) > 1
    xs = doc["threads"] if by_threads else [r for r in dict.fromkeys(r["size"] for r in data)]
    fig, ax = plt.subplots(figsize=(8, 5))
    lines: dict[str, list] = {}
    for r in data:
        if r[key] is None:
            continue
        other = r["size"] if by_threads else r["threads"]
        several = len(doc["sizes"] or []) > 1 if by_threads else len(doc["threads"] or []) > 1
        name = f"{r['name']} @ {other}" if several else r["name"]
        x = r["threads"] if by_threads else xs.index(r["size"])
        lines.setdefault(name, []).append((x, r[key]))
    for name, pts in lines.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    if by_threads:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("threads per block")
    else:
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel("size")
    if metric == "ms":
        ax.set_yscale("log")
    ax.set_ylabel(label)
    dev = doc["reports"][0]["device"]["name"] if doc["reports"] else ""
    title = f"lab sweep {doc['kernel']} on {dev}"
    if doc["backend"] == "simulator":
        title += "\nCUDA simulator: wall clock of the simulation, not a GPU time"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return metric
