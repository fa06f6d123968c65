"""Check and time the wgmma bf16 GEMM (kernels/gemm/wgmma_bf16.py) on an H100 beside torch's bf16 matmul; under 90 s.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/wgmma_bench.py [--json out.json]

1. Correctness: fresh random float32 inputs rounded to bf16 (uint16 bits), C poisoned (NaN) first, against
   the float64 product of the same bf16 values (the error allowed: float32 sums, 2e-6 sqrt(K) of |A| |B|).
   CHECK_SHAPES, for the rung's build (kernels.gemm.wgmma_bf16.BUILD): 1001 x 1032 x 520 (K, N multiples of 8:
   the cp.async path; M ragged), 1001 x 1036 x 520 and 1001 x 1036 x 517 (N or K not a multiple of 8: a bf16
   row is then not 16-byte aligned, so the build takes plain element loads -- correct, slower), 130 x 136 x 72
   (two slabs, the second 8 deep). Every other build of ``--builds`` is checked at the cp.async shapes.
2. TFLOP/s at 4096^3 and 3000 x 5000 x 2000 of each build of ``--builds`` (wgmma_bf16.BUILDS; default all
   but n256s4):
   the median ms a call of lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call);
   torch.matmul on bf16 tensors the same way (cuBLAS, wgmma; it writes bf16 C, this kernel float32 C). Each
   build's 4096^3 output is checked on its first 64 rows. Without torch: no torch column.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.compiler import cuda  # noqa: E402  (after LAB_COMPILER is set)
from kernels.gemm import mma_bf16 as MB, wgmma_bf16 as W  # noqa: E402

CHECK_SHAPES = [(1001, 1032, 520), (1001, 1036, 520), (1001, 1036, 517), (130, 136, 72)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000)]
BUILDS = W.BUILDS  # name -> launcher keywords


def inputs(m, n, k, rng):
    A = MB.to_bf16_bits(rng.standard_normal((m, k)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((k, n)).astype(np.float32))
    return A, B


def reference(A, B, rows=None):
    Af = MB.bf16_bits_to_float32(A if rows is None else A[:rows]).astype(np.float64)
    Bf = MB.bf16_bits_to_float32(B).astype(np.float64)
    return Af @ Bf, np.abs(Af) @ np.abs(Bf)


def rel_err(D, A, B, rows=None):
    """max |D - ref| / (2e-6 sqrt(K) |A| |B|) over the first ``rows`` rows: <= 1 passes; inf when D has NaN."""
    ref, mag = reference(A, B, rows)
    D = D if rows is None else D[:rows]
    if not np.isfinite(D).all():
        return float("inf")
    return float(np.max(np.abs(D - ref) / (2e-6 * np.sqrt(A.shape[1]) * mag + 1e-30)))


def run(m, n, k, A, B, **build):
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    f = W.launcher(m, n, k, **build)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    f(dA, dB, dC)
    cuda.synchronize()
    return f, dA, dB, dC


def timed_ms(fn, torch, budget_s=3.0):
    """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer, as ``lab run`` times: CUDA events, one pair a call, calls queued behind the blocking kernel, L2 flushed before each; its stop rule, at most ``budget_s`` s."""
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", cuda.synchronize).measure(warmup=2, rule=StopRule(time_limit_s=budget_s)).median_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--builds", default=",".join(b for b in BUILDS if b != "n256s4"),
                    help=f"comma-separated, of {', '.join(BUILDS)} (each compile takes 5-30 s on first use; the "
                    "kernel cache keeps them)")
    ap.add_argument("--budget", type=float, default=75.0, help="seconds; checks past 0.6 of it and builds past it "
                    "are skipped")
    args = ap.parse_args()
    if W.UNAVAILABLE:
        sys.exit(f"wgmma_bench: {W.UNAVAILABLE}")
    t_start = time.perf_counter()
    rng = np.random.default_rng()
    out = {"check": [], "time": [], "default": W.build_name()}
    names = args.builds.split(",")
    checks = [(W.build_name(), W.BUILD, shape) for shape in CHECK_SHAPES]
    checks += [(name, BUILDS[name], shape) for name in names if BUILDS[name] != W.BUILD
               for shape in CHECK_SHAPES if shape[1] % 8 == 0 and shape[2] % 8 == 0]
    for name, build, (m, n, k) in checks:
        if time.perf_counter() - t_start > 0.6 * args.budget:
            print(f"check {name:10s} {m}x{n}x{k}: skipped (budget)", flush=True)
            continue
        A, B = inputs(m, n, k, rng)
        path = "cp.async" if k % 8 == 0 and n % 8 == 0 else "plain loads"
        try:
            err = rel_err(run(m, n, k, A, B, **build)[3].copy_to_host(), A, B)
        except Exception as e:
            err, path = float("inf"), f"{path}: {type(e).__name__}: {str(e)[:200]}"
        ok = err <= 1
        out["check"].append({"build": name, "shape": [m, n, k], "path": path, "rel_err": err, "ok": ok})
        print(f"check {name:10s} {m}x{n}x{k:<5d} {path:12s} {'PASS' if ok else 'FAIL'}  err/tol {err:.3g}", flush=True)
    try:
        import torch
    except ImportError:
        torch = None
    rows, data = [], []
    for m, n, k in TIME_SHAPES:  # torch first, then each build at both shapes (so a build past the budget has neither)
        A, B = inputs(m, n, k, rng)
        row = {"shape": [m, n, k], "builds": {}}
        if torch is not None:
            tA = torch.from_numpy(MB.bf16_bits_to_float32(A)).cuda().bfloat16()
            tB = torch.from_numpy(MB.bf16_bits_to_float32(B)).cuda().bfloat16()
            row["torch_tflops"] = 2.0 * m * n * k / timed_ms(lambda tA=tA, tB=tB: torch.matmul(tA, tB), torch) / 1e9
            del tA, tB
        rows.append(row)
        data.append((A, B))
    for name in names:
        if time.perf_counter() - t_start > args.budget:
            print(f"time {name}: skipped (budget)")
            continue
        for row, (A, B) in zip(rows, data):
            m, n, k = row["shape"]
            f, dA, dB, dC = run(m, n, k, A, B, **BUILDS[name])
            err = rel_err(dC.copy_to_host(), A, B, rows=64) if (m, n, k) == TIME_SHAPES[0] else None
            ms = timed_ms(lambda f=f, dA=dA, dB=dB, dC=dC: f(dA, dB, dC), torch)
            tf = 2.0 * m * n * k / ms / 1e9
            row["builds"][name] = {"tflops": tf, "ms": ms, "rel_err_64_rows": err}
            vs = f"  = {tf / row['torch_tflops']:.2f}x torch ({row['torch_tflops']:.1f})" if torch is not None else ""
            chk = "" if err is None else f"  rows 0-63 err/tol {err:.3g}"
            print(f"time {m}x{n}x{k} {name:10s} {tf:7.1f} TFLOP/s ({ms:.3f} ms){vs}{chk}", flush=True)
            del dA, dB, dC
    out["time"] = rows
    dev = cuda.get_current_device()
    out["device"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    print(f"{out['device']}; {time.perf_counter() - t_start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
