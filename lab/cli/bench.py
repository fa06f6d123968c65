"""``lab bench``, ``lab sweep``, ``lab roofline``, ``lab profile``, ``lab compare``: thin click
commands over :mod:`lab.bench`; the tables and plots are :mod:`lab.cli.views.bench`."""
from __future__ import annotations

import contextlib
import sys

import click
from rich.markup import escape

from lab.cli import options as O


def _quiet(done, total, label) -> None:
    """No progress to show."""


def _print(*renderables, wide: bool = False) -> None:
    from lab.cli.views.table import console, print_tables

    print_tables(console(), list(renderables), wide)


@click.command(short_help="Benchmark all kernels; markdown for docs.")
@click.argument("kernel_names", nargs=-1, metavar="[KERNEL]...")
@click.option("--kernels", "kernels", default=None, callback=O._not_empty,
              help="Comma-separated kernels, as the arguments (default: all).")
@click.option("--out", default=None, help="Write the markdown report to FILE (e.g. docs/benchmarks.md; '-': stdout).")
@click.option("--quick", is_flag=True, help="Each kernel's small simulator size at 32 threads (always so in the simulator).")
@O.repeats_option("Timed calls per contender (default on a GPU: the stop rule).")
@O.CONTENDERS
@O.SEED
@click.option("--json", "as_json", is_flag=True, help="Print the bench document (every run's --json dict) instead of markdown.")
@click.option("--from", "from_json", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Render the markdown from a saved `lab bench --json` file instead of running.")
@click.option("--shapes/--no-shapes", default=True, show_default=True,
              help="Add the public shape sweep (tiny, skinny, odd, huge shapes; best variant, auto, torch); GPU only.")
@click.option("--force", is_flag=True, help="Let a CUDA-simulator run replace an --out file that holds a GPU's results.")
@O.BACKEND
@O.COMPILER
def bench(kernel_names, kernels, out, quick, repeats, contenders, seed, as_json, from_json, shapes, force, sim, compiler):
    """Benchmark every kernel x variant x contender at the standard sizes; markdown for docs/benchmarks.md."""
    from kernels.spec import plural
    from lab.bench import suite as B
    from lab.library import bench as run_bench
    from lab.cli.views.progress import bar
    from lab.core.files import check_writable, write_atomic

    check_writable(out, "report")  # before minutes of benchmarks, not after
    with bar("bench") if not from_json else contextlib.nullcontext() as progress:
        doc = run_bench(kernel_names, kernels=kernels, quick=quick, repeats=repeats, contenders=contenders, seed=seed,
                        from_json=from_json, shapes=shapes, sim=sim, compiler=compiler, progress=progress or _quiet,
                        out=out, force=force)
    from lab.bench.compare import reading

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
@click.argument("kernel")
@click.option("--threads", "threads", default=None, callback=O._not_empty,
              help="Comma-separated threads per block, e.g. 32,64,128,256,512,1024.")
@click.option("--sizes", default=None, callback=O._not_empty,
              help="Comma-separated sizes, e.g. 1000,4096 or 48x80,96x160 (as lab run --size).")
@O.VARIANT
@O.CONTENDERS
@O.DTYPE
@O.repeats_option("Timed calls per configuration (default on a GPU: the stop rule; none in the simulator).")
@O.WARMUP
@O.SEED
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (every configuration's lab run --json dict).")
@click.option("--png", default=None, metavar="FILE", help="Plot the metric against threads per block (or size) to FILE (needs matplotlib).")
@click.option("--metric", type=click.Choice(["auto", "ms", "gbps", "gflops"]), default="auto", show_default=True,
              help="What --png plots (auto: GB/s when measured, else ms).")
@O.WIDE
@O.yes_option("sweep")
@O.BACKEND
@O.COMPILER
def sweep(kernel, threads, sizes, variant, contenders, dtype, repeats, warmup, seed, as_json, png, metric, wide,
          yes, sim, compiler):
    """Run KERNEL at every --threads and/or --sizes value: each checked and timed, as a table or a plot."""
    from lab.bench import sweep as S
    from lab.library import sweep as run_sweep
    from lab.cli.views import bench as V
    from lab.cli.views.progress import bar

    O.needs_plot(png)
    with bar("sweep") as progress:
        doc = run_sweep(kernel, threads=threads, sizes=sizes, variant=variant, contenders=contenders, dtype=dtype,
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
@click.option("--kernels", "kernels", default=None, callback=O._not_empty, help="Comma-separated kernels (default: all).")
@click.option("--contenders", default=None, callback=O._not_empty, help="Comma-separated from numba,cupy,torch (default: all three).")
@O.repeats_option("Timed calls per contender.")
@click.option("--from", "from_json", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Place the rows of saved lab run/bench/sweep --json files instead of running (repeatable).")
@click.option("--png", default=None, metavar="FILE", help="Draw the roofline to FILE (needs matplotlib).")
@O.JSON
@O.WIDE
@O.BACKEND
def roofline(kernels, contenders, repeats, from_json, png, as_json, wide, sim):
    """Place every kernel and variant by FLOP/byte against achieved FLOP/s, under this GPU's ceilings."""
    from lab.library import roofline as run_roofline
    from lab.cli.views import bench as V
    from lab.cli.views.progress import bar

    O.needs_plot(png)
    with bar("roofline") as progress:
        doc = run_roofline(kernels=kernels, contenders=contenders, repeats=repeats, from_json=from_json, sim=sim,
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
@click.argument("kernel")
@O.SIZE
@O.threads_option()
@O.VARIANT
@click.option("--contenders", default=None, callback=O._not_empty, help="Comma-separated from numba,torch (default: both).")
@O.DTYPE
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Calls per contender inside the profile (default: 20; 1 in the simulator).")
@O.SEED
@click.option("--trace", default=None, metavar="FILE", help="Write a Chrome/Perfetto trace (JSON) to FILE.")
@click.option("--row-limit", type=click.IntRange(min=1), default=15, show_default=True, help="Rows of the key_averages table.")
@O.WIDE
@O.yes_option("profile")
@O.BACKEND
def profile(kernel, size, threads, variant, contenders, dtype, repeats, seed, trace, row_limit, wide, yes, sim):
    """Profile KERNEL's Numba variants and torch ops with torch.profiler (CPU + CUDA), NVTX-named."""
    from lab.library import profile as run_profile

    doc = run_profile(kernel, size=size, threads=threads, variant=variant, contenders=contenders, dtype=dtype,
                      repeats=repeats, seed=seed, trace=trace, row_limit=row_limit, sim=sim, yes=yes)
    from lab.cli.views.bench import print_profile

    print_profile(doc, wide=wide)


@click.command(short_help="Speedup and noise between two --json files.")
@click.argument("a", type=click.Path(dir_okay=False), callback=O._not_empty)
@click.argument("b", type=click.Path(dir_okay=False), callback=O._not_empty)
@O.JSON
@O.WIDE
def compare(a, b, as_json, wide):
    """Compare two lab run/bench/sweep --json files: B's speedup over A per row, and whether it is beyond the noise."""
    from lab.bench import compare as K
    from lab.library import compare as run_compare
    from lab.cli.views import bench as V

    result = run_compare(a, b)
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
@click.argument("kernel")
@click.option("--shapes", default=None, callback=O._not_empty,
              help="Comma-separated sizes as lab run --size, e.g. 4096,1x4096x4096 (default: the public "
                   "sweep's shapes of KERNEL; a few tiny ones in the simulator).")
@click.option("--budget", type=float, default=None,
              help="Wall seconds for the whole search (default: 120 on a GPU, 30 in the simulator).")
@O.DTYPE
@O.SEED
@click.option("--out", default=None, metavar="FILE",
              help="Also write the winners as a shipped table to FILE (e.g. kernels/tuned/h100.json).")
@click.option("--match", default=None, callback=O._not_empty,
              help="With --out: the device-name text the shipped table applies to (e.g. H100).")
@click.option("--no-cache", is_flag=True, help="Do not write the winners to the user's tuned cache (a "
              "simulator search never writes it: simulated times say nothing of a GPU).")
@O.yes_option("search")
@O.JSON
@O.WIDE
@O.BACKEND
@O.COMPILER
def tune(kernel, shapes, budget, dtype, seed, out, match, no_cache, yes, as_json, wide, sim, compiler):
    """Tune KERNEL: every rung x threads per block x tunable parameter at each shape, each checked
    against the float64 reference, then timed; the fastest per shape class goes to the tuned cache,
    which `auto` reads (lab run's launch note says "tuned (cache)" or "heuristic")."""
    from lab.library import tune as run_tune
    from lab.cli.views import bench as V
    from lab.cli.views.progress import bar_unless

    with bar_unless(as_json, "tune") as progress:
        doc = run_tune(kernel, shapes=shapes, budget=budget, dtype=dtype, seed=seed, out=out, match=match,
                       no_cache=no_cache, sim=sim, compiler=compiler, yes=yes,
                       progress=progress or _quiet)
    if as_json:
        O.emit_json(doc)
        return
    _print(*V.tune_table(doc, wide=wide), *([f"wrote {escape(out)}"] if out else []), wide=wide)
    if not doc["entries"]:
        sys.exit(1)


COMMANDS = [bench, sweep, roofline, profile, compare, tune]
