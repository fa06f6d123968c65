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


def _backend(sim) -> str:
    return select("auto" if sim is None else ("sim" if sim else "gpu"))


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
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, sim):
    """Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it."""
    backend = _backend(sim)
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


@cli.group()
def exercise():
    """Exercises: scaffolds to fill in, hidden tests that catch real GPU bugs, hints, solutions."""


DIR = click.option("--dir", "directory", default=None, help="Workspace (default ./lab-exercises or $LAB_EXERCISES_DIR).")


@exercise.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@DIR
def exercise_list(as_json, directory):
    """Every exercise, in order: name, title, difficulty, status."""
    from lab import exercise as E, exercise_view as V

    rows = E.listing(directory)
    print(json.dumps(rows, indent=2)) if as_json else V.print_list(rows)


@exercise.command("start")
@click.argument("name")
@DIR
def exercise_start(name, directory):
    """Copy NAME's scaffold (DIR/NAME.py) and visible test; prints the path."""
    from lab import exercise as E, exercise_view as V

    V.print_started(E.start(name, directory), E.statement(name))


@exercise.command("check")
@click.argument("name")
@click.option("--file", "file", default=None, help="The file to check (default: DIR/NAME.py).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--timeout", type=float, default=None, help="Seconds per test (default 30 or $LAB_EXERCISE_TIMEOUT).")
@click.option("--seed", type=int, default=None, help="Seed for the hidden tests' random inputs.")
@DIR
@BACKEND
def exercise_check(name, file, as_json, timeout, seed, directory, sim):
    """Run NAME's hidden tests on your file; exit 0 when all pass, 1 when any fails."""
    from lab import exercise as E, exercise_view as V

    result = E.check(name, file, directory, "auto" if sim is None else ("sim" if sim else "gpu"), timeout, seed)
    print(json.dumps(result, indent=2)) if as_json else V.print_check(result)
    sys.exit(0 if result["passed"] else 1)


@exercise.command("hint")
@click.argument("name")
@DIR
def exercise_hint(name, directory):
    """Show NAME's next hint (remembered in the workspace)."""
    from lab import exercise as E, exercise_view as V

    V.print_hint(name, *E.hint(name, directory))


@exercise.command("solution")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask: print the reference solution.")
def exercise_solution(name, yes):
    """Print NAME's reference solution (asks first; changes no file)."""
    from lab import exercise as E

    E.get(name)
    if not yes and not click.confirm(f"Show the reference solution of {name}?", default=False, err=True):
        raise click.exceptions.Abort()
    click.echo(E.solution(name), nl=False)


@exercise.command("new")
@click.argument("name")
@click.option("--title", default="TODO title", help="The exercise's title.")
def exercise_new(name, title):
    """Scaffold a new exercise exercises/NAME/ for instructors."""
    from lab import exercise as E

    click.echo(f"created {E.new(name, title)}: fill in meta.py, hidden.py, scaffold.py, solution.py, test_visible.py")


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
