"""Check and time the TF32 wgmma rung (kernels/gemm/wgmma_tf32.py) beside torch's TF32 matmul; about 2 minutes.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/wgmma_tf32_bench.py [--json out.json]

1. Correctness, through the rung's own ``prepare`` (the pre-pass and the kernel, C poisoned with NaN first), on
   fresh float32 inputs against the float64 product with the TF32 tolerance (kernels.gemm.mma.
   rounded_inputs_tolerance, 10 mantissa bits): err/tol <= 1 passes. Standard-normal inputs at CHECK_SHAPES
   (K and N ragged, one slab, tiny) for every build; then non-negative inputs (uniform [0, 1): every product
   positive, so a rounding bias adds up instead of cancelling) at 512 x 520 x 8192 with A rounded ("rna", the
   rung's) and with A truncated by the tensor cores ("truncate").
2. TFLOP/s (2 m n k / time) at TIME_SHAPES, the median ms a call of lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call)
   (scripts/wgmma_bench.timed_ms): torch.matmul with TF32 allowed (cuBLAS) and with it off (cuBLAS
   FP32: an upper bound of the lab's FP32 rungs); the rung as chosen (pre-pass + kernel: what ``lab run``
   times); its two pre-pass kernels alone (and the first build of the rounding, and torch's A.clone() and
   B.t().contiguous() for the same bytes); each build of ``--builds`` (pre-pass + kernel); A truncated; and the mma.sync
   TF32 rung (kernels/gemm/tensor_core_tf32.py) as it runs in ``lab run``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.compiler import bound, cuda  # noqa: E402  (after LAB_COMPILER is set)
from kernels.gemm import mma, tensor_core_tf32 as TC, wgmma_tf32 as T  # noqa: E402
from wgmma_bench import timed_ms  # noqa: E402  (scripts/ is sys.path[0])

CHECK_SHAPES = [(1001, 1030, 517), (1001, 1032, 520), (130, 136, 32), (257, 129, 33)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000), (8192, 8192, 8192), (6144, 4096, 1536), (4097, 4097, 4097),
               (1024, 1024, 1024), (2048, 2048, 2048)]


def rel_err(C, A, B):
    """max |C - A @ B| / tolerance (the TF32 bound); inf when C has NaN."""
    if not np.isfinite(C).all():
        return float("inf")
    ref = A.astype(np.float64) @ B.astype(np.float64)
    return float(np.max(np.abs(C - ref) / mma.rounded_inputs_tolerance(A, B, mma.MANTISSA_BITS["tf32"])))


def prepared(A, B, build=None, rounding=T.ROUNDING):
    """(call, C) of the rung's prepare on device copies of A, B; C poisoned."""
    m, k = A.shape
    n = B.shape[1]
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
    cfg = T.launch((m, n, k), 0) if build is None else SimpleNamespace(grid=None)
    return T.prepare(cfg, (dA, dB), (dC,), build=build, rounding=rounding), dC, (dA, dB)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--builds", default=",".join(T.BUILDS))
    ap.add_argument("--shapes", type=int, default=len(TIME_SHAPES), help="time the first N of TIME_SHAPES")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds; builds past it are skipped")
    args = ap.parse_args()
    if T.UNAVAILABLE:
        sys.exit(f"wgmma_tf32_bench: {T.UNAVAILABLE}")
    import torch

    t0 = time.perf_counter()
    rng = np.random.default_rng()
    names = args.builds.split(",")
    out = {"default": T.DEFAULT, "check": [], "time": []}
    for name in [None, *names]:
        for m, n, k in CHECK_SHAPES if name is None else CHECK_SHAPES[:2]:
            A = rng.standard_normal((m, k)).astype(np.float32)
            B = rng.standard_normal((k, n)).astype(np.float32)
            call, dC, _ = prepared(A, B, name)
            call()
            err = rel_err(dC.copy_to_host(), A, B)
            out["check"].append({"build": name or "chosen", "shape": [m, n, k], "inputs": "normal", "rel_err": err})
            print(f"check {name or 'chosen':12s} {m}x{n}x{k:<5d} normal   {'PASS' if err <= 1 else 'FAIL'} err/tol {err:.3g}",
                  flush=True)
    for rounding in ("rna", "truncate"):
        m, n, k = 512, 520, 8192
        A, B = rng.random((m, k), np.float32), rng.random((k, n), np.float32)
        call, dC, _ = prepared(A, B, rounding=rounding)
        call()
        err = rel_err(dC.copy_to_host(), A, B)
        out["check"].append({"build": f"chosen/{rounding}", "shape": [m, n, k], "inputs": "uniform[0,1)", "rel_err": err})
        print(f"check A {rounding:8s}   {m}x{n}x{k} [0,1)   {'PASS' if err <= 1 else 'FAIL'} err/tol {err:.3g}", flush=True)

    for m, n, k in TIME_SHAPES[:args.shapes]:
        if time.perf_counter() - t0 > args.budget:
            print(f"time {m}x{n}x{k}: skipped (budget)")
            continue
        flop = 2.0 * m * n * k / 1e9
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        row = {"shape": [m, n, k], "tflops": {}}
        tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        for tf32 in (True, False):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            row["tflops"]["torch_tf32" if tf32 else "torch_fp32"] = flop / timed_ms(
                lambda tA=tA, tB=tB: torch.matmul(tA, tB), torch)
        del tA, tB
        torch.backends.cuda.matmul.allow_tf32 = False
        call, dC, (dA, dB) = prepared(A, B)
        row["tflops"]["chosen"] = flop / timed_ms(call, torch)
        row["chosen"] = T.choose((m, n, k))[0]
        kp = T.padded(k)
        Ar, BT = cuda.device_array((m, kp), np.int32), cuda.device_array((n, kp), np.int32)

        rnd = bound(T.tf32_round[T.round_grid(m, kp), T.ROUND_BLOCK], (dA, Ar))
        flat = bound(T.tf32_round_flat[(m * kp + 255) // 256, 256], (dA, Ar))
        trans = bound(T.tf32_transpose[((kp + 31) // 32, (n + 31) // 32), (32, 8)], (dB, BT))
        row["round_ms"], row["round_flat_ms"], row["transpose_ms"] = (timed_ms(f, torch) for f in (rnd, flat, trans))
        row["prepass_ms"] = row["round_ms"] + row["transpose_ms"]
        cA, cB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        row["torch_copy_a_ms"] = timed_ms(lambda cA=cA: cA.clone(), torch)
        row["torch_transpose_b_ms"] = timed_ms(lambda cB=cB: cB.t().contiguous(), torch)
        del cA, cB
        call_t, _, _ = prepared(A, B, rounding="truncate")
        row["tflops"]["chosen_truncate_a"] = flop / timed_ms(call_t, torch)
        cfg = TC.launch((m, n, k), 256)
        dC2 = cuda.device_array((m, n), np.float32)
        row["tflops"]["tensor_core_tf32"] = flop / timed_ms(TC.prepare(cfg, (dA, dB), (dC2,)), torch)
        for name in names:
            if time.perf_counter() - t0 > args.budget:
                break
            c, _, _ = prepared(A, B, name)
            row["tflops"][name] = flop / timed_ms(c, torch)
        tt = row["tflops"]
        print(f"time {m}x{n}x{k}: " + ", ".join(f"{key} {v:.1f}" for key, v in tt.items())
              + f"; chosen {row['chosen']} = {tt['chosen'] / tt['torch_tf32']:.2f}x torch TF32, "
              f"{tt['chosen'] / tt['torch_fp32']:.2f}x cuBLAS FP32; ms: round {row['round_ms']:.3f} (flat "
              f"{row['round_flat_ms']:.3f}, torch clone {row['torch_copy_a_ms']:.3f}), transpose {row['transpose_ms']:.3f}"
              f" (torch {row['torch_transpose_b_ms']:.3f})", flush=True)
        out["time"].append(row)
    dev = cuda.get_current_device()
    out["device"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    print(f"{out['device']}; {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
