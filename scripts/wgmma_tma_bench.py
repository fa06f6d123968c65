"""Check and time the TMA builds of the wgmma GEMMs (kernels/gemm/wgmma_tma.py) beside the cp.async builds and
torch's matmul at the same precision, on an H100/H200; each build in a child process with a time limit (a
hung barrier wait costs that build, not the run). About 3 minutes for the default builds.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/wgmma_tma_bench.py [--json out.json]

Builds: names of kernels.gemm.wgmma_tma.BUILDS or kernels.gemm.wgmma_bf16.BUILDS (bf16 operands), and "tf32:" + a name of
kernels.gemm.wgmma_tf32.BUILDS (A and B^T already TF32: the kernel alone, without the rung's pre-pass).

1. Correctness of each build: fresh random float32 inputs rounded to bf16 (or TF32), C poisoned (NaN), against
   the float64 product of the same rounded values (error allowed: float32 sums, 2e-6 sqrt(K) |A| |B|) at
   CHECK_SHAPES (M, N not multiples of the tiles, K not a multiple of the slab).
2. The median ms a call (lab.core.timing's Timer as ``lab run`` times: CUDA events, L2 flushed before each
   call) at TIME_SHAPES -- 4096^3 and two shapes not multiples of 128 -- for torch.matmul on bf16 tensors and
   on float32 with TF32 allowed (cuBLAS; torch's bf16 writes bf16 C, these kernels float32 C) and each build
   (the kernel alone, its operands already rounded), each timed output checked on its first 64 rows. bf16
   builds are timed twice at the ragged shapes: K and N zero-padded to multiples of 8 (the rung's
   prepare) and to multiples of 64 ("@64": rows of whole 128-byte lines).
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
DEFAULT_BUILDS = "m256s4stmfp,tma_ws_n256s4,tma_ws_m256s4,tf32:m256s4stmfp,tf32:tma_ws_n256s4,tf32:tma_ws_m256s4"
PAD = 64  # "@64" rows: K and N padded to multiples of 64 elements (rows of 128-byte multiples)


def timed_ms(fn, budget_s, sync=None):
    from kernels.compiler import cuda
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", sync or cuda.synchronize).measure(warmup=2, rule=StopRule(time_limit_s=budget_s)).median_ms


def tf32_bits(x):
    """float32 -> TF32 rounded to nearest, ties away (cvt.rna.tf32.f32 on finite inputs), as float32 values."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def inputs(m, n, k, rng, tf32, pad=1):
    """(A, B, Af, Bf): the device operands' host arrays (bf16: A (m, kp) and B (kp, np) uint16 bits; TF32: A
    (m, kp) and B^T (n, kp) float32 TF32 values; kp, np = k, n rounded up to ``pad``, zeros there) and the
    float64 A (m, k) and B (k, n) they hold."""
    from kernels.gemm import mma_bf16 as MB

    kp, npad = -(-k // pad) * pad, -(-n // pad) * pad
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    if tf32:
        A, B = tf32_bits(A), tf32_bits(B)
        Af, Bf = A.astype(np.float64), B.astype(np.float64)
        Ad, Bd = np.zeros((m, kp), np.float32), np.zeros((n, kp), np.float32)
        Ad[:, :k], Bd[:, :k] = A, B.T
    else:
        A, B = MB.to_bf16_bits(A), MB.to_bf16_bits(B)
        Af, Bf = MB.bf16_bits_to_float32(A).astype(np.float64), MB.bf16_bits_to_float32(B).astype(np.float64)
        Ad, Bd = np.zeros((m, kp), np.uint16), np.zeros((kp, npad), np.uint16)
        Ad[:, :k], Bd[:k, :n] = A, B
    return Ad, Bd, Af, Bf


def rel_err(D, Af, Bf, rows=None):
    """max |D - A B| / (2e-6 sqrt(K) |A| |B|) (float32 sums of exact products) over the first ``rows`` rows;
    inf when D has NaN."""
    Af = Af if rows is None else Af[:rows]
    D = D if rows is None else D[:rows]
    if not np.isfinite(D).all():
        return float("inf")
    return float(np.max(np.abs(D - Af @ Bf) / (2e-6 * np.sqrt(Af.shape[1]) * (np.abs(Af) @ np.abs(Bf)) + 1e-30)))


def one(name: str, budget_s: float) -> dict:
    """Check and time build ``name`` ("tf32:" + a wgmma_tf32 build, else a wgmma_bf16 build) in this process:
    at TIME_SHAPES with K, N padded to 8 (bf16) or K to 4 (TF32), and, for bf16, padded to 64 as well."""
    from kernels.compiler import cuda
    from kernels.gemm import wgmma_bf16 as W, wgmma_tf32 as WT, wgmma_tma as T

    tf32 = name.startswith("tf32:")
    build = WT.BUILDS[name[5:]] if tf32 else T.BUILDS[name] if name in T.BUILDS else W.BUILDS[name]

    def make(m, n, k):
        if tf32:
            return WT.launcher(m, n, k, build)
        return T.launcher(m, n, k, **build) if build.get("tma") else W.launcher(m, n, k, **build)

    def run(m, n, k, pad, rng):
        Ad, Bd, Af, Bf = inputs(m, n, k, rng, tf32, pad)
        dA, dB = cuda.to_device(Ad), cuda.to_device(Bd)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        f = make(m, n if tf32 else Bd.shape[1], Ad.shape[1])
        f(dA, dB, dC)
        cuda.synchronize()
        return f, dA, dB, dC, Af, Bf

    rng = np.random.default_rng()
    out = {"build": name, "check": [], "time": {}}
    base = 4 if tf32 else 8
    for m, n, k in CHECK_SHAPES:
        t0 = time.perf_counter()
        f, dA, dB, dC, Af, Bf = run(m, n, k, base, rng)
        err = rel_err(dC.copy_to_host(), Af, Bf)
        out["check"].append({"shape": [m, n, k], "rel_err": err, "ok": err <= 1})
        print(f"check {name:20s} {m}x{n}x{k:<5d} {'PASS' if err <= 1 else 'FAIL'} err/tol {err:.3g} "
              f"({time.perf_counter() - t0:.1f} s with compile)", flush=True)
    if build.get("tma"):
        try:
            from kernels.gemm import wgmma_tma as T

            kern = T.make_tma_kernel(build["stages"], build["wgs"], build["bn"], build.get("ws", False),
                                     tuple(build["maxnreg"]) if build.get("maxnreg") else None, tf32, build.get("group", 1))
            regs, local = kern.get_regs_per_thread(), kern.get_local_mem_per_thread()
            out["regs"] = max(regs.values()) if isinstance(regs, dict) else int(regs)
            out["local_bytes"] = max(local.values()) if isinstance(local, dict) else int(local)
            print(f"regs {name}: {out['regs']} a thread, {out['local_bytes']} bytes local", flush=True)
        except Exception as e:  # the compiler's report is a nicety
            print(f"regs {name}: n/a ({type(e).__name__}: {str(e)[:120]})", flush=True)
    if not all(c["ok"] for c in out["check"]):
        return out
    for m, n, k in TIME_SHAPES:
        for pad in (base,) if tf32 or (m, n, k) == TIME_SHAPES[0] else (base, PAD):
            f, dA, dB, dC, Af, Bf = run(m, n, k, pad, rng)
            err = rel_err(dC.copy_to_host()[:64], Af, Bf, rows=64)
            ms = timed_ms(lambda f=f, dA=dA, dB=dB, dC=dC: f(dA, dB, dC), budget_s)
            key = f"{m}x{n}x{k}" + ("" if pad == base else f"@{pad}")
            out["time"][key] = {"ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9, "rel_err_64_rows": err}
            print(f"time {name:20s} {key:18s} {ms:.4f} ms {2.0 * m * n * k / ms / 1e9:6.1f} TFLOP/s "
                  f"(rows 0-63 err/tol {err:.3g})", flush=True)
            del dA, dB, dC
    return out


def torch_times(budget_s: float) -> dict:
    import torch

    rng = np.random.default_rng()
    out = {}
    for prec in ("bf16", "tf32"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        for m, n, k in TIME_SHAPES:
            tA = torch.from_numpy(rng.standard_normal((m, k)).astype(np.float32)).cuda()
            tB = torch.from_numpy(rng.standard_normal((k, n)).astype(np.float32)).cuda()
            if prec == "bf16":
                tA, tB = tA.bfloat16(), tB.bfloat16()
            ms = timed_ms(lambda tA=tA, tB=tB: torch.matmul(tA, tB), budget_s, torch.cuda.synchronize)
            out[f"{prec}:{m}x{n}x{k}"] = {"ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9}
            print(f"time {'torch ' + prec:20s} {m}x{n}x{k:<5d} {ms:.4f} ms {2.0 * m * n * k / ms / 1e9:6.1f} TFLOP/s",
                  flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
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
    names = (args.builds or DEFAULT_BUILDS).split(",")
    doc = {"torch": torch_times(args.budget), "builds": {}}
    for name in names:
        path = f"/tmp/tma_{name.replace(':', '_')}.json"
        try:
            r = subprocess.run([sys.executable, __file__, "--one", name, "--json", path, "--budget", str(args.budget)],
                               timeout=args.limit)
            doc["builds"][name] = json.load(open(path)) if r.returncode == 0 else {"error": f"exit {r.returncode}"}
        except subprocess.TimeoutExpired:
            doc["builds"][name] = {"error": f"over {args.limit} s (a hang?)"}
            print(f"{name}: over {args.limit} s", flush=True)
    print(f"\n{'build':22s}{'shape':20s}{'ms':>9s}{'TFLOP/s':>9s}{'x torch':>9s}")
    for name, r in doc["builds"].items():
        if "error" in r or not r.get("time"):
            print(f"{name:22s} {r.get('error', 'failed its check')}")
            continue
        prec = "tf32" if name.startswith("tf32:") else "bf16"
        for key, v in r["time"].items():
            ref = doc["torch"][f"{prec}:{key.split('@')[0]}"]["ms"]
            print(f"{name:22s}{key:20s}{v['ms']:9.4f}{v['tflops']:9.1f}{ref / v['ms']:9.2f}")
    for key, v in doc["torch"].items():
        print(f"{'torch ' + key.split(':')[0]:22s}{key.split(':')[1]:20s}{v['ms']:9.4f}{v['tflops']:9.1f}")
    print(f"{time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
