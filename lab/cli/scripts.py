"""Script entry points beside the ``lab`` command, kept as spelled in earlier issues: click commands
whose options are declared in :mod:`lab.core.options`, as every ``lab`` command's are.

    python -m lab.shape_sweep --out FILE      # the public shape sweep (GPU), markdown
    python -m lab.bench [lab bench options]   # an alias of ``lab bench``
    python -m lab.cli.scripts compiler-table --out FILE    # both compilers, every rung (GPU)
    python -m lab.cli.scripts simcost         # re-measure the simulator's cost model
    python -m torch_bridge.bench_launch [--kernel K] [--n 1024] [--calls 2000] [--rounds 15] [--json PATH] [--profile N]
                                              # launch overhead (GPU); also lab.cli.scripts launch-overhead

They live in the CLI layer because they print; the work is in ``lab.bench`` and ``lab.core``.
"""
from __future__ import annotations

import datetime
import sys
import functools
import json

import click

from lab.cli import options as O, one_line, main
from lab.core import options as D, simulator, device, compilers
from lab.core.errors import LabError
from lab.bench import shapes, compilers as CT
from lab.bench.launch_overhead import measure, render
from lab.bench.suite import standard, measure_simcost
from lab.core.files import write_atomic, check_writable


def _write(path: str, text: str) -> None:
    if path != "-":
        write_atomic(path, text, "report")


def _script(command: click.Command):
    """A script's entry point ``fn(argv=None) -> exit code`` running the click ``command`` as the
    ``lab`` command runs: bad input (LabError, a click usage error) is one line on stderr ("error:
    ...") and exit code 2, never a traceback; ``--help`` prints the help, exit 0."""
    @functools.wraps(command.callback)
    def run(argv=None) -> int:
        try:
            code = command.main(args=sys.argv[1:] if argv is None else list(argv), prog_name=command.name,
                                standalone_mode=False)
        except LabError as e:
            print(f"error: {one_line(e)}", file=sys.stderr)
            return 2
        except click.exceptions.NoArgsIsHelpError as e:  # the group without a script: its help
            click.echo(e.ctx.get_help())
            return 0
        except click.ClickException as e:
            print(f"error: {one_line(e.format_message())}", file=sys.stderr)
            return e.exit_code
        return code or 0

    run.command = command
    return run


def _kernels(given: str | None, known: dict) -> list[str]:
    """``--kernels`` (None: all of ``known``) as a list; LabError naming the choices for an unknown one."""
    names = [k.strip() for k in given.split(",")] if given else list(known)
    unknown = [k for k in names if k not in known]
    if unknown:
        raise LabError(f"--kernels: unknown kernel {unknown[0]!r}; choose from: {', '.join(known)}")
    return names


@click.command("shape-sweep")
@O.command(None, D.SCRIPT_OUT, D.KERNELS.but(help="Comma-separated kernels (default: every kernel with a shape sweep)."),
           D.SCRIPT_REPEATS)
def shape_sweep_command(out, kernels, repeats) -> int:
    """Every kernel over the public shapes (lab.bench.shapes) against its torch op: markdown (GPU)."""
    check_writable(out, "report")  # before the sweep, not after it
    kernels_ = _kernels(kernels, shapes.sweep_shapes())
    backend = simulator.select("auto")
    if backend == "simulator":
        print("error: the shape sweep times real shapes and needs a CUDA GPU (the simulator would take days)",
              file=sys.stderr)
        return 2
    dev = device.describe(False)
    header = f"- device: {dev['name']}; backend: {backend}\n\n"
    total = sum(len(shapes.sweep_shapes()[k]) for k in kernels_)

    def save(rows):  # after every shape: a run cut by a time limit keeps its finished rows
        if len(rows) < total:
            _write(out, header + f"- partial: {len(rows)} of {total} shapes done (still running, or cut)\n\n"
                   + shapes.render(rows))

    rows = shapes.sweep(backend, kernels_, repeats=repeats, on_row=save,
                        progress=lambda s: print(f"[sweep] {s}", file=sys.stderr, flush=True))
    text = header + shapes.render(rows)
    _write(out, text)
    print(text)
    return 0


shape_sweep = _script(shape_sweep_command)


def bench_alias(argv=None) -> None:
    """``python -m lab.bench [options]``: an alias of ``lab bench``."""
    main(["bench", *(sys.argv[1:] if argv is None else argv)])


