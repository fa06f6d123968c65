"""The ``lab`` command: thin wrappers over library functions that the tests call too.

The backend (GPU or CUDA simulator) is chosen before anything imports ``numba.cuda``, so the heavy
modules are imported inside the commands.
"""
from __future__ import annotations

import json
import sys

import click

from lab.backend import select
from lab.errors import LabError

BACKEND = click.option("--sim/--gpu", "sim", default=None,
                       help="Force Numba's CUDA simulator or a GPU (default: a usable GPU, else the simulator).")

# One definition for every command that compiles kernels (lab run, lab bench, lab sweep): attach
# with @COMPILER and call _compiler(compiler, backend) right after _backend(sim).
COMPILER = click.option(
    "--compiler", type=click.Choice(["numba-cuda", "numba-cuda-mlir", "both"]), default=None,
    help="Compiler of the Numba kernels: numba-cuda (default; also LAB_COMPILER), numba-cuda-mlir "
         "(GPU only), or both (lab run: each rung once per compiler).")


def _backend(sim) -> str:
    return select("auto" if sim is None else ("sim" if sim else "gpu"))


def _compiler(compiler, backend: str, allow_both: bool = False) -> str:
    """Choose the compiler before anything compiles; LabError (exit 2) when it cannot run here."""
    from lab import compilers

    if compiler == "both":
        if not allow_both:
            raise LabError("--compiler both is only for lab run; choose numba-cuda or numba-cuda-mlir")
        return "both"
    return compilers.select(compiler, backend == "simulator")


def _csv(value):
    if value is None or value == "all":
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numba-gpu-lab")
def cli():
    """A hands-on lab for GPU programming from Python with Numba CUDA kernels."""


@cli.command()
@click.argument("kernel")
@click.option("--threads", type=int, default=None, help="Threads per block (default: 256 on a GPU, 32 in the simulator).")
@click.option("--size", default=None, help="vecadd/quantize N; matvec/softmax ROWSxCOLS; matmul MxNxK or N (default: per backend).")
@click.option("--dtype", default="float32", show_default=True)
@click.option("--variant", default=None, help="Comma-separated Numba variants (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,numpy,cupy,torch (default: all).")
@click.option("--repeats", type=int, default=None, help="Timed calls (default: 50 on a GPU, 3 in the simulator).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before timing (default: 5; 0 in the simulator).")
@click.option("--seed", type=int, default=None, help="Seed for the random inputs (default: fresh, printed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@BACKEND
@COMPILER
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, sim, compiler):
    """Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it."""
    backend = _backend(sim)
    if _compiler(compiler, backend, allow_both=True) == "both":
        from lab import report
        from lab.compare import run_both

        doc = run_both(dict(kernel=kernel, threads=threads, size=size, dtype=dtype, variant=variant,
                            contenders=contenders, repeats=repeats, warmup=warmup, seed=seed), backend)
        print(json.dumps(doc, indent=2, default=str)) if as_json else report.print_compare(doc)
        if any(r["status"] == "FAIL" for r in doc["results"]):
            sys.exit(1)
        return
    from lab import report
    from lab.runner import Options, run as run_kernel

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=_csv(variant),
                   contenders=_csv(contenders), repeats=repeats, warmup=warmup, seed=seed)
    result = run_kernel(opts, backend)
    if as_json:
        report.print_json(result)
    else:
        report.print_table(result)
    if any(r.status == "FAIL" for r in result.rows):
        sys.exit(1)


@cli.command()
@click.option("--measure", is_flag=True, help="Also measure device-to-device copy bandwidth.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@BACKEND
def device(measure, as_json, sim):
    """Show the GPU's attributes (or what the simulator reports), and which compilers are usable."""
    backend = _backend(sim)
    _compiler(None, backend)  # LAB_COMPILER from the environment: checked like --compiler
    from lab.device import describe, measure_copy_bandwidth

    info = dict(describe(backend == "simulator"))
    from lab.compilers import compilers_status

    info["compilers"] = {n: (f"usable ({st['version']})" if st["usable"] else st["why"])
                         for n, st in compilers_status(backend == "simulator").items()}
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
