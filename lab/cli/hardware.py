"""``lab counters`` and ``lab sanitize``: what the hardware did (Nsight Compute counters, or sectors
counted in the simulator) and what NVIDIA's compute-sanitizer finds; thin click commands over
:mod:`lab.inspect.counters` and :mod:`lab.inspect.sanitize`, views in :mod:`lab.cli.views.hardware`."""
from __future__ import annotations

import sys

import click

from lab import library as L
from lab.cli import options as O
from lab.core import options as D


@click.command()
@O.command(L.counters, D.JSON, D.WIDE.but(help="Every column, however wide the terminal."))
def counters(kernel, variant, size, threads, dtype, contenders, seed, as_json, wide, tool, yes, sim):
    """Hardware counters of one call of each rung and library op (Nsight Compute, else CUPTI), with a
    verdict; --sim (the default without a GPU): sectors per request from the simulator's recorded
    addresses."""
    from lab.cli.views.progress import bar_unless  # lazy: heavy for lab --help's start (lab.cli.views)

    with bar_unless(as_json, "counters") as progress:
        doc = L.counters(kernel, variant=variant, size=size, threads=threads, dtype=dtype, contenders=contenders, seed=seed,
                    tool=tool, sim=sim, yes=yes, progress=progress)
    if as_json:
        O.emit_json(doc)
        return
    from lab.cli.views.hardware import print_counters  # lazy: heavy for lab --help's start (concurrent)

    print_counters(doc, wide=wide)


@click.command()
@O.command(L.sanitize, D.JSON)
def sanitize(kernel, variant, tools, size, threads, dtype, seed, as_json, sim):
    """Run each rung of KERNEL once under NVIDIA compute-sanitizer (kernels built with line info):
    clean, or how many errors and the first, by file and line. Exit 1 when anything was found."""
    from lab.cli.views.progress import bar_unless  # lazy: heavy for lab --help's start (lab.cli.views)

    with bar_unless(as_json, "sanitize") as progress:
        doc = L.sanitize(kernel, variant=variant, tools=tools, size=size, threads=threads, dtype=dtype, seed=seed,
                            sim=sim, progress=progress)
    if as_json:
        O.emit_json(doc)
    else:
        from lab.cli.views.hardware import print_sanitize  # lazy: heavy for lab --help's start (concurrent)

        print_sanitize(doc)
    sys.exit(1 if any(r["status"] in ("errors", "FAIL") for r in doc["rows"]) else 0)


COMMANDS = [counters, sanitize]
