"""The ``lab`` command: click commands grouped by what they show, over the library the tests call too.

    lab run | list | device                      lab.cli.run       -> lab.core
    lab bench | sweep | roofline | profile | compare   lab.cli.bench -> lab.bench
    lab grid | occupancy | doctor                lab.cli.inspect   -> lab.inspect
    lab counters | sanitize                      lab.cli.hardware  -> lab.inspect
    lab exercise ...                             lab.cli.exercise  -> lab.teach

Each command is a view over its library function (:mod:`lab.library`: lab.bench/inspect/core.commands),
which checks the options and does the work; the notebook API (:mod:`lab.cli.api`) is another view over
the same functions. Options shared by several commands are written once in :mod:`lab.cli.options`;
tables, progress and plots are :mod:`lab.cli.views`. This package is the only place that prints or draws, and nothing
imports it but the entry points (``lab``, ``python -m lab``, the forwarding script modules).

The backend (GPU or CUDA simulator) is chosen before anything imports ``numba.cuda``, so the heavy
modules are imported inside the commands.
"""
from __future__ import annotations

import os
import sys

import click

# The launch table and `lab occupancy` show each grid and what it leaves idle; Numba's "grid size N
# will likely result in GPU under-utilization" warning (both compilers read this variable) would
# only repeat it, once per small launch, between the table rows.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from lab.cli import bench, exercise, hardware, inspect, run  # noqa: E402
from lab.core.errors import LabError  # noqa: E402


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numba-gpu-lab")
def cli():
    """A hands-on lab for GPU programming from Python with Numba CUDA kernels."""


for command in (run.run, run.list_, run.device, *bench.COMMANDS, *inspect.COMMANDS, *hardware.COMMANDS,
                exercise.exercise):
    cli.add_command(command)


def main(argv=None) -> None:
    """Entry point: click errors and LabError become one line on stderr and exit code 2.

    Anything else is a bug of the lab: one line saying so, exit code 3 (``LAB_DEBUG=1`` shows the
    traceback instead)."""
    try:
        cli.main(args=argv, prog_name="lab", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as e:  # `lab`, `lab exercise`: the usual help, exit 0
        click.echo(e.ctx.get_help())
        sys.exit(0)
    except LabError as e:
        click.echo(f"error: {_one_line(e)}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"error: {_one_line(e.format_message())}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as e:
        if os.environ.get("LAB_DEBUG"):
            raise
        click.echo(f"error: internal error (a bug in the lab, please report it): {type(e).__name__}: "
                   f"{_one_line(e)} (LAB_DEBUG=1 shows the traceback)", err=True)
        sys.exit(3)


def _one_line(message) -> str:
    """A message as one line: an error is one line on stderr, whatever the exception carried."""
    return " ".join(str(message).split()) or "(no message)"
