"""Try to reproduce numba-cuda-mlir 0.6.0 aborting in ``mlir_optimization.optimize`` (GPU only).

What was seen (docs/upstream-numba-cuda-mlir-abort.md): during ``pytest -m gpu -n 8`` on an H200, a
worker that had compiled many kernels aborted ("Fatal Python error: Aborted") inside
``numba_cuda_mlir/mlir_optimization.py``, ``optimize``, compiling softmax's ``group_rows`` in float64
at 300x700 with 128 threads. The same compile in a fresh process succeeds.

What this does: ``--procs`` worker processes (8, as pytest -n 8), each with the kernel cache off
(every kernel really compiles) and faulthandler on, loop for ``--seconds``: re-import the softmax
kernel modules (fresh dispatchers: everything compiles again), compile and run every softmax rung at
the shapes, threads and dtypes of tests/kernels/test_softmax.py, each checked against NumPy, then the
crashing compile: group_rows, float64, 300x700, 128 threads. Each worker prints one line a round;
the parent counts the workers that died by a signal and prints the tail of their output.

    LAB_COMPILER=numba-cuda-mlir python scripts/mlir_abort_repro.py --procs 8 --seconds 60
"""
from __future__ import annotations

import argparse
import faulthandler
import importlib
import os
import platform
import subprocess
import sys
import time

CASES = [((1000, 4097), 256), ((4099, 1001), 1024), ((300, 8192), 1024), ((64, 33000), 512), ((2, 300), 32),
         ((5, 70), 64), ((5, 70), 32), ((7, 8192), 1024), ((300, 700), 128)]
TARGET = ("group_rows", (300, 700), 128, "float64")
MODULES = ("kernels.warp", "kernels.softmax_rows", "kernels.softmax")


def versions() -> str:
    import importlib.metadata as md

    out = [f"python {platform.python_version()}"]
    for dist in ("numba_cuda_mlir", "numba-cuda", "numpy", "cuda-bindings", "cuda-python"):
        try:
            out.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(out)


def worker(seconds: float, seed: int) -> None:
    import numpy as np

    faulthandler.enable()
    import kernels
    from kernels.compiler import COMPILER, cuda

    name = getattr(cuda.get_current_device(), "name", "the simulator")
    print(f"worker {os.getpid()}: {COMPILER} on {name.decode() if isinstance(name, bytes) else name}; "
          f"{versions()}", flush=True)
    rng = np.random.default_rng(seed)
    compiles, rounds, t0 = 0, 0, time.perf_counter()

    def one(spec, variant, size, threads, dtype):
        v = spec.variants[variant]
        if v.accepts(threads) or (getattr(v, "unavailable", None) and v.unavailable(np.dtype(dtype))):
            return False
        x = spec.make_inputs(size, np.dtype(dtype), rng)
        d_in = [cuda.to_device(np.ascontiguousarray(a)) for a in x]
        outs = [cuda.device_array(shape, dt) for shape, dt in spec.out_specs(size, np.dtype(dtype))]
        v.prepare(v.launch(size, threads), d_in, outs)()
        cuda.synchronize()
        ref = spec.reference(*[a.astype(np.float64) for a in x])[0]
        got = outs[0].copy_to_host()
        assert np.allclose(got, ref, rtol=1e-3, atol=1e-6), (variant, size, threads, dtype)
        return True

    while time.perf_counter() - t0 < seconds:
        for name in MODULES:  # fresh dispatchers: every kernel compiles again
            importlib.reload(importlib.import_module(name))
        spec = kernels.load("softmax")
        order = [(v, s, t, d) for v in ("naive", "fused", "online", "group_rows", "split_row", "auto")
                 for s, t in CASES for d in ("float32", "float64")]
        rng.shuffle(order)
        for v, s, t, d in order:
            compiles += one(spec, v, s, t, d)
        variant, size, threads, dtype = TARGET
        print(f"worker {os.getpid()} round {rounds}: {compiles} rung compiles so far; now {variant} {dtype} "
              f"{size[0]}x{size[1]} {threads} threads", flush=True)
        one(spec, variant, size, threads, dtype)
        rounds += 1
    print(f"worker {os.getpid()}: survived {rounds} rounds, {compiles} rung compiles, "
          f"{time.perf_counter() - t0:.0f} s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        worker(a.seconds, a.worker)
        return 0
    env = dict(os.environ, LAB_KERNEL_CACHE="0", PYTHONFAULTHANDLER="1")
    env.setdefault("LAB_COMPILER", "numba-cuda-mlir")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(i), "--seconds",
                               str(a.seconds)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for i in range(a.procs)]
    died = 0
    for i, p in enumerate(procs):
        out, _ = p.communicate()
        lines = out.strip().splitlines()
        if p.returncode < 0:
            died += 1
            print(f"--- worker {i} died by signal {-p.returncode}; its last lines:")
            print("\n".join(lines[-40:]))
        else:
            print(f"worker {i}: exit {p.returncode}; {lines[-1] if lines else ''}")
            if p.returncode:
                print("\n".join(lines[-15:]))
    print(f"{died} of {a.procs} workers died by a signal")
    return 1 if died else 0


if __name__ == "__main__":
    sys.exit(main())
