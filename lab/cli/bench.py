"""``lab bench``, ``lab sweep``, ``lab roofline``, ``lab profile``, ``lab compare``: thin click
commands over :mod:`lab.bench`; the tables and plots are :mod:`lab.cli.views.bench`."""
from __future__ import annotations

import contextlib
import sys

import click
from rich.markup import escape

from lab import library as L
from lab.cli import options as O
from lab.core import options as D


def _quiet(done, total, label) -> None:
    """No progress to show."""


def _print(*renderables, wide: bool = False) -> None:
    from lab.cli.views.table import console, print_tables  # lazy: heavy for lab --help's start (lab.cli.views)

    print_tables(console(), list(renderables), wide)


@click.command(short_help="Benchmark all kernels; markdown for docs.")
@O.command(L.bench, D.JSON.but(help="Print the bench document (every run's --json dict) instead of markdown."))
def bench(kernel_names, kernels, out, quick, repeats, contenders, seed, as_json, from_json, shapes, force, sim, compiler):
    """Benchmark every kernel x variant x contender at the standard sizes; markdown for docs/benchmarks.md."""
    from kernels.spec import plural  # lazy: heavy for lab --help's start (concurrent)
    from lab.bench import suite as B  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import bar  # lazy: heavy for lab --help's start (lab.cli.views)
    from lab.core.files import check_writable, write_atomic  # lazy: heavy for lab --help's start (lab.core.files)

    check_writable(out, "report")  # before minutes of benchmarks, not after
    with bar("bench") if not from_json else contextlib.nullcontext() as progress:
        doc = L.bench(kernel_names, kernels=kernels, quick=quick, repeats=repeats, contenders=contenders, seed=seed,
                        from_json=from_json, shapes=shapes, sim=sim, compiler=compiler, progress=progress or _quiet,
                        out=out, force=force)
    from lab.bench.compare import reading  # lazy: heavy for lab --help's start (lab.bench.compare)

    with reading(from_json) if from_json else contextlib.nullcontext():
        text = B.render_markdown(doc)
    if out and out != "-":
        write_atomic(out, text + "\n", "report")
        click.echo(f"wrote {out} ({plural(len(doc['reports']), 'run')})", err=True)
    if as_json:
        O.emit_json(doc)
    elif not out or out == "-":
        print(text)
    if any(not r["ok"] and r["status"] == "FAIL" for rep in doc["reports"] for r in rep["results"]):
        sys.exit(1)


@click.command(short_help="Run a kernel over threads per block and/or sizes.")
@O.command(L.sweep, D.JSON.but(help="Print one JSON object (every configuration's lab run --json dict)."),
           D.PNG_FILE.but(help="Plot the metric against threads per block (or size) to FILE (needs matplotlib)."),
           D.METRIC, D.WIDE)
def sweep(kernel, threads, sizes, variant, contenders, dtype, repeats, warmup, seed, as_json, png, metric, wide,
          yes, sim, compiler):
    """Run KERNEL at every --threads and/or --sizes value: each checked and timed, as a table or a plot."""
    from lab.bench import sweep as S  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views import bench as V  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import bar  # lazy: heavy for lab --help's start (lab.cli.views)

    O.needs_plot(png)
    with bar("sweep") as progress:
        doc = L.sweep(kernel, threads=threads, sizes=sizes, variant=variant, contenders=contenders, dtype=dtype,
                        repeats=repeats, warmup=warmup, seed=seed, sim=sim, compiler=compiler, progress=progress,
                        yes=yes)
    if png:
        used = V.sweep_plot(doc, png, metric)
        click.echo(f"wrote {png} ({S.METRICS[used][1]})", err=True)
    if as_json:
        O.emit_json(doc)
    else:
        _print(*V.sweep_table(doc, wide=wide), *[f"[dim]{escape(n)}[/]" for n in S.notes(doc)], wide=wide)
    if any(r["status"] == "FAIL" for r in S.rows(doc)):
        sys.exit(1)


