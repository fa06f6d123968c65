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


@cli.command()
@click.argument("kernel")
@click.option("--variant", default=None, help="Numba variant (default: the kernel's first rung).")
@click.option("--size", default=None, help="Problem size as for lab run (default: a small one).")
@click.option("--threads", type=int, default=256, show_default=True, help="Threads per block.")
@click.option("--arch", default=None, help="sm_XX for waves (default: this GPU's, else sm_90).")
@click.option("--sms", type=int, default=None, help="SM count for waves (default: this GPU's, else the arch's example GPU).")
@click.option("--waves/--no-waves", default=True, help="Compute waves (compiles the kernel to read its registers).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--png", "png", default=None, help="Also draw the map to this PNG file (matplotlib).")
@click.option("--svg", "svg", default=None, help="Also draw the map to this SVG file (matplotlib).")
def grid(kernel, variant, size, threads, arch, sms, waves, as_json, png, svg):
    """Show how KERNEL's launch maps blocks and threads to output elements (recorded in the simulator)."""
    select("sim")  # writes are tagged per simulated thread: the map always comes from the simulator
    from lab import grid as G

    info = G.describe(kernel, variant, size, threads, arch, sms, waves)
    for path in (png, svg):
        if path:
            G.plot_map(info, path)
    if as_json:
        print(json.dumps(info))
    else:
        G.print_grid(info)
        for path in (png, svg):
            if path:
                click.echo(f"wrote {path}")


@cli.command()
@click.argument("kernel", required=False)
@click.option("--variant", default=None, help="Numba variant (default: the kernel's first rung).")
@click.option("--threads", type=int, default=256, show_default=True, help="Threads per block.")
@click.option("--arch", default=None, help="sm_XX (default: this GPU's; sm_90 without a GPU).")
@click.option("--registers", type=int, default=None, help="Calculator mode: registers per thread.")
@click.option("--shared", type=int, default=None, help="Calculator mode: shared memory per block, bytes (static + dynamic).")
@click.option("--sweep", is_flag=True, help="Threads per block 32..1024 in steps of 32.")
@click.option("--png", default=None, help="With --sweep: draw occupancy vs threads per block to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@BACKEND
def occupancy(kernel, variant, threads, arch, registers, shared, sweep, png, as_json, sim):
    """Theoretical occupancy of KERNEL (or of --registers/--shared in calculator mode) on --arch."""
    from lab import archs
    from lab import occupancy as O

    if kernel is None:
        if registers is None:
            raise LabError("give KERNEL, or --arch, --registers and --shared for the calculator")
        try:
            a = archs.get(arch or "sm_90")
        except KeyError as e:
            raise LabError(e.args[0]) from None
        result = O.calculate(a, threads, registers, shared or 0)
    else:
        if registers is not None or shared is not None:
            raise LabError("--registers/--shared are for calculator mode (no KERNEL)")
        result = O.kernel_occupancy(kernel, variant, threads, arch, _backend(sim))
    points = None
    if sweep or png:
        a = archs.get(result["arch"])
        points = O.sweep(a, result["registers"], result["shared_bytes"])
        result["sweep"] = [{k: p[k] for k in ("threads", "active_blocks_per_sm", "active_warps_per_sm",
                                               "occupancy", "limiter")} for p in points]
        if png:
            name = f"{kernel} / {result.get('variant')}" if kernel else "calculator"
            O.plot_sweep(points, result["threads"], png,
                         f"{name} on {a.name}: {result['registers']} registers, {result['shared_bytes']} B shared a block")
    if as_json:
        print(json.dumps(result))
        return
    O.print_result(result)
    if points:
        O.print_sweep(points, result["threads"])
    if png:
        click.echo(f"wrote {png}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(as_json):
    """Check the environment: versions, CUDA driver, compilers, GPUs, CuPy, torch, a tiny kernel."""
    from lab import doctor as D

    results = D.run_checks()
    if as_json:
        print(json.dumps(D.to_json(results)))
    else:
        D.print_results(results)
    sys.exit(1 if any(r.status == "fail" for r in results) else 0)


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
