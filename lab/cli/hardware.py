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
@O.yes_option("traced run")
@O.BACKEND
def counters(kernel, variant, size, threads, dtype, contenders, seed, as_json, wide, tool, yes, sim):
    """Hardware counters of one call of each rung and library op (Nsight Compute, else CUPTI), with a
    verdict; --sim (the default without a GPU): sectors per request from the simulator's recorded
    addresses."""
    from lab.cli.views.progress import bar_unless
    from lab.library import counters as count

    with bar_unless(as_json, "counters") as progress:
        doc = count(kernel, variant=variant, size=size, threads=threads, dtype=dtype, contenders=contenders, seed=seed,
                    tool=tool, sim=sim, yes=yes, progress=progress)
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
    from lab.cli.views.progress import bar_unless
    from lab.library import sanitize as run_sanitizer

    with bar_unless(as_json, "sanitize") as progress:
        doc = run_sanitizer(kernel, variant=variant, tools=tools, size=size, threads=threads, dtype=dtype, seed=seed,
                            sim=sim, progress=progress)
    if as_json:
        O.emit_json(doc)
    else:
        from lab.cli.views.hardware import print_sanitize

        print_sanitize(doc)
    sys.exit(1 if any(r["status"] in ("errors", "FAIL") for r in doc["rows"]) else 0)


COMMANDS = [counters, sanitize]