@click.command(short_help="Place every variant on this GPU's roofline.")
@O.command(L.roofline, D.PNG_FILE.but(help="Draw the roofline to FILE (needs matplotlib)."), D.JSON, D.WIDE)
def roofline(kernels, contenders, repeats, from_json, png, as_json, wide, sim):
    """Place every kernel and variant by FLOP/byte against achieved FLOP/s, under this GPU's ceilings."""
    from lab.cli.views import bench as V  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import bar  # lazy: heavy for lab --help's start (lab.cli.views)

    O.needs_plot(png)
    with bar("roofline") as progress:
        doc = L.roofline(kernels=kernels, contenders=contenders, repeats=repeats, from_json=from_json, sim=sim,
                           progress=progress)
    if png:
        V.roofline_plot(doc, png)
        click.echo(f"wrote {png}", err=True)
    if as_json:
        O.emit_json(doc)
        return
    _print(*V.roofline_table(doc, wide=wide), *([f"[yellow]{escape(doc['note'])}[/]"] if doc["note"] else []),
           wide=wide)


@click.command(short_help="torch.profiler table and trace of a kernel.")
@O.command(L.profile, D.WIDE)
def profile(kernel, size, threads, variant, contenders, dtype, repeats, seed, trace, row_limit, wide, yes, sim):
    """Profile KERNEL's Numba variants and torch ops with torch.profiler (CPU + CUDA), NVTX-named."""
    doc = L.profile(kernel, size=size, threads=threads, variant=variant, contenders=contenders, dtype=dtype,
                      repeats=repeats, seed=seed, trace=trace, row_limit=row_limit, sim=sim, yes=yes)
    from lab.cli.views.bench import print_profile  # lazy: heavy for lab --help's start (concurrent)

    print_profile(doc, wide=wide)


@click.command(short_help="Speedup and noise between two --json files.")
@O.command(L.compare, D.JSON, D.WIDE)
def compare(a, b, as_json, wide):
    """Compare two lab run/bench/sweep --json files: B's speedup over A per row, and whether it is beyond the noise."""
    from lab.bench import compare as K  # lazy: heavy for lab --help's start (lab.bench.compare)
    from lab.cli.views import bench as V  # lazy: heavy for lab --help's start (concurrent)

    result = L.compare(a, b)
    if as_json:
        O.emit_json(result)
        return
    extra = [f"[dim]only in A: {escape(', '.join(result['only_a']))}[/]"] if result["only_a"] else []
    extra += [f"[dim]only in B: {escape(', '.join(result['only_b']))}[/]"] if result["only_b"] else []
    with K.reading(a, b):  # values of the wrong type show up only when formatted
        table = V.compare_table(result, wide=wide)
    _print(*table, "[dim]beyond the noise when |B - A| / min(A, B) > noise A + noise B[/]",
           *extra, *[f"[yellow]{escape(n)}[/]" for n in result["notes"]], wide=wide)


@click.command(short_help="Search each rung's launch configurations; cache the fastest.")
@O.command(L.tune, D.JSON, D.WIDE)
def tune(kernel, shapes, budget, dtype, seed, out, match, no_cache, yes, as_json, wide, sim, compiler):
    """Tune KERNEL: every rung x threads per block x tunable parameter at each shape, each checked
    against the float64 reference, then timed; the fastest per shape class goes to the tuned cache,
    which `auto` reads (lab run's launch note says "tuned (cache)" or "heuristic")."""
    from lab.cli.views import bench as V  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import bar_unless  # lazy: heavy for lab --help's start (lab.cli.views)

    with bar_unless(as_json, "tune") as progress:
        doc = L.tune(kernel, shapes=shapes, budget=budget, dtype=dtype, seed=seed, out=out, match=match,
                       no_cache=no_cache, sim=sim, compiler=compiler, yes=yes,
                       progress=progress or _quiet)
    if as_json:
        O.emit_json(doc)
        return
    _print(*V.tune_table(doc, wide=wide), *([f"wrote {escape(out)}"] if out else []), wide=wide)
    if not doc["entries"]:
        sys.exit(1)


COMMANDS = [bench, sweep, roofline, profile, compare, tune]
