"""Script entry points that predate `lab`'s click commands, kept as spelled in earlier issues.

    python -m lab.shape_sweep --out FILE      # the public shape sweep (GPU), markdown
    python -m lab.bench [lab bench options]   # an alias of ``lab bench``
    python -m lab.cli.scripts compiler-table --out FILE    # both compilers, every rung (GPU)
    python -m lab.cli.scripts simcost         # re-measure the simulator's cost model

They live in the CLI layer because they print; the work is in ``lab.bench`` and ``lab.core``.
"""
from __future__ import annotations

import argparse
import datetime
import sys

from lab.core.errors import LabError


def _write(path: str, text: str) -> None:
    if path != "-":
        from lab.core.files import write_atomic

        write_atomic(path, text, "report")


def _script(fn):
    """A script's entry point as the ``lab`` command's: bad input (LabError) is one line on stderr
    ("error: ...") and exit code 2, never a traceback."""
    import functools

    @functools.wraps(fn)
    def run(argv=None) -> int:
        try:
            return fn(argv)
        except LabError as e:
            print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
            return 2

    return run


@_script
def shape_sweep(argv=None) -> int:
    """``python -m lab.shape_sweep``: every kernel over the public shapes against the torch op."""
    from lab.bench import shapes
    from lab.core.files import check_writable

    ap = argparse.ArgumentParser(description=shapes.__doc__.splitlines()[0])
    ap.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    ap.add_argument("--kernels", default=",".join(shapes.sweep_shapes()), help="comma-separated kernels")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    check_writable(args.out, "report")  # before the sweep, not after it
    unknown = [k for k in args.kernels.split(",") if k not in shapes.sweep_shapes()]
    if unknown:
        raise LabError(f"--kernels: unknown kernel {unknown[0]!r}; choose from: {', '.join(shapes.sweep_shapes())}")
    if args.repeats < 1:
        raise LabError("--repeats must be >= 1")
    from lab.core.simulator import select

    backend = select("auto")
    if backend == "simulator":
        print("error: the shape sweep times real shapes and needs a CUDA GPU (the simulator would take days)",
              file=sys.stderr)
        return 2
    from lab.core.device import describe

    dev = describe(False)
    kernels_ = args.kernels.split(",")
    header = f"- device: {dev['name']}; backend: {backend}\n\n"
    total = sum(len(shapes.sweep_shapes()[k]) for k in kernels_)

    def save(rows):  # after every shape: a run cut by a time limit keeps its finished rows
        if len(rows) < total:
            _write(args.out, header + f"- partial: {len(rows)} of {total} shapes done (still running, or cut)\n\n"
                   + shapes.render(rows))

    rows = shapes.sweep(backend, kernels_, repeats=args.repeats, on_row=save,
                        progress=lambda s: print(f"[sweep] {s}", file=sys.stderr, flush=True))
    text = header + shapes.render(rows)
    _write(args.out, text)
    print(text)
    return 0


def bench_alias(argv=None) -> None:
    """``python -m lab.bench [options]``: an alias of ``lab bench``."""
    from lab.cli import main

    main(["bench", *(sys.argv[1:] if argv is None else argv)])


@_script
def compiler_table(argv=None) -> int:
    """Every rung of every kernel through numba-cuda and numba-cuda-mlir; markdown for docs/benchmarks.md."""
    from lab.bench import compilers as CT
    from lab.bench.suite import standard
    from lab.core import compilers
    from lab.core.simulator import select

    STANDARD = standard()

    ap = argparse.ArgumentParser(description=compiler_table.__doc__)
    ap.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    ap.add_argument("--kernels", default=",".join(STANDARD), help="comma-separated kernels")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args(argv)
    from lab.core.files import check_writable

    check_writable(args.out, "report")  # before any compile, not after the first kernel
    unknown = [k for k in args.kernels.split(",") if k not in STANDARD]
    if unknown:
        raise LabError(f"--kernels: unknown kernel {unknown[0]!r}; choose from: {', '.join(STANDARD)}")
    backend = select("auto")
    status = compilers.compilers_status(backend == "simulator")
    lines = ["## Compilers: numba-cuda and numba-cuda-mlir, every rung", "",
             f"- date: {datetime.date.today().isoformat()}; backend: {backend}; dtype {args.dtype}; "
             f"median of {args.repeats} calls (CUDA events, L2 flushed before each); seed 0",
             "- " + "; ".join(f"{n} {s['version'] or ''}: " + ("usable" if s["usable"] else s["why"])
                              for n, s in status.items()),
             "- first call = compile + load + one run, each compiler in a fresh process; registers: the most "
             "among the rung's kernels; spill B: ptxas spill stores + loads a thread; ratio: MLIR median / numba-cuda median",
             "", "| kernel | size | rung | compiler | first call ms | median ms | ratio | registers | spill B | check |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for kernel in args.kernels.split(","):
        size, threads = STANDARD[kernel][0]
        print(f"[compilers] {kernel} {size} threads={threads}", file=sys.stderr, flush=True)
        if backend == "simulator":  # GPU sizes would take hours in the simulator
            size, threads = None, 32
        params = dict(kernel=kernel, size=size, threads=threads, dtype=args.dtype, variant=None,
                      contenders="numba", repeats=args.repeats, warmup=None, seed=0)
        try:
            doc = CT.run_both(params, backend)
        except LabError as e:
            lines.append(f"| {kernel} | {size} | - | - | - | - | - | - | - | error: {e} |")
            continue
        lines += CT.rows_for(doc)
        _write(args.out, "\n".join(lines) + "\n")  # after every kernel: a partial table survives
    print("\n".join(lines))
    return 0


def simcost(argv=None) -> int:
    """Re-measure ``lab.core.simcost.PER_THREAD_MS``; prints one dict line per rung."""
    from lab.bench.suite import measure_simcost

    for (kernel, variant), ms in measure_simcost().items():
        print(f"    ({kernel!r}, {variant!r}): {ms},", flush=True)
    return 0


SCRIPTS = {"shape-sweep": shape_sweep, "bench": bench_alias, "compiler-table": compiler_table, "simcost": simcost}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SCRIPTS:
        sys.exit(f"usage: python -m lab.cli.scripts {{{','.join(SCRIPTS)}}} [options]")
    sys.exit(SCRIPTS[sys.argv[1]](sys.argv[2:]) or 0)
