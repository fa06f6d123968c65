"""Does every rung compile for a real GPU? Checked without one, before spending GPU time.

The CUDA simulator runs a kernel as Python, so code that a GPU's compiler refuses passes there: a
shared array whose shape is an expression (``cuda.shared.array((TILE, TILE + 1), ...)``: numba-cuda's
typer folds only bare global constants, not ``TILE + 1`` nor ``module.TILE``), ``np.dot`` inside a
kernel, a call to an undecorated helper. This records the kernels each rung launches in the simulator
at a small size, with their argument types (:func:`lab.core.resources.record_launches`), and compiles
them offline for ``--arch``:

* ``--compiler numba-cuda`` (the default): NVVM and nvJitLink (the ``occupancy`` extra), as ``lab
  occupancy --arch`` does;
* ``--compiler numba-cuda-mlir``: numba-cuda-mlir's ``compile_ptx`` (typing, MLIR, PTX) with its
  compute capability set to the arch's (``numba_cuda_mlir.tools._cached_cc``: it has no driver to ask),
  then ptxas through nvJitLink. It runs in a child process (numba-cuda-mlir and the simulator's
  numba-cuda cannot share one), with ``--python`` (default: this interpreter), which must import
  numba_cuda_mlir (Python >= 3.11) and cuda.bindings' nvjitlink.

    python scripts/compile_check.py                    # every kernel and rung, for sm_90
    python scripts/compile_check.py transpose matmul --arch sm_75
    python scripts/compile_check.py --compiler numba-cuda-mlir --python /path/to/py312/bin/python

Kernels a factory builds at run time are checked when the factory cached them where they can be found
again (a module-level dict keyed by its arguments, or ``functools.cache`` with no arguments), else
named as not checked. Prints one line a kernel that did not compile (and the rungs that could not be
recorded); exit 0 when every recorded kernel compiled, 1 otherwise, 2 on bad input. About 2 minutes
for every kernel on a 2-core CPU, most of it the simulated runs (the emulated tensor-core rung's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
COMPILERS = ("numba-cuda", "numba-cuda-mlir")
# Sizes a rung is recorded at too, where they launch kernels its check size does not: the vector rung
# splits K over blocks (columns_split_kernel, the last block adds the partials) from K >= 2 * VM_MIN_K.
EXTRA_SIZES = {("matmul", "vector"): ["1x40x600"]}


def check(names: list[str], arch: str, progress=None, compiler: str = "numba-cuda", python: str | None = None) -> dict:
    """{"compiled": n, "errors": [(kernel, rung, module.name, message)], "not_recorded": [(kernel, rung,
    why)], "not_checked": [(kernel, rung, module)]} for the rungs of ``names`` (every kernel when empty),
    compiled by ``compiler`` (numba-cuda-mlir: in a child process run by ``python``)."""
    from lab.core.simulator import select

    select("sim")
    import kernels
    from lab.core import resources

    unknown = [n for n in names if n not in kernels.NAMES]
    if unknown:
        raise SystemExit(f"unknown kernel {unknown[0]!r}; choose from: {', '.join(kernels.NAMES)}")
    why = resources.offline_unavailable() if compiler == "numba-cuda" else mlir_unavailable(python)
    if why:
        raise SystemExit(f"the offline compile needs {why}" + (": pip install -e '.[occupancy]'"
                                                              if compiler == "numba-cuda" else ""))
    recs, seen, report = [], set(), {"compiled": 0, "errors": [], "not_recorded": [], "not_checked": []}
    for name in names or kernels.NAMES:
        spec = kernels.load(name)
        size = spec.counter_size or spec.default_size(False)
        for rung, variant in spec.variants.items():
            if rung == "auto":  # auto launches one of the other rungs
                continue
            threads = 256 if variant.accepts(256) is None else 64  # e.g. a rung of at most 64 threads
            if progress:
                progress(f"{name} {rung}")
            launched = []
            for at in [size] + [spec.parse_size(t) for t in EXTRA_SIZES.get((name, rung), ())]:
                try:
                    launched += resources.record_launches(spec, rung, at, threads)
                except Exception as e:  # noqa: BLE001 - a rung that cannot run here is a line, not a crash
                    report["not_recorded"].append((name, rung, f"{type(e).__name__}: {e}"[:160]))
            for r in launched:
                if not r.name:
                    report["not_checked"].append((name, rung, r.module))
                    continue
                key = (r.module, r.name, repr(r.argtypes))
                if key not in seen:
                    seen.add(key)
                    recs.append((name, rung, r))
    records = [r for *_, r in recs]
    outs = resources.offline_resources(records, arch) if compiler == "numba-cuda" else mlir_resources(records, arch, python)
    for (name, rung, r), out in zip(recs, outs):
        if "error" in out:
            report["errors"].append((name, rung, f"{r.module}.{r.name}", out["error"]))
        else:
            report["compiled"] += 1
    return report


# --- numba-cuda-mlir, in a child process --------------------------------------------------------------
def _mlir_env() -> dict:
    from lab.core.session import child_env

    return child_env(NUMBA_ENABLE_CUDASIM="0", LAB_COMPILER="numba-cuda-mlir", LAB_KERNEL_CACHE="0",
                     NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", CUDA_CACHE_DISABLE="1")


def mlir_unavailable(python: str | None) -> str | None:
    """None when ``python`` imports numba_cuda_mlir and nvJitLink loads there, else what is missing."""
    code = ("import sys; assert sys.version_info >= (3, 11), 'Python >= 3.11'; import numba_cuda_mlir; "
            "from cuda.bindings import nvjitlink; nvjitlink.version()")
    try:
        proc = subprocess.run([python or sys.executable, "-c", code], capture_output=True, text=True,
                              env=_mlir_env(), timeout=120)
    except OSError as e:
        return f"a Python with numba-cuda-mlir (--python {python}: {e.strerror})"
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"numba-cuda-mlir and nvJitLink importable by {python or sys.executable} ({last})"
    return None


def _signature(argtypes) -> str:
    """numba's signature text for recorded argument types: [("array", "<f4", 2, "C")] -> (float32[:, ::1],)."""
    import numpy as np

    out = []
    for t in argtypes:
        if t[0] == "array":
            dims = [":"] * t[2]
            if t[3] == "C":
                dims[-1] = "::1"
            out.append(f"{np.dtype(t[1]).name}[{', '.join(dims)}]")
        else:
            out.append({"bool": "boolean"}.get(t[1], t[1]))
    return f"({', '.join(out)}{',' if len(out) == 1 else ''})"  # one argument: still a tuple


