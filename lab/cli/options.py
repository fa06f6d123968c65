"""Options shared by the ``lab`` commands, written once: ``--json``, ``--seed``, ``--threads``,
``--size``, ``--variant``, ``--dtype``, ``--contenders``, ``--repeats``, ``--warmup``, ``--sim/--gpu``
and ``--compiler``; and the helpers that turn them into the engine's arguments.

An empty value (``--variant ''``) is bad input: one line naming the option, exit code 2.
"""
from __future__ import annotations

import json

import click

from kernels import size_forms
from lab.bench.commands import DTYPES  # every kernel's KernelSpec.dtypes today; the runner checks per kernel
from lab.core.errors import LabError


def _not_empty(ctx, param, value):
    """Click callback: an empty or blank value is bad input, named as the user spelled the option."""
    if isinstance(value, str) and not value.strip():
        name = param.human_readable_name if isinstance(param, click.Argument) else max(param.opts, key=len)
        raise LabError(f"{name} is empty: give a value or leave the option out")
    return value


def _csv_option(name, help_, dest=None):
    return click.option(name, dest or name.lstrip("-").replace("-", "_"), default=None, callback=_not_empty, help=help_)


JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
WIDE = click.option("--wide", is_flag=True, help="Show every column, however wide the terminal.")


def yes_option(what: str):
    """``--yes``: start a simulator ``what`` estimated above 10 minutes anyway (lab.core.simulator.refuse_long)."""
    return click.option("--yes", is_flag=True, help=f"Start a simulator {what} estimated above 10 minutes anyway "
                        "(without it: an error naming the estimate and what to shrink).")
SEED = click.option("--seed", type=click.IntRange(min=0), default=None,
                    help="Seed for the random inputs (a non-negative integer; default: fresh, printed).")
SIZE = click.option("--size", default=None, callback=_not_empty,
                    help=f"The problem size: {size_forms()} (default: per backend; `lab list` gives each kernel's).")
VARIANT = _csv_option("--variant", "Comma-separated Numba variants (default: all).")
CONTENDERS = _csv_option("--contenders", "Comma-separated from numba,numpy,cupy,torch,triton (default: all but triton).")
DTYPE = click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True,
                     help="Element type of the inputs (quantize writes uint8 codes).")
WARMUP = click.option("--warmup", type=click.IntRange(min=0), default=None,
                      help="Untimed calls before timing (default: 5 on a GPU; 0 in the simulator).")
BACKEND = click.option("--sim/--gpu", "sim", default=None,
                       help="Force Numba's CUDA simulator or a GPU (default: a usable GPU, else the simulator).")
# every command that compiles kernels: session(sim, compiler) fixes both at once
COMPILER = click.option(
    "--compiler", type=click.Choice(["numba-cuda", "numba-cuda-mlir", "both"]), default=None,
    help="Compiler of the Numba kernels: numba-cuda-mlir (GPU only; the default on a GPU where it is "
         "installed), numba-cuda (the simulator's, and the default elsewhere), or both (lab run: each "
         "variant once per compiler). Also LAB_COMPILER; `lab doctor` says which is used and why.")


def threads_option(default=None, help_="Threads per block (default: 256 on a GPU, 32 in the simulator)."):
    return click.option("--threads", type=int, default=default, show_default=default is not None, help=help_)


def repeats_option(help_="Timed calls (default on a GPU: the stop rule; 1 checked call, none timed, in the simulator)."):
    """``--repeats``: at least 1, the same declaration (and message) in every command that has it."""
    return click.option("--repeats", type=click.IntRange(min=1), default=None, help=help_)



def backend(sim) -> str:
    """--sim/--gpu (None: auto) -> "gpu" or "simulator", chosen before numba.cuda loads."""
    from lab.core.simulator import select

    return select("auto" if sim is None else ("sim" if sim else "gpu"))


def session(sim, compiler_=None, allow_both: bool = False):
    """--sim/--gpu and --compiler fixed once for this process (:func:`lab.core.session.start`), before
    anything compiles; LabError (exit 2) when either cannot be had here. ``compiler_`` None:
    LAB_COMPILER or numba-cuda; "both" only where ``allow_both`` (lab run)."""
    from lab.core.session import start

    return start("auto" if sim is None else ("sim" if sim else "gpu"), compiler_, allow_both)


def needs_plot(*paths) -> None:
    """Fail before any work when a picture is asked for and matplotlib is missing, or a path cannot
    be written (exit 2)."""
    from lab.core.files import check_writable

    for p in paths:
        check_writable(p, "picture")
    if any(paths):
        from lab.cli.views.plot import pyplot

        pyplot()


def emit_json(doc) -> None:
    """Print a JSON document (a result's ``to_dict()``) as the commands' ``--json`` output."""
    print(json.dumps(doc, indent=2, default=str))


def counters_engine(counters: bool, sim, compiler=None):
    """``lab run --counters`` on a GPU: the engine that profiles the passed rows afterwards
    (lab.inspect.counters.for_run), checked before the run (no ncu nor CUPTI is one line and exit 2,
    not a run without the columns); None in the simulator (the runner traces the rows itself), with
    --compiler both (the library's error says why) or without --counters."""
    if not counters:
        return None
    chosen = session(sim, compiler, allow_both=True)
    if chosen.compiler == "both" or chosen.backend == "simulator":
        return None
    from lab.inspect import counters as K

    K.find_engine("auto")
    return K.for_run
