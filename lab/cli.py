"""The ``lab`` command: thin wrappers over library functions that the tests call too.

The backend (GPU or CUDA simulator) is chosen before anything imports ``numba.cuda``, so the heavy
modules are imported inside the commands.
"""
from __future__ import annotations

import json
import sys

import click

from kernels import NAMES
from lab.backend import select
from lab.errors import LabError

BACKEND = click.option("--sim/--gpu", "sim", default=None,
                       help="Force Numba's CUDA simulator or a GPU (default: a usable GPU, else the simulator).")


def _backend(sim) -> str:
    return select("auto" if sim is None else ("sim" if sim else "gpu"))


DTYPES = ("float32", "float64")  # every kernel's KernelSpec.dtypes today; the runner checks per kernel


def _csv(value):
    if value is None or value == "all":
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numba-gpu-lab")
def cli():
    """A hands-on lab for GPU programming from Python with Numba CUDA kernels."""


@cli.command(help=f"""Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it.

KERNEL is one of: {', '.join(NAMES)}. `lab list` shows their rungs, contenders and sizes.""",
             short_help="Run, check and time a kernel's rungs beside NumPy, CuPy and torch.")
@click.argument("kernel", metavar="KERNEL")
@click.option("--threads", type=int, default=None, help="Threads per block (default: 256 on a GPU, 32 in the simulator).")
@click.option("--size", default=None, help="vecadd/quantize N; matvec/softmax ROWSxCOLS; matmul MxNxK or N (default: per backend).")
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True,
              help="Element type of the inputs (quantize writes uint8 codes).")
@click.option("--variant", default=None, help="Comma-separated Numba variants (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,numpy,cupy,torch (default: all).")
@click.option("--repeats", type=int, default=None, help="Timed calls (default: 50 on a GPU, 3 in the simulator).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before timing (default: 5; 0 in the simulator).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the random inputs (default: fresh, printed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--wide", is_flag=True, help="Show every column, however wide the terminal.")
@BACKEND
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, wide, sim):
    backend = _backend(sim)
    from lab import report
    from lab.runner import Options, run as run_kernel

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=_csv(variant),
                   contenders=_csv(contenders), repeats=repeats, warmup=warmup, seed=seed)
    progress = report.LiveProgress(wide=wide, json=as_json)
    try:
        result = run_kernel(opts, backend, progress=progress)
    finally:
        progress.close()  # a run stopped by Ctrl-C or an error leaves the terminal as it was
    if as_json:
        report.print_json(result)
    if any(r.status == "FAIL" for r in result.rows):
        sys.exit(1)


@cli.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list instead of text.")
@BACKEND
def list_(as_json, sim):
    """List the kernels: their rungs (Numba variants), contenders and sizes."""
    _backend(sim)
    from lab.catalog import catalog

    info = catalog()
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from lab.report import print_list

    print_list(info)


@cli.command()
@click.option("--measure", is_flag=True, help="Also measure device-to-device copy bandwidth.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@BACKEND
def device(measure, as_json, sim):
    """Show the GPU's attributes (or what the simulator reports)."""
    backend = _backend(sim)
    from lab.device import describe, measure_copy_bandwidth

    info = dict(describe(backend == "simulator"))
    if measure and backend == "gpu":
        info["measured_copy"] = measure_copy_bandwidth()
    elif measure:
        info["measured_copy"] = "not measured: the CUDA simulator has no device memory to time"
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from lab.report import print_device

    print_device(info)


def main(argv=None) -> None:
    """Entry point: click errors and LabError become one line on stderr and exit code 2."""
    try:
        cli.main(args=argv, prog_name="lab", standalone_mode=False)
    except LabError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
