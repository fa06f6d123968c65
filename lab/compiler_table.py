"""Compiler table (a script, not a test): every rung of every kernel through numba-cuda and
numba-cuda-mlir, same call (size, threads, seed, repeats), one process per compiler.

    python -m lab.compiler_table --out compilers.md     # on a GPU machine; paste into docs/benchmarks.md

Each row: first call (compile + load + one run), median ms, registers a thread and ptxas spill bytes
(the rung's kernels), the check, and the MLIR / numba-cuda median ratio. Sizes: the first standard
size of each kernel (lab.bench.STANDARD).
"""
from __future__ import annotations

import argparse
import datetime
import sys

from lab.backend import select
from lab.bench import STANDARD


def _num(x, fmt):
    return "-" if x is None else fmt.format(x)


def rows_for(doc: dict) -> list[str]:
    """Markdown rows for one kernel's merged run (lab.compiler_compare.run_both)."""
    kernel, size = doc["kernel"], "x".join(map(str, doc["size"]))
    by = {}
    for r in doc["results"]:
        if r["contender"] == "numba":
            by.setdefault(r["variant"], {})[r["compiler"]] = r
    out = []
    for variant, pair in by.items():
        base = pair.get("numba-cuda", {}).get("median_ms")
        for name, r in pair.items():
            ratio = r["median_ms"] / base if r["median_ms"] and base and name != "numba-cuda" else None
            check = r["status"] + (f": {r['reason']}" if r.get("reason") else "")
            out.append(f"| {kernel} | {size} | {variant} | {name} | {_num(r['first_call_ms'], '{:.0f}')} | "
                       f"{_num(r['median_ms'], '{:.4f}')} | {_num(ratio, '{:.2f}x')} | {_num(r.get('registers'), '{}')} | "
                       f"{_num(r.get('spill_bytes'), '{}')} | {check.replace('|', '/')} |")
    return out


def _write(path: str, lines: list[str]) -> None:
    if path != "-":
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    ap.add_argument("--kernels", default=",".join(STANDARD), help="comma-separated kernels")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args(argv)
    backend = select("auto")
    from lab import compilers
    from lab.compiler_compare import run_both
    from lab.errors import LabError

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
            doc = run_both(params, backend)
        except LabError as e:
            lines.append(f"| {kernel} | {size} | - | - | - | - | - | - | - | error: {e} |")
            continue
        lines += rows_for(doc)
        _write(args.out, lines)  # after every kernel: a partial table survives an interrupted run
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
