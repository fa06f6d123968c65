"""``lab counters`` and ``lab sanitize``: what the hardware did (Nsight Compute counters, or sectors
counted in the simulator) and what NVIDIA's compute-sanitizer finds; thin click commands over
:mod:`lab.inspect.counters` and :mod:`lab.inspect.sanitize`, views in :mod:`lab.cli.views.hardware`."""
from __future__ import annotations

import sys

import click

from lab.cli import options as O


@click.command()
@click.argument("kernel")
@O.VARIANT
@O.SIZE
@O.threads_option()
@O.DTYPE
@O.CONTENDERS
@O.SEED
@O.JSON
@click.option("--wide", is_flag=True, help="Every column, however wide the terminal.")
@click.option("--tool", "tool", type=click.Choice(["auto", "ncu", "cupti"]), default="auto", show_default=True,
              help="On a GPU: Nsight Compute (ncu), CUPTI PM sampling (cupti-python: DRAM bytes and, where the "
                   "GPU offers them, sectors per request), or auto: ncu where found, else CUPTI.")
@O.BACKEND
def counters(kernel, variant, size, threads, dtype, contenders, seed, as_json, wide, tool, sim):
    """Hardware counters of one call of each rung and library op (Nsight Compute, else CUPTI), with a
    verdict; --sim (the default without a GPU): sectors per request from the simulator's recorded
    addresses."""
    backend = O.backend(sim)
    from lab.cli.views.progress import bar_unless
    from lab.inspect import counters as K

    with bar_unless(as_json, "counters") as progress:
        doc = K.counters(kernel, backend, O.csv(variant), size, threads, dtype, O.csv(contenders),
                         seed if seed is not None else 0, progress, tool=tool)
    if as_json:
        O.emit_json(doc)
        return
    from lab.cli.views.hardware import print_counters

    print_counters(doc, wide=wide)


@click.command()
@click.argument("kernel")
@O.VARIANT
@click.option("--tool", "tools", default="memcheck", show_default=True, callback=O._not_empty,
              help="Comma-separated from memcheck, racecheck, synccheck, initcheck.")
@click.option("--size", default=None, callback=O._not_empty,
              help="Problem size as for lab run (default: the simulator's small size).")
@O.threads_option(256, "Threads per block.")
@O.DTYPE
@O.SEED
@O.JSON
@O.BACKEND
def sanitize(kernel, variant, tools, size, threads, dtype, seed, as_json, sim):
    """Run each rung of KERNEL once under NVIDIA compute-sanitizer (kernels built with line info):
    clean, or how many errors and the first, by file and line. Exit 1 when anything was found."""
    from lab.core import sanitizer as San
    from lab.inspect import sanitize as S

    if San.find_sanitizer() is None:  # before choosing a backend: it is the first thing missing here
        from lab.core.errors import LabError

        raise LabError(San.unavailable_reason())
    backend = O.backend(sim)
    from lab.cli.views.progress import bar_unless

    with bar_unless(as_json, "sanitize") as progress:
        doc = S.sanitize(kernel, backend, O.csv(variant), O.csv(tools), size, threads, dtype,
                         seed if seed is not None else 0, progress)
    if as_json:
        O.emit_json(doc)
    else:
        from lab.cli.views.hardware import print_sanitize

        print_sanitize(doc)
    sys.exit(1 if any(r["status"] in ("errors", "FAIL") for r in doc["rows"]) else 0)


COMMANDS = [counters, sanitize]
