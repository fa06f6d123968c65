"""The ``lab`` command: click commands grouped by what they show, over the library the tests call too.

    lab run | list | device                      lab.cli.run       -> lab.core
    lab bench | sweep | roofline | profile | compare   lab.cli.bench -> lab.bench
    lab grid | occupancy | doctor                lab.cli.inspect   -> lab.inspect
    lab counters | sanitize                      lab.cli.hardware  -> lab.inspect
    lab exercise ...                             lab.cli.exercise  -> lab.teach

Each command is a view over its library function (:mod:`lab.library`: lab.bench/inspect/core.commands),
which checks the options and does the work; the notebook API (:mod:`lab.cli.api`) is another view over
the same functions. Every option is declared once, in :mod:`lab.core.options`, and each command's
click parameters are made from its library function's declarations (:func:`lab.cli.options.command`);
tables, progress and plots are :mod:`lab.cli.views`. This package is the only place that prints or draws, and nothing
imports it but the entry points (``lab``, ``python -m lab``, the forwarding script modules).

The backend (GPU or CUDA simulator) is chosen before anything imports ``numba.cuda``, so the heavy
modules are imported inside the commands. The process entry points (the ``lab`` script,
``python -m lab``) call :func:`entry`, which ends the process as soon as the command is done
(:func:`exit_now`); code that calls :func:`main` in its own process keeps the usual exit.
"""
from __future__ import annotations

import os
import sys
import atexit
import shutil
import threading

import click

# The launch table and `lab occupancy` show each grid and what it leaves idle; Numba's "grid size N
# will likely result in GPU under-utilization" warning (both compilers read this variable) would
# only repeat it, once per small launch, between the table rows.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from lab.cli import bench, exercise, hardware, inspect, interrupt, run  # noqa: E402
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
    _sane_columns()
    try:
        if not _help_only(argv):  # a bad setting still lets --help, --version and lab doctor (which lists it) through
            from lab.core.settings import validate  # lazy: heavy for lab --help's start (lab.core.settings)

            validate()
        cli.main(args=argv, prog_name="lab", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as e:  # `lab`, `lab exercise`: the usual help, exit 0
        click.echo(e.ctx.get_help())
        sys.exit(0)
    except LabError as e:
        click.echo(f"error: {one_line(e)}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"error: {one_line(e.format_message())}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort as e:  # click turns Ctrl-C into Abort; a refused prompt is one too
        if isinstance(e.__context__, KeyboardInterrupt) or interrupt.came():
            _interrupted()
        click.echo("aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit:
        raise
    except Exception as e:
        from lab.core.settings import on  # lazy: heavy for lab --help's start (lab.core.settings)

        if on("LAB_DEBUG"):
            raise
        click.echo(f"error: internal error (a bug in the lab, please report it): {type(e).__name__}: "
                   f"{one_line(e)} (LAB_DEBUG=1 shows the traceback)", err=True)
        sys.exit(3)


def entry() -> None:
    """The process entry of ``lab`` and ``python -m lab``: :func:`main`, then :func:`exit_now` with its
    exit code (a KeyboardInterrupt ends the process the usual way)."""
    interrupt.install()
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's line was printed
        code = interrupt.EXIT
    if interrupt.came() and code != interrupt.EXIT:  # an interrupt Python swallowed: never lost
        click.echo(interrupt.message(), err=True)
        code = interrupt.EXIT
    exit_now(code)


def _help_only(argv) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return not args or any(a in ("-h", "--help", "--version") for a in args) or args[0] == "doctor"


def _interrupted() -> None:
    """Ctrl-C anywhere in a command: one line, exit 130 (what the command finished is already shown)."""
    click.echo(interrupt.message(), err=True)
    sys.exit(interrupt.EXIT)


MIN_COLUMNS = 40  # below this (or a COLUMNS that is not a number) the tables are laid out for 80


def _sane_columns() -> None:
    """COLUMNS (or the terminal's width) below :data:`MIN_COLUMNS`, or not a number: 80 instead, so that
    every command renders something readable and a verdict is never squeezed out of its line."""
    value = os.environ.get("COLUMNS")
    if value is None:
        width = shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80
    else:
        try:
            width = int(value.strip())
        except ValueError:
            width = 0
    if width < MIN_COLUMNS:
        os.environ["COLUMNS"] = "80"


# A profiler, sanitizer or counter library loaded into the process (Nsight Systems and Compute,
# compute-sanitizer, the CUPTI child of lab counters) may write its results when the process tears down.
INJECTED = ("CUDA_INJECTION64_PATH", "LD_PRELOAD")


def exit_now(code=0) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) without tearing the interpreter down:
    the ``atexit`` handlers run (weakref finalizers, logging, the libraries' own), stdout and stderr
    are flushed, then ``os._exit``. What is skipped is the teardown itself: clearing every module and
    collecting every object, and the C++ destructors of the libraries a GPU run loads (torch, CuPy,
    the compiler, the CUDA driver's contexts, whose memory the driver frees with the process):
    work that changes nothing once the process ends (0.3 s with torch's CPU build and Numba on a
    2-core host). The usual ``sys.exit`` instead where a thread that is not a daemon is still
    running (the interpreter would wait for it), or a profiler or sanitizer library is injected
    (``INJECTED``: it may write its results at teardown)."""
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("text"): the text on stderr, exit code 1
        print(code, file=sys.stderr)
        code = 1
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others or any(os.environ.get(name) for name in INJECTED):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe (lab run ... | head): the interpreter's own exit reports it
        sys.exit(code)
    os._exit(code)


def one_line(message) -> str:
    """A message as one line: an error is one line on stderr, whatever the exception carried."""
    return " ".join(str(message).split()) or "(no message)"