@click.command("bench", context_settings={"ignore_unknown_options": True, "help_option_names": []},
               add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench_alias_command(args) -> int:
    """An alias of ``lab bench`` (its options)."""
    bench_alias(list(args))
    return 0


@click.command("compiler-table")
@O.command(None, D.SCRIPT_OUT, D.KERNELS.but(help="Comma-separated kernels (default: the bench suite's)."),
           D.SCRIPT_REPEATS, D.DTYPE)
def compiler_table_command(out, kernels, repeats, dtype) -> int:
    """Every rung of every kernel through numba-cuda and numba-cuda-mlir; markdown for docs/benchmarks.md."""
    STANDARD = standard()
    check_writable(out, "report")  # before any compile, not after the first kernel
    names = _kernels(kernels, STANDARD)
    backend = simulator.select("auto")
    status = compilers.compilers_status(backend == "simulator")
    lines = ["## Compilers: numba-cuda and numba-cuda-mlir, every rung", "",
             f"- date: {datetime.date.today().isoformat()}; backend: {backend}; dtype {dtype}; "
             f"median of {repeats} calls (CUDA events, L2 flushed before each); seed 0",
             "- " + "; ".join(f"{n} {s['version'] or ''}: " + ("usable" if s["usable"] else s["why"])
                              for n, s in status.items()),
             "- first call = compile + load + one run, each compiler in a fresh process; registers: the most "
             "among the rung's kernels; spill B: ptxas spill stores + loads a thread; ratio: MLIR median / numba-cuda median",
             "", "| kernel | size | rung | compiler | first call ms | median ms | ratio | registers | spill B | check |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for kernel in names:
        size, threads = STANDARD[kernel][0]
        print(f"[compilers] {kernel} {size} threads={threads}", file=sys.stderr, flush=True)
        if backend == "simulator":  # GPU sizes would take hours in the simulator
            size, threads = None, 32
        params = dict(kernel=kernel, size=size, threads=threads, dtype=dtype, variant=None,
                      contenders="numba", repeats=repeats, warmup=None, seed=0)
        try:
            doc = CT.run_both(params, backend)
        except LabError as e:
            lines.append(f"| {kernel} | {size} | - | - | - | - | - | - | - | error: {e} |")
            continue
        lines += CT.rows_for(doc)
        _write(out, "\n".join(lines) + "\n")  # after every kernel: a partial table survives
    print("\n".join(lines))
    return 0


compiler_table = _script(compiler_table_command)


@click.command("simcost")
def simcost_command() -> int:
    """Re-measure ``lab.core.simcost.PER_THREAD_MS``; prints one dict line per rung."""
    for (kernel, variant), ms in measure_simcost().items():
        print(f"    ({kernel!r}, {variant!r}): {ms},", flush=True)
    return 0


simcost = _script(simcost_command)


@click.command("launch-overhead")
@O.command(None, D.LAUNCH_KERNEL, D.LAUNCH_N, D.SIZE.but(help="The size as lab run --size (overrides --n)."),
           D.LAUNCH_CALLS, D.LAUNCH_ROUNDS, D.LAUNCH_JSON, D.LAUNCH_PROFILE)
def launch_overhead_command(kernel, n, size, calls, rounds, json_path, profile) -> int:
    """Host time a call of a small op through the torch bridge beside a direct Numba launch, the fast
    launch path, torch's floor, CuPy and torch: a Markdown table (GPU; lab.bench.launch_overhead)."""
    from kernels.compiler import SIMULATOR  # lazy: backend chosen first (numba)
    check_writable(json_path, "results")  # before the timing, not after it
    if SIMULATOR:
        print("error: the simulator is active: launch overhead needs a GPU", file=sys.stderr)
        return 2
    doc = measure(kernel, size or str(n), calls, rounds or None, profile)
    print(render(doc))
    if json_path:
        _write(json_path, json.dumps(doc, indent=1) + "\n")
    return 0


launch_overhead = _script(launch_overhead_command)


@click.group("python -m lab.cli.scripts", context_settings={"help_option_names": ["-h", "--help"]})
def scripts():
    """The lab's script entry points (each also has its own module where named so)."""


for _command in (shape_sweep_command, bench_alias_command, compiler_table_command, simcost_command,
                 launch_overhead_command):
    scripts.add_command(_command)
SCRIPTS = {name: _script(cmd) for name, cmd in scripts.commands.items()}

if __name__ == "__main__":
    sys.exit(_script(scripts)())
