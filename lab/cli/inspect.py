"""``lab grid``, ``lab occupancy``, ``lab doctor``: thin click commands over :mod:`lab.inspect`;
the tables and pictures are :mod:`lab.cli.views.inspect`."""
from __future__ import annotations

import sys

import click

from lab.cli import options as O


@click.command()
@click.argument("kernel")
@click.option("--variant", default=None, callback=O._not_empty, help="Numba variant (default: the kernel's first).")
@click.option("--size", default=None, callback=O._not_empty, help="Problem size as for lab run (default: a small one).")
@O.threads_option(256, "Threads per block.")
@click.option("--arch", default=None, callback=O._not_empty, help="sm_XX for waves (default: this GPU's, else sm_90).")
@click.option("--sms", type=click.IntRange(min=1), default=None, help="SM count for waves (default: this GPU's, else the arch's example GPU).")
@click.option("--waves/--no-waves", default=True, help="Compute waves (compiles the kernel to read its registers).")
@O.JSON
@click.option("--png", "png", default=None, help="Also draw the map to this PNG file (matplotlib).")
@click.option("--svg", "svg", default=None, help="Also draw the map to this SVG file (matplotlib).")
@click.option("--warp", "warp", type=click.IntRange(min=0), default=None,
              help="Also record warp N's global loads and stores (N = block id x warps a block + warp in the block): "
                   "--png/--svg colour the 32-byte sectors each of its requests touched; --json lists them.")
def grid(kernel, variant, size, threads, arch, sms, waves, as_json, png, svg, warp):
    """Show how KERNEL's launch maps blocks and threads to output elements (recorded in the simulator)."""
    from lab.library import grid as map_grid

    O.needs_plot(png, svg)
    info = map_grid(kernel, variant=variant, size=size, threads=threads, arch=arch, sms=sms, waves=waves, warp=warp)
    from lab.cli.views import inspect as V

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
@click.argument("kernel", required=False)
@click.option("--variant", default=None, callback=O._not_empty, help="Numba variant (default: the kernel's first).")
@O.threads_option(256, "Threads per block.")
@click.option("--arch", default=None, callback=O._not_empty, help="sm_XX (default: this GPU's; sm_90 without a GPU).")
@click.option("--registers", type=int, default=None, help="Calculator mode: registers per thread.")
@click.option("--shared", type=int, default=None, help="Calculator mode: shared memory per block, bytes (static + dynamic).")
@click.option("--sweep", is_flag=True, help="Threads per block 32..1024 in steps of 32.")
@click.option("--png", default=None, help="With --sweep: draw occupancy vs threads per block to this file.")
@O.JSON
@O.WIDE
@O.BACKEND
def occupancy(kernel, variant, threads, arch, registers, shared, sweep, png, as_json, wide, sim):
    """Theoretical occupancy of KERNEL (or of --registers/--shared in calculator mode) on --arch."""
    from kernels.spec import plural
    from lab.cli.views import inspect as V
    from lab.library import occupancy as calculate

    O.needs_plot(png)
    result = calculate(kernel, variant=variant, threads=threads, arch=arch, registers=registers, shared=shared,
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
@O.JSON
def doctor(as_json):
    """Check the environment: versions, CUDA driver, compilers, GPUs, CuPy, torch, a tiny kernel."""
    from lab.inspect import doctor as D
    from lab.library import doctor as run_checks

    results = run_checks()
    if as_json:
        O.emit_json(D.to_dict(results))
    else:
        from lab.cli.views.inspect import print_results

        print_results(results)
    sys.exit(1 if any(r.status == "fail" for r in results) else 0)


COMMANDS = [grid, occupancy, doctor]
