"""The compile guard on a GPU (lab.core.compile_child), in one call: the fallback after a compiler
crash with real compiles, the cost of the compile child on a first run, no child on a second run,
then the numba-cuda-mlir abort reproducer for the time that is left.

    python scripts/compile_crash_gpu.py OUT [--budget SECONDS]

(about 5 minutes before the reproducer on an H200: steps 1-2 took 57 and 37 s, the first runs of
step 3 54 and 44 s on 2026-11-29)

1. ``lab run softmax --size 300x700 --dtype float64 --threads 128 --contenders numba --json`` with
   ``LAB_TEST_COMPILE_ABORT=softmax/group_rows`` on an empty kernel cache: the compile child really
   compiles the other rungs under numba-cuda-mlir and aborts (SIGABRT) at group_rows' first cache
   miss; the run must go on, say so in group_rows' row and run it under numba-cuda.
2. The same without the hook: group_rows is now compiled (by a child) under numba-cuda-mlir.
3. ``lab run softmax --contenders numba`` on an empty cache (the first run: a compile child), again
   (the second run: every kernel cached, so no child), and on another empty cache with
   ``LAB_COMPILE_CHILD=1`` (the guard off: everything compiles in the run's process), for the
   child's cost; then ``lab run softmax`` (its defaults) twice on the first cache. Wall times of ``python -m lab``; ``LAB_KERNEL_CACHE_STATS=1``
   counts the children.
4. ``scripts/mlir_abort_repro.py --procs 8`` for the rest of ``--budget``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lab(args, log, timeout, **env):
    full = dict(os.environ, LAB_KERNEL_CACHE_STATS="1", **env)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, timeout=timeout,
                           env=full, cwd=ROOT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        out, err = (out.decode() if isinstance(out, bytes) else out), (err.decode() if isinstance(err, bytes) else err)
    dt = time.perf_counter() - t0
    stats = [ln for ln in err.splitlines() if ln.startswith("kernel cache (")]
    say(log, f"$ {' '.join(f'{k}={v}' for k, v in env.items())} lab {' '.join(args)}\n  exit {rc}, {dt:.1f} s; "
             f"{stats[-1] if stats else 'no cache stats'}")
    return rc, dt, out, err


def say(log, text):
    print(text, flush=True)
    log.write(text + "\n")
    log.flush()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--budget", type=float, default=420.0)
    a = ap.parse_args()
    t_start = time.perf_counter()
    os.makedirs(a.out, exist_ok=True)
    base = "/tmp/lab-crash-check"
    shutil.rmtree(base, ignore_errors=True)
    with open(os.path.join(a.out, "summary.txt"), "w") as log:
        import importlib.metadata as md

        vers = []
        for d in ("numba_cuda_mlir", "numba-cuda", "numpy"):
            try:
                vers.append(f"{d} {md.version(d)}")
            except md.PackageNotFoundError:
                vers.append(f"{d} missing")
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
        say(log, f"{smi}; python {sys.version.split()[0]}; {', '.join(vers)}; LAB_COMPILER={os.environ.get('LAB_COMPILER')}")

        # 1-2: the fallback, with real compiles
        small = ["run", "softmax", "--size", "300x700", "--dtype", "float64", "--threads", "128",
                 "--contenders", "numba", "--json"]
        for label, env in (("abort hook", {"LAB_TEST_COMPILE_ABORT": "softmax/group_rows"}), ("no hook", {})):
            rc, dt, out, err = lab(small, log, 150, LAB_CACHE_DIR=f"{base}/a", **env)
            say(log, f"[{label}]")
            try:
                doc = json.loads(out[out.find("{"):])
                for r in doc["results"]:
                    say(log, f"  {r['variant']:<11} {r['compiler']:<16} {r['status']:<5} 1st call "
                             f"{r['first_call_ms'] or 0:9.1f} ms  median {r['median_ms'] or 0:.4f} ms  {r['reason']}")
                for w in doc["warnings"]:
                    say(log, f"  warning: {w}")
            except ValueError:
                say(log, "  no JSON; stderr tail:\n" + "\n".join(err.splitlines()[-30:]))
        crashes = os.path.join(base, "a", "kernels", "crashes")
        for name in sorted(os.listdir(crashes)) if os.path.isdir(crashes) else []:
            text = open(os.path.join(crashes, name), errors="replace").read()
            say(log, f"kept crash log {name}: {len(text.splitlines())} lines; first 12:\n" + "\n".join(text.splitlines()[:12]))

        # 3: the child's cost on a first run (Numba rows only: the libraries' own first-run costs, torch.compile's
        # above all, would not be the same twice), then a plain run and a second plain run on that cache
        for label, cache, args, env in (
                ("first run, numba rows", "b", ["--contenders", "numba"], {}),
                ("second run, numba rows (all cached: no child)", "b", ["--contenders", "numba"], {}),
                ("first run, numba rows, guard off (LAB_COMPILE_CHILD=1)", "c", ["--contenders", "numba"],
                 {"LAB_COMPILE_CHILD": "1"}),
                ("plain run (its Numba kernels cached)", "b", [], {}),
                ("second plain run", "b", [], {})):
            rc, dt, out, err = lab(["run", "softmax", *args], log, 150, LAB_CACHE_DIR=f"{base}/{cache}", **env)
            say(log, f"[{label}] {dt:.1f} s")
            with open(os.path.join(a.out, f"run-{cache}-{'plain' if not args else 'numba'}.txt"), "a") as f:
                f.write(f"=== {label}\n{out}\n--- stderr\n{err[-3000:]}\n")

        # 4: the reproducer for the rest of the budget
        left = a.budget - (time.perf_counter() - t_start) - 25
        if left > 20:
            say(log, f"[reproducer] mlir_abort_repro.py --procs 8 --seconds {left:.0f}")
            p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "mlir_abort_repro.py"), "--procs", "8",
                                "--seconds", f"{left:.0f}"], capture_output=True, text=True, cwd=ROOT,
                               timeout=left + 120)
            open(os.path.join(a.out, "repro.txt"), "w").write(p.stdout + p.stderr)
            say(log, "\n".join(p.stdout.strip().splitlines()[-12:]))
        else:
            say(log, f"[reproducer] skipped: {left:.0f} s left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
