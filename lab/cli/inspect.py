"""``lab grid``, ``lab occupancy``, ``lab doctor``: thin click commands over :mod:`lab.inspect`;
the tables and pictures are :mod:`lab.cli.views.inspect`."""
from __future__ import annotations

import sys

import click

from lab import library as L
from lab.cli import options as O
from lab.core import options as D


@click.command()
@O.command(L.grid, D.JSON, D.PNG, D.SVG)
def grid(kernel, variant, size, threads, arch, sms, waves, as_json, png, svg, warp):
    """Show how KERNEL's launch maps blocks and threads to output elements (recorded in the simulator)."""
    O.needs_plot(png, svg)
    info = L.grid(kernel, variant=variant, size=size, threads=threads, arch=arch, sms=sms, waves=waves, warp=warp)
    from lab.cli.views import inspect as V  # lazy: heavy for lab --help's start (concurrent)

    for path, fmt in ((png, "png"), (svg, "svg")):
        if path:
            V.plot_map(info, path, fmt)
    if as_json:
        O.emit_json(info)
    else:
        V.print_grid(info)
        for path in (png, svg):
            if path:
                click.echo(f"wrote {path}")


@click.command()
@O.command(L.occupancy, D.PNG.but(help="With --sweep: draw occupancy vs threads per block to this file."), D.JSON,
           D.WIDE)
def occupancy(kernel, variant, threads, arch, registers, shared, sweep, png, as_json, wide, sim):
    """Theoretical occupancy of KERNEL (or of --registers/--shared in calculator mode) on --arch."""
    from kernels.spec import plural  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views import inspect as V  # lazy: heavy for lab --help's start (concurrent)

    O.needs_plot(png)
    result = L.occupancy(kernel, variant=variant, threads=threads, arch=arch, registers=registers, shared=shared,
                       sweep=bool(sweep or png), sim=sim)
    if png:
        name = f"{kernel} / {result.get('variant')}" if kernel else "calculator"
        V.plot_sweep(result["sweep"], result["threads"], png,
                     f"{name} on {result['arch']}: {plural(result['registers'], 'register')}, "
                     f"{result['shared_bytes']} B shared a block")
    if as_json:
        O.emit_json(result)
        return
    V.print_result(result, wide=wide)
    if result.get("sweep"):
        V.print_sweep(result["sweep"], result["threads"], wide=wide)
    if png:
        click.echo(f"wrote {png}")


@click.command()
@O.command(L.doctor, D.JSON)
def doctor(as_json):
    """Check the environment: versions, CUDA driver, compilers, GPUs, CuPy, torch, a tiny kernel."""
    from lab.inspect import doctor  # lazy: heavy for lab --help's start (ctypes)

    results = L.doctor()
    if as_json:
        O.emit_json(doctor.to_dict(results))
    else:
        from lab.cli.views.inspect import print_results  # lazy: heavy for lab --help's start (concurrent)

        print_results(results)
    sys.exit(1 if any(r.status == "fail" for r in results) else 0)


COMMANDS = [grid, occupancy, doctor]
