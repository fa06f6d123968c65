"""Check and time the cp.async and tensor-core matmul rungs (kernels/gemm/) on a GPU, beside torch at the
same precision; writes JSON for docs/tensor-cores.md.

    LAB_COMPILER=numba-cuda-mlir python scripts/tensor_cores_bench.py --out tc.json [--quick]

Each rung is first checked against the float64 reference on fresh random inputs, with the tolerance of
its precision (kernels.gemm.mma.rounded_inputs_tolerance for TF32, kernels.spec.dot_tolerance for
float32), at shapes that are not multiples of the tiles; then timed (CUDA events around each call,
median of the calls after a warm-up) at 4096^3 and other shapes, untuned ones included. torch runs the
same shapes: FP32 with TF32 off (cuBLAS SGEMM), TF32 on, and bfloat16 inputs.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK_SHAPES = [(128, 128, 64), (1000, 1030, 517), (257, 4099, 130), (777, 1333, 901), (3000, 5000, 2000)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000), (2048, 2048, 2048), (8192, 8192, 8192),
               (1000, 1030, 517), (6144, 4096, 1536)]


def median_ms(fn, torch, warmup=3, calls=20, budget_s=3.0):
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
        if time.perf_counter() - t0 > budget_s and len(times) >= 5:
            break
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--configs", default="default", help="default | all: also the other build options")
    args = ap.parse_args()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
           "probes": {}, "checks": [], "times": [], "errors": []}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)

    import torch

    out["torch"] = torch.__version__
    out["device"] = torch.cuda.get_device_name()
    from kernels.compiler import COMPILER, cuda, float32

    out["compiler"] = COMPILER
    try:
        import numba_cuda_mlir

        out["compiler_version"] = getattr(numba_cuda_mlir, "__version__", "?")
    except Exception:
        pass
    from kernels.gemm import async_copy as AC
    from kernels.gemm import mma
    from kernels.gemm import tensor_core_tf32 as TC
    from kernels.spec import dot_tolerance

    rng = np.random.default_rng(0)

    # probe 1: one m16n8k8 mma, fragments loaded per the layout
    try:
        @cuda.jit
        def one_mma(A, B, C):
            lane = cuda.threadIdx.x
            g = lane // 4
            q = lane % 4
            d0, d1, d2, d3 = mma.mma_tf32(mma.to_tf32(A[g, q]), mma.to_tf32(A[g + 8, q]), mma.to_tf32(A[g, q + 4]),
                                          mma.to_tf32(A[g + 8, q + 4]), mma.to_tf32(B[q, g]), mma.to_tf32(B[q + 4, g]),
                                          float32(0.0), float32(0.0), float32(0.0), float32(0.0))
            C[g, 2 * q] = d0
            C[g, 2 * q + 1] = d1
            C[g + 8, 2 * q] = d2
            C[g + 8, 2 * q + 1] = d3

        A = rng.standard_normal((16, 8)).astype(np.float32)
        B = rng.standard_normal((8, 8)).astype(np.float32)
        tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        tC = torch.full((16, 8), float("nan"), device="cuda")
        one_mma[1, 32](tA, tB, tC)
        torch.cuda.synchronize()
        C = tC.cpu().numpy()
        ref = mma.round_tf32(A).astype(np.float64) @ mma.round_tf32(B)
        out["probes"]["mma"] = {"max_err_vs_tf32_ref": float(np.abs(C - ref).max()),
                                "max_err_vs_fp64": float(np.abs(C - A.astype(np.float64) @ B).max())}
    except Exception as e:
        out["probes"]["mma"] = {"error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()[-3000:]}
    save()

    # probe 2: cp.async round trip through shared memory (16-byte and 4-byte copies, zero fill)
    try:
        from kernels.compiler import float32

        @cuda.jit
        def roundtrip(X, Y):
            s = cuda.shared.array(128, float32, alignment=16)
            t = cuda.threadIdx.x
            sa = mma.shared_address(s)
            gx = mma.global_address(X)
            mma.cp_async16(sa + t * 16, gx + t * 16, 16 if t < 16 else 8)
            mma.cp_async_commit()
            mma.cp_async_wait(0)
            cuda.syncthreads()
            for e in range(4):
                Y[t * 4 + e] = s[t * 4 + e]

        X = np.arange(128, dtype=np.float32) + 1
        tX = torch.from_numpy(X).cuda()
        tY = torch.full((128,), float("nan"), device="cuda")
        roundtrip[1, 32](tX, tY)
        torch.cuda.synchronize()
        Y = tY.cpu().numpy()
        want = X.copy()
        for t in range(16, 32):
            want[t * 4 + 2: t * 4 + 4] = 0
        out["probes"]["cp_async"] = {"ok": bool(np.array_equal(Y, want)), "got_head": Y[:8].tolist(),
                                     "got_tail": Y[-8:].tolist()}
    except Exception as e:
        out["probes"]["cp_async"] = {"error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()[-3000:]}
    save()

    builds = {"async_copy": lambda: AC.make_async_copy_kernel(),
              "tensor_core_tf32": lambda: TC.make_tf32_kernel()}
    if args.configs == "all":
        builds.update({"async_copy bk16 s2": lambda: AC.make_async_copy_kernel(16, 2),
                       "tensor_core_tf32 unrounded": lambda: TC.make_tf32_kernel(round_inputs=False),
                       "tensor_core_tf32 bk8 s4": lambda: TC.make_tf32_kernel(8, 4)})
    grid_of = {"async_copy": AC, "tensor_core_tf32": TC}

    def launch(name, m, n, k, tA, tB, tC):
        mod = grid_of[name.split()[0]]
        cfg = mod.launch((m, n, k), 256)
        kern = builds[name]()[cfg.grid, cfg.block]
        return lambda: kern(tA, tB, tC)

    shapes = CHECK_SHAPES[:3] if args.quick else CHECK_SHAPES
    for name in builds:
        for (m, n, k) in shapes:
            try:
                A = rng.standard_normal((m, k)).astype(np.float32)
                B = rng.standard_normal((k, n)).astype(np.float32)
                tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
                tC = torch.full((m, n), float("nan"), device="cuda")
                t0 = time.perf_counter()
                launch(name, m, n, k, tA, tB, tC)()
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                C = tC.cpu().numpy()
                ref = A.astype(np.float64) @ B.astype(np.float64)
                tol = (mma.rounded_inputs_tolerance(A, B, 10) if "tf32" in name else dot_tolerance(A, B, np.float32))
                err = np.abs(C - ref)
                ok = bool(np.all(err <= tol))  # NaN fails
                out["checks"].append({"rung": name, "shape": [m, n, k], "ok": ok, "max_err": float(np.nanmax(err)),
                                      "nan": int(np.isnan(C).sum()), "worst_over_tol": float(np.nanmax(err / tol)),
                                      "first_call_s": round(first, 2)})
            except Exception as e:
                out["checks"].append({"rung": name, "shape": [m, n, k], "error": f"{type(e).__name__}: {e}",
                                      "tb": traceback.format_exc()[-2000:]})
            save()

    tshapes = TIME_SHAPES[:2] if args.quick else TIME_SHAPES
    for (m, n, k) in tshapes:
        A = torch.randn(m, k, device="cuda")
        B = torch.randn(k, n, device="cuda")
        C = torch.empty(m, n, device="cuda")
        flops = 2.0 * m * n * k
        row = {"shape": [m, n, k], "tflops": {}}
        torch.backends.cuda.matmul.allow_tf32 = False
        row["tflops"]["torch fp32"] = flops / median_ms(lambda: torch.matmul(A, B, out=C), torch) / 1e9
        torch.backends.cuda.matmul.allow_tf32 = True
        row["tflops"]["torch tf32"] = flops / median_ms(lambda: torch.matmul(A, B, out=C), torch) / 1e9
        torch.backends.cuda.matmul.allow_tf32 = False
        Ah, Bh = A.bfloat16(), B.bfloat16()
        row["tflops"]["torch bf16"] = flops / median_ms(lambda: torch.matmul(Ah, Bh), torch) / 1e9
        for name in builds:
            try:
                row["tflops"][name] = flops / median_ms(launch(name, m, n, k, A, B, C), torch) / 1e9
            except Exception as e:
                row["tflops"][name] = None
                out["errors"].append(f"{name} {m}x{n}x{k}: {type(e).__name__}: {e}")
        out["times"].append(row)
        save()
    print(json.dumps(out, indent=1)[:6000])


if __name__ == "__main__":
    main()
