"""``lab run``, ``lab list``, ``lab device``: one kernel's variants beside the libraries, the catalog,
the GPU. Thin: the work is :func:`lab.core.runner.run`; the tables are :mod:`lab.cli.views.report`."""
from __future__ import annotations

import sys

import click

from kernels import NAMES
from lab.cli import options as O


@click.command(help=f"""Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it.

KERNEL is one of: {', '.join(NAMES)}. `lab list` shows their variants, contenders and sizes.""",
               short_help="Run, check and time a kernel's variants beside NumPy, CuPy and torch.")
@click.argument("kernel", metavar="KERNEL")
@O.threads_option()
@O.SIZE
@O.DTYPE
@O.VARIANT
@O.CONTENDERS
@click.option("--repeats", type=int, default=None,
              help="Timed calls (default on a GPU: a stop rule, at least 10 calls and 0.25 s, more while noisy; "
                   "in the simulator: none, each variant is checked once).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before timing (default: 5; 0 in the simulator).")
@O.SEED
@O.JSON
@click.option("--wide", is_flag=True, help="Show every column, however wide the terminal.")
@click.option("--yes", is_flag=True,
              help="Start a simulator run estimated above 10 minutes anyway (without it: an error naming the "
                   "estimate and a smaller --size).")
@click.option("--counters", "counters", is_flag=True,
              help="Add two columns: DRAM bytes / the minimum traffic, and 32-byte sectors per global load request. "
                   "On a GPU every passed row is profiled once more, after the run, by Nsight Compute (else CUPTI); "
                   "in the simulator the Numba rows' checked calls are traced (simulated: from the recorded "
                   "addresses).")
@O.BACKEND
@O.COMPILER
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, wide, yes, counters, sim,
        compiler):
    from lab.cli.views import report

    chosen = O.session(sim, compiler, allow_both=True)
    backend = chosen.backend
    engine = None
    if counters:
        if chosen.compiler == "both":
            from lab.core.errors import LabError

            raise LabError("--counters counts one compiler's kernels: drop --compiler both, or run each compiler")
        if backend != "simulator":
            from lab.inspect import counters as K

            K.find_engine("auto")  # before the run: no engine is one line and exit 2, not a run without columns
            engine = K.for_run
    if chosen.compiler == "both":
        from lab.bench.compilers import run_both

        doc = run_both(dict(kernel=kernel, threads=threads, size=size, dtype=dtype, variant=variant,
                            contenders=contenders, repeats=repeats, warmup=warmup, seed=seed), backend)
        O.emit_json(doc) if as_json else report.print_compare(doc, wide=wide)
        if any(r["status"] == "FAIL" for r in doc["results"]):
            sys.exit(1)
        return
    from lab.core.runner import Options, run as run_kernel

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=O.csv(variant),
                   contenders=O.csv(contenders), repeats=repeats, warmup=warmup, seed=seed, yes=yes,
                   counters=counters, counters_engine=engine)
    progress = report.LiveProgress(wide=wide, json=as_json)
    try:
        result = run_kernel(opts, backend, progress=progress)
    finally:
        progress.close()  # a run stopped by Ctrl-C or an error leaves the terminal as it was
    if as_json:
        O.emit_json(result.to_dict())
    if any(r.status == "FAIL" for r in result.rows):
        sys.exit(1)
    if not any(r.status in ("ok", "FAIL") for r in result.rows):  # every row skipped: no verdict at all
        click.echo("error: nothing was checked: every row was skipped (see the reasons above)", err=True)
        sys.exit(1)


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list instead of text.")
@O.BACKEND
def list_(as_json, sim):
    """List the kernels: their variants (the ladder's rungs), contenders and sizes."""
    O.backend(sim)
    from lab.core.catalog import catalog

    info = catalog()
    if as_json:
        O.emit_json(info)
        return
    from lab.cli.views.report import print_list

    print_list(info)


@click.command()
@click.option("--measure", is_flag=True, help="Also measure device-to-device copy bandwidth.")
@O.JSON
@O.BACKEND
def device(measure, as_json, sim):
    """Show the GPU's attributes (or what the simulator reports), and which compilers are usable."""
    backend = O.session(sim).backend  # LAB_COMPILER from the environment: checked like --compiler
    from lab.core.device import device_info

    info = device_info(backend == "simulator", measure)
    if as_json:
        O.emit_json(info)
        return
    from lab.cli.views.report import print_device

    print_device(info)
