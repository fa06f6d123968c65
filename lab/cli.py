"""The ``lab`` command: thin wrappers over library functions that the tests call too.

The backend (GPU or CUDA simulator) is chosen before anything imports ``numba.cuda``, so the heavy
modules are imported inside the commands.
"""
from __future__ import annotations

import json
import os
import sys

import click

# The launch table and `lab occupancy` show each grid and what it leaves idle; Numba's "grid size N
# will likely result in GPU under-utilization" warning (both compilers read this variable) would
# only repeat it, once per small launch, between the table rows.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from kernels import NAMES
from lab.backend import select
from lab.errors import LabError

BACKEND = click.option("--sim/--gpu", "sim", default=None,
                       help="Force Numba's CUDA simulator or a GPU (default: a usable GPU, else the simulator).")

# One definition for every command that compiles kernels (lab run, lab bench, lab sweep): attach
# with @COMPILER and call _compiler(compiler, backend) right after _backend(sim).
COMPILER = click.option(
    "--compiler", type=click.Choice(["numba-cuda", "numba-cuda-mlir", "both"]), default=None,
    help="Compiler of the Numba kernels: numba-cuda (default; also LAB_COMPILER), numba-cuda-mlir "
         "(GPU only), or both (lab run: each rung once per compiler).")


def _backend(sim) -> str:
    return select("auto" if sim is None else ("sim" if sim else "gpu"))


DTYPES = ("float32", "float64")  # every kernel's KernelSpec.dtypes today; the runner checks per kernel


def _compiler(compiler, backend: str, allow_both: bool = False) -> str:
    """Choose the compiler before anything compiles; LabError (exit 2) when it cannot run here."""
    from lab import compilers

    if compiler == "both":
        if not allow_both:
            raise LabError("--compiler both is only for lab run; choose numba-cuda or numba-cuda-mlir")
        return "both"
    return compilers.select(compiler, backend == "simulator")


def _csv(value):
    if value is None or value == "all":
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numba-gpu-lab")
def cli():
    """A hands-on lab for GPU programming from Python with Numba CUDA kernels."""


@cli.command(help=f"""Run KERNEL's Numba variants beside NumPy, CuPy and torch: check each, then time it.

KERNEL is one of: {', '.join(NAMES)}. `lab list` shows their rungs, contenders and sizes.""",
             short_help="Run, check and time a kernel's rungs beside NumPy, CuPy and torch.")
@click.argument("kernel", metavar="KERNEL")
@click.option("--threads", type=int, default=None, help="Threads per block (default: 256 on a GPU, 32 in the simulator).")
@click.option("--size", default=None, help="vecadd/quantize N; matvec/softmax ROWSxCOLS; matmul MxNxK or N (default: per backend).")
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True,
              help="Element type of the inputs (quantize writes uint8 codes).")
@click.option("--variant", default=None, help="Comma-separated Numba variants (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,numpy,cupy,torch (default: all).")
@click.option("--repeats", type=int, default=None, help="Timed calls (default on a GPU: a stop rule, at least 10 calls and 0.25 s, more while noisy; 2 in the simulator).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before timing (default: 5; 0 in the simulator).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the random inputs (default: fresh, printed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--wide", is_flag=True, help="Show every column, however wide the terminal.")
@BACKEND
@COMPILER
def run(kernel, threads, size, dtype, variant, contenders, repeats, warmup, seed, as_json, wide, sim, compiler):
    backend = _backend(sim)
    if _compiler(compiler, backend, allow_both=True) == "both":
        from lab import report
        from lab.compiler_compare import run_both

        doc = run_both(dict(kernel=kernel, threads=threads, size=size, dtype=dtype, variant=variant,
                            contenders=contenders, repeats=repeats, warmup=warmup, seed=seed), backend)
        print(json.dumps(doc, indent=2, default=str)) if as_json else report.print_compare(doc)
        if any(r["status"] == "FAIL" for r in doc["results"]):
            sys.exit(1)
        return
    from lab import report
    from lab.runner import Options, run as run_kernel

    opts = Options(kernel=kernel, threads=threads, size=size, dtype=dtype, variants=_csv(variant),
                   contenders=_csv(contenders), repeats=repeats, warmup=warmup, seed=seed)
    progress = report.LiveProgress(wide=wide, json=as_json)
    try:
        result = run_kernel(opts, backend, progress=progress)
    finally:
        progress.close()  # a run stopped by Ctrl-C or an error leaves the terminal as it was
    if as_json:
        report.print_json(result)
    if any(r.status == "FAIL" for r in result.rows):
        sys.exit(1)
    if not any(r.status in ("ok", "FAIL") for r in result.rows):  # every row skipped: no verdict at all
        click.echo("error: nothing was checked: every row was skipped (see the reasons above)", err=True)
        sys.exit(1)


@cli.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list instead of text.")
@BACKEND
def list_(as_json, sim):
    """List the kernels: their rungs (Numba variants), contenders and sizes."""
    _backend(sim)
    from lab.catalog import catalog

    info = catalog()
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from lab.report import print_list

    print_list(info)


