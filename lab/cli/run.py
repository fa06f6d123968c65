"""``lab run``, ``lab list``, ``lab device``: one kernel's variants beside the libraries, the catalog,
the GPU. Thin views: the work is :mod:`lab.library` (:func:`lab.bench.commands.run`, lab.core.commands); the tables are :mod:`lab.cli.views.report`."""
from __future__ import annotations

import sys

import click

from kernels import NAMES
from lab import library as L
from lab.cli import options as O, interrupt
from lab.core import options as D


@click.command(help=f"""Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it.

KERNEL is one of: {', '.join(NAMES)}. `lab list` shows their variants, contenders and sizes.""",
               short_help="Run, check and time a kernel's variants beside NumPy, CuPy and torch.")
@O.command(L.run, D.JSON, D.WIDE)
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, wide, yes, counters, sim,
        compiler, arrays, precision):
    from lab.cli.views import report  # lazy: heavy for lab --help's start (concurrent)

    engine = O.counters_engine(counters, sim, compiler)
    progress = report.LiveProgress(wide=wide, json=as_json)
    try:
        result = L.run(kernel, threads=threads, size=size, dtype=dtype, variant=variant, contenders=contenders,
                            repeats=repeats, warmup=warmup, seed=seed, yes=yes, counters=counters, sim=sim,
                            compiler=compiler, arrays=arrays, precision=precision, counters_engine=engine,
                            progress=progress)
    except KeyboardInterrupt:
        done = progress.interrupted()
        click.echo(interrupt.message(f"{done} row{'s' if done != 1 else ''} finished (shown above)"), err=True)
        sys.exit(interrupt.EXIT)
    finally:
        progress.close()  # a run stopped by Ctrl-C or an error leaves the terminal as it was
    if isinstance(result, dict):  # --compiler both: one row per variant and compiler
        O.emit_json(result) if as_json else report.print_compare(result, wide=wide)
        if any(r["status"] == "FAIL" for r in result["results"]):
            sys.exit(1)
        return
    if as_json:
        O.emit_json(result.to_dict())
    if any(r.status == "FAIL" for r in result.rows):
        sys.exit(1)
    if not any(r.status in ("ok", "FAIL") for r in result.rows):  # every row skipped: no verdict at all
        click.echo("error: nothing was checked: every row was skipped (see the reasons above)", err=True)
        sys.exit(1)


@click.command(name="list")
@O.command(L.list_kernels, D.JSON.but(help="Print one JSON list instead of text."))
def list_(as_json, sim):
    """List the kernels: their variants (the ladder's rungs), contenders and sizes."""
    info = L.list_kernels(sim=sim)
    if as_json:
        O.emit_json(info)
        return
    from lab.cli.views.report import print_list  # lazy: heavy for lab --help's start (concurrent)

    print_list(info)


@click.command()
@O.command(L.device, D.JSON)
def device(measure, as_json, sim):
    """Show the GPU's attributes (or what the simulator reports), and which compilers are usable."""
    info = L.device(measure=measure, sim=sim)
    if as_json:
        O.emit_json(info)
        return
    from lab.cli.views.report import print_device  # lazy: heavy for lab --help's start (concurrent)

    print_device(info)