def mlir_resources(records, arch: str, python: str | None, timeout: float = 900) -> list[dict]:
    """Registers / shared / local bytes (or {"error": ...}) of each record, compiled by numba-cuda-mlir
    for ``arch`` in a child process (:func:`_mlir_child`)."""
    request = {"arch": arch, "kernels": [{"module": r.module, "name": r.name, "signature": _signature(r.argtypes)}
                                         for r in records]}
    proc = subprocess.run([python or sys.executable, str(Path(__file__).resolve()), "--mlir-child"],
                          input=json.dumps(request), capture_output=True, text=True, env=_mlir_env(), timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"the numba-cuda-mlir compile for {arch} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mlir_child(request: dict) -> list[dict]:
    """In the child (LAB_COMPILER=numba-cuda-mlir, no simulator, no GPU): compile each kernel to PTX
    for the arch and link it with nvJitLink (ptxas), reading its usage."""
    import importlib

    import numba_cuda_mlir.tools as tools

    arch = request["arch"]
    cc = (int(arch[3:-1]), int(arch[-1]))
    tools._cached_cc = cc  # no driver to ask: the device functions' compute capability is the target's
    from numba_cuda_mlir import cuda

    from lab.core import compilers
    from lab.core.resources import _resolve

    out = []
    for rec in request["kernels"]:
        try:
            disp = _resolve(importlib.import_module(rec["module"]), rec["name"])
            opts = {k: v for k, v in getattr(disp, "targetoptions", {}).items()
                    if k in ("debug", "lineinfo", "fastmath", "opt", "forceinline", "launch_bounds")}
            ptx, _ = cuda.compile_ptx(getattr(disp, "py_func", disp), rec["signature"], cc=cc, **opts)
            out.append(compilers.nvjitlink_usage(ptx.encode(), arch, False))
        except Exception as e:  # noqa: BLE001 - reported per kernel
            text = " ".join(str(e).split())
            # numba-cuda-mlir's "compiler bug" error names the line; what failed is the error it replaced
            inner = e.__cause__ or e.__context__
            why = f" ({type(inner).__name__}: {' '.join(str(inner).split())[:160]})" if inner else ""
            out.append({"error": f"{type(e).__name__}{why}: {text[:300]}"})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernels", nargs="*", help="kernel names (default: every kernel)")
    ap.add_argument("--arch", default="sm_90", help="target, e.g. sm_75 (a T4), sm_90 (an H100)")
    ap.add_argument("--compiler", default="numba-cuda", choices=COMPILERS, help="the compiler to check with")
    ap.add_argument("--python", default=None, help="numba-cuda-mlir: the interpreter that imports it "
                    "(default: this one)")
    ap.add_argument("--mlir-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.mlir_child:
        print(json.dumps(_mlir_child(json.loads(sys.stdin.read()))))
        return 0
    if not (args.arch.startswith("sm_") and args.arch[3:].isdigit() and len(args.arch) in (5, 6)):
        print(f"--arch {args.arch}: expected sm_XY, e.g. sm_90", file=sys.stderr)
        return 2
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    try:
        report = check(args.kernels, args.arch, progress=lambda s: print(f"  recording {s}", file=sys.stderr),
                       compiler=args.compiler, python=args.python)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    for name, rung, kernel, message in report["errors"]:
        print(f"does not compile for {args.arch} ({args.compiler}): {name} {rung}: {kernel}: {message}")
    for name, rung, why in report["not_recorded"]:
        print(f"not recorded: {name} {rung}: {why}")
    for name, rung, module in sorted(set(report["not_checked"])):
        print(f"not checked: {name} {rung}: a kernel of {module} built at run time (not a module global)")
    print(f"{report['compiled']} kernels compiled for {args.arch} by {args.compiler}, {len(report['errors'])} did not")
    return 1 if report["errors"] or report["not_recorded"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
