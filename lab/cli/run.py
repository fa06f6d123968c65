"""``lab run``, ``lab list``, ``lab device``: one kernel's variants beside the libraries, the catalog,
the GPU. Thin views: the work is :mod:`lab.library` (:func:`lab.bench.commands.run`, lab.core.commands); the tables are :mod:`lab.cli.views.report`."""
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
@O.repeats_option("Timed calls (default on a GPU: a stop rule, at least 10 calls and 0.25 s, more while noisy; "
                  "in the simulator: none, each variant is checked once).")
@O.WARMUP
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
@click.option("--arrays", type=click.Choice(["numba", "torch", "cupy"]), default="numba", show_default=True,
              help="Who owns the Numba rows' device buffers (inputs, outputs and their canaries, the rungs' "
                   "scratch): numba (cuda.to_device / cuda.device_array), torch (CUDA tensors) or cupy; the "
                   "kernels take all three, zero-copy, under both compilers (docs/compilers.md, \"Device "
                   "arrays\"). torch and cupy need a GPU with that library installed.")
@click.option("--precision", type=click.Choice(["highest", "high", "medium"]), default=None,
              help="What a float32 matmul's auto may run, in torch's float32_matmul_precision words: highest (SIMT "
                   "FP32 only), high (also 3xTF32 on tensor cores, FP32-accurate: the default), medium (also TF32, "
                   "checked at TF32's tolerance). Rungs named with --variant run whatever it says.")
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, wide, yes, counters, sim,
        compiler, arrays, precision):
    from lab.library import run as run_kernel
    from lab.cli.views import report

    engine = O.counters_engine(counters, sim, compiler)
    progress = report.LiveProgress(wide=wide, json=as_json)
    try:
        result = run_kernel(kernel, threads=threads, size=size, dtype=dtype, variant=variant, contenders=contenders,
                            repeats=repeats, warmup=warmup, seed=seed, yes=yes, counters=counters, sim=sim,
                            compiler=compiler, arrays=arrays, precision=precision, counters_engine=engine,
                            progress=progress)
    except KeyboardInterrupt:
        from lab.cli import interrupt

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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list instead of text.")
@O.BACKEND
def list_(as_json, sim):
    """List the kernels: their variants (the ladder's rungs), contenders and sizes."""
    from lab.library import list_kernels

    info = list_kernels(sim=sim)
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
    from lab.library import device as device_info

    info = device_info(measure=measure, sim=sim)
    if as_json:
        O.emit_json(info)
        return
    from lab.cli.views.report import print_device

    print_device(info)