@cli.command()
@click.option("--measure", is_flag=True, help="Also measure device-to-device copy bandwidth.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@BACKEND
def device(measure, as_json, sim):
    """Show the GPU's attributes (or what the simulator reports), and which compilers are usable."""
    backend = _backend(sim)
    _compiler(None, backend)  # LAB_COMPILER from the environment: checked like --compiler
    from lab.device import describe, measure_copy_bandwidth

    info = dict(describe(backend == "simulator"))
    from lab.compilers import compilers_status

    info["compilers"] = {n: (f"usable ({st['version']})" if st["usable"] else st["why"])
                         for n, st in compilers_status(backend == "simulator").items()}
    if measure and backend == "gpu":
        info["measured_copy"] = measure_copy_bandwidth()
    elif measure:
        info["measured_copy"] = "not measured: the CUDA simulator has no device memory to time"
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from lab.report import print_device

    print_device(info)



# --- issue 7: bench, sweep, roofline, profile, compare (thin wrappers; the work is in lab/<command>.py) ---
def _print(*renderables) -> None:
    from rich.console import Console

    console = Console()
    for r in renderables:
        console.print(r)


def _needs_plot(png) -> None:
    """Fail before any work when --png is asked for and matplotlib is missing (exit 2)."""
    if png:
        from lab.plot import pyplot

        pyplot()


def _kernel_list(names) -> list[str]:
    import kernels

    for n in names:
        try:
            kernels.load(n)
        except KeyError as e:
            raise LabError(e.args[0]) from None
    return list(names) or list(kernels.NAMES)


@cli.command(short_help="Benchmark all kernels; markdown for docs.")
@click.argument("kernel_names", nargs=-1, metavar="[KERNEL]...")
@click.option("--kernels", "kernels_csv", default=None, help="Comma-separated kernels, as the arguments (default: all).")
@click.option("--out", default=None, help="Write the markdown report to FILE (e.g. docs/benchmarks.md; '-': stdout).")
@click.option("--quick", is_flag=True, help="Each kernel's small simulator size at 32 threads (always so in the simulator).")
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Timed calls per contender (default on a GPU: the stop rule).")
@click.option("--contenders", default=None, help="Comma-separated from numba,numpy,cupy,torch (default: all).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the random inputs (default: fresh, recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print the bench document (every run's --json dict) instead of markdown.")
@click.option("--from", "from_json", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Render the markdown from a saved `lab bench --json` file instead of running.")
@click.option("--shapes/--no-shapes", default=True, show_default=True,
              help="Add the public shape sweep (tiny, skinny, odd, huge shapes; best rung, auto, torch); GPU only.")
@BACKEND
@COMPILER
def bench(kernel_names, kernels_csv, out, quick, repeats, contenders, seed, as_json, from_json, shapes, sim, compiler):
    """Benchmark every kernel x rung x contender at the standard sizes; markdown for docs/benchmarks.md."""
    from lab import bench as B

    if from_json:
        with open(from_json) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or "reports" not in doc:
            raise LabError(f"{from_json}: not a `lab bench --json` document (no 'reports')")
    else:
        backend = _backend(sim)
        _compiler(compiler, backend)
        names = _kernel_list(list(kernel_names) + (_csv(kernels_csv) or []))
        from lab.progress import bar

        with bar("bench") as progress:
            doc = B.run_bench(names, backend, repeats=repeats, quick=quick, contenders=_csv(contenders),
                              seed=seed, progress=progress, shapes=shapes and not quick and not kernel_names
                              and not kernels_csv)
    text = B.render_markdown(doc)
    if out and out != "-":
        with open(out, "w") as f:
            f.write(text + "\n")
        click.echo(f"wrote {out} ({len(doc['reports'])} runs)", err=True)
    if as_json:
        print(json.dumps(doc, indent=2, default=str))
    elif not out or out == "-":
        print(text)
    if any(not r["ok"] and r["status"] == "FAIL" for rep in doc["reports"] for r in rep["results"]):
        sys.exit(1)


@cli.command(short_help="Run a kernel over threads per block and/or sizes.")
@click.argument("kernel")
@click.option("--threads", "threads_csv", default=None, help="Comma-separated threads per block, e.g. 32,64,128,256,512,1024.")
@click.option("--sizes", default=None, help="Comma-separated sizes, e.g. 1000,4096 or 48x80,96x160 (as lab run --size).")
@click.option("--variant", default=None, help="Comma-separated Numba variants (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,numpy,cupy,torch (default: all).")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True)
@click.option("--repeats", type=int, default=None, help="Timed calls per configuration (default on a GPU: the stop rule; 2 in the simulator).")
@click.option("--warmup", type=int, default=None, help="Untimed calls before timing.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the random inputs (default: fresh, recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (every configuration's lab run --json dict).")
@click.option("--png", default=None, metavar="FILE", help="Plot the metric against threads per block (or size) to FILE (needs matplotlib).")
@click.option("--metric", type=click.Choice(["auto", "ms", "gbps", "gflops"]), default="auto", show_default=True,
              help="What --png plots (auto: GB/s when measured, else ms).")
@BACKEND
@COMPILER
def sweep(kernel, threads_csv, sizes, variant, contenders, dtype, repeats, warmup, seed, as_json, png, metric, sim,
          compiler):
    """Run KERNEL at every --threads and/or --sizes value: each checked and timed, as a table or a plot."""
    from lab import sweep as S

    threads, size_list = S.parse_threads(threads_csv), S.parse_sizes(sizes)
    _needs_plot(png)
    backend = _backend(sim)
    _compiler(compiler, backend)
    from lab.progress import bar

    with bar("sweep") as progress:
        doc = S.sweep(kernel, backend, threads, size_list, variants=_csv(variant), contenders=_csv(contenders),
                      dtype=dtype, repeats=repeats, warmup=warmup, seed=seed, progress=progress)
    if png:
        used = S.plot(doc, png, metric)
        click.echo(f"wrote {png} ({S.METRICS[used][1]})", err=True)
    if as_json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        _print(S.table(doc), *[f"[dim]{n}[/]" for n in S.notes(doc)])
    if any(r["status"] == "FAIL" for r in S.rows(doc)):
        sys.exit(1)


@cli.command(short_help="Place every rung on this GPU's roofline.")
@click.option("--kernels", "kernels_csv", default=None, help="Comma-separated kernels (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,cupy,torch (default: all three).")
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Timed calls per contender.")
@click.option("--from", "from_json", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Place the rows of saved lab run/bench/sweep --json files instead of running (repeatable).")
@click.option("--png", default=None, metavar="FILE", help="Draw the roofline to FILE (needs matplotlib).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@BACKEND
def roofline(kernels_csv, contenders, repeats, from_json, png, as_json, sim):
    """Place every kernel and rung by FLOP/byte against achieved FLOP/s, under this GPU's ceilings."""
    from lab import roofline as R
    from lab.compare import load_reports

    _needs_plot(png)
    backend = _backend(sim)
    names = _kernel_list(_csv(kernels_csv) or [])
    reports = [r for path in from_json for r in load_reports(path)] or None
    from lab.progress import bar

    with bar("roofline") as progress:
        doc = R.roofline(backend, names, _csv(contenders), repeats, reports, progress)
    if png:
        R.plot(doc, png)
        click.echo(f"wrote {png}", err=True)
    if as_json:
        print(json.dumps(doc, indent=2, default=str))
        return
    _print(R.table(doc), *([f"[yellow]{doc['note']}[/]"] if doc["note"] else []))


@cli.command(short_help="torch.profiler table and trace of a kernel.")
@click.argument("kernel")
@click.option("--size", default=None, help="As lab run --size (default: per backend).")
@click.option("--threads", type=int, default=None, help="Threads per block (default: 256 on a GPU, 32 in the simulator).")
@click.option("--variant", default=None, help="Comma-separated Numba variants (default: all).")
@click.option("--contenders", default=None, help="Comma-separated from numba,torch (default: both).")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True)
@click.option("--repeats", type=int, default=None, help="Calls per contender inside the profile (default: 20; 1 in the simulator).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the random inputs.")
@click.option("--trace", default=None, metavar="FILE", help="Write a Chrome/Perfetto trace (JSON) to FILE.")
@click.option("--row-limit", type=click.IntRange(min=1), default=15, show_default=True, help="Rows of the key_averages table.")
@BACKEND
def profile(kernel, size, threads, variant, contenders, dtype, repeats, seed, trace, row_limit, sim):
    """Profile KERNEL's Numba rungs and torch ops with torch.profiler (CPU + CUDA), NVTX-named."""
    backend = _backend(sim)
    from lab.profiling import profile as run_profile

    doc = run_profile(kernel, backend, size=size, threads=threads, variants=_csv(variant),
                      contenders=_csv(contenders), dtype=dtype, repeats=repeats, seed=seed, trace=trace,
                      row_limit=row_limit)
    print(f"{kernel} {'x'.join(map(str, doc['size']))}, --threads {doc['threads']}, {doc['repeats']} calls each; "
          f"activities {'+'.join(doc['activities'])}; sorted by {doc['sort_by']}")
    for name, why in doc["skipped"].items():
        print(f"skipped {name}: {why}")
    print(doc["table"])
    for n in doc["notes"]:
        print(n)


@cli.command(short_help="Speedup and noise between two --json files.")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def compare(a, b, as_json):
    """Compare two lab run/bench/sweep --json files: B's speedup over A per row, and whether it is beyond the noise."""
    from lab import compare as K

    result = K.compare(K.load_reports(a), K.load_reports(b))
    if not result["rows"]:
        raise LabError(f"{a} and {b} share no (kernel, contender, variant) row")
    if as_json:
        print(json.dumps(result, indent=2, default=str))
        return
    extra = [f"[dim]only in A: {', '.join(result['only_a'])}[/]"] if result["only_a"] else []
    extra += [f"[dim]only in B: {', '.join(result['only_b'])}[/]"] if result["only_b"] else []
    _print(K.table(result), "[dim]noise = IQR / median of each; beyond the noise when |B - A| / min(A, B) > noise A + noise B[/]",
           *extra, *[f"[yellow]{n}[/]" for n in result["notes"]])

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
