"""Check and time the builds of the async_copy rung (kernels.gemm.async_copy.BUILDS) on a GPU, beside
torch's FP32 matmul (TF32 off: cuBLAS SGEMM); prints a table and writes JSON.

    LAB_COMPILER=numba-cuda-mlir python scripts/async_copy_bench.py --out acopy.json   # meant for < 90 s on an H100
    python scripts/async_copy_bench.py --builds b128x128_w64x32_t8x8_k16_s3,b128x128_w64x64_t8x16_k16_s3

Each build is first checked against the float64 reference on fresh random inputs at CHECK_SHAPES (no
multiple of any tile; 1001 x 1036 x 516 takes the 16-byte copies, 257 x 4099 x 130 the 4-byte ones), with
float32's dot-product tolerance (kernels.spec.dot_tolerance); a build that fails is not timed. Then each is
timed at TIME_SHAPES: CUDA events around each call, the median of the calls after a warm-up (at most
``--budget-per`` seconds a build and shape). One process: a build that faults ends the run, the JSON
keeps what was measured before it (``--builds`` leaves it out next time).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK_SHAPES = [(1001, 1036, 516), (257, 4099, 130)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000), (2048, 2048, 2048), (1000, 1030, 517)]


def median_ms(fn, torch, budget_s, warmup=2, calls=15):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    t0 = time.perf_counter()
    for _ in range(calls):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
        if time.perf_counter() - t0 > budget_s and len(times) >= 3:
            break
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="async_copy_bench.json")
    ap.add_argument("--builds", default="", help="comma-separated keys of BUILDS (default: all, the default first)")
    ap.add_argument("--budget-per", type=float, default=0.4, help="seconds of timed calls a build and shape")
    args = ap.parse_args()

    import torch

    from kernels.compiler import COMPILER, cuda
    from kernels.gemm import async_copy as AC
    from kernels.spec import dot_tolerance

    torch.backends.cuda.matmul.allow_tf32 = False
    names = [n for n in args.builds.split(",") if n] or [AC.DEFAULT] + [n for n in AC.BUILDS if n != AC.DEFAULT]
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
           "device": torch.cuda.get_device_name(), "torch": torch.__version__, "compiler": COMPILER,
           "default": AC.DEFAULT, "checks": [], "times": [], "errors": []}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)

    t_start = time.time()
    for (m, n, k) in TIME_SHAPES:  # torch first: the reference column
        A = torch.randn(m, k, device="cuda")
        B = torch.randn(k, n, device="cuda")
        C = torch.empty(m, n, device="cuda")
        ms = median_ms(lambda A=A, B=B, C=C: torch.matmul(A, B, out=C), torch, args.budget_per)
        out["times"].append({"build": "torch fp32", "shape": [m, n, k], "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
    save()
    rng = np.random.default_rng(0)
    for name in names:
        b = AC.BUILDS[name]
        try:
            ok_all = True
            for (m, n, k) in CHECK_SHAPES:
                A = rng.standard_normal((m, k)).astype(np.float32)
                B = rng.standard_normal((k, n)).astype(np.float32)
                dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
                plan = AC.launch_for(b, (m, n, k))
                t0 = time.perf_counter()
                AC.configure(AC.kernel_for(k, n, b), b, plan.grid, plan.block)(cuda.to_device(A), cuda.to_device(B), dC)
                cuda.synchronize()
                first = time.perf_counter() - t0
                got = dC.copy_to_host()
                err = np.abs(got - A.astype(np.float64) @ B.astype(np.float64))
                tol = dot_tolerance(A, B, np.float32)
                ok = bool(np.all(err <= tol))
                ok_all &= ok
                out["checks"].append({"build": name, "shape": [m, n, k], "ok": ok, "max_err": float(np.nanmax(err)),
                                      "nan": int(np.isnan(got).sum()), "worst_over_tol": float(np.nanmax(err / tol)),
                                      "first_call_s": round(first, 2)})
                save()
            if not ok_all:
                continue
            for (m, n, k) in TIME_SHAPES:
                dA = cuda.to_device(np.random.default_rng(1).standard_normal((m, k), np.float32))
                dB = cuda.to_device(np.random.default_rng(2).standard_normal((k, n), np.float32))
                dC = cuda.device_array((m, n), np.float32)
                plan = AC.launch_for(b, (m, n, k))
                launch = AC.configure(AC.kernel_for(k, n, b), b, plan.grid, plan.block)
                ms = median_ms(lambda launch=launch, dA=dA, dB=dB, dC=dC: launch(dA, dB, dC), torch, args.budget_per)
                out["times"].append({"build": name, "shape": [m, n, k], "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
                save()
        except Exception as e:  # a compile error or a fault: record it; after a fault the context is gone
            out["errors"].append(f"{name}: {type(e).__name__}: {' '.join(str(e).split())[:800]}")
            save()
            try:  # a compile error leaves the context usable; a fault does not
                cuda.synchronize()
            except Exception:
                break
    out["seconds"] = round(time.time() - t_start, 1)
    save()
    print(table(out, names))


def table(out: dict, names: list[str]) -> str:
    """The run as text: each build's check and TFLOP/s (x torch FP32) at every timed shape."""
    from kernels.gemm import async_copy as AC

    t = {(r["build"], tuple(r["shape"])): r["tflops"] for r in out["times"]}
    head = f"{'build':34s} {'regs cap':>8s} {'check (err/tol)':16s}" + "".join(
        f"{'x'.join(map(str, s)):>20s}" for s in TIME_SHAPES)
    lines = [f"{out['device']}, {out['compiler']}, torch {out['torch']}; TFLOP/s (x torch FP32, TF32 off); default "
             f"{AC.DEFAULT}; {out.get('seconds', '?')} s", head,
             f"{'torch fp32':60s}" + "".join(f"{t.get(('torch fp32', s), float('nan')):20.1f}" for s in TIME_SHAPES)]
    for name in names:
        b = AC.BUILDS[name]
        checks = [c for c in out["checks"] if c["build"] == name]
        verdict = (("ok " if all(c["ok"] for c in checks) else "FAILED ")
                   + " ".join(f"{c['worst_over_tol']:.2f}" for c in checks)) if checks else "not run"
        cap = min(255, 65536 // (b.threads * b.blocks))
        cells = ""
        for s in TIME_SHAPES:
            mine, ref = t.get((name, s)), t.get(("torch fp32", s))
            cells += f"{mine:10.1f} ({mine / ref:.2f}x)".rjust(20) if mine and ref else f"{'-':>20s}"
        lines.append(f"{name:34s} {cap:8d} {verdict:16s}{cells}")
    lines += [f"error: {e}" for e in out["errors"]]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
