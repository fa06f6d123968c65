"""Check and time the TMA builds of the wgmma bf16 GEMM (kernels/gemm/wgmma_tma.py) beside the cp.async build
(kernels/gemm/wgmma_bf16.BUILD) and torch's bf16 matmul, on an H100/H200; each build in a child process
with a time limit (a hung barrier wait costs that build, not the run).

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/wgmma_tma_bench.py [--json out.json]

1. Correctness of each build: fresh random float32 inputs rounded to bf16 (uint16 bits), C poisoned (NaN),
   against the float64 product of the same bf16 values (error allowed: float32 sums, 2e-6 sqrt(K) |A| |B|)
   at CHECK_SHAPES (M, N not multiples of the tiles, K not a multiple of the 64-deep slab).
2. The median ms a call (lab.core.timing's Timer as ``lab run`` times: CUDA events, L2 flushed before each
   call) at TIME_SHAPES -- 4096^3 and two shapes not multiples of 128 -- for torch.matmul on bf16 tensors
   (cuBLAS; it writes bf16 C, these kernels float32 C) and each build (kernel alone, inputs already bf16);
   each build's timed output checked on its first 64 rows.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK_SHAPES = [(777, 1336, 904), (130, 4104, 72), (1000, 1032, 520)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 2000, 1000), (5000, 3000, 2504)]  # K, N multiples of 8 (bf16 rows)
CPASYNC = "cpasync"  # the rung's current build


def builds() -> dict:
    from kernels.gemm import wgmma_tma as T

    return {CPASYNC: None, **T.BUILDS}


def timed_ms(fn, budget_s):
    from kernels.compiler import cuda
    from lab.core.timing import StopRule, Timer

    return Timer(fn, "device", cuda.synchronize).measure(warmup=2, rule=StopRule(time_limit_s=budget_s)).median_ms


def inputs(m, n, k, rng):
    from kernels.gemm import mma_bf16 as MB

    return (MB.to_bf16_bits(rng.standard_normal((m, k)).astype(np.float32)),
            MB.to_bf16_bits(rng.standard_normal((k, n)).astype(np.float32)))


def rel_err(D, A, B, rows=None):
    from kernels.gemm import mma_bf16 as MB

    Af = MB.bf16_bits_to_float32(A if rows is None else A[:rows]).astype(np.float64)
    Bf = MB.bf16_bits_to_float32(B).astype(np.float64)
    D = D if rows is None else D[:rows]
    if not np.isfinite(D).all():
        return float("inf")
    return float(np.max(np.abs(D - Af @ Bf) / (2e-6 * np.sqrt(A.shape[1]) * (np.abs(Af) @ np.abs(Bf)) + 1e-30)))


def one(name: str, budget_s: float) -> dict:
    """Check and time build ``name`` in this process."""
    from kernels.compiler import cuda
    from kernels.gemm import wgmma_bf16 as W, wgmma_tma as T

    def make(m, n, k):
        return W.launcher(m, n, k, **W.BUILD) if name == CPASYNC else T.launcher(m, n, k, **T.BUILDS[name])

    rng = np.random.default_rng()
    out = {"build": name, "check": [], "time": {}}
    for m, n, k in CHECK_SHAPES:
        A, B = inputs(m, n, k, rng)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        t0 = time.perf_counter()
        make(m, n, k)(cuda.to_device(A), cuda.to_device(B), dC)
        cuda.synchronize()
        err = rel_err(dC.copy_to_host(), A, B)
        out["check"].append({"shape": [m, n, k], "rel_err": err, "ok": err <= 1})
        print(f"check {name:15s} {m}x{n}x{k:<5d} {'PASS' if err <= 1 else 'FAIL'} err/tol {err:.3g} "
              f"({time.perf_counter() - t0:.1f} s with compile)", flush=True)
    if name != CPASYNC:
        try:
            b = T.BUILDS[name]
            kern = T.make_tma_kernel(b["stages"], b["wgs"], b["bn"], b.get("ws", False),
                                     tuple(b["maxnreg"]) if b.get("maxnreg") else None, False, b.get("group", 1))
            out["regs"] = int(kern.get_regs_per_thread())
            out["local_bytes"] = int(kern.get_local_mem_per_thread())
            print(f"regs {name}: {out['regs']} a thread, {out['local_bytes']} bytes local", flush=True)
        except Exception as e:  # the compiler's report is a nicety
            print(f"regs {name}: n/a ({type(e).__name__}: {str(e)[:120]})", flush=True)
    if not all(c["ok"] for c in out["check"]):
        return out
    for m, n, k in TIME_SHAPES:
        A, B = inputs(m, n, k, rng)
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        f = make(m, n, k)
        f(dA, dB, dC)
        cuda.synchronize()
        err = rel_err(dC.copy_to_host()[:64], A, B, rows=64)
        ms = timed_ms(lambda f=f, dA=dA, dB=dB, dC=dC: f(dA, dB, dC), budget_s)
        out["time"][f"{m}x{n}x{k}"] = {"ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9, "rel_err_64_rows": err}
        print(f"time {name:15s} {m}x{n}x{k:<5d} {ms:.4f} ms {2.0 * m * n * k / ms / 1e9:6.1f} TFLOP/s "
              f"(rows 0-63 err/tol {err:.3g})", flush=True)
    return out


def torch_times(budget_s: float) -> dict:
    import torch

    rng = np.random.default_rng()
    out = {}
    for m, n, k in TIME_SHAPES:
        A, B = inputs(m, n, k, rng)
        from kernels.gemm import mma_bf16 as MB

        tA = torch.from_numpy(MB.bf16_bits_to_float32(A)).cuda().bfloat16()
        tB = torch.from_numpy(MB.bf16_bits_to_float32(B)).cuda().bfloat16()
        from lab.core.timing import StopRule, Timer

        ms = Timer(lambda tA=tA, tB=tB: torch.matmul(tA, tB), "device", torch.cuda.synchronize).measure(
            warmup=2, rule=StopRule(time_limit_s=budget_s)).median_ms
        out[f"{m}x{n}x{k}"] = {"ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9}
        print(f"time {'torch bf16':15s} {m}x{n}x{k:<5d} {ms:.4f} ms {2.0 * m * n * k / ms / 1e9:6.1f} TFLOP/s", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--one", help="check and time this build here (the children's mode)")
    ap.add_argument("--builds", help="comma-separated (default: cpasync and every TMA build)")
    ap.add_argument("--limit", type=float, default=70.0, help="seconds a build's child may run")
    ap.add_argument("--budget", type=float, default=1.5, help="seconds of timing a shape")
    args = ap.parse_args()
    if args.one:
        res = one(args.one, args.budget)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f)
        return
    from kernels.gemm import wgmma_tma as T

    if T.UNAVAILABLE:
        sys.exit(f"wgmma_tma_bench: {T.UNAVAILABLE}")
    t0 = time.perf_counter()
    names = args.builds.split(",") if args.builds else list(builds())
    doc = {"torch": torch_times(args.budget), "builds": {}}
    for name in names:
        path = f"/tmp/tma_{name}.json"
        try:
            r = subprocess.run([sys.executable, __file__, "--one", name, "--json", path, "--budget", str(args.budget)],
                               timeout=args.limit)
            doc["builds"][name] = json.load(open(path)) if r.returncode == 0 else {"error": f"exit {r.returncode}"}
        except subprocess.TimeoutExpired:
            doc["builds"][name] = {"error": f"over {args.limit} s (a hang?)"}
            print(f"{name}: over {args.limit} s", flush=True)
    print(f"\n{'build':16s}" + "".join(f"{s:>22s}" for s in doc["torch"]))
    print(f"{'torch bf16':16s}" + "".join(f"{v['ms']:10.4f} ms {v['tflops']:5.0f} TF" for v in doc["torch"].values()))
    for name, r in doc["builds"].items():
        if "error" in r or not r.get("time"):
            print(f"{name:16s} {r.get('error', 'failed its check')}")
            continue
        print(f"{name:16s}" + "".join(f"{r['time'][s]['ms']:10.4f} ms {doc['torch'][s]['ms'] / r['time'][s]['ms']:5.2f}x  "
                                      for s in doc["torch"]) + f" regs {r.get('regs', '?')}")
    print(f"{time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
