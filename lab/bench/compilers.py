"""``lab run KERNEL --compiler both``: the same kernels through numba-cuda and numba-cuda-mlir.

A process can load only one compiler (``kernels.compiler`` picks it at import), so each compiler
runs in its own process: ``python -m lab run ... --json --compiler NAME``, with the same seed (the
same inputs), size, threads and repeats. The numba-cuda process also runs the other contenders
(NumPy, CuPy, torch) once; the MLIR one runs only the Numba rungs. The rows are merged, one per
rung and compiler: first call (compile + load + one run), median, registers and spills: the lesson
"same kernel, different code generation". A compiler that cannot run here (not installed, no GPU)
gives one ``skipped`` row per rung with the reason.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from lab.core import compilers
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.session import child_env


def child_args(params: dict, compiler: str, backend: str, numba_only: bool) -> list[str]:
    """``lab run`` arguments for one compiler's process, from the parent's click parameters."""
    args = ["run", params["kernel"], "--json", "--compiler", compiler,
            "--sim" if backend == "simulator" else "--gpu", "--seed", str(params["seed"])]
    for opt in ("threads", "size", "dtype", "variant", "repeats", "warmup", "arrays", "precision"):
        if params.get(opt) is not None:
            args += [f"--{opt}", str(params[opt])]
    contenders = params.get("contenders")
    if numba_only:
        contenders = "numba"
    if contenders is not None:
        args += ["--contenders", contenders]
    return args


def _run_child(args: list[str], timeout_s: float | None = None) -> tuple[dict | None, str]:
    """(the child's JSON document, or None; its last stderr line when it failed)."""
    proc = subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=child_env())
    log = os.environ.get("LAB_COMPARE_LOG")  # a folder: keep each child's stderr (debugging)
    if log:
        os.makedirs(log, exist_ok=True)
        name = "-".join(a for a in args if not a.startswith("-"))[:80].replace("/", "_")
        with open(os.path.join(log, f"{name}-{args[args.index('--compiler') + 1]}.stderr"), "a") as f:
            f.write(" ".join(args) + "\n" + proc.stderr)
    out = proc.stdout.strip()
    start = out.find("{")
    if proc.returncode in (0, 1) and start >= 0:  # 1: a row FAILed, the JSON is still complete
        try:
            return json.loads(out[start:]), ""
        except json.JSONDecodeError:
            pass
    lines = [ln for ln in (proc.stderr or out).strip().splitlines() if ln.strip()]
    return None, lines[-1] if lines else f"exit code {proc.returncode}"


def run_both(params: dict, backend: str) -> dict:
    """Run ``params`` (lab run's options) under each compiler; returns a merged JSON document:
    the numba-cuda report's keys, ``compilers`` (status of each) and ``results`` with one row per
    (rung, compiler) plus the other contenders once. Raises LabError when no compiler could run."""
    params = dict(params)
    if params.get("seed") is None:
        params["seed"] = int(np.random.SeedSequence().entropy % 2**32)
    status = compilers.compilers_status(simulator=backend == "simulator")
    docs, rows = {}, []
    for i, name in enumerate(compilers.COMPILERS):
        if not status[name]["usable"]:
            docs[name] = None
            continue
        doc, why = _run_child(child_args(params, name, backend, numba_only=i > 0))
        if doc is None:
            status[name] = dict(status[name], usable=False, why=f"its run failed: {why}")
        docs[name] = doc
    base = next((d for d in docs.values() if d is not None), None)
    if base is None:
        raise LabError("--compiler both: no compiler could run: "
                       + "; ".join(f"{n}: {s['why']}" for n, s in status.items()))
    variants = [r["variant"] for r in base["results"] if r["contender"] == "numba"]
    others = []
    for name in compilers.COMPILERS:
        doc = docs.get(name)
        if doc is None:
            rows += [_skipped(v, name, status[name]["why"]) for v in variants]
            continue
        for r in doc["results"]:
            if r["contender"] == "numba":
                rows.append(dict(r, compiler=name))
            elif doc is base:
                others.append(r)
    rows.sort(key=lambda r: (variants.index(r["variant"]) if r["variant"] in variants else 99,
                             compilers.COMPILERS.index(r["compiler"])))
    merged = dict(base)
    merged["schema_version"] = SCHEMA_VERSION
    merged["compiler"] = "both"
    merged["compilers"] = status
    merged["results"] = rows + others
    return merged


def _skipped(variant: str, compiler: str, why: str) -> dict:
    return {"contender": "numba", "variant": variant, "compiler": compiler, "status": "skipped",
            "reason": why, "ok": False, "median_ms": None, "iqr_ms": None,
            "first_call_ms": None, "registers": None, "spill_bytes": None, "local_bytes": None,
            "gbps": None, "gflops": None, "max_abs_err": None}


# --- the compiler table (docs/benchmarks.md): python -m lab.cli.scripts compiler-table ---
def _num(x, fmt):
    return "-" if x is None else fmt.format(x)


def rows_for(doc: dict) -> list[str]:
    """Markdown rows for one kernel's merged run (lab.bench.compilers.run_both)."""
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
